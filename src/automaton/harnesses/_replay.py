"""The scripted fake agent's own process: replay one recorded step in the working directory.

Run as `python -P -S <this file> SCRIPT ROLE ITERATION` (see `scripted.invocation`; `python -P
-m automaton.harnesses.scripted …` runs the same `main`), in the agent's working directory and,
when the tick has one, inside the kernel sandbox like any agent. Standard library only (not even
`typing`), so the process starts as fast as a bare interpreter: no automaton package, no rich.

Output (stdout): `scripted ROLE step N`, one line per action, the step's text, then one last
line, the result as JSON: `{"text": str, "cost_usd": float | null, "exit_status": int,
"error": str | null}`. The process exits with the step's `exit_status` (0..255; anything else
gives 1). A script that cannot be used (unreadable, wrong shapes, a path leaving the working
directory) gives exit 2 and the reason as `error`, never a traceback.
"""

from __future__ import annotations

import errno
import json
import sys
from pathlib import Path, PurePosixPath

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name)
if TYPE_CHECKING:
    from typing import Any

IN_TREE = ("write", "append", "replace", "delete")
ATTEMPT = "attempt_write"
# The other attempts a hostile agent makes around a write: make a read-only file writable
# (mode 0777), and reach a process outside the sandbox through its UNIX socket (a human's
# tmux server, an ssh-agent) and write to it.
CHMOD = "attempt_chmod"
CONNECT = "attempt_connect"
ATTEMPTS = (ATTEMPT, CHMOD, CONNECT)
DENIED = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
# A socket the agent cannot see at all (a private /tmp) or cannot reach is refused too.
UNREACHABLE = frozenset({errno.ENOENT, errno.ECONNREFUSED, errno.ENOTDIR})
BAD_SCRIPT = 2


class ScriptError(Exception):
    """The script cannot be replayed; the message is one line naming the problem."""


