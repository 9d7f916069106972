"""Test helpers: run the CLI in-process, fake executables on PATH, real git repos."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from automaton.core.loopstate import LogEvent, LoopState

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@dataclass
class Result:
    """What one CLI call did: exit `code`, `out`, `err`, and `json` (last stdout line parsed)."""

    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        lines = [line for line in self.out.splitlines() if line.strip()]
        assert lines, f"no stdout; stderr: {self.err}"
        return json.loads(lines[-1])


class _Stdin(io.StringIO):
    def __init__(self, text: str = "", tty: bool = False) -> None:
        super().__init__(text)
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


# The widening commands are human acts (cli.verbs_loops); the many tests that set up a loop
# with them act as the human for that one call, unless they pass human=False.
WIDENING = frozenset({"--create-loop", "--install-schedule"})
TEST_HUMAN = "test-human"


def run_cli(*args: str, cwd: Path | None = None, tty: bool = False, stdin: str = "",
            entry: str = "automaton", human: bool | None = None) -> Result:
    """Run `automaton` (or `automaton-loop` with entry=) in-process; never raises SystemExit.

    `human`: True sets AUTOMATON_APPROVER for this call when unset, False leaves the environment
    as it is; None (the default) does so only for a widening command (WIDENING) run without a
    terminal or an approver."""
    if human is None:
        human = bool(WIDENING & set(args)) and not tty and not os.environ.get("AUTOMATON_APPROVER")
    if human and not os.environ.get("AUTOMATON_APPROVER"):
        os.environ["AUTOMATON_APPROVER"] = TEST_HUMAN
        try:
            return run_cli(*args, cwd=cwd, tty=tty, stdin=stdin, entry=entry, human=False)
        finally:
            del os.environ["AUTOMATON_APPROVER"]
    if entry == "automaton":
        from automaton.cli.main import main
    else:
        from automaton.runner.cli import main  # type: ignore[no-redef]
    out, err = io.StringIO(), io.StringIO()
    old_cwd, old_stdin = Path.cwd(), sys.stdin
    try:
        if cwd is not None:
            os.chdir(cwd)
        sys.stdin = _Stdin(stdin, tty)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # pragma: no cover - main() should not raise
                code = int(exc.code or 0)
    finally:
        sys.stdin = old_stdin
        os.chdir(old_cwd)
    return Result(code, out.getvalue(), err.getvalue())


def run_exe(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            stdin: str = "", timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the installed console script in a real subprocess (for exit codes and signals)."""
    bindir = Path(sys.executable).parent
    return subprocess.run([str(bindir / args[0]), *args[1:]], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=timeout, check=False)


def fake_exe(bin_dir: Path, name: str, body: str) -> Path:
    """Write an executable `name` in `bin_dir` running the Python `body`.

    Each call appends its argv (and cwd) as one JSON line to `bin_dir/<name>.calls`.
    """
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / name
    header = textwrap.dedent(f"""\
        #!{sys.executable}
        import json, os, sys
        with open({str(bin_dir / (name + '.calls'))!r}, "a") as _f:
            _f.write(json.dumps({{"argv": sys.argv[1:], "cwd": os.getcwd()}}) + "\\n")
        """)
    path.write_text(header + textwrap.dedent(body))
    path.chmod(0o755)
    return path


