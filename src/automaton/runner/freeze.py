"""The pytest verifier's guarantees: streamed verdicts, private bytecode, frozen test ids, holdout.

When the verify command runs pytest (`runs_pytest`: `pytest …`, `py.test …`, `… -m pytest …`),
or is the loop's packaged scorer (`<loop folder>/scorer.py`, `resources/scorer.py`) in a mode
that runs pytest (`scorer_mode`: coverage, dependency, lint and types with `--suite`, which run
the suite once; flaky, which runs the named tests N times in turn), the runner adds automaton's
plugin (`resources/pytest_plugin/automaton_verdicts.py`) with `-p automaton_verdicts` (the
scorer adds it to its pytest runs and passes the descriptor on), from a private copy in the
tick's run folder (`runs/<n>/plugin/`, read-only to every sandbox) put first on PYTHONPATH. It
hands the plugin the write end of a pipe as an inherited file descriptor
(`AUTOMATON_VERDICT_FD`): the runner reads each test's outcome as the test finishes, and what
the process writes to its JUnit file or returns as its exit status afterwards cannot change it
(`core.testids`). Every pytest verify run also gets `PYTHONPYCACHEPREFIX` (a private folder in
the run's own temp dir, `runner.confine.scratch`, which no earlier role could write: Python then
never reads the `__pycache__` folders of the tree, nor bytecode an agent left) and
`PYTHONDONTWRITEBYTECODE=1`.

The frozen set (`store.frozen_tests`): before the first verify run of a base commit, the runner
collects the test ids (`--collect-only`) on a clean export of the base commit (holdout tests
copied in), sealed in the loop folder. A run whose stream lacks a frozen id, or reports it
skipped, xfailed or deselected, is not scored: the tick halts `human_intervention` with detail
`tests_removed: <ids>`.

Holdout tests (`roles.verify.holdout`, a folder in the loop folder): copied into the export
under `HOLDOUT_DIR` inside the first `testpaths` folder of the project's pytest configuration
(the export's root without one) for each verify run and removed after it; the agent's sandbox
hides the folder (`hidden_for`), and its digest is part of the frozen record: a holdout changed
since the freeze halts `human_intervention` with detail `holdout_changed`.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from automaton.core.loopconfig import LoopConfig
from automaton.core.testids import Frozen, Streamed, read_stream, removed, runs_pytest
from automaton.git.export import remove_tree
from automaton.git.protect import pytest_settings
from automaton.store import frozen_tests

PLUGIN = "automaton_verdicts"
ENV_FD = "AUTOMATON_VERDICT_FD"
# Where the packaged scorer's one pytest run writes its JUnit XML (the runner checks it
# against the stream; a pytest command is given `--junitxml` directly).
ENV_JUNIT = "AUTOMATON_VERDICT_JUNIT"
HOLDOUT_DIR = "automaton_holdout"
MAX_STREAM = 64 << 20  # bytes of plugin records kept; past this the stream reads as broken
SHOWN = 10  # ids named in a halt's detail


SCORER = "scorer.py"
# Scorer modes that run the project's suite exactly once.
SUITE_MODES = ("coverage", "dependency")
SUITE_FLAG_MODES = ("lint", "types")  # with --suite
# The scorer's mode that runs the named tests `--repeat N` times, one pytest session after
# another on the same pipe: the runner splits the stream at each `end` record (`read_runs`),
# and run i's JUnit XML is `run_junit(path, i)`.
REPEAT_MODE = "flaky"
REPEAT_DEFAULT = 10  # the scorer's default for --repeat


def repeat_of(argv: list[str]) -> int | None:
    """The `--repeat N` (or `--repeat=N`) of the scorer's flaky command line, REPEAT_DEFAULT
    without one; None when it is no positive integer."""
    value: str | None = None
    for i, arg in enumerate(argv):
        if arg == "--repeat" and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--repeat="):
            value = arg.split("=", 1)[1]
    if value is None:
        return REPEAT_DEFAULT
    return int(value) if value.isdigit() and int(value) > 0 else None


def run_junit(path: Path, i: int) -> Path:
    """Where run `i` (from 0) of the flaky mode writes its JUnit XML when the runner asked for
    `path` (`junit.xml` -> `junit-0.xml`; the scorer derives the same name)."""
    return path.with_name(f"{path.stem}-{i}{path.suffix}")


def scorer_mode(cfg: LoopConfig, loop_dir: Path) -> str | None:
    """The packaged scorer's mode when the verify command is `PYTHON <loop_dir>/scorer.py MODE …`
    (`"score": "agent"`) in a mode that runs pytest with the plugin: the suite once, or
    (`REPEAT_MODE`) the named tests N times; None otherwise."""
    role = cfg.roles.verify
    argv = list(role.command or [])
    if role.score != "agent" or len(argv) < 3 or Path(argv[1]).name != SCORER:
        return None
    try:
        if Path(argv[1]).parent.resolve() != loop_dir.resolve():
            return None
    except OSError:
        return None
    mode = argv[2]
    if mode in (*SUITE_MODES, REPEAT_MODE) or (mode in SUITE_FLAG_MODES and "--suite" in argv[3:]):
        return mode
    return None


def applies(cfg: LoopConfig, loop_dir: Path | None = None) -> bool:
    """Whether this loop's verifier runs pytest with the plugin: a pytest command scored by the
    runner, or (with `loop_dir`) the packaged scorer in a mode `scorer_mode` names."""
    role = cfg.roles.verify
    if not role.command:
        return False
    if loop_dir is not None and scorer_mode(cfg, loop_dir) is not None:
        return True
    return role.score != "agent" and runs_pytest(list(role.command))


def collect_argv(cfg: LoopConfig, loop_dir: Path) -> list[str]:
    """The command that collects the verifier's test ids: the scorer's own `--collect-only`
    (the same pytest arguments and testpaths as its suite run), else the pytest command with
    `--collect-only -q`."""
    argv = list(cfg.roles.verify.command or [])
    if scorer_mode(cfg, loop_dir) is not None:
        return [*argv, "--collect-only"]
    return [*argv, "--collect-only", "-q"]


def plugin_copy(folder: Path) -> Path:
    """Copy the packaged plugin into `folder/plugin/` and return that folder (for PYTHONPATH)."""
    dest = folder / "plugin"
    dest.mkdir(parents=True, exist_ok=True)
    source = resources.files("automaton") / "resources" / "pytest_plugin" / f"{PLUGIN}.py"
    (dest / f"{PLUGIN}.py").write_bytes(source.read_bytes())
    return dest


def python_env(env: dict[str, str], plugin_dir: Path, own: Path, fd: int) -> dict[str, str]:
    """`env` plus what a pytest verify run gets: the plugin's folder first on PYTHONPATH, the
    descriptor's number, no bytecode written, and a bytecode cache of its own in `own` (the
    run's own temp dir, `runner.confine.scratch`: a cache an agent could have written would
    hand Python bytecode it loads without comparing it to the source)."""
    cache = own / "pycache"
    cache.mkdir(parents=True, exist_ok=True)
    old = env.get("PYTHONPATH")
    path = str(plugin_dir) + (os.pathsep + old if old else "")
    return {**env, "PYTHONPATH": path, ENV_FD: str(fd), "PYTHONPYCACHEPREFIX": str(cache),
            "PYTHONDONTWRITEBYTECODE": "1"}


@dataclass
class Pipe:
    """The runner's end of the plugin's pipe: `write_fd` is handed to the child; `read` is
    drained by a thread into `data` (at most MAX_STREAM bytes; `over` when more came)."""

    read_fd: int
    write_fd: int
    data: bytearray = field(default_factory=bytearray)
    over: bool = False
    thread: threading.Thread | None = None

    def _drain(self) -> None:
        while chunk := os.read(self.read_fd, 65536):
            if len(self.data) + len(chunk) > MAX_STREAM:
                self.over = True
                continue
            self.data += chunk

    def result(self) -> Streamed | None:
        """The stream once the child ended (None when it overflowed)."""
        raw = self.raw()
        return None if raw is None else read_stream(raw)

    def raw(self) -> bytes | None:
        """The stream's bytes once the child ended (None when it overflowed)."""
        if self.thread is not None:
            self.thread.join(timeout=30)
        return None if self.over else bytes(self.data)


