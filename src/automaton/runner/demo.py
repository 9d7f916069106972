"""`automaton-loop --demo`: three loops on a sample project, offline, no API key.

A temporary git repository holds a small Python project whose pytest suite fails. Loops are
created through the loop commands from project copies of the packaged `ci-triage` template
whose harness is the `scripted` fake (recorded edits in resources/scripted/). Loop 1 fixes
the suite tick by tick until it completes; loop 2 edits a file outside its file_scope and is
halted for drift, then a (demo) human approves it and it finishes; loop 3 makes no progress
and is halted by the score plateau gate; loop 4's agent tries to raise its own brakes by
writing its loop.json and `.state.loop`, and the kernel sandbox refuses both writes. Each
loop, made from a project template, starts halted until that demo human gives it its first
approval (`commands.first_approval`). Last, the project's config is sealed with `"sessions":
"sandboxed"` and the real hook (`automaton --hook claude`, a Claude Code PreToolUse payload on
stdin) is asked about one Write twice: from this unsandboxed process (denied: start the agent
with automaton --sandbox -- claude), then through `automaton --sandbox -- …` (judged normally).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from automaton.commands import config_seal
from automaton.commands import loops as loop_cmds
from automaton.commands.loop_status import loop_status
from automaton.core import jsontext
from automaton.core.errors import BadInput
from automaton.core.outcome import Outcome
from automaton.core.scores import score_text
from automaton.git import run_git
from automaton.runner.modes import run_loop
from automaton.runner.progress import Progress
from automaton.runner.tick import TickOptions
from automaton.sandbox import available
from automaton.store import loops as store
from automaton.store.key import KEY_ENV, KEY_FILE_ENV, WITHHELD_ENV
from automaton.store.layout import Project, framework_home

SAMPLE = {
    "src/calc.py": (
        '"""A tiny calculator with three bugs."""\n\n\n'
        "def add(a, b):\n    return a - b  # bug\n\n\n"
        "def multiply(a, b):\n    return a + b  # bug\n\n\n"
        "def divide(a, b):\n    return a * b  # bug\n\n\n"
        "def negate(a):\n    return -a\n"
    ),
    "tests/test_calc.py": (
        "from calc import add, divide, multiply, negate\n\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_multiply():\n    assert multiply(3, 4) == 12\n\n\n"
        "def test_divide():\n    assert divide(6, 3) == 2\n\n\n"
        "def test_negate():\n    assert negate(4) == -4\n"
    ),
    "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["src"]\n',
    ".gitignore": "__pycache__/\n.pytest_cache/\n",
    "README.md": "# sample\nA project whose CI is red.\n",
}
LOOPS = (  # (loop name, template, packaged script, plateau window)
    ("fix-ci", "ci-triage", "ci-triage-demo", 5),
    ("drift-check", "ci-triage-drift", "drift-demo", 5),
    ("stuck-agent", "ci-triage-plateau", "plateau-demo", 3),
    ("greedy-agent", "ci-triage-greedy", "greedy-demo", 5),
)
IDENTITY = ["-c", "user.name=automaton demo", "-c", "user.email=demo@localhost"]


def _git(root: Path, *args: str) -> str:
    out = run_git(root, [*IDENTITY, *args])
    if out.code != 0:
        raise BadInput(f"demo: git {' '.join(args)} failed: {out.err.strip()}")
    return out.out


def build_sample(root: Path) -> None:
    """The sample project, committed on `main` in a fresh repository."""
    for rel, text in SAMPLE.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    _git(root, "-c", "init.defaultBranch=main", "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "sample project with a red test suite")


def write_templates(project: Project) -> None:
    """Project templates derived from the packaged ci-triage: scripted harness, this Python."""
    packaged = framework_home() / "templates" / "loops" / "ci-triage"
    base = jsontext.loads((packaged / "loop.json").read_text(encoding="utf-8"))
    for _, template, script, window in LOOPS:
        folder = project.dot / "templates" / "loops" / template
        folder.mkdir(parents=True, exist_ok=True)
        doc = json.loads(json.dumps(base))
        doc["description"] = f"{base['description']} (demo: recorded agent {script})"
        doc["harness"] = {"name": "scripted", "model": None, "args": [f"pkg:{script}"], "timeout_s": 120}
        doc["roles"]["verify"]["command"] = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        doc["brakes"]["score_plateau_window"] = window
        (folder / "loop.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        for prompt in packaged.glob("*.md"):
            (folder / prompt.name).write_bytes(prompt.read_bytes())


@contextlib.contextmanager
def _approver(name: str) -> Iterator[None]:
    old = os.environ.get("AUTOMATON_APPROVER")
    os.environ["AUTOMATON_APPROVER"] = name
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("AUTOMATON_APPROVER", None)
        else:
            os.environ["AUTOMATON_APPROVER"] = old


_HIDDEN = ("state=", "prev=", "iterations_at_approval=", "spent_usd_at_approval=", "resumed=", "path=")


def _log_tail(project: Project, name: str, n: int = 8) -> list[str]:
    """The last `n` tick-log lines without their hash-chain fields."""
    path = store.Loop.resolve(project, name).log_file
    shown = []
    for line in path.read_text(encoding="utf-8").splitlines()[-n:]:
        keep = [p for p in line.split(" ") if not p.startswith(_HIDDEN)]
        shown.append(" ".join(keep))
    return shown


def _say(console: Console, outcome: Outcome, *, warnings: bool = True) -> None:
    for line in outcome.lines:
        if not line.startswith("tick "):  # tick lines were already shown as the ticks ran
            console.print(line, markup=False, highlight=False)
    for warning in outcome.warnings if warnings else []:
        console.print(f"warning: {warning}", markup=False, style="yellow")


def _show_loop(console: Console, project: Project, name: str) -> None:
    s = store.read_state(project, name)
    console.print(f"worktree: {s.worktree_path} on {s.worktree_branch} (base {str(s.base_commit)[:10]})",
                  markup=False, highlight=False)
    if s.worktree_path:
        log = _git(project.root, "log", "--oneline", "--no-decorate", f"{s.base_commit}..{s.worktree_branch}")
        for line in log.splitlines():
            console.print(f"  commit {line}", markup=False, highlight=False)
    console.print("tick log (.state.log; hash-chain and approval fields hidden):", style="bold")
    for line in _log_tail(project, name):
        console.print(f"  {line}", markup=False, highlight=False)


def _show_attempts(console: Console, project: Project, name: str) -> None:
    runs = store.Loop.resolve(project, name).runs
    for log in sorted(runs.glob("*/implement.log")):
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("attempt_"):
                console.print(f"  agent: {line}", markup=False, highlight=False)
    s = store.read_state(project, name)
    console.print(f"  loop.json still says max_iterations={store.read_config(project, name).brakes.max_iterations};"
                  f" .state.loop still counts {s.iteration_count} tick(s)", markup=False, highlight=False)


def _refused(project: Project, name: str) -> int:
    """Attempts the kernel sandbox refused the loop's agent (`attempt_*: denied` lines of its
    transcripts: writes, chmod, connecting to another process's socket)."""
    runs = store.Loop.resolve(project, name).runs
    return sum(line.startswith("attempt_") and ": denied" in line
               for log in runs.glob("*/implement.log")
               for line in log.read_text(encoding="utf-8", errors="replace").splitlines())


