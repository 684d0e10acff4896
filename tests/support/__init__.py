"""Data and helpers that a topic's in-process tests and its sessions share."""
