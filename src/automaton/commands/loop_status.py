"""`--loop-status NAME`: one loop at a glance, for a person who left it running (read-only).

`status_data` computes everything (a future dashboard reuses it); `loop_status` renders it.
Sources: `.state.loop` (status, counters), the verified lines of `.state.log` (every scored
tick, the cost of every tick since the last approval), `runs/<n>/cost.json` (which part of a
tick's cost was reported and which was counted at the `max_tick_usd` cap), the installed
schedule (`commands.schedule_info`) and git (the worktree branch against its base branch).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from automaton.commands.gate_next import PENDING_STEP, pending_line
from automaton.commands.schedule import read_record
from automaton.commands.schedule_info import schedule_info
from automaton.commands.spend import account_line, account_view
from automaton.core import jsontext
from automaton.core.errors import AutomatonError
from automaton.core.gates import remaining
from automaton.core.loopconfig import LoopConfig
from automaton.core.loopstate import LoopState, micro_to_usd
from automaton.core.outcome import Outcome
from automaton.core.scores import score_text as score_text  # moved to core: --loop-list needs it alone
from automaton.git import run_git
from automaton.git.worktree import branch_name
from automaton.store import deferrals, loops
from automaton.store.layout import Project
from automaton.store.loops import Loop, LoopRecord

BARS = "▁▂▃▄▅▆▇█"
SHOWN_BARS = 120  # sparkline characters in the text form (the JSON carries every scored tick)


def sparkline(scores: list[float]) -> str:
    """One bar per score on the fixed 0..1 scale (0 -> ▁, 1 -> █), so a flat line at 0.25
    never looks like a climb."""
    return "".join(BARS[min(len(BARS) - 1, max(0, int(s * len(BARS))))] for s in scores)


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _num(text: str | None) -> float | None:
    """A finite number from a log field; None for absent, "null", or anything else."""
    try:
        value = None if text in (None, "null") else float(str(text))
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _cost_split(folder: Any, n: str, cost: float, known: bool) -> tuple[float, float]:
    """(USD reported by the harnesses, USD counted at the cap) of tick `n`: from
    runs/<n>/cost.json when it is readable, else all of the TICK line's cost on one side."""
    try:
        data = jsontext.loads((folder / "runs" / n / "cost.json").read_text(encoding="utf-8"))
        reported = sum(float(c) for c in data["by_role"].values() if isinstance(c, int | float) and c >= 0)
        counted = float(data["counted_usd"])
        return round(min(reported, counted), 6), round(max(0.0, counted - reported), 6)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return (cost, 0.0) if known else (0.0, cost)


def _from_log(rec: loops.LoopRecord, costs: bool = True) -> dict[str, Any]:
    """Scores of every tick, and the cost split of the ticks since the approval marks last
    moved (an approval or re-arm hands out a fresh allowance). Without `costs`, runs/<n>/cost.json
    is not read: a tick's whole cost counts as reported or as at the cap by its line's cost_known."""
    scores: list[dict[str, Any]] = []
    known = at_cap = 0.0
    reserved: dict[str, float] = {}
    marks: tuple[float, float] | None = None
    for line in rec.chain.lines:
        # The two marks alone (not logged_counters: this runs for every line of every loop a
        # dashboard lists). A line without a readable mark leaves the marks as they were.
        mark = _num(line.fields.get("iterations_at_approval"))
        if mark is not None:
            now = (mark, _num(line.fields.get("spent_usd_at_approval")) or -1.0)
            if marks is not None and now != marks:
                known = at_cap = 0.0
                reserved.clear()
            marks = now
        n = line.fields.get("n", "")
        if line.event == "TICK_START":
            reserved[n] = _num(line.fields.get("reserved_usd")) or 0.0
        elif line.event == "TICK_DEFERRED":  # put off by a usage limit: what it spent is in the line
            reserved.pop(n, None)
            cost = _num(line.fields.get("cost")) or 0.0
            known_cost = line.fields.get("cost_known", "").lower() == "true"
            known, at_cap = known + (cost if known_cost else 0.0), at_cap + (0.0 if known_cost else cost)
        elif line.event == "TICK":
            reserved.pop(n, None)
            score = _num(line.fields.get("score"))
            if score is not None and n.isdigit():
                scores.append({"n": int(n), "score": score})
            cost = _num(line.fields.get("cost")) or 0.0
            cost_known = line.fields.get("cost_known", "").lower() == "true"
            k, c = (_cost_split(rec.dir, n, cost, cost_known) if costs
                    else (cost, 0.0) if cost_known else (0.0, cost))
            known, at_cap = known + k, at_cap + c
    return {"scores": scores, "known": round(known, 6), "at_cap": round(at_cap, 6),
            "reserved": round(float(sum(reserved.values())), 6), "unsettled": len(reserved)}


