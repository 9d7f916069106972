#!/usr/bin/env python3
"""The stable path of the loop runner (run-tick.sh calls it): a thin shim onto automaton.runner.cli."""

import sys

from automaton.runner.cli import main

if __name__ == "__main__":
    sys.exit(main())
