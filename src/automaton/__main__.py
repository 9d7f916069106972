"""`python -m automaton` runs the `automaton` CLI."""

from automaton.cli.main import main

raise SystemExit(main())
