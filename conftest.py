"""Project-level pytest configuration for running evaluations from this checkout.

`pytest cases/` collects the cases through the pytest-scylla plugin (installed as the `scylla`
entry point); nothing here is needed for that. This file only keeps pytest away from folders
that hold outputs or tooling rather than tests.
"""

collect_ignore = ["reports", "docs", "bench"]