def _worktree(loop: Loop, state: LoopState, config: LoopConfig | None) -> dict[str, Any]:
    project = loop.project
    path, branch = state.worktree_path, state.worktree_branch or branch_name(loop.name)
    out: dict[str, Any] = {"path": path, "branch": state.worktree_branch, "exists": False, "base": None,
                           "ahead": None, "behind": None, "error": None}
    if path is None:
        return out

    out["exists"] = Path(path).is_dir()
    base = config.blast_radius.base_branch if config is not None else None
    if base is None:
        head = run_git(project.root, ["symbolic-ref", "--short", "-q", "HEAD"])
        base = head.out.strip() if head.code == 0 and head.out.strip() else "HEAD"
    out["base"] = base
    counts = run_git(project.root, ["rev-list", "--left-right", "--count", f"{base}...refs/heads/{branch}", "--"])
    try:
        behind, ahead = (int(x) for x in counts.out.split())
        out.update(ahead=ahead, behind=behind)
    except ValueError:
        out["error"] = (counts.err.strip().splitlines() or [f"git rev-list exit {counts.code}"])[0]
    return out


def loop_summary(project: Project, name: str, *, costs: bool = True) -> dict[str, Any]:
    """The part of `status_data` that reads only the loop's own files (no OS scheduler, no git),
    for views that list many loops at once (the dashboard). `costs` False: runs/<n>/cost.json is
    not read, so spend_usd's known / counted_at_cap split is only as exact as the log lines say
    (a tick with any unknown cost counts wholly at the cap). One JSON-ready dict:

    {loop, status, halt_reason, halt_detail, tamper, config_error, iterations, spend_usd, scores,
     sparkline, last_tick, deferred} (each as in `status_data`), plus schedule_record
    ({interval_seconds (seconds), enabled, system} as `--install-schedule` recorded it in
    schedule.json, or null when there is none or it cannot be read; the unit itself is not
    checked here).
    Errors: BadInput (exit 2) for an unknown, untracked or unreadable loop.
    """
    return _summary(Loop.resolve(project, name), costs)[0]


def _summary(handle: Loop, costs: bool = True, rec: LoopRecord | None = None) -> \
        tuple[dict[str, Any], LoopState, LoopConfig | None]:
    """(loop_summary's dict, the loop's state, its loop.json or None when unreadable); `rec`:
    the loop as the caller read it (`Loop.inspect`), else read here."""
    if rec is None:
        rec = handle.inspect()
    loop, state = rec.name, rec.state
    config: LoopConfig | None = None
    config_error = None
    try:
        config = handle.read_config()
    except AutomatonError as exc:
        config_error = exc.message
    iters, micro = state.used()
    left_iter, left_usd = remaining(state, config.brakes) if config else (None, None)
    log = _from_log(rec, costs)
    verdict = state.last_verdict
    data = {
        "loop": loop, "status": state.status, "halt_reason": state.halt_reason,
        "halt_detail": state.halt_detail, "tamper": rec.tamper or None, "config_error": config_error,
        "iterations": {"used": iters, "max": config.brakes.max_iterations if config else None, "left": left_iter,
                       "total": state.iteration_count},
        "spend_usd": {"used": micro_to_usd(micro), "max": config.brakes.max_budget_usd if config else None,
                      "left": left_usd, "total": state.spent_usd, "known": log["known"],
                      "counted_at_cap": log["at_cap"], "reserved": log["reserved"],
                      "unsettled_ticks": log["unsettled"]},
        "scores": log["scores"], "sparkline": sparkline([s["score"] for s in log["scores"]]),
        "last_tick": {"n": state.iteration_count or None, "at": state.last_tick_at,
                      "verdict": verdict.to_dict() if verdict else None},
        "deferred": _deferred(config), "schedule_record": _schedule_record(handle),
    }
    return data, state, config


def _schedule_record(loop: Loop) -> dict[str, Any] | None:
    try:
        record = read_record(loop.project, loop.name)
    except AutomatonError:
        return None
    if record is None:
        return None
    return {"interval_seconds": record["interval_seconds"], "enabled": record["enabled"], "system": record["system"]}


