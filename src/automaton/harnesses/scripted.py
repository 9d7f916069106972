"""A deterministic fake agent shipped in the package, for tests and the demo.

It replays recorded per-iteration actions from a JSON script:

    {"implement": [STEP, STEP, …], "verify": [STEP, …], "orchestrate": [STEP, …]}
    STEP = {"actions": [ACTION, …], "text": "final text", "cost_usd": 0.05 | null,
            "exit_status": 0, "error": null}
    ACTION = {"write": "rel/path", "content": "…"} | {"append": "rel/path", "content": "…"}
           | {"replace": "rel/path", "old": "…", "new": "…"} | {"delete": "rel/path"}
           | {"attempt_write": "any/path", "content": "…"}

Step i (1-based tick number `req.iteration`) of the role's list is replayed; past the end
nothing is changed, the text says so and the cost is $0. A step without `cost_usd` reports
an unknown cost (None), like a real tool that prints none. The script is `harness.args[0]`:
a path relative to the loop folder, or `pkg:<name>` for `resources/scripted/<name>.json`.
Paths of write/append/replace/delete must stay inside `req.cwd` (no absolute paths, no `..`).
`attempt_write` takes any path (relative to `req.cwd`, `..` and absolute allowed) and records
`attempt_write <path>: written`, `…: denied (EACCES)` (EPERM, EROFS) or `…: failed (<errno>)`
without failing the step: it shows what the kernel sandbox stops, e.g. an agent trying to
raise its own brakes in `../../loop.json`.

The replay runs in its own process, like a real agent (`_replay`): through `run_cli`, in
`req.cwd`, inside `req.sandbox`, with the cleaned agent environment. Its cost is what the
script says, read back from that process's output like a real agent's.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path
from typing import Any

from automaton.core import jsontext
from automaton.core.errors import BadInput
from automaton.harnesses import HarnessRequest, HarnessResult, Invocation
from automaton.harnesses._cli import number, run_cli, tail
from automaton.harnesses._replay import ScriptError, load, step_of

PKG = "pkg:"


def script_path(req: HarnessRequest) -> Path:
    """The script file named by `harness.args[0]` (absolute); BadInput when missing."""
    if not req.args:
        raise BadInput("harness 'scripted' needs harness.args[0]: a script path or pkg:<name>")
    ref = req.args[0]
    if ref.startswith(PKG):
        name = ref[len(PKG):]
        if not name or "/" in name or "\\" in name or name.startswith("."):
            raise BadInput(f"scripted harness: invalid packaged script {ref!r}")
        return Path(str(resources.files("automaton") / "resources" / "scripted" / f"{name}.json"))
    path = Path(ref)
    return (path if path.is_absolute() else (req.loop_dir or req.cwd) / path).absolute()


def invocation(req: HarnessRequest) -> Invocation:
    """argv: `PYTHON -P -S <package>/harnesses/_replay.py SCRIPT ROLE ITERATION`, no stdin.

    The replay file is run by its path, not as `-m automaton.harnesses.scripted`: `-m` imports
    the `automaton.harnesses` package (its dataclasses and typing) before the replay starts,
    which doubled the start of this stand-in agent; `_replay` needs only the standard library,
    so `-S` skips site-packages too. `-P` keeps the script's folder and the working directory
    (the agent's worktree) off `sys.path`, so nothing there can stand in for a module."""
    python = sys.executable or "python3"
    replay = Path(__file__).with_name("_replay.py")
    return Invocation(argv=[python, "-P", "-S", str(replay), str(script_path(req)), req.role, str(req.iteration)])


def check(req: HarnessRequest) -> None:
    """BadInput (a loop configuration error, before any process starts) when the script or
    the step to replay cannot be used."""
    path = script_path(req)
    try:
        step_of(load(path), req.role, req.iteration)
    except ScriptError as exc:
        where = "" if str(path) in str(exc) else f" ({path})"
        raise BadInput(f"scripted harness: {exc}{where}") from None


def parse(stdout: str, stderr: str, code: int) -> HarnessResult:
    """The result object the replay prints as its last line; an error when there is none
    (the process was killed or never started)."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    obj: Any = None
    if lines:
        try:
            obj = jsontext.loads(lines[-1])
        except ValueError:
            obj = None
    if not isinstance(obj, dict):
        why = tail(stderr, 300) or f"scripted replay printed no result (exit {code})"
        return HarnessResult(code, "", None, {}, why.splitlines()[-1])
    error = obj.get("error")
    text = obj.get("text")
    return HarnessResult(code, text if isinstance(text, str) else "", number(obj.get("cost_usd")), {},
                         None if error is None else str(error))


def run(req: HarnessRequest) -> HarnessResult:
    """Replay step `req.iteration` of `req.role` in a child process; transcript to
    `runs/<n>/<role>.log`. BadInput before starting it when the script is unusable."""
    check(req)
    return run_cli(req, invocation(req), parse)


if __name__ == "__main__":
    from automaton.harnesses._replay import main

    sys.exit(main(sys.argv[1:]))
