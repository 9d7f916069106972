"""A deterministic fake agent shipped in the package, for tests and the demo (DESIGN §7).

It replays recorded per-iteration actions from a JSON script, in process, in `req.cwd`:

    {"implement": [STEP, STEP, …], "verify": [STEP, …], "orchestrate": [STEP, …]}
    STEP = {"actions": [ACTION, …], "text": "final text", "cost_usd": 0.05 | null,
            "exit_status": 0, "error": null}
    ACTION = {"write": "rel/path", "content": "…"} | {"append": "rel/path", "content": "…"}
           | {"replace": "rel/path", "old": "…", "new": "…"} | {"delete": "rel/path"}

Step i (1-based tick number `req.iteration`) of the role's list is replayed; past the end
nothing is changed, the text says so and the cost is $0. A step without `cost_usd` reports
an unknown cost (None), like a real tool that prints none. The script is `harness.args[0]`:
a path relative to the loop folder, or `pkg:<name>` for `resources/scripted/<name>.json`.
Paths in actions must stay inside `req.cwd` (no absolute paths, no `..`).
"""

from __future__ import annotations

import json
import time
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any

from automaton.core.errors import BadInput
from automaton.harnesses import HarnessRequest, HarnessResult, Invocation

PKG = "pkg:"


def script_path(req: HarnessRequest) -> Path:
    """The script file named by `harness.args[0]`; BadInput when missing."""
    if not req.args:
        raise BadInput("harness 'scripted' needs harness.args[0]: a script path or pkg:<name>")
    ref = req.args[0]
    if ref.startswith(PKG):
        name = ref[len(PKG):]
        if not name or "/" in name or "\\" in name or name.startswith("."):
            raise BadInput(f"scripted harness: invalid packaged script {ref!r}")
        return Path(str(resources.files("automaton") / "resources" / "scripted" / f"{name}.json"))
    path = Path(ref)
    return path if path.is_absolute() else (req.loop_dir or req.cwd) / path


def load(req: HarnessRequest) -> dict[str, Any]:
    path = script_path(req)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInput(f"scripted harness: script {path} not found") from None
    except (OSError, ValueError) as exc:
        raise BadInput(f"scripted harness: cannot read {path}: {exc}") from None
    if not isinstance(doc, dict):
        raise BadInput(f"scripted harness: {path} must hold a JSON object of role -> steps")
    return doc


def invocation(req: HarnessRequest) -> Invocation:
    """What dry-run shows: the script replayed (no process is started)."""
    return Invocation(argv=["<scripted>", str(script_path(req)), f"{req.role}#{req.iteration}"])


def _target(cwd: Path, rel: object) -> Path:
    if not isinstance(rel, str) or not rel:
        raise BadInput(f"scripted harness: action path {rel!r} must be a non-empty string")
    pure = PurePosixPath(rel)
    if pure.is_absolute() or ".." in pure.parts:
        raise BadInput(f"scripted harness: action path {rel!r} must stay inside the worktree")
    return cwd.joinpath(*pure.parts)


def apply(cwd: Path, action: dict[str, Any]) -> str:
    """Apply one action in `cwd`; returns a transcript line."""
    if "write" in action or "append" in action:
        key = "write" if "write" in action else "append"
        path = _target(cwd, action[key])
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w" if key == "write" else "a", encoding="utf-8") as fh:
            fh.write(str(action.get("content", "")))
        return f"{key} {action[key]}"
    if "replace" in action:
        path = _target(cwd, action["replace"])
        text = path.read_text(encoding="utf-8")
        old, new = str(action.get("old", "")), str(action.get("new", ""))
        if old not in text:
            return f"replace {action['replace']}: text not found, unchanged"
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
        return f"replace {action['replace']}"
    if "delete" in action:
        path = _target(cwd, action["delete"])
        path.unlink(missing_ok=True)
        return f"delete {action['delete']}"
    raise BadInput(f"scripted harness: unknown action {sorted(action)}")


def run(req: HarnessRequest) -> HarnessResult:
    """Replay step `req.iteration` of `req.role`; transcript to `runs/<n>/<role>.log`."""
    started = time.monotonic()
    steps = load(req).get(req.role, [])
    if not isinstance(steps, list):
        raise BadInput(f"scripted harness: {script_path(req)}: {req.role!r} must be a list of steps")
    lines = [f"scripted {req.role} step {req.iteration}"]
    if req.iteration > len(steps):
        step: dict[str, Any] = {"text": "script finished: nothing left to do", "cost_usd": 0.0}
    else:
        step = steps[req.iteration - 1]
        if not isinstance(step, dict):
            raise BadInput(f"scripted harness: step {req.iteration} of {req.role!r} is not an object")
    for action in step.get("actions", []):
        lines.append(apply(req.cwd, action))
    text = str(step.get("text", ""))
    lines.append(text)
    req.run_dir.mkdir(parents=True, exist_ok=True)
    req.transcript.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cost = step.get("cost_usd")
    cost_usd = float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None
    code = step.get("exit_status", 0)
    return HarnessResult(
        exit_status=code if isinstance(code, int) else 1, final_text=text, cost_usd=cost_usd,
        tokens={}, error=step.get("error"), timed_out=False, duration_s=time.monotonic() - started,
    )