def _summary(console: Console, project: Project) -> list[dict[str, Any]]:
    table = Table(title="automaton demo: loops (refused: the agent's writes, chmods and socket connections the"
                        " kernel denied)")
    for col in ("loop", "status", "halt reason", "ticks", "spent", "score", "refused"):
        table.add_column(col, no_wrap=True)  # "verifier_failed" must stay readable at 80 columns
    rows = []
    for name, *_ in LOOPS:
        s = store.read_state(project, name)
        score = s.last_verdict.score if s.last_verdict is not None else None
        row = {"loop": name, "status": s.status, "halt_reason": s.halt_reason,
               "iterations": s.iteration_count, "spent_usd": s.spent_usd,
               "last_score": score, "resumed_count": s.resumed_count,
               "refused_writes": _refused(project, name)}
        rows.append(row)
        style = {"complete": "green", "halted": "red"}.get(s.status, "")
        table.add_row(name, f"[{style}]{s.status}[/]" if style else s.status, s.halt_reason or "-",
                      str(s.iteration_count), f"${s.spent_usd:.3f}",
                      "-" if score is None else score_text(score), str(row["refused_writes"]))
    console.print(table)
    return rows


@contextlib.contextmanager
def _human_socket(path: Path) -> Iterator[list[bytes]]:
    """A UNIX socket listening at `path` in the demo's temp folder, standing in for the human's
    tmux server, ssh-agent or D-Bus socket in /tmp: yields the list of what any process sent
    to it (an agent that reached it could have had the human's terminal run a command)."""
    got: list[bytes] = []
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(4)
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    got.append(conn.recv(4096))

    waiter = threading.Thread(target=serve, name="demo-human-socket", daemon=True)
    waiter.start()
    try:
        yield got
    finally:
        stop.set()
        waiter.join(2)
        server.close()


