"""The options (declared once), their values, and the settings a session resolves from them, with
the registry of what plugins offer."""
