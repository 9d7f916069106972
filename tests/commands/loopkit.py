"""Helpers of the long-running-loop tests: loops with any loop.json, ticks recorded as the runner
records them (TICK_START reservation, TICK settlement, runs/<n>/cost.json), and a real worktree."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from automaton.commands.loops import create_loop
from automaton.core.names import LoopName
from automaton.store import loops
from automaton.store.layout import Project
from tests.core.test_loopconfig import DESIGN_EXAMPLE
from tests.helpers import approve_first, git, via_json


def loop_with(root: Path, name: str = "demo", *, first_approval: bool = True, **top: Any) -> Project:
    """Loop `name` from a project template whose loop.json is the README's example with the
    top-level keys in `top` replaced, and dict values merged one level deep (brakes={…}).
    `first_approval`: give it the human's first approval (False: it stays halted waiting)."""
    data = copy.deepcopy(DESIGN_EXAMPLE)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update(value)
        else:
            data[key] = value
    tdir = root / ".automaton" / "templates" / "loops" / f"t-{name}"
    tdir.mkdir(parents=True, exist_ok=True)
    (tdir / "loop.json").write_text(json.dumps(data))
    (tdir / "implement.md").write_text("do the work\n")
    project = Project(root.resolve())
    create_loop(project, name, f"t-{name}")
    if first_approval:
        approve_first(root, name)  # a project template's loop waits for a human's first approval
    return project


def tick(p: Project, score: float | None, by_role: dict[str, float | None], *, name: str = "demo",
         cap: float = 2.0, complete: bool = False) -> dict[str, Any]:
    """One tick as runner/tick.py records it: reserve `cap` USD (TICK_START), write
    runs/<n>/cost.json, settle with a TICK line (unknown costs counted at `cap`)."""
    n = loops.read_state(p, name).iteration_count + 1

    def reserve(s: dict[str, Any]) -> None:
        s["iteration_count"] += 1
        s["spent_usd"] = round(float(s["spent_usd"]) + cap, 6)
        s["last_tick_at"] = "2026-12-01T00:00:00Z"

    loops.update_state(p, name, via_json("TICK_START", {"n": n, "reserved_usd": repr(cap)}, reserve))
    readable = [c for c in by_role.values() if c is not None]
    counted = round(sum(readable) + (len(by_role) - len(readable)) * cap, 6)
    known = len(readable) == len(by_role)
    run = p.loop_dir(LoopName(name)) / "runs" / str(n)
    run.mkdir(parents=True)
    (run / "cost.json").write_text(json.dumps({"by_role": by_role, "known": known, "counted_usd": counted}))
    verdict = {"score": score, "passed": score == 1.0, "done": complete, "summary": f"tick {n}", "source": "junit"}

    def settle(s: dict[str, Any]) -> None:
        s["spent_usd"] = round(max(0.0, float(s["spent_usd"]) + counted - cap), 6)
        s["last_verdict"] = verdict
        if score is not None:
            s["score_history"] = [*s["score_history"], score][-5:]
        if complete:
            s["status"] = "complete"

    fields = {"n": n, "score": "null" if score is None else f"{score:.4f}", "cost": f"{counted:.4f}",
              "cost_known": known, "complete": complete}
    return loops.update_state(p, name, via_json("TICK", fields, settle, refund_usd=max(0.0, cap - counted)))


def add_worktree(p: Project, name: str = "demo") -> Path:
    """What the runner's ensure_worktree does: worktree on loop/<name>, state records it."""
    wt = p.worktree_dir(LoopName(name))
    base = git(p.root, "rev-parse", "HEAD").strip()
    git(p.root, "worktree", "add", "-q", "-b", f"loop/{name}", str(wt), base)
    loops.update_state(p, name, via_json("WORKTREE", {"path": str(wt), "branch": f"loop/{name}", "base": base},
                       lambda s: s.update(worktree_path=str(wt), base_commit=base, worktree_branch=f"loop/{name}")))
    return wt


def log_lines(p: Project, name: str = "demo") -> list[str]:
    return (p.loop_dir(LoopName(name)) / loops.LOG_FILE).read_text().splitlines()


def human_seal(p: Project, name: str = "demo") -> None:
    """What `--approve --loop` records when a human seals loop.json as it is now: a keyed
    RESEALED line by a human, the seal set to loop.json's bytes, their copy kept."""
    from automaton.store.loops import Loop

    loop = Loop.resolve(p, name)
    sha = loop.config_sha256()
    loops.update_state(p, name, via_json("RESEALED", {"loop": name, "by": "tester", "config": sha[:12]},
                       lambda s: s.update(config_sha256=sha)))
    assert loop.keep_sealed_copy(sha)
