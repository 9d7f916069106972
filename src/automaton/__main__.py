"""`python -m automaton` runs the `automaton` CLI (the console script's entry, `cli.main.script`)."""

from automaton.cli.main import script

script()
