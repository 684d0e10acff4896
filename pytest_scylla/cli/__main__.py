"""`python -m pytest_scylla.cli`: the `scylla` command."""

import sys

from pytest_scylla.cli.main import main

sys.exit(main())
