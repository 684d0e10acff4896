"""`scylla compare`: two experiments, the differences with intervals and tests."""