def status_data(project: Project, name: str) -> dict[str, Any]:
    """Everything `--loop-status` shows, as one JSON-ready dict:

    {loop, status, halt_reason, halt_detail, tamper (str|null), config_error (str|null: loop.json
     cannot be read, so the limits are unknown),
     iterations: {used, max, left (since the last approval/re-arm; max/left null when unknown),
                  total (all ticks)},
     spend_usd: {used, max, left (USD since the last approval/re-arm; max/left null for a local
                 harness or an unreadable loop.json), total (USD, all ticks), known (USD the
                 harnesses reported), counted_at_cap (USD charged at max_tick_usd because a cost
                 was unknown), reserved (USD held by ticks that have not settled: one running
                 now, or one that died), unsettled_ticks (how many such ticks)},
     scores: [{n, score}] (every scored tick in the log, oldest first), sparkline (str, one bar
     per score), last_tick: {n, at (ISO-8601 UTC), verdict ({score, passed, done, summary,
     source}|null)}, schedule (see schedule_info.schedule_info), worktree: {path, branch,
     exists, base (the branch it is compared with), ahead, behind (commits; null on error),
     error}, deferred ({until (ISO UTC), harness, source ("reported"|"backoff"), streak, reason}
     while the account of the loop's harness is deferred on this machine by a usage limit, else
     null), account (the account-wide caps beside the loop's own budget: `commands.spend.account_view`),
     io_error_pending (str|null: the `io_error: …` halt a tick could not write, which the next
     tick records: `store.loops.Loop.pending_io_halt`), next_step (str|null: the command a human runs next)}.
    The fields that read only the loop's files come from `loop_summary` (one source).
    Errors: BadInput (exit 2) for an unknown, untracked or unreadable loop.
    """
    return _status_data(Loop.resolve(project, name))


def status_with_record(project: Project, name: str) -> tuple[dict[str, Any], LoopRecord]:
    """`status_data` and the `LoopRecord` (state and verified log) it was made from: a view that
    shows both (the dashboard's loop page: status, then the tick table from the log) reads and
    verifies the log once, and never shows a status and a log from either side of a write.
    Errors as `status_data`'s: BadInput (exit 2) for an unknown, untracked or unreadable loop."""
    loop = Loop.resolve(project, name)
    rec = loop.inspect()
    return _status_data(loop, rec), rec


def _status_data(loop: Loop, rec: LoopRecord | None = None) -> dict[str, Any]:
    data, state, config = _summary(loop, rec=rec)
    data.pop("schedule_record")
    deferred = data.pop("deferred")
    data["schedule"] = schedule_info(loop.project, loop.name, last_tick_at=state.last_tick_at)
    data["worktree"] = _worktree(loop, state, config)
    data["deferred"] = deferred
    data["account"] = account_view()
    data["io_error_pending"] = loop.pending_io_halt()
    data["next_step"] = _next_step(data)
    return data


def _deferred(config: LoopConfig | None) -> dict[str, Any] | None:
    if config is None:
        return None

    found = deferrals.read(config.harness.name)
    if found is None or not found.active():
        return None
    return {"until": found.until_iso, "harness": found.harness, "source": found.source, "streak": found.streak,
            "reason": found.reason}


def _next_step(d: dict[str, Any]) -> str | None:
    loop, status = d["loop"], d["status"]
    if d["tamper"] or status == "halted":
        return f"automaton --approve --loop {loop}"
    if d["io_error_pending"]:
        return PENDING_STEP.format(loop=loop)
    if status == "paused":
        return f"automaton --resume-loop {loop}"
    if status == "complete":
        return f"automaton --rearm-loop {loop} (more work) or automaton --remove-loop {loop} (done)"
    if not d["schedule"]["installed"]:
        return f"automaton --install-schedule {loop}"
    return None


def _schedule_line(d: dict[str, Any]) -> str:
    s, loop = d["schedule"], d["loop"]
    if not s["installed"]:
        return "not scheduled"
    if s["problem"]:
        return f"PROBLEM: {s['problem']}"
    what = f"{s['scheduler']} {s['spec'] or ''}".strip() + f" (every {s['interval_seconds']} s)"
    if s["unit"] != "present":
        return f"{what}, disabled while the loop is {d['status']}"
    if d["status"] != "running":  # the disable at the halt or completion failed, or was undone
        return (f"{what}: still enabled though the loop is {d['status']}; its next fire is refused and turns it"
                f" off (or automaton --uninstall-schedule {loop})")
    when = s["next_fire"] or "unknown"
    return f"{what}, enabled, next fire {when if s['next_fire_exact'] or when == 'unknown' else 'about ' + when}"


