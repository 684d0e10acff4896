"""The `scylla` command: one module a command, each registering its own parser (`main` gathers
them)."""
