"""Loop use cases: create, pause/resume, approve (seed 000 R1–R3, R10; DESIGN §5).

The gate (`loop_gate`) and the read-side views (`loop_views`) are re-exported here.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from automaton.commands.human import require_human
from automaton.commands.loop_gate import _Facts, can_continue, check_gate
from automaton.commands.loop_views import audit_section, can_edit_loop, loop_list
from automaton.commands.loops_common import optional as _optional
from automaton.core.errors import BadInput, Refused
from automaton.core.gates import (
    STATE_TAMPERED,
    accepted_entry,
    out_of_scope,
)
from automaton.core.loopconfig import initial_state, loads_strict
from automaton.core.names import NAME_RE, LoopName, TaskRef
from automaton.core.outcome import Outcome
from automaton.git import run_git
from automaton.git.worktree import branch_name, list_worktrees
from automaton.store import loops, tasks
from automaton.store.chainlog import utc_now
from automaton.store.layout import Project, framework_home
from automaton.store.locks import Busy, locked

HALTED_MSG = "loop is halted, use --approve --loop to clear halt"  # seed 000 R3, verbatim
# DESIGN §3: runtime files git must never see; the last three are what --install-schedule writes.
EXCLUDES = ("worktree/", "runs/", ".lock", ".state*", "run-tick.*", "schedule.json", "schedule.log")


# ---- create ---------------------------------------------------------------------------------

def _template_dir(project: Project, template: str) -> Path:
    if not isinstance(template, str) or not NAME_RE.match(template):
        raise BadInput(f"invalid template name {template!r}: templates are kebab-case folder names like 'ci-triage'")
    name = template
    places = [project.dot / "templates" / "loops" / name, framework_home() / "templates" / "loops" / name]
    for place in places:
        if (place / loops.CONFIG_FILE).is_file():
            return place
    raise BadInput(f"no loop template {name!r}: looked for loop.json in {places[0]} and {places[1]}")


def create_loop(project: Project, name: str, template: str, task: str | None = None) -> Outcome:
    """Create `.automaton/loops/NAME/` from a template (R1, R2): loop.json (name/task patched,
    validated, sealed), the role prompts, `.state.loop` and `.state.log` (CREATED).

    Exit 2: invalid name, existing loop (or a file where its folder should be), missing/invalid
    template, unknown task. Exit 1: branch `loop/<name>` or a worktree registration at its
    worktree path is left from an earlier loop of that name. Nothing is created on any error;
    nothing existing is overwritten.
    """
    loop = LoopName.of(name)
    src = _template_dir(project, template)
    source = str(src / loops.CONFIG_FILE)
    obj = loads_strict((src / loops.CONFIG_FILE).read_bytes().decode("utf-8", "replace"), source)
    if not isinstance(obj, dict):
        raise BadInput(f"{source}: must be a JSON object")
    obj["name"], obj["template"] = str(loop), src.name
    if task is not None:
        obj["task"] = str(TaskRef.parse(task))
    data = (json.dumps(obj, indent=2) + "\n").encode("utf-8")
    config = loops.parse_config_bytes(data, f"{source} (as loop {loop})")
    if config.task is not None:
        tasks.load(project, TaskRef.parse(config.task))  # BadInput: unknown task
    files = {loops.CONFIG_FILE: data}
    wanted = {p for p in (config.roles.implement.prompt, config.roles.verify.prompt, config.roles.orchestrate.prompt)
              if p is not None}
    wanted |= {p.name for p in src.iterdir() if p.is_file() and p.suffix == ".md"}
    for rel in sorted(wanted):
        try:
            files[rel] = (src / rel).read_bytes()
        except OSError:
            raise BadInput(f"{source}: role prompt {rel!r} is missing from the template {src}") from None
    if not os.path.lexists(project.loop_dir(loop)):  # an existing folder/file: loops.create says what it is
        _refuse_leftovers(project, loop)
    state = initial_state(loop, config.task, config.sha256, utc_now())
    folder = loops.create(project, loop, files, state, {"loop": loop, "template": src.name,
                                                         "task": config.task})
    out = Outcome(lines=[f"created loop {loop} at {folder.relative_to(project.root)}/ from template {src.name}"],
                  data={"loop": loop, "path": str(folder), "template": src.name, "state": state})
    added = _exclude_runtime(project)
    if added:
        out.lines.append(f"added {len(added)} pattern(s) to .git/info/exclude so git never sees loop runtime files")
    return out


def _refuse_leftovers(project: Project, loop: LoopName) -> None:
    """Refused (exit 1) while branch `loop/<name>` exists or a worktree is registered at the
    loop's worktree path: they belong to an earlier loop of that name whose folder (and
    counters) was deleted; re-creating it must not hand out a fresh allowance."""
    branch, wt = branch_name(loop), project.worktree_dir(loop)
    has_branch = run_git(project.root, ["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"]).code == 0
    registered = any(os.path.realpath(e.get("worktree", "")) == os.path.realpath(wt)
                     for e in list_worktrees(project.root) or [])
    if not has_branch and not registered:
        return
    what = " and ".join(x for x in (f"branch {branch}" if has_branch else "",
                                    f"a worktree registered at {wt}" if registered else "") if x)
    steps = "; ".join(x for x in (f"git worktree remove --force {wt}" if registered else "",
                                  f"git branch -D {branch}" if has_branch else "") if x)
    raise Refused(f"loop {loop!r} cannot be created: {what} of an earlier loop {loop} still exist(s)"
                  f" (re-creating the folder would reset its counters): a human reviews it, runs {steps},"
                  f" then automaton --create-loop {loop} again")


def _exclude_runtime(project: Project) -> list[str]:
    """Append the loop runtime patterns to the repo's info/exclude (git repos only)."""
    from automaton.commands.excludes import exclude

    return exclude(project, tuple(f".automaton/loops/*/{p}" for p in EXCLUDES),
                   "# automaton loop runtime files")


