"""``python -m featurelens``: the command line (see :mod:`featurelens.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":  # the guard matters: benchmark worker processes re-import __main__
    sys.exit(main())
