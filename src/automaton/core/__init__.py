"""Pure domain rules: names, phases, loop model, gates, scopes, verdicts. No I/O."""
