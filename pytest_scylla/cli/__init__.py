"""The `scylla` command: one module a command, each registered once (its `register(subparsers)`
adds its parser and sets its handler; `main` lists the modules and runs the handler given),
and `common` for what they share."""
