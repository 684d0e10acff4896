"""logq: query plain-text application logs."""

__version__ = "1.2.0"