# ---- pause / resume / approve ---------------------------------------------------------------

def _status_change(project: Project, name: str, want: str) -> Outcome:
    """pause (want "paused") or resume (want "running")."""
    with loops.session(project, name) as s:
        if s.rec.tamper:
            raise loops.StateTampered(f"{s.rec.tamper}; a human clears it with: automaton --approve --loop {name}")
        status = s.rec.state["status"]
        if status == "halted":
            raise Refused(HALTED_MSG if want == "running" else f"loop {name} is halted: nothing to pause")
        if status == "complete":
            raise Refused(f"loop {name} is complete: complete is terminal")
        if status == want:
            return Outcome(lines=[f"{name}: already {want}"], data={"loop": name, "status": want})
        new = copy.deepcopy(s.rec.state)
        new["status"] = want
        s.commit("PAUSED" if want == "paused" else "RESUMED", {"loop": name}, new)
    func = "disable_best_effort" if want == "paused" else "enable_best_effort"
    warning = _optional("automaton.commands.schedule", func, project, LoopName(name))
    return Outcome(lines=[f"{name}: {status} -> {want}"], data={"loop": name, "status": want},
                   warnings=[warning] if warning else [])


def pause_loop(project: Project, name: str) -> Outcome:
    """running -> paused (logged PAUSED; schedule disabled best-effort). Exit 1 on halted/complete."""
    return _status_change(project, str(loops.require_tracked(project, name)), "paused")


def resume_loop(project: Project, name: str) -> Outcome:
    """paused -> running (logged RESUMED). Never clears a halt: exit 1 with the seed's message."""
    return _status_change(project, str(loops.require_tracked(project, name)), "running")


def approve_loop(project: Project, name: str) -> Outcome:
    """The only way out of `halted` (a human act): running again with a fresh allowance
    (iterations/spend marks at their current values, score_history emptied, a drift halt's
    current out-of-scope files accepted), loop.json re-sealed, resumed_count += 1, logged
    APPROVED, schedule re-enabled best-effort. Also re-seals a tampered state, and a loop.json a
    human edited while the loop runs or is paused (logged RESEALED, status unchanged). A deleted
    or unreadable `.state.loop` whose log is intact is rebuilt from the log's counters and
    approved the same way. An approval also clears `worktree_fallback` (the human has seen it)
    and binds `current_task` to loop.json's `task` when that is set. Exit 1 on any other status
    or without a human; exit 2 when the new loop.json is invalid (still halted).
    """
    who = require_human("--approve --loop")
    loop = loops.require_tracked(project, name)
    with between_ticks(project, loop, "--approve --loop"):
        return _approve(project, loop, who)


@contextmanager
def between_ticks(project: Project, loop: LoopName, action: str) -> Iterator[None]:
    """Hold the loop's tick lock for a human act: never while a tick runs.

    A process inside a running tick (the agent, or code it wrote that the verify step runs)
    would otherwise be able to clear its own loop's halt. Refused (exit 1) when a tick holds it.
    """
    held = locked(loops.tick_lock_path(project, loop), timeout_s=0)
    try:
        held.__enter__()
    except Busy:
        raise Refused(f"a tick of loop {loop} is running: {action} only between ticks"
                      " (wait for it to finish, or stop it, then run the command again)") from None
    try:
        yield
    finally:
        held.__exit__(None, None, None)


