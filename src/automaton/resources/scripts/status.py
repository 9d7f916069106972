#!/usr/bin/env python3
"""The stable path of the `automaton` CLI (status.py): a thin shim onto automaton.cli.main."""

import sys

from automaton.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
