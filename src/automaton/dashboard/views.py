"""What each dashboard page shows, as plain dicts built from the store (read-only).

The figures come from the same functions as the CLI: `commands/loop_status.py` (`loop_summary`
for the list of loops; `status_with_record` for one loop: its status and the verified log the
tick table and the halt history are read from, one read for both), and `commands/reports.py`
`audit` for the task board's violations. Nothing here writes but for one case: a loop whose
state and log disagree (a writer died mid-commit, or tampering) is read again under its state
lock by `loops.Loop.inspect`, which settles an interrupted commit (`chainlog.recover`). No task
is migrated.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

from automaton.commands.loop_status import loop_summary, status_with_record
from automaton.commands.spend import account_line, account_view
from automaton.core import jsontext
from automaton.core.errors import AutomatonError, BadInput
from automaton.core.names import LoopName, TaskRef
from automaton.core.scores import score_text
from automaton.dashboard.plots import day_bars, line_plot, sparkline
from automaton.store import loops
from automaton.store.key import key_path
from automaton.store.layout import Project
from automaton.store.looplog import logged_counters

SHOWN_TICKS = 300  # rows of the tick table (the plots carry every tick)
HISTORY_EVENTS = ("HALT", "APPROVED", "RESEALED", "PAUSED", "RESUMED", "REARMED")


class NotFound(BadInput):
    """No such project index, loop, task or tick (the page answers 404)."""


def gone(project: Project) -> str | None:
    """Why `project` can no longer be shown (its folder was deleted, moved or emptied of
    automaton's folders since the dashboard started), or None. Without this a deleted project
    would read as one with no loops and no tasks."""
    if project.dot.is_dir() or project.tasks_dir.is_dir():
        return None
    what = "no longer an automaton project (no .automaton/ or tasks/ folder)" if project.root.is_dir() else "gone"
    return f"project folder {project.root} is {what}: it was deleted or moved since the dashboard started"


def project_at(projects: list[Project], i: int) -> Project:
    if not 0 <= i < len(projects):
        raise NotFound(f"no project {i}: this dashboard serves {len(projects)} project(s)")
    return projects[i]


def loop_name(project: Project, name: str) -> LoopName:
    """A tracked loop of `project` (NotFound for an invalid name or an unknown loop)."""
    try:
        return loops.require_tracked(project, LoopName.of(name))
    except AutomatonError as exc:
        raise NotFound(exc.message) from None


def task_ref(project: Project, task: str) -> str:
    """`task` (NAME or PARENT/SUB) when it names a task folder of `project`, else NotFound."""
    try:
        ref = TaskRef.parse(task)
    except AutomatonError as exc:
        raise NotFound(exc.message) from None
    if not project.task_dir(ref).is_dir():
        raise NotFound(f"unknown task {task!r} in {project.root}")
    return str(ref)


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _verdict_text(verdict: dict[str, Any] | None) -> str:
    if not verdict:
        return "-"
    summary = str(verdict.get("summary") or "")[:160]
    return score_text(verdict.get("score")) + (f" ({summary})" if summary else "")


def _next_fire(summary: dict[str, Any]) -> str:
    """When the next tick fires, estimated from schedule.json and the last tick (the dashboard
    does not ask the OS scheduler for 200 loops; the loop page shows the installed unit)."""
    record = summary["schedule_record"]
    if record is None:
        return "not scheduled"
    if summary["status"] != "running" or not record["enabled"]:
        return f"disabled ({summary['status']})"
    last = summary["last_tick"]["at"]
    try:
        when = datetime.fromisoformat(str(last).replace("Z", "+00:00")) + timedelta(seconds=record["interval_seconds"])
    except ValueError:
        return f"every {record['interval_seconds']} s"
    now = datetime.now(UTC)
    return "about " + max(when, now).strftime("%Y-%m-%dT%H:%M:%SZ")


# (project root, loop) -> (the signature of the files its summary read, the summary). The page
# polls every 2 s; a loop whose files did not change is not read and verified again.
_summaries: dict[tuple[str, str], tuple[tuple[Any, ...], dict[str, Any]]] = {}


def _signature(project: Project, name: str) -> tuple[Any, ...]:
    """Identity of every file `loop_summary(costs=False)` reads: inode, size, mtime and ctime
    (a write in place that puts the mtime back still moves the ctime), and the key's."""
    folder = project.loop_dir(LoopName(name))
    out: list[Any] = []
    for path in (folder / loops.STATE_FILE, folder / loops.LOG_FILE, folder / loops.CONFIG_FILE,
                 folder / "schedule.json", key_path()):
        try:
            st = os.stat(path)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(out)


def summary(project: Project, name: str) -> dict[str, Any]:
    """`commands.loop_status.loop_summary(costs=False)` of the loop, read again only when one of
    its files changed since the last call (see `_signature`). Raises as loop_summary."""
    key = (str(project.root), name)
    sig = _signature(project, name)
    found = _summaries.get(key)
    if found is not None and found[0] == sig:
        return found[1]
    data = loop_summary(project, name, costs=False)
    _summaries[key] = (sig, data)
    return data


def loop_rows(projects: list[Project]) -> list[dict[str, Any]]:
    """One row per loop folder of every project, in project then name order. A loop whose state
    cannot be read, or a project folder that is gone, is a row with status "error" and the
    reason in `halt_detail`."""
    rows: list[dict[str, Any]] = []
    for i, project in enumerate(projects):
        why = gone(project)
        if why is not None:
            rows.append(error_row(i, project, "-", why))
            continue
        try:
            names = loops.list_loops(project)
        except AutomatonError as exc:
            rows.append(error_row(i, project, "-", exc.message))
            continue
        for name in names:
            try:
                s = summary(project, name)
            except AutomatonError as exc:
                rows.append(error_row(i, project, name, exc.message))
                continue
            it, sp, last = s["iterations"], s["spend_usd"], s["last_tick"]
            rows.append({
                "project": i, "project_name": project.root.name, "name": name, "status": s["status"],
                "halt_reason": s["halt_reason"] or ("state_tampered" if s["tamper"] else ""),
                "halt_detail": s["tamper"] or s["halt_detail"] or s["config_error"] or "",
                "iterations": f"{it['used']} / {it['max'] if it['max'] is not None else '?'}",
                "iterations_left": "?" if it["left"] is None else str(it["left"]),
                "spend": f"{_usd(sp['used'])} / {_usd(sp['max'])}", "spend_left": _usd(sp["left"]),
                "spark": sparkline([p["score"] for p in s["scores"]], width=80),
                "last_score": score_text(s["scores"][-1]["score"]) if s["scores"] else "-",
                "last_tick": last["at"] or "-", "verdict": _verdict_text(last["verdict"]),
                "next_fire": _next_fire(s),
            })
    return rows


def account_panel() -> dict[str, Any]:
    """The account-wide caps for the list of loops (`commands.spend.account_view`): `line`
    (one line: each window's use beside its cap, or why it cannot be read) and `plot` (SVG:
    USD spent per UTC day by every loop here, the day cap dashed)."""
    view = account_view()
    day = next((w for w in view["windows"] if w["kind"] == "day"), None)
    days = [(d["day"], float(d["used_usd"])) for d in view["days"]]
    return {"line": account_line(view),
            "plot": day_bars("account-spend-plot", days, label="USD spent per UTC day by every loop here",
                             cap=day["cap_usd"] if day else None)}


def error_row(i: int, project: Project, name: str, message: str) -> dict[str, Any]:
    return {"project": i, "project_name": project.root.name, "name": name, "status": "error", "halt_reason": "",
            "halt_detail": message, "iterations": "-", "iterations_left": "-", "spend": "-", "spend_left": "-",
            "spark": sparkline([]), "last_score": "-", "last_tick": "-", "verdict": "-", "next_fire": "-"}


def _number(text: str | None) -> float | None:
    try:
        return None if text in (None, "", "null") else float(str(text))
    except ValueError:
        return None


def _tick_verdict(folder: Any, n: str) -> str:
    try:
        data = jsontext.loads((folder / "runs" / n / "verdict.json").read_bytes()[:65536])
        return str(data.get("summary") or "")[:160] if isinstance(data, dict) else ""
    except (OSError, ValueError):
        return ""


def loop_page(project: Project, name: str) -> dict[str, Any]:
    """Everything the loop page shows: `status` (commands.loop_status.status_data), `ticks`
    (newest first, at most SHOWN_TICKS: n, at, verdict, cost (USD text), score text, state),
    `history` (HISTORY_EVENTS lines: at, event, reason, by, via), `score_plot` and
    `spend_plot` (SVG: one point per scored tick; one per tick with a cost, y = USD spent in
    all after it). NotFound for an unknown loop."""
    loop = loop_name(project, name)
    status, rec = status_with_record(project, loop)  # one read of the log for both
    ticks: dict[str, dict[str, Any]] = {}
    history: list[dict[str, str]] = []
    spend: list[tuple[float, float]] = []
    for line in rec.chain.lines:
        f, n = line.fields, line.fields.get("n", "")
        if line.event == "TICK_START" and n.isdigit():
            ticks[n] = {"n": int(n), "at": line.ts, "state": "running or died unsettled", "cost": "-",
                        "score": "-", "verdict": ""}
        elif line.event in ("TICK", "TICK_DEFERRED") and n.isdigit():
            score = _number(f.get("score"))
            state = ("deferred" if line.event == "TICK_DEFERRED" else "halted" if f.get("halted") == "True"
                     else "complete" if f.get("complete") == "True" else "scored" if score is not None else "unscored")
            cost = _number(f.get("cost"))
            ticks[n] = {"n": int(n), "at": line.ts, "state": state, "cost": _usd(cost),
                        "score": score_text(score) if score is not None else "-", "verdict": ""}
            spent = logged_counters(line).get("spent_usd")
            if cost is not None and spent is not None:
                spend.append((float(n), spent))
        elif line.event in HISTORY_EVENTS:
            reason = (f"{f.get('reason', '')}: {f.get('detail', '')}".rstrip(": ") if line.event == "HALT"
                      else f"cleared {f['cleared']}" if "cleared" in f else f.get("config", ""))
            history.append({"at": line.ts, "event": line.event, "reason": reason, "by": f.get("by", "-"),
                            "via": f.get("via", "cli" if "by" in f else "-")})
    shown = sorted(ticks.values(), key=lambda t: -t["n"])[:SHOWN_TICKS]
    for t in shown:
        t["verdict"] = _tick_verdict(rec.dir, str(t["n"]))
    scores = [(float(p["n"]), float(p["score"])) for p in status["scores"]]
    return {
        "status": status, "ticks": shown, "tick_count": len(ticks), "history": history[::-1],
        "score_plot": line_plot("score-plot", scores, label=f"score of loop {loop} per scored tick", y_max=1.0),
        "spend_plot": line_plot("spend-plot", spend, label=f"USD spent by loop {loop} after each tick",
                                y_unit="$"),
        "verdict": _verdict_text(status["last_tick"]["verdict"]),
        "account_line": account_line(status["account"]),
    }