@contextmanager
def pipe() -> Iterator[Pipe]:
    """A pipe whose read end a thread drains while the child runs. The write end is closed in
    this process once the caller's run returns (the child holds its own copy), so the thread
    ends when every process that inherited it is gone."""
    r, w = os.pipe()
    os.set_inheritable(w, False)  # passed explicitly (pass_fds), never to another child
    out = Pipe(r, w)
    out.thread = threading.Thread(target=out._drain, daemon=True)
    out.thread.start()
    try:
        yield out
    finally:
        close_writer(out)
        if out.thread is not None:
            out.thread.join(timeout=30)
        with suppress(OSError):
            os.close(r)


def close_writer(p: Pipe) -> None:
    """Close this process's copy of the write end once (after the child ran): the drain thread
    then sees the end of the stream when the child's copies are closed too."""
    if p.write_fd >= 0:
        with suppress(OSError):
            os.close(p.write_fd)
        p.write_fd = -1


# ---- holdout ----

def holdout_source(cfg: LoopConfig, loop_dir: Path) -> Path | None:
    """The holdout folder of the loop (absolute), or None without `roles.verify.holdout`."""
    rel = cfg.roles.verify.holdout
    return None if rel is None else loop_dir / rel


def hidden_for(cfg: LoopConfig, loop_dir: Path, role: str, kept: Path) -> tuple[Path, ...]:
    """Paths a role's sandbox may not read when the loop has holdout tests: the holdout folder
    (every role); and for every role but the verifier, the loop's kept export `kept`
    (`store.layout.kept_export_of`), where code the verifier ran could leave a copy of them,
    and the loop's `runs/`, whose verify.log and junit.xml name them and show their failing
    lines."""
    source = holdout_source(cfg, loop_dir)
    if source is None:
        return ()
    return (source,) if role == "verify" else (source, kept, loop_dir / "runs")


