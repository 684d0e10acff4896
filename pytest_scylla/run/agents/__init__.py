"""Agent CLI adapters: how to start each CLI headless and read what it reports."""