def load(path: Path) -> dict[str, Any]:
    """The script's JSON object; ScriptError when it is missing, unreadable or not an object."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ScriptError(f"script {path} not found") from None
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: JSON nested too deeply
        raise ScriptError(f"cannot read {path}: {exc}") from None
    if not isinstance(doc, dict):
        raise ScriptError(f"{path} must hold a JSON object of role -> steps")
    return doc


def _rel(value: object) -> PurePosixPath:
    if not isinstance(value, str) or not value:
        raise ScriptError(f"action path {value!r} must be a non-empty string")
    pure = PurePosixPath(value)
    if pure.is_absolute() or ".." in pure.parts:
        raise ScriptError(f"action path {value!r} must stay inside the worktree")
    return pure


def _check_action(action: object) -> None:
    if not isinstance(action, dict):
        raise ScriptError(f"action {action!r} is not an object")
    kinds = [k for k in (*IN_TREE, *ATTEMPTS) if k in action]
    if len(kinds) != 1:
        raise ScriptError(f"unknown action {sorted(action)}: use one of {', '.join((*IN_TREE, *ATTEMPTS))}")
    if kinds[0] in ATTEMPTS:
        if not isinstance(action[kinds[0]], str) or not action[kinds[0]]:
            raise ScriptError(f"{kinds[0]} path {action[kinds[0]]!r} must be a non-empty string")
    else:
        _rel(action[kinds[0]])


def step_of(doc: dict[str, Any], role: str, iteration: int) -> dict[str, Any]:
    """Step `iteration` (1-based) of `role`, checked (ScriptError); past the end a step that
    changes nothing, says so and costs $0."""
    steps = doc.get(role, [])
    if not isinstance(steps, list):
        raise ScriptError(f"{role!r} must be a list of steps")
    if iteration > len(steps):
        return {"text": "script finished: nothing left to do", "cost_usd": 0.0}
    step = steps[iteration - 1]
    if not isinstance(step, dict):
        raise ScriptError(f"step {iteration} of {role!r} is not an object")
    actions = step.get("actions", [])
    if not isinstance(actions, list):
        raise ScriptError(f"step {iteration} of {role!r}: actions must be a list")
    for action in actions:
        _check_action(action)
    return step


def _errno_name(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, "EIO")


def _connect(path: Path, content: str) -> None:
    import socket  # lazy: only a step that connects needs it; this script starts bare (module docstring)

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(str(path))
        sock.sendall(content.encode("utf-8"))


def _attempt(cwd: Path, action: dict[str, Any]) -> str:
    # Deliberately unchecked (`..`, absolute): it shows what the kernel sandbox lets through.
    kind = next(k for k in ATTEMPTS if k in action)
    where = action[kind]
    content = str(action.get("content", ""))
    try:
        if kind == CHMOD:
            (cwd / where).chmod(0o777)
        elif kind == CONNECT:
            _connect(cwd / where, content)
        else:
            with open(cwd / where, "w", encoding="utf-8") as fh:
                fh.write(content)
    except OSError as exc:
        refused = DENIED | (UNREACHABLE if kind == CONNECT else frozenset())
        verdict = "denied" if exc.errno in refused else "failed"
        return f"{kind} {where}: {verdict} ({_errno_name(exc)})"
    return f"{kind} {where}: {'done' if kind != ATTEMPT else 'written'}"


def apply(cwd: Path, action: dict[str, Any]) -> str:
    """Apply one checked action in `cwd`; returns its transcript line. OSError propagates
    for the in-tree kinds (the step then fails); the `attempt_*` kinds never raise."""
    if any(k in action for k in ATTEMPTS):
        return _attempt(cwd, action)
    kind = next(k for k in IN_TREE if k in action)
    path = cwd.joinpath(*_rel(action[kind]).parts)
    if kind in ("write", "append"):
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w" if kind == "write" else "a", encoding="utf-8") as fh:
            fh.write(str(action.get("content", "")))
    elif kind == "replace":
        text = path.read_text(encoding="utf-8")
        old, new = str(action.get("old", "")), str(action.get("new", ""))
        if old not in text:
            return f"replace {action[kind]}: text not found, unchanged"
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
    else:
        path.unlink(missing_ok=True)
    return f"{kind} {action[kind]}"


def _cost(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def replay(script: Path, role: str, iteration: int, cwd: Path) -> tuple[list[str], dict[str, Any], int]:
    """(transcript lines, result object, exit code) of replaying the step in `cwd`."""
    lines = [f"scripted {role} step {iteration}"]
    try:
        step = step_of(load(script), role, iteration)
    except ScriptError as exc:
        why = f"scripted harness: {exc}"
        return [*lines, why], {"text": "", "cost_usd": None, "exit_status": BAD_SCRIPT, "error": why}, BAD_SCRIPT
    recorded = step.get("error")
    error: str | None = None if recorded is None else str(recorded)
    status = step.get("exit_status", 0)
    code = status if isinstance(status, int) and not isinstance(status, bool) and 0 <= status <= 255 else 1
    for action in step.get("actions", []):
        try:
            lines.append(apply(cwd, action))
        except OSError as exc:  # a recorded edit that cannot be made here fails the step, like a tool error
            kind = next(k for k in IN_TREE if k in action)
            what = f"{kind} {action[kind]}"
            lines.append(f"{what}: failed ({_errno_name(exc)})")
            error = error or f"scripted harness: {what} failed ({exc.strerror})"
            code = code or 1
    text = str(step.get("text", ""))
    lines.append(text)
    return lines, {"text": text, "cost_usd": _cost(step.get("cost_usd")), "exit_status": code, "error": error}, code


def main(argv: list[str]) -> int:
    """`SCRIPT ROLE ITERATION`: replay in the current directory, print, return the exit code."""
    if len(argv) != 3 or not argv[2].isdigit() or int(argv[2]) < 1:
        sys.stderr.write("usage: python -m automaton.harnesses.scripted SCRIPT ROLE ITERATION (1-based)\n")
        return BAD_SCRIPT
    lines, result, code = replay(Path(argv[0]), argv[1], int(argv[2]), Path("."))
    out = "\n".join(lines) + "\n" + json.dumps(result) + "\n"
    sys.stdout.buffer.write(out.encode("utf-8", "backslashreplace"))
    sys.stdout.flush()
    return code


if __name__ == "__main__":  # run by its path (`scripted.invocation`): the package is never imported
    sys.exit(main(sys.argv[1:]))