def _create(console: Console, project: Project, name: str, template: str) -> None:
    """Create a loop from the demo's project template: it starts halted for its first approval
    (no human has seen that loop.json), which the demo gives itself as its human."""
    _say(console, loop_cmds.create_loop(project, name, template))
    with _approver("demo"):
        review = loop_cmds.review_loop(project, name)
        _say(console, loop_cmds.approve_loop(project, name, review))


def _session_demo(console: Console, project: Project) -> None:
    """Seal `"sessions": "sandboxed"`, then run the real hook on one Write from outside and from
    inside `automaton --sandbox` (both real processes of this interpreter), printing each answer."""

    project.config_file.write_text('{"schema_version": 1, "sessions": "sandboxed"}\n', encoding="utf-8")
    with _approver("demo"):
        _say(console, config_seal.approve_config(project, config_seal.review_config(project)))
    automaton = [sys.executable, "-m", "automaton"]
    hook = [*automaton, "--hook", "claude", "--project", str(project.root)]
    payload = json.dumps({"cwd": str(project.root), "hook_event_name": "PreToolUse", "tool_name": "Write",
                          "tool_input": {"file_path": str(project.root / "NOTES.md"), "content": "notes\n"}})
    env = {k: v for k, v in os.environ.items() if k not in ("AUTOMATON_TASK", "AUTOMATON_APPROVER")}
    runs = [("claude started as `claude` (no sandbox)", hook)]
    found = available()
    if found.ok and found.isolated:
        runs.append(("claude started as `automaton claude` (= automaton --sandbox -- claude)",
                     [*automaton, "--sandbox", "--project", str(project.root), "--", *hook]))
    else:
        console.print(f"(no kernel sandbox here, so the sandboxed half is not shown: {found.detail}"
                      f" {found.isolation_detail})", markup=False, highlight=False)
    for label, argv in runs:
        done = subprocess.run(argv, input=payload, capture_output=True, text=True, env=env, timeout=60, check=False)
        said = [line for line in done.stderr.splitlines() if line.startswith("automaton denied")]
        verdict = "denied" if done.returncode == 2 else "allowed" if done.returncode == 0 else f"exit {done.returncode}"
        console.print(f"{label}: Write NOTES.md -> hook {verdict}", markup=False, highlight=False)
        for line in said:
            console.print(f"  {line}", markup=False, highlight=False, style="yellow")
    if len(runs) > 1:
        console.print("Inside the sandbox the hook judges the call normally; the kernel still holds the scope"
                      " (no task here: nothing in the project is writable).", markup=False, highlight=False)


# What points automaton at the user's key folder, account ledger and caps (`~/.config/automaton`),
# their kept exports and deferrals, or hands it a record key: the demo replaces or drops them all.
_HOME_VARS = ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", KEY_ENV, KEY_FILE_ENV, WITHHELD_ENV)