def _approve(project: Project, loop: LoopName, who: str) -> Outcome:
    with loops.session(project, loop, rebuild=True) as s:
        old, tampered, tamper = s.rec.state, bool(s.rec.tamper), s.rec.tamper
        if not tampered and old["status"] in ("running", "paused"):
            resealed = _reseal_config(project, loop, s, old, who)
            if resealed is not None:
                return resealed
        if not tampered and old["status"] != "halted":
            raise Refused(f"loop {loop} is {old['status']}: --approve --loop only clears a halt"
                          + (" (use --resume-loop for a paused loop)" if old["status"] == "paused" else ""))
        config = loops.read_config(project, loop)
        accepted: list[str] = []  # "path@blob": bound to the content the human saw (a later write is drift)
        if old["halt_reason"] == "drift_detected" and not tampered:
            drift = _Facts(project, loop, old, None, None).drift_of(None)
            blobs = dict(drift.blobs)
            accepted = [accepted_entry(f, blobs.get(f, "unknown"))
                        for f in out_of_scope(drift.files, config.blast_radius.file_scope, old["accepted_drift"],
                                              drift.blobs)]
        replaced = {e.rpartition("@")[0] for e in accepted}

        def fresh(new: dict[str, Any]) -> None:
            new.update(status="running", halt_reason=None, halt_detail=None, resumed_count=new["resumed_count"] + 1,
                       iterations_at_approval=new["iteration_count"], spent_usd_at_approval=new["spent_usd"],
                       score_history=[], config_sha256=config.sha256, worktree_fallback=None,
                       current_task=config.task or new["current_task"],
                       accepted_drift=sorted({*(e for e in new["accepted_drift"]
                                                 if "@" in e and e.rpartition("@")[0] not in replaced), *accepted}))

        fields: dict[str, object] = {"loop": loop, "by": who,
                                     "cleared": STATE_TAMPERED if tampered else old["halt_reason"]}
        if accepted:
            fields["accepted"] = ",".join(accepted)
        if config.sha256 != old["config_sha256"]:
            fields["resealed"] = config.sha256[:12]
        if tampered:
            state = s.reseal_tampered("APPROVED", fields, fresh)
        else:
            state = copy.deepcopy(old)
            fresh(state)
            s.commit("APPROVED", fields, state)
    cleared = f"{STATE_TAMPERED}; the file said {old['status']}" if tampered else old["halt_reason"]
    out = Outcome(lines=[f"{loop}: halted ({cleared}) -> running (approved by {who};"
                         f" resumed_count={state['resumed_count']})"],
                  data={"loop": loop, "status": "running", "by": who, "cleared": fields["cleared"],
                        "resumed_count": state["resumed_count"], "accepted_drift": accepted})
    out.lines += [f"  accepted drift: {path} at {blob[:12]}" for path, _, blob in (e.rpartition("@") for e in accepted)]
    if tampered:  # say what the human vouched for (a broken log is kept as .state.log.broken*)
        out.lines.append(f"  re-sealed: {tamper}")
    warning = _optional("automaton.commands.schedule", "enable_best_effort", project, loop)
    if warning:
        out.warnings.append(warning)
    return out


def _reseal_config(project: Project, loop: LoopName, s: loops.Session, old: dict[str, Any], who: str) -> Outcome | None:
    """A human who edited loop.json of a running or paused loop seals the new config without
    waiting for the gate to halt on it (status and counters unchanged). None: nothing to seal."""
    config = loops.read_config(project, loop)
    if config.sha256 == old["config_sha256"]:
        return None
    state = copy.deepcopy(old)
    state["config_sha256"] = config.sha256
    s.commit("RESEALED", {"loop": loop, "by": who, "config": config.sha256[:12]}, state)
    return Outcome(lines=[f"{loop}: loop.json re-sealed (approved by {who}); status stays {old['status']}"],
                   data={"loop": loop, "status": old["status"], "by": who, "resealed": config.sha256})

__all__ = ["HALTED_MSG", "approve_loop", "audit_section", "can_continue", "can_edit_loop", "check_gate",
           "create_loop", "loop_list", "pause_loop", "resume_loop"]
