"""A fleet of runners on one loop: a bare repository as the state remote, each runner a fresh
clone with its own HOME (a machine of its own), all sharing the record key as a secret."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from automaton.store.layout import Project
from tests.helpers import git, init_repo
from tests.runner.loopkit import make_loop

PY = sys.executable
KEY = "5a" * 32
LOOP = "demo"
RUNNER = str(Path(__file__).with_name("fleet_runner.py"))
# The agent appends one line to src/work.txt; the verifier's score alternates (never flat,
# never complete), so every tick runs and commits.
# With a `hold` file beside the machine's clone (5 folders up from the worktree) the agent starts
# a child of its own (`sleep`, pid in `agent.kid`), writes its pid to `agent.pid` there and
# waits: a runner can then be killed while its agent and the agent's child run.
AGENT = "import os, pathlib, subprocess, time\n" \
        "m = pathlib.Path('../../../../..')\n" \
        "if (m / 'hold').exists():\n    (m / 'agent.kid').write_text(str(subprocess.Popen(['sleep', '60']).pid))\n" \
        "    (m / 'agent.pid').write_text(str(os.getpid())); time.sleep(60)\n" \
        "p = pathlib.Path('src/work.txt'); p.parent.mkdir(exist_ok=True)\n" \
        "p.write_text((p.read_text() if p.exists() else '') + 'x\\n')\n"
VERIFY = "import pathlib; n = len(pathlib.Path('src/work.txt').read_text().split()); " \
         "print(f'{1 + n % 2} passed, 1 failed')"


@dataclass(frozen=True)
class Fleet:
    bare: Path
    seed: Path
    clones: list[Path]
    homes: list[Path]


def make_fleet(tmp: Path, runners: int, *, agent: str = AGENT, timeout_s: int = 60,
               max_iterations: int = 1000, verify: list[str] | None = None, holdout: str | None = None,
               **over: object) -> Fleet:
    """The seed checkout makes the loop and publishes it (one tick with --state-remote); then
    `runners` fresh clones. The caller has AUTOMATON_RECORD_KEY=KEY set (monkeypatch).
    `verify`: the verify command (score "summary"), default `VERIFY` run by this Python;
    `holdout`: the verify role's holdout folder (made, with one test, in the loop folder)."""
    seed = init_repo(tmp / "seed")
    (seed / "src").mkdir()
    (seed / "src" / "keep.txt").write_text("keep\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "src")
    bare = tmp / "remote.git"
    git(tmp, "clone", "-q", "--bare", str(seed), str(bare))
    git(seed, "remote", "add", "origin", str(bare))
    make_loop(seed, LOOP, harness={"name": "command", "command": [PY, "-c", agent], "args": [], "timeout_s": timeout_s},
              sandbox="off", brakes={"max_iterations": max_iterations, "max_budget_usd": 5000.0, "max_tick_usd": 1.0,
                                     "score_plateau_window": 3, "plateau_epsilon": 0.0, "target_score": 1.0},
              roles={"implement": {"prompt": "implement.md"}, "verify": {"command": verify or [PY, "-c", VERIFY],
                                                                          "score": "summary",
                                                                          **({"holdout": holdout} if holdout else {})},
                     "orchestrate": {"builtin": True}}, **over)
    if holdout:
        folder = seed / ".automaton" / "loops" / LOOP / holdout
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "test_holdout.py").write_text("def test_secret():\n    assert True\n")
    clones, homes = machines(tmp, bare, runners)
    return Fleet(bare, seed, clones, homes)


def machines(tmp: Path, bare: Path, n: int) -> tuple[list[Path], list[Path]]:
    """`n` fresh clones of `bare`, each with a HOME of its own: (clones, homes), under tmp/m<i>/."""
    clones, homes = [], []
    for i in range(n):
        clone, home = tmp / f"m{i}" / "work", tmp / f"m{i}" / "home"
        home.mkdir(parents=True)
        git(tmp, "clone", "-q", str(bare), str(clone))
        clones.append(clone)
        homes.append(home)
    return clones, homes


def add_loop(seed: Path, name: str) -> None:
    """A second loop `name` in the seed checkout, as `make_fleet` makes its own: the command
    agent and verifier above, $1.00 a tick."""
    make_loop(seed, name, harness={"name": "command", "command": [PY, "-c", AGENT], "args": [], "timeout_s": 60},
              sandbox="off", brakes={"max_iterations": 1000, "max_budget_usd": 5000.0, "max_tick_usd": 1.0,
                                     "score_plateau_window": 3, "plateau_epsilon": 0.0, "target_score": 1.0},
              roles={"implement": {"prompt": "implement.md"}, "verify": {"command": [PY, "-c", VERIFY],
                                                                          "score": "summary"},
                     "orchestrate": {"builtin": True}})


def runner_argv(clone: Path, loop: str = LOOP) -> list[str]:
    return [PY, RUNNER, "--mode", "tick", "--loop", loop, "--project", str(clone), "--state-remote", "origin",
            "--quiet", "--json"]


def runner_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AUTOMATON_", "FLEET_"))}
    env.update(HOME=str(home), AUTOMATON_RECORD_KEY=KEY, **extra)
    return env


def start(clone: Path, home: Path, **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(runner_argv(clone), env=runner_env(home, **extra), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def project(path: Path) -> Project:
    return Project(path.resolve())


def tick(clone: Path, home: Path, loop: str = LOOP) -> subprocess.CompletedProcess[str]:
    """One remote tick of `loop` by the runner of `clone` with HOME `home` (JSON on stdout)."""
    argv = [loop if a == LOOP else a for a in runner_argv(clone)]
    return subprocess.run(argv, env=runner_env(home), capture_output=True, text=True, timeout=300, check=False)


def published(tmp: Path, runners: int = 2, **over: object) -> Fleet:
    """`make_fleet`, its loop published by one tick of the seed (the caller's HOME)."""
    made = make_fleet(tmp, runners, **over)
    first = tick(made.seed, Path(os.environ["HOME"]))
    assert first.returncode == 0 and '"ran": true' in first.stdout, first.stderr
    return made
