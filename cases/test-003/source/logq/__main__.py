import sys

from logq.cli import main

sys.exit(main())
