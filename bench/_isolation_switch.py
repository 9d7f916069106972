"""Run one automaton entry point with or without the namespace layer, for the benchmarks only.

    python bench/_isolation_switch.py namespaces|landlock-only MODULE [ARGS…]

runs `MODULE.main()` with ARGS as its argv (what a console script does: `automaton` is
`automaton.cli.main`, `automaton-loop` is `automaton.runner.cli`). `namespaces` changes nothing.
`landlock-only` replaces, in this process only, the probe of the namespace layer
(`automaton.sandbox._probe_namespaces`) by one that reports them missing, so this process takes
the path of a machine without user namespaces: a loop or a project whose "isolation" is
"landlock-only" runs its agent under Landlock alone, one with "namespaces" is refused. Both
sides start through this same file, so they pay the same interpreter start and imports.

This cannot weaken a sandbox in production: it is not part of the package, it is not reached
through any flag, environment variable or file automaton reads, and it only acts on the process
that runs it (an agent that could run it could as well run its command without automaton).
"""

from __future__ import annotations

import importlib
import sys

MODES = ("namespaces", "landlock-only")
# Printed by automaton in the landlock-only path (the tick's warning, the session's stderr
# line), so the benchmark can check that this path was taken.
MARKER = "namespaces left out by bench/_isolation_switch.py"


def main() -> int:
    if len(sys.argv) < 3 or sys.argv[1] not in MODES:
        print(f"usage: {sys.argv[0]} {'|'.join(MODES)} MODULE [ARGS…]", file=sys.stderr)
        return 2
    mode, module = sys.argv[1], sys.argv[2]
    import automaton.sandbox as sb  # on both sides, so both pay its import here

    if mode == "landlock-only":
        sb._probe_namespaces = lambda: (False, MARKER)
    sys.argv = [module, *sys.argv[3:]]
    entry = importlib.import_module(module).main
    return int(entry() or 0)


if __name__ == "__main__":
    raise SystemExit(main())