def holdout_target(export: Path) -> Path:
    """Where the holdout tests go in `export`: under the first `testpaths` folder of its pytest
    configuration (pytest would not collect them elsewhere), else the export's root."""
    paths = pytest_settings(export).testpaths
    first = next((p for p in paths if (export / p).is_dir()), None)
    return (export / first if first else export) / HOLDOUT_DIR


@contextmanager
def holdout_in(cfg: LoopConfig, loop_dir: Path, export: Path) -> Iterator[str]:
    """Copy the holdout tests into `export` for one run (removed after it); yields the holdout's
    digest ("" without one). Raises OSError when the folder is missing or holds a symlink."""
    source = holdout_source(cfg, loop_dir)
    if source is None:
        yield ""
        return
    digest = frozen_tests.holdout_digest(source)
    target = holdout_target(export)
    if os.path.lexists(target):
        remove_tree(target)
    shutil.copytree(source, target, symlinks=False)
    try:
        yield digest
    finally:
        remove_tree(target)


# ---- the frozen set ----

def frozen_set(cfg: LoopConfig, loop_dir: Path, base: str, holdout: str,
               collect_at_base: Callable[[], Streamed | None]) -> Frozen | str:
    """The loop's frozen set for `base`: the sealed record when it was collected at `base`, else
    collected now (`collect_at_base`: a `--collect-only` run on a clean export of the base
    commit) and sealed. A sealed record of the same base whose holdout digest differs from
    `holdout`: the string `holdout_changed: …`. A collection that fails: `not collected: …`.
    A base commit with no test yet freezes the empty set."""
    found = frozen_tests.read_frozen(loop_dir)
    if found is not None and found.base_commit == base:
        if found.holdout != holdout:
            return (f"{frozen_tests.HOLDOUT_CHANGED}: the holdout tests of {cfg.roles.verify.holdout} changed since"
                    " the test set was frozen")
        return found
    run = collect_at_base()
    if run is None or run.end is None:
        return "not collected: the test ids of the base commit could not be collected"
    return frozen_tests.write_frozen(loop_dir, base, holdout, run.collected)


def removed_detail(frozen: Frozen, run: Streamed) -> tuple[str, list[str]] | None:
    """(`tests_removed: …` detail, the run's ids) when `run` did not judge every frozen id."""
    gone = removed(list(frozen.ids), run)
    if not gone:
        return None
    shown = ", ".join(f"{ident} ({why})" for ident, why in gone[:SHOWN])
    more = f" (+{len(gone) - SHOWN} more)" if len(gone) > SHOWN else ""
    ids = [i for i, o in run.results.items() if o not in ("skipped", "xfailed")]
    return f"{frozen_tests.TESTS_REMOVED}: {shown}{more}", ids
