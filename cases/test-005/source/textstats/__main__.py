import sys

from textstats.cli import main

sys.exit(main())