def _worktree_line(w: dict[str, Any]) -> str:
    if w["path"] is None:
        return "none yet (the first tick creates it)"
    where = f"{w['path']}{'' if w['exists'] else ' (missing)'} on {w['branch'] or '-'}"
    if w["error"]:
        return f"{where}; cannot compare with {w['base']}: {w['error']}"
    return f"{where}: {w['ahead']} ahead of, {w['behind']} behind {w['base']}"


def _held(sp: dict[str, Any]) -> str:
    """`held by an unsettled tick $X` or `held by N unsettled ticks $X` (spend_usd's reserved)."""
    ticks = sp.get("unsettled_ticks") or 1
    return f"held by {'an unsettled tick' if ticks == 1 else f'{ticks} unsettled ticks'} {_usd(sp['reserved'])}"


def _alert_lines(d: dict[str, Any]) -> list[str]:
    """What stops or holds the loop besides its status: a tamper, an invalid loop.json, a halt
    a tick could not record, a deferral of its agent account."""
    lines = []
    if d["tamper"]:
        lines.append(f"  TAMPERED: {d['tamper']}")
    lines += [f"  loop.json: {problem}" for problem in (d["config_error"] or "").splitlines()]  # one per field
    if d["io_error_pending"]:
        lines.append(pending_line(d["io_error_pending"]))
    if d["deferred"]:
        dd = d["deferred"]
        lines.append(f"  deferred until {dd['until']}: {dd['harness']} usage limit ({dd['reason']}); ticks of every"
                     f" loop using {dd['harness']} wait, nothing to do")
    return lines


def loop_status(project: Project, name: str) -> Outcome:
    """`--loop-status NAME [--json]`: the lines below, data = `status_data` (exit 0; exit 2 for
    an unknown, untracked or unreadable loop)."""
    d = _status_data(Loop.resolve(project, name))
    it, sp, last = d["iterations"], d["spend_usd"], d["last_tick"]
    head = f"loop {d['loop']}: {d['status']}"
    if d["halt_reason"]:
        head += f" ({d['halt_reason']}" + (f": {d['halt_detail']})" if d["halt_detail"] else ")")
    lines = [head, *_alert_lines(d)]
    lines.append(f"  iterations: {it['used']} used of {it['max'] if it['max'] is not None else '?'} since approval,"
                 f" {it['left'] if it['left'] is not None else '?'} left ({it['total']} in all)")
    budget = (f"{_usd(sp['used'])} used of {_usd(sp['max'])} since approval, {_usd(sp['left'])} left"
              if sp["max"] is not None else f"{_usd(sp['used'])} used since approval (no USD budget)")
    split = [f"reported {_usd(sp['known'])}", f"counted at the tick cap {_usd(sp['counted_at_cap'])}"]
    if sp["reserved"]:
        split.append(_held(sp))
    lines.append(f"  spend: {budget} ({', '.join(split)}; {_usd(sp['total'])} in all)")
    if d["account"]["caps_set"] or d["account"]["error"]:  # the account-wide caps beside the loop's
        lines.append(f"  {account_line(d['account'])}")
    scores = [s["score"] for s in d["scores"]]
    if scores:
        bars = d["sparkline"] if len(scores) <= SHOWN_BARS else "…" + d["sparkline"][-SHOWN_BARS:]
        lines.append(f"  scores: {bars} {score_text(scores[0])} -> {score_text(scores[-1])}"
                     f" (best {score_text(max(scores))}, {len(scores)} scored ticks)")
    else:
        lines.append("  scores: none yet")
    verdict = last["verdict"] or {}
    if last["at"] and last["n"]:  # a first tick put off by a usage limit set `at` but counted nothing
        lines.append(f"  last tick: {last['n']} at {last['at']}, score {score_text(verdict.get('score'))}"
                     + (f" ({verdict['summary']})" if verdict.get("summary") else ""))
    else:
        lines.append("  last tick: none yet")
    lines.append(f"  schedule: {_schedule_line(d)}")
    lines.append(f"  worktree: {_worktree_line(d['worktree'])}")
    if d["next_step"]:
        lines.append(f"  next step: {d['next_step']}")
    return Outcome(lines=lines, data=d)
