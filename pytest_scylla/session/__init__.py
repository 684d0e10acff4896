"""The pytest session: collection, fixtures, evaluations, the header, selection."""