@contextlib.contextmanager
def own_home(home: Path) -> Iterator[None]:
    """For the demo's duration HOME is `home` (created) and no XDG folder or record key of the
    user's is visible: its ticks charge and read a key folder, account ledger and caps of
    their own, never the user's real ones (a day cap of 0 there made `make demo` fail, and
    every demo tick was charged to the user's account). The variables are restored after."""
    home.mkdir(parents=True, exist_ok=True)
    saved = {k: os.environ.get(k) for k in _HOME_VARS}
    for k in _HOME_VARS:
        os.environ.pop(k, None)
    os.environ["HOME"] = str(home)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_demo(console: Console | None = None) -> Outcome:
    """Run the demo in a temporary folder (removed afterwards), with a HOME of its own there
    (`own_home`). data: {"loops": [rows]}."""
    if importlib.util.find_spec("pytest") is None:
        raise BadInput("the demo's verify step runs pytest, which this Python lacks: pip install pytest"
                       " (make demo installs it)")
    console = console or Console(soft_wrap=True)
    opts = TickOptions(progress=Progress(stream=console.file))
    with tempfile.TemporaryDirectory(prefix="automaton-demo-") as tmp, own_home(Path(tmp) / "home"):
        root = Path(tmp) / "sample"
        build_sample(root)
        project = Project(root.resolve())
        write_templates(project)
        console.rule("automaton demo (offline: the agent is the scripted fake harness)")
        console.print(f"sample project: {root}  (pytest suite: 1 of 4 tests pass)", markup=False, highlight=False)

        console.print("Each loop comes from a project template, so it starts halted until a human approves the"
                      " whole loop.json; the demo approves them itself (AUTOMATON_APPROVER=demo).",
                      style="yellow", markup=False)
        console.rule("loop 1: fix-ci — fix the red suite until the loop completes")
        _create(console, project, "fix-ci", "ci-triage")
        _say(console, loop_cmds.check_gate(project, "fix-ci"))
        run_loop(project, "fix-ci", 10, opts)
        _show_loop(console, project, "fix-ci")

        console.rule("loop 2: drift-check — an edit outside file_scope halts the loop")
        _create(console, project, "drift-check", "ci-triage-drift")
        _say(console, run_loop(project, "drift-check", 10, opts), warnings=False)
        console.print("The demo approves this halt itself with AUTOMATON_APPROVER=demo; in real use a human runs "
                      "`automaton --approve --loop drift-check` at a terminal.", style="yellow", markup=False)
        with _approver("demo"):
            _say(console, loop_cmds.approve_loop(project, "drift-check"))
        run_loop(project, "drift-check", 10, opts)
        _show_loop(console, project, "drift-check")

        console.rule("loop 3: stuck-agent — a flat score halts the loop (verifier_failed)")
        _create(console, project, "stuck-agent", "ci-triage-plateau")
        _say(console, run_loop(project, "stuck-agent", 10, opts), warnings=False)
        _show_loop(console, project, "stuck-agent")

        console.rule("loop 4: greedy-agent — the agent tries to raise its own brakes and get out; the kernel refuses")
        _create(console, project, "greedy-agent", "ci-triage-greedy")
        with _human_socket(Path(tmp) / "human.sock") as reached:
            run_loop(project, "greedy-agent", 10, opts)
        _show_attempts(console, project, "greedy-agent")
        console.print(f"  the human's socket ({Path(tmp) / 'human.sock'}) received "
                      + (f"{len(reached)} message(s) from the agent" if reached else "nothing"),
                      markup=False, highlight=False)

        console.rule("session: an agent session outside the sandbox may not write")
        _session_demo(console, project)

        console.rule("summary")
        rows = _summary(console, project)
        console.rule("automaton --loop-status drift-check")
        _say(console, loop_status(project, "drift-check"))
        with contextlib.suppress(BadInput):  # leave no worktree registrations behind in the temp repo
            _git(project.root, "worktree", "prune")
    return Outcome(lines=[], data={"loops": rows})
