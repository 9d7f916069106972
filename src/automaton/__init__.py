"""automaton: enforced brakes for AI coding agents (task phases, sign-offs, bounded loops)."""

# The one version source: pyproject.toml reads it (`dynamic = ["version"]`), `--version` prints it.
__version__ = "0.1.0"