def calls(bin_dir: Path, name: str) -> list[list[str]]:
    """argv lists recorded by fake executable `name`."""
    try:
        text = (bin_dir / f"{name}.calls").read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line)["argv"] for line in text.splitlines()]


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` with a pinned identity and dates; returns stdout (raises on failure)."""
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def init_repo(path: Path, branch: str = "main") -> Path:
    """A real git repository with one commit on `branch`."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch)
    (path / "README.md").write_text("sample\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def seed_task(root: Path, ref: str, phase: str, artifacts: dict[str, str] | None = None) -> Path:
    """A task folder `tasks/<ref>` at `phase` with a valid one-line log, as if the CLI had put it there."""
    from automaton.store import chainlog

    folder = root / "tasks" / ref
    folder.mkdir(parents=True)
    for name, text in (artifacts or {}).items():
        (folder / name).write_text(text)
    task = ref.removeprefix("complete/")  # the task's name: tasks/complete/ only says it is done
    chainlog.commit(folder / ".state", folder / ".state.log", f"{phase}\n".encode(), phase, "SEEDED", {"task": task})
    return folder


# The CLI steps that bring a new task to a phase (a human runs the --approve step).
TASK_STEPS: dict[str, list[tuple[str, ...]]] = {
    "new": [],
    "research": [("--transition", "research")],
    "research:awaiting_approval": [("--transition", "research"), ("write", "SPEC.md"),
                                   ("--transition", "research:awaiting_approval")],
    "research:approved": [("--transition", "research"), ("write", "SPEC.md"),
                          ("--transition", "research:awaiting_approval"), ("--approve",)],
    "implement": [("--transition", "research"), ("write", "SPEC.md"),
                  ("--transition", "research:awaiting_approval"), ("--approve",),
                  ("--transition", "implement")],
}


def bring_task(project: Path, name: str, phase: str, focus: bool = True) -> Path:
    """Create task `name` through the CLI and walk it to `phase` (needs a human approver set)."""
    root = str(project)

    def ok(result: Result) -> None:
        assert result.code == 0, (result.code, result.out, result.err)

    ok(run_cli("--create-task", name, "--project", root))
    for step in TASK_STEPS[phase]:
        if step[0] == "write":
            (project / "tasks" / name / step[1]).write_text("# spec\n")
        else:
            ok(run_cli(*step, "--task", name, "--project", root))
    if focus:
        ok(run_cli("--focus", name, "--project", root))
    return project / "tasks" / name


def approve_first(root: Path, name: str) -> None:
    """Give loop `name` its first approval as a human ("tests", via "tests") would: a loop made
    from a project template starts halted (first_approval) until a human reviews it. A loop
    that is not waiting for one is left as it is. Test set-up, so it works even where a test
    made its process look like an agent's (CLAUDECODE set)."""
    from automaton.commands import loops as loop_cmds
    from automaton.commands.human import Human
    from automaton.core.gates import FIRST_APPROVAL
    from automaton.store import loops
    from automaton.store.layout import Project

    project = Project(root.resolve())
    state = loops.read_state(project, name)
    if state.status != "halted" or not str(state.halt_detail or "").startswith(FIRST_APPROVAL):
        return
    human = Human("tests", "tests")
    loop_cmds.approve_loop(project, name, loop_cmds.review_loop(project, name, human=human), human=human)


@contextlib.contextmanager
def socket_in_tmp(prefix: str) -> Iterator[tuple[Path, list[bytes]]]:
    """A UNIX socket server at /tmp/<prefix>*/default, where a user's tmux server listens
    (/tmp/tmux-UID/default): yields its path and the list of what each connection sent."""
    import shutil
    import socket
    import tempfile
    import threading

    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    path = folder / "default"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(4)
    got: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                got.append(conn.recv(1024))

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield path, got
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)



def via_json(event: str, fields: dict[str, object], mutate: Callable[[dict[str, Any]], object], *,
             refund_usd: float = 0.0, refund_iterations: int = 0) -> Callable[[LoopState], tuple[LoopState, LogEvent]]:
    """A loop-state transition for tests that set up a state by editing its JSON object:
    `mutate` edits `.state.loop`'s object (file keys, USD as floats), which is parsed back
    (CorruptState for an invalid one, as a hand-edited file would be), logged as `event` (a
    name of core.loopstate.Event) with `fields` and the given refunds."""
    from automaton.core.loopconfig import state_json, validate_state
    from automaton.core.loopstate import Event, LogEvent, usd_to_micro

    def step(state: LoopState) -> tuple[LoopState, LogEvent]:
        data = state_json(state)
        mutate(data)
        return (validate_state(data, "a test's state"),
                LogEvent(Event[event], fields, usd_to_micro(refund_usd), refund_iterations))

    return step


def patched(state: LoopState, **changes: object) -> LoopState:
    """`state` with `changes` (file keys, USD as floats) applied, parsed as `.state.loop` is
    (CorruptState for a result no file may hold)."""
    from automaton.core.loopconfig import state_json, validate_state

    return validate_state({**state_json(state), **changes}, "a test's state")


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (a killed orphan may wait for its reaper)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")
