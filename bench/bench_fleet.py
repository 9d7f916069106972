"""The state remote under a fleet, at full size: 4 runners (fresh clones, each its own HOME)
started together for 25 rounds on one loop whose state lives in a local bare repository
(tests/runner/test_fleet.py runs the same rounds, fewer of them, in the test suite). Checks
exactly one tick per claim (the TICK lines == the iteration count == the commits on
`loop/demo`, spend == the sum of the ticks' charges) and reports the seconds per round, and
the added cost of a remote-state tick against a local tick of the same loop in the same run.
Run: .venv/bin/python bench/bench_fleet.py [--rounds N]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 25
    env = dict(os.environ, FLEET_ROUNDS=str(rounds))
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(ROOT / "tests/runner/test_fleet.py"), "-k", "together"], env=env, cwd=ROOT, check=False)
    total = time.monotonic() - started
    print(f"fleet: 4 runners x {rounds} rounds: {'ok' if done.returncode == 0 else 'FAILED'} in {total:.1f} s"
          f" ({total / rounds:.2f} s per round)")
    print(f"one tick, local vs remote state (same machine, same run): {_local_vs_remote()}")
    return done.returncode


def _local_vs_remote() -> str:
    from tests.runner import fleetkit as fk

    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        os.environ.update(HOME=str(home), AUTOMATON_RECORD_KEY=fk.KEY, AUTOMATON_APPROVER="bench")
        fleet = fk.make_fleet(Path(tmp), 1)
        env = fk.runner_env(home)
        # The same loop definition, never published: a loop seen on its remote ticks only through it.
        fk.add_loop(fleet.seed, "solo")
        local = [a for a in fk.runner_argv(fleet.seed, "solo") if a not in ("--state-remote", "origin")]
        remote = fk.runner_argv(fleet.clones[0])
        first = subprocess.run(fk.runner_argv(fleet.seed), env=env, capture_output=True, check=False)
        assert first.returncode == 0, first.stderr
        times: dict[str, list[float]] = {"local": [], "remote": []}
        for _ in range(5):
            for kind, argv, e in (("local", local, env), ("remote", remote, fk.runner_env(fleet.homes[0]))):
                t = time.monotonic()
                out = subprocess.run(argv, env=e, capture_output=True, check=False)
                times[kind].append(time.monotonic() - t)
                assert out.returncode == 0, out.stderr
        lo, re = sorted(times["local"])[2], sorted(times["remote"])[2]
        return f"median local {lo:.2f} s, remote {re:.2f} s, ratio {re / lo:.2f}"


if __name__ == "__main__":
    raise SystemExit(main())
