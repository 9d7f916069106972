"""automaton: enforced brakes for AI coding agents (task phases, sign-offs, bounded loops)."""
