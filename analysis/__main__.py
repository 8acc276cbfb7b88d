"""`python -m analysis ...` runs the command line (the `cli` package; installed as `embedscope`). The library
itself never imports the command line, which may use the cache."""

import sys

from cli import main

if __name__ == "__main__":
    sys.exit(main())
