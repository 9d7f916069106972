"""Loop use cases: create, pause/resume, approve (README.md#loops-bounded-unattended-agents).

The gate (`loop_gate`) and the read-side views (`loop_views`) are re-exported here.

`automaton --can-edit --loop` (a verb of the fast argv path, cli/fastpath.py) imports this module
(cli/verbs_tasks.py): the frozen test set and the holdout's git checks (xml.etree, with
core.verdicts) are imported only where an approval or a new loop reads them (`# lazy:`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from automaton.commands import first_approval
from automaton.commands import templates as tpl
from automaton.commands.excludes import exclude
from automaton.commands.human import Human, acting
from automaton.commands.loop_gate import _Facts, can_continue, check_gate
from automaton.commands.loop_views import audit_section, can_edit_loop, loop_list
from automaton.commands.loops_common import optional as _optional
from automaton.commands.loops_common import require_sealed_project_config
from automaton.commands.reviews import Review, diff_lines
from automaton.core import jsontext, loopstate
from automaton.core.digest import sha256_hex
from automaton.core.errors import BadInput, Refused
from automaton.core.gates import (
    STATE_TAMPERED,
    accepted_entry,
    out_of_scope,
)
from automaton.core.loopconfig import LoopConfig, initial_state, loads_strict, state_json
from automaton.core.loopstate import LoopState
from automaton.core.names import LoopName, TaskRef
from automaton.core.outcome import Outcome
from automaton.git import run_git
from automaton.git.worktree import branch_name, list_worktrees
from automaton.store import loops, tasks
from automaton.store.chainlog import utc_now
from automaton.store.layout import Project
from automaton.store.locks import Busy, locked
from automaton.store.loops import Loop

if TYPE_CHECKING:
    from automaton.core.loopstate import Status

HALTED_MSG = "loop is halted, use --approve --loop to clear halt"  # a stable text: docs/architecture.md
# Runtime files git must never see (docs/architecture.md#what-git-sees); the last three are what
# --install-schedule writes.
# `sealed/` holds the copy of the sealed loop.json, beside the seal in `.state.loop` (excluded too).
EXCLUDES = ("worktree/", "runs/", ".lock", ".state*", "run-tick.*", "schedule.json", "schedule.log", "sealed/")


# ---- create ---------------------------------------------------------------------------------

def _template_dir(project: Project, template: str) -> tuple[Path, bool]:
    """(the template folder, whether it is the project's copy shadowing a packaged template of
    the same name): `commands.templates.template_dir`."""
    return tpl.template_dir(project, template)


def create_loop(project: Project, name: str, template: str, task: str | None = None,
                variables: list[str] | None = None, *, worktree: bool = True) -> Outcome:
    """Create `.automaton/loops/NAME/` from a template: loop.json (name/task patched,
    `{{placeholders}}` filled from `variables` (`--var NAME=VALUE`) and the template's defaults
    (`commands.templates`), validated, sealed; its copy in `sealed/loop.json`), the role
    prompts (filled the same way), `scorer.py` when loop.json names `{{scorer}}`, `.state.loop`
    and `.state.log` (CREATED). The output says when the project's template shadows a packaged
    one. `worktree=False` (`--no-worktree`): loop.json gets `blast_radius.use_worktree: false`,
    so its ticks run and commit in the main checkout (README.md#loopjson says what that costs).

    Exit 2: invalid name, existing loop (or a file where its folder should be), missing/invalid
    template (the message names close matches), a placeholder without a value, a `--var` the
    template does not use, unknown task. Exit 1: branch `loop/<name>` or a worktree registration
    at its worktree path is left from an earlier loop of that name. Nothing is created on any error;
    nothing existing is overwritten.
    """
    loop = LoopName.of(name)
    src, shadows = _template_dir(project, template)
    source = str(src / loops.CONFIG_FILE)
    obj = loads_strict((src / loops.CONFIG_FILE).read_bytes().decode("utf-8", "replace"), source)
    if not isinstance(obj, dict):
        raise BadInput(f"{source}: must be a JSON object")
    obj["name"], obj["template"] = str(loop), src.name
    needs_scorer = "{{scorer}}" in json.dumps(obj)
    obj, prompts = _filled(project, loop, src, obj, variables)
    if task is not None:
        obj["task"] = str(TaskRef.parse(task))
    if not worktree:
        _without_worktree(obj)
    data = (json.dumps(obj, indent=2) + "\n").encode("utf-8")
    config = loops.parse_config_bytes(data, f"{source} (as loop {loop})")
    if config.task is not None:
        tasks.load(project, TaskRef.parse(config.task))  # BadInput: unknown task
    files = _loop_files(src, source, config, data, prompts, needs_scorer=needs_scorer)
    if not os.path.lexists(project.loop_dir(loop)):  # an existing folder/file: loops.create says what it is
        _refuse_leftovers(project, loop)
    state = initial_state(loop, config.task, config.sha256, utc_now())
    unseen = first_approval.reasons(project, config, obj, src)
    if unseen:  # nobody saw this loop.json: it starts halted until a human approves it
        state = replace(state, status="halted", halt_reason="human_intervention",
                        halt_detail=first_approval.detail(unseen))
    folder = loops.create(project, loop, files, state, {"loop": loop, "template": src.name,
                                                         "task": config.task, "status": state.status})
    out = Outcome(lines=[f"created loop {loop} at {folder.relative_to(project.root)}/ from template {src.name}"],
                  data={"loop": loop, "path": str(folder), "template": src.name, "state": state_json(state),
                        "template_path": str(src), "shadows_packaged": shadows, "first_approval": unseen})
    if unseen:
        out.lines.append(f"loop {loop} starts halted (human_intervention: {state.halt_detail}): no tick runs"
                         f" until a human runs automaton --approve --loop {loop}, which shows the whole loop.json")
    if not config.blast_radius.use_worktree:
        out.lines.append(f"loop {loop} has no worktree: its ticks edit and commit in {project.root} on the branch"
                         " checked out there, and your own changes there count as its work")
    python = _verify_python(src, config)
    if python:
        out.lines.append(python)
    if shadows:  # the packaged template of that name may have changed; the human should know which one ran
        out.lines.append(f"template {src.name}: using the project's copy at {src.relative_to(project.root)},"
                         " which shadows the packaged one")
    added = _exclude_runtime(project)
    if added:
        out.lines.append(f"added {len(added)} pattern(s) to .git/info/exclude so git never sees loop runtime files")
    if _exclude_holdout(Loop.resolve(project, loop), config):
        out.lines.append(f"added its holdout folder {config.roles.verify.holdout}/ to .git/info/exclude: git never"
                         " commits the holdout tests (a commit would put them in the agent's worktree)")
    return out


def _loop_files(src: Path, source: str, config: LoopConfig, data: bytes, prompts: dict[str, bytes], *,
                needs_scorer: bool) -> dict[str, bytes]:
    """The new loop folder's files (relative name -> bytes): loop.json and its sealed copy
    (`data`), every role prompt and `.md` of the template (filled ones from `prompts`), and
    `scorer.py` when loop.json names it. BadInput when a role prompt is missing."""
    files = {loops.CONFIG_FILE: data, loops.SEALED_COPY: data}
    wanted = {p for p in (config.roles.implement.prompt, config.roles.verify.prompt, config.roles.orchestrate.prompt)
              if p is not None}
    wanted |= {p.name for p in src.iterdir() if p.is_file() and p.suffix == ".md"}
    for rel in sorted(wanted):
        if rel in prompts:
            files[rel] = prompts[rel]
            continue
        try:
            files[rel] = (src / rel).read_bytes()
        except OSError:
            raise BadInput(f"{source}: role prompt {rel!r} is missing from the template {src}") from None
    if needs_scorer:
        files[tpl.SCORER] = tpl.scorer_bytes()
    return files


def _without_worktree(obj: dict[str, Any]) -> None:
    """`--no-worktree`: loop.json object `obj` gets `blast_radius.use_worktree: false`."""
    radius = obj.get("blast_radius")
    obj["blast_radius"] = {**(radius if isinstance(radius, dict) else {}), "use_worktree": False}


def _verify_python(src: Path, config: LoopConfig) -> str | None:
    """One line naming the Python that runs the verifier in every tick (cron included) and the
    modules it must import, for a template that declares them (`templates.verify_needs`)."""
    needs = tpl.verify_needs(src)
    argv = config.roles.verify.command or ()
    if not needs or not argv:
        return None
    return (f"verifier: every tick (under cron too) runs {argv[0]}, which must import {', '.join(needs)};"
            f" automaton --doctor checks it (another Python: --create-loop again with --var python=PATH)")


def _filled(project: Project, loop: LoopName, src: Path, obj: dict[str, Any],
            variables: list[str] | None) -> tuple[dict[str, Any], dict[str, bytes]]:
    """(loop.json `obj` and the template's prompts {file name: bytes}) with every
    `{{placeholder}}` filled (`commands.templates.values`); BadInput for one without a value."""
    raw = {p.name: p.read_bytes() for p in sorted(src.iterdir()) if p.is_file() and p.suffix == ".md"}
    texts = {rel: data.decode("utf-8", "replace") for rel, data in raw.items()}
    used = tpl.used_names([*tpl.json_strings(obj), *texts.values()])
    found = tpl.values(project, src, used, tpl.parse_vars(variables))
    # A prompt without a placeholder is copied byte for byte, as before placeholders existed.
    filled = {rel: tpl.fill(texts[rel], found).encode("utf-8") if tpl.used_names([texts[rel]]) else data
              for rel, data in raw.items()}
    return tpl.fill_json(obj, found), filled


def _refuse_leftovers(project: Project, loop: LoopName) -> None:
    """Refused (exit 1) while branch `loop/<name>` exists or a worktree is registered at the
    loop's worktree path: they belong to an earlier loop of that name whose folder (and
    counters) was deleted; re-creating it must not hand out a fresh allowance.

    The message names every worktree the branch is checked out in and steps that lose nothing:
    `git worktree remove` without `--force` (git refuses while the worktree has uncommitted
    work) or `git worktree prune` for one whose folder is gone, and `git branch -m`, which keeps
    the commits under another name and works while the branch is checked out (git-branch(1):
    the worktrees that have it checked out follow the rename). `git branch -D` would do neither:
    git refuses it for a checked-out branch, and elsewhere it drops the commits."""
    branch, wt = branch_name(loop), project.worktree_dir(loop)
    has_branch = run_git(project.root, ["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"]).code == 0
    entries = list_worktrees(project.root) or []
    registered = any(os.path.realpath(e.get("worktree", "")) == os.path.realpath(wt) for e in entries)
    if not has_branch and not registered:
        return
    elsewhere = [e["worktree"] for e in entries if e.get("branch") == f"refs/heads/{branch}"
                 and os.path.realpath(e.get("worktree", "")) != os.path.realpath(wt)]
    what = " and ".join(x for x in (f"branch {branch}" if has_branch else "",
                                    f"a worktree registered at {wt}" if registered else "") if x)
    where = f"; {branch} is checked out in {', '.join(elsewhere)}" if elsewhere else ""
    steps = []
    if registered:
        steps.append(f"git worktree remove {wt} (git refuses while it has uncommitted work: commit it first)"
                     if os.path.isdir(wt) else "git worktree prune (its folder is gone)")
    if has_branch:
        steps.append(f"git branch -m {branch} {free_branch(project, branch)} (keeps its commits under that name"
                     + ("; that checkout follows the rename)" if elsewhere else ")"))
    raise Refused(f"loop {loop!r} cannot be created: {what} of an earlier loop {loop} still exist(s){where}"
                  f" (re-creating the folder would reset its counters): a human reviews it, runs {'; '.join(steps)},"
                  f" then automaton --create-loop {loop} again; or choose another loop name")


def free_branch(project: Project, branch: str) -> str:
    """`<branch>-old`, or `<branch>-old-<n>` for the first n >= 2 with no such branch yet."""
    for n in range(1, 100):
        name = f"{branch}-old" if n == 1 else f"{branch}-old-{n}"
        if run_git(project.root, ["rev-parse", "--verify", "--quiet", f"refs/heads/{name}"]).code != 0:
            return name
    return f"{branch}-old-{utc_now().replace(':', '').replace('-', '')}"


def _exclude_holdout(loop: Loop, config: LoopConfig) -> list[str]:
    """`commands.holdout_git.exclude_holdout`, best effort ([] when info/exclude cannot be
    written: the tick's check on the commits is the brake, SECURITY.md S50)."""
    from automaton.commands import holdout_git  # lazy: kept off --can-edit --loop (module docstring)

    try:
        return holdout_git.exclude_holdout(loop, config)
    except OSError:
        return []


def _exclude_runtime(project: Project) -> list[str]:
    """Append the loop runtime patterns to the repo's info/exclude (git repos only)."""
    return exclude(project, tuple(f".automaton/loops/*/{p}" for p in EXCLUDES),
                   "# automaton loop runtime files")


# ---- pause / resume / approve ---------------------------------------------------------------
# Each public entry looks the name up once (`Loop.resolve`) and hands the `Loop` down: every step
# below reads the loop's files through it, so none can see another folder than the one checked.

def _status_change(loop: Loop, want: Status, extra: dict[str, object] | None = None) -> Outcome:
    """pause (want "paused") or resume (want "running"); `extra`: more fields of the log line."""
    name = str(loop.name)
    with loop.session() as s:
        if s.rec.tamper:
            raise loops.StateTampered(f"{s.rec.tamper}; a human clears it with: automaton --approve --loop {name}")
        status = s.rec.state.status
        if status == "halted":
            raise Refused(HALTED_MSG if want == "running" else f"loop {name} is halted: nothing to pause")
        if status == "complete":
            raise Refused(f"loop {name} is complete: complete is terminal")
        if status == want:
            return Outcome(lines=[f"{name}: already {want}"], data={"loop": name, "status": want})
        s.commit(*loopstate.set_status(s.rec.state, want, {"loop": name, **(extra or {})}))
    func = "disable_best_effort" if want == "paused" else "enable_best_effort"
    warning = _optional("automaton.commands.schedule", func, loop.project, loop.name)
    return Outcome(lines=[f"{name}: {status} -> {want}"], data={"loop": name, "status": want},
                   warnings=[warning] if warning else [])


def pause_loop(project: Project, name: str, *, human: Human | None = None) -> Outcome:
    """running -> paused (logged PAUSED; schedule disabled best-effort). Exit 1 on halted/complete.
    Anyone may pause (a brake); `human` (an established human, see commands.human.Human) is
    logged on the line as `by=` and `via=`."""
    extra: dict[str, object] | None = {"by": human.name, "via": human.via} if human is not None else None
    return _status_change(Loop.resolve(project, name), "paused", extra)


def resume_loop(project: Project, name: str, *, human: Human | None = None) -> Outcome:
    """paused -> running (logged RESUMED). Never clears a halt: exit 1 with HALTED_MSG. A human
    act like `--approve`: a pause is a human's brake, which an agent must not release (exit 1
    from an agent's process). `human`: a human the caller established (logged `by=`, `via=`)
    instead of the terminal / AUTOMATON_APPROVER check."""
    loop = Loop.resolve(project, name)  # a misspelt name is named (did you mean …) before the human check
    who, via = acting("--resume-loop", human)
    extra: dict[str, object] | None = {"by": who, **via} if human is not None else None
    return _status_change(loop, "running", extra)


def review_loop(project: Project, name: str, *, human: Human | None = None) -> Review:
    """What `--approve --loop NAME` would approve, for the human to judge first (read-only).

    `lines`: the halt (reason: detail) or the tamper finding; when the approval would seal a
    loop.json other than the sealed one, also a unified diff of the sealed copy
    (`sealed/loop.json`) against it, and `ask` is True: the human must say yes. Exit 1 without
    a human, while a tick runs, or while `.automaton/config.json` is not sealed; exit 2 for an
    unknown loop, or an invalid loop.json that the approval would seal. `human`: a human the
    caller established (commands.human.Human) instead of the terminal check.
    """
    loop = Loop.resolve(project, name)  # a misspelt name is named (did you mean …) before the human check
    acting("--approve --loop", human)
    require_sealed_project_config(project, loop.name)
    with held_between_ticks(loop, "--approve --loop"), loop.session(rebuild=True) as s:
        return _review(loop, s.rec)


def preview_loop(project: Project, name: str) -> Review:
    """What `review_loop` would show, for a read-only viewer (no human, no lock, nothing written):
    the same Review from the loop as it reads now. Not a binding for an approval: an approval
    needs `review_loop`. Exit 2 for an unknown loop, an unreadable state, or an invalid
    loop.json that the approval would seal."""
    loop = Loop.resolve(project, name)
    return _review(loop, loop.inspect())


def approve_loop(project: Project, name: str, reviewed: Review | None = None, *,
                 human: Human | None = None) -> Outcome:
    """The only way out of `halted` (a human act): running again with a fresh allowance
    (iterations/spend marks at their current values, score_history emptied, a drift halt's
    current out-of-scope files accepted), loop.json re-sealed, resumed_count += 1, logged
    APPROVED, schedule re-enabled best-effort. Also re-seals a tampered state, and a loop.json a
    human edited while the loop runs or is paused (logged RESEALED, status unchanged). A deleted
    or unreadable `.state.loop` whose log is intact is rebuilt from the log's counters and
    approved the same way. An approval also clears `worktree_fallback` (the human has seen it)
    and binds `current_task` to loop.json's `task` when that is set. Every seal keeps a copy of
    the sealed loop.json in `sealed/loop.json`.

    `reviewed`: the `review_loop` the human judged; the approval is bound to it. Without one,
    an approval that would seal a changed loop.json is refused (nobody saw the diff). data
    carries `diff` (the diff that was approved, [] when loop.json was not changed). Exit 1 on
    any other status, without a human, when loop.json or the halt changed since `reviewed`,
    or while `.automaton/config.json` is not sealed; exit 2 when the new loop.json is invalid
    (still halted). `human`: a human the caller established (commands.human.Human), logged as
    `by=` and `via=` on the APPROVED / RESEALED line, instead of the terminal check.
    """
    loop = Loop.resolve(project, name)  # a misspelt name is named (did you mean …) before the human check
    who, via = acting("--approve --loop", human)
    require_sealed_project_config(project, loop.name)
    with held_between_ticks(loop, "--approve --loop"):
        return _approve(loop, who, reviewed, via)


@contextmanager
def held_between_ticks(loop: Loop, action: str) -> Iterator[None]:
    """Hold the loop's tick lock for a human act: never while a tick runs.

    A process inside a running tick (the agent, or code it wrote that the verify step runs)
    would otherwise be able to clear its own loop's halt. Refused (exit 1) when a tick holds it.
    """
    with _tick_lock_held(loop.tick_lock, loop.name, action):
        yield


@contextmanager
def _tick_lock_held(path: Path, loop: LoopName, action: str) -> Iterator[None]:
    held = locked(path, timeout_s=0)
    try:
        held.__enter__()
    except Busy:
        raise Refused(f"a tick of loop {loop} is running: {action} only between ticks"
                      " (wait for it to finish, or stop it, then run the command again)") from None
    try:
        yield
    finally:
        held.__exit__(None, None, None)


def _seal_of(loop: Loop, rec: loops.LoopRecord) -> str:
    """The SHA-256 hex of the loop.json an approval replaces: `config_sha256` of a sound state;
    for a tampered one (its recorded seal proves nothing) that of the kept sealed copy, which
    lies outside the agent's reach ("" without one)."""
    if not rec.tamper:
        return str(rec.state.config_sha256)
    kept = loop.sealed_copy()
    return sha256_hex(kept) if kept is not None else ""


def _review(loop: Loop, rec: loops.LoopRecord) -> Review:
    """The Review of approving `rec` now (see review_loop); the caller holds the loop's locks."""
    name = loop.name
    state, tamper, status = rec.state, rec.tamper, rec.state.status
    current = loop.config_bytes()
    sha = sha256_hex(current) if current is not None else ""
    seal = _seal_of(loop, rec)
    # Only an approval that goes on to seal asks: one that is refused anyway (complete, or a
    # running loop with nothing to re-seal) says why without a question.
    first = not tamper and status == "halted" and first_approval.is_first_approval(state.halt_detail)
    ask = first or (sha != seal and (bool(tamper) or status in ("halted", "running", "paused")))
    if ask:
        loop.read_config()  # BadInput: an invalid loop.json is refused, never asked about
    lines: list[str] = []
    if tamper:
        lines.append(f"{name}: state tampered: {tamper}")
    elif status == "halted":
        detail = f": {state.halt_detail}" if state.halt_detail else ""
        lines.append(f"{name}: halted ({state.halt_reason}{detail})")
    diff: list[str] = []
    whole = _whole(current) if first else []
    if first:
        folder = loop.dir.relative_to(loop.project.root).as_posix()
        lines.append(f"{name}: no human has seen this loop yet; this approval lets it run as"
                     f" {folder}/{loops.CONFIG_FILE} says (the whole file):")
        lines += [f"  | {line}" for line in whole]
    if ask and sha != seal:
        base = loop.sealed_copy()
        if base is not None and sha256_hex(base) != seal:
            base = None  # a copy of another loop.json (older loops): not what was sealed
        folder = loop.dir.relative_to(loop.project.root).as_posix()
        diff = diff_lines(base, current, f"{folder}/{loops.SEALED_COPY}", f"{folder}/{loops.CONFIG_FILE}")
        lines.append(f"{name}: this approval seals a loop.json that differs from the sealed one:")
        lines += diff
    tests, token = _tests_review(loop, state, tamper)
    lines += tests
    ask = ask or bool(tests)  # a new test set is the human's to see and accept
    seen = json.dumps([sha, status, state.halt_reason, state.halt_detail, tamper, *([token] if token else [])])
    return Review("loop.json", seen, ask, lines, diff, unseen=first, whole=whole)


def _tests_review(loop: Loop, state: LoopState, tamper: str) -> tuple[list[str], str]:
    """The verifier's test set an approval of a `human_intervention` halt changes
    (`store.frozen_tests.review`): lines for the human and a token of what they saw; nothing
    for a tampered state or any other status or halt."""
    if tamper or state.status != "halted" or state.halt_reason != "human_intervention":
        return [], ""
    from automaton.store import frozen_tests  # lazy: kept off --can-edit --loop (module docstring)

    lines, token = frozen_tests.review(loop.dir, state.halt_detail)
    return [f"{loop.name}: {line}" if not line.startswith("  ") else line for line in lines], token


def _whole(current: bytes | None) -> list[str]:
    """Every line of the loop.json a first approval seals (`current`), without line ends: not
    a diff, since no human has seen any of it."""
    return (current or b"").decode("utf-8", "replace").removesuffix("\n").split("\n")


def _bind(loop: Loop, now: Review, reviewed: Review | None) -> None:
    """Refused unless the approval seals what the human was shown (or nothing new)."""
    name = loop.name
    if reviewed is not None and reviewed.seen != now.seen:
        raise Refused(f"loop {name} changed while you reviewed it (its loop.json or its halt): nothing was"
                      f" approved; run automaton --approve --loop {name} again")
    if reviewed is None and now.ask:
        raise Refused(f"loop {name}: this approval would seal a loop.json that differs from the sealed one"
                      f" and nobody reviewed the diff: run automaton --approve --loop {name}, which shows it")


def _config_as_reviewed(loop: Loop, review: Review) -> LoopConfig:
    """loop.json read for sealing; Refused unless it is the one `review` hashed (its `seen`
    starts with that SHA-256): a write between the two reads would be sealed unseen."""
    config = loop.read_config()
    if config.sha256 != jsontext.loads(review.seen)[0]:
        raise Refused(f"loop {loop.name}: loop.json changed while it was being approved: nothing was approved;"
                      f" run automaton --approve --loop {loop.name} again")
    holdout = None if config.roles.verify.holdout is None else loop.dir / config.roles.verify.holdout
    if holdout is not None and os.path.lexists(holdout):  # one not there yet may be added after approval
        from automaton.store import frozen_tests  # lazy: kept off --can-edit --loop (module docstring)

        problems = frozen_tests.holdout_problems(holdout)  # every tick would fail on these, unscored
        if problems:
            raise BadInput(f"loop {loop.name}: roles.verify.holdout cannot be used: {'; '.join(problems)}; nothing"
                           " was approved: replace each with a regular file (or remove it), then approve again")
    return config


def _approve(loop: Loop, who: str, reviewed: Review | None, via: dict[str, object]) -> Outcome:
    name = loop.name
    with loop.session(rebuild=True) as s:
        review = _review(loop, s.rec)
        _bind(loop, review, reviewed)
        old, tampered, tamper = s.rec.state, bool(s.rec.tamper), s.rec.tamper
        if not tampered and old.status in ("running", "paused"):
            resealed = _reseal_config(loop, s, old, who, review, via)
            if resealed is not None:
                return resealed
        if not tampered and old.status != "halted":
            raise Refused(f"loop {name} is {old.status}: --approve --loop only clears a halt"
                          + (" (use --resume-loop for a paused loop)" if old.status == "paused" else ""))
        config = _config_as_reviewed(loop, review)
        # "path@blob": bound to the content the human saw (a later write is drift)
        accepted = [] if tampered else _accepted_now(loop, old, config)
        fields: dict[str, object] = {"loop": name, "by": who, **via,
                                     "cleared": STATE_TAMPERED if tampered else old.halt_reason}
        if review.unseen:
            fields["first_approval"] = True
        if accepted:
            fields["accepted"] = ",".join(accepted)
        if config.sha256 != old.config_sha256:
            fields["resealed"] = config.sha256[:12]
        # A first approval lets a loop start, it resumes nothing: resumed_count counts resumes.
        step = partial(loopstate.approve, config_sha256=config.sha256, task=config.task, accepted=accepted,
                       resumed=0 if review.unseen else 1, fields=fields)
        if not tampered:
            _approve_tests(loop, old)
        state = s.reseal_tampered(step) if tampered else s.commit(*step(old))
        loop.keep_sealed_copy(config.sha256)
    _exclude_holdout(loop, config)  # a holdout added to loop.json after --create-loop
    cleared = f"{STATE_TAMPERED}; the file said {old.status}" if tampered else old.halt_reason
    out = Outcome(lines=[f"{name}: halted ({cleared}) -> running (approved by {who};"
                         f" resumed_count={state.resumed_count})"],
                  data={"loop": name, "status": "running", "by": who, **via, "cleared": fields["cleared"],
                        "resumed_count": state.resumed_count, "accepted_drift": accepted,
                        "diff": review.diff})
    out.lines += [f"  accepted drift: {path} at {blob[:12]}" for path, _, blob in (e.rpartition("@") for e in accepted)]
    if tampered:  # say what the human vouched for (a broken log is kept as .state.log.broken*)
        out.lines.append(f"  re-sealed: {tamper}")
    warning = _optional("automaton.commands.schedule", "enable_best_effort", loop.project, name)
    if warning:
        out.warnings.append(warning)
    return out


def _approve_tests(loop: Loop, old: LoopState) -> None:
    """Apply to the verifier's test set what the approval of a `human_intervention` halt showed
    the human (`_tests_review`; `store.frozen_tests.approve`, raises OSError)."""
    if old.halt_reason == "human_intervention":
        from automaton.store import frozen_tests  # lazy: kept off --can-edit --loop (module docstring)

        frozen_tests.approve(loop.dir, old.halt_detail)


def _accepted_now(loop: Loop, old: LoopState, config: LoopConfig) -> list[str]:
    """The `path@blob` entries a drift halt's approval accepts: the loop's out-of-scope changes
    as they are now ([] for any other halt). Refused for a nested repository (never accepted:
    every tick would halt on it again, git.nested)."""
    if old.halt_reason != "drift_detected":
        return []
    drift = _Facts.of(loop, old, None, None).drift_of(None)
    where = old.worktree_path or loop.worktree
    if drift.error is not None and drift.error.startswith("worktree_lost: "):
        raise Refused(f"loop {loop.name}: {drift.error}; the runner runs no git there. A human removes the worktree"
                      f" (rm -rf {where}; git worktree prune): the next tick makes it again from branch"
                      f" {branch_name(loop.name)}. Then run automaton --approve --loop {loop.name} again")
    if drift.nested:
        raise Refused(f"loop {loop.name}: nested repository in its worktree: {', '.join(drift.nested[:10])};"
                      f" a human removes it (its .git under {where}), then runs automaton --approve"
                      f" --loop {loop.name} again")
    blobs = dict(drift.blobs)
    return [accepted_entry(f, blobs.get(f, "unknown"))
            for f in out_of_scope(drift.files, config.blast_radius.file_scope, old.accepted_drift, drift.blobs)]


def _reseal_config(loop: Loop, s: loops.Session, old: LoopState, who: str,
                   review: Review, via: dict[str, object]) -> Outcome | None:
    """A human who edited loop.json of a running or paused loop seals the new config without
    waiting for the gate to halt on it (status and counters unchanged). None: nothing to seal."""
    name = loop.name
    config = _config_as_reviewed(loop, review)
    diff = review.diff
    if config.sha256 == old.config_sha256:
        return None
    s.commit(*loopstate.reseal(old, config.sha256, {"loop": name, "by": who, **via, "config": config.sha256[:12]}))
    loop.keep_sealed_copy(config.sha256)
    _exclude_holdout(loop, config)  # a holdout added to loop.json after --create-loop
    return Outcome(lines=[f"{name}: loop.json re-sealed (approved by {who}); status stays {old.status}"],
                   data={"loop": name, "status": old.status, "by": who, **via, "resealed": config.sha256,
                         "diff": diff})

__all__ = ["HALTED_MSG", "approve_loop", "audit_section", "can_continue", "can_edit_loop", "check_gate",
           "create_loop", "loop_list", "pause_loop", "preview_loop", "resume_loop", "review_loop"]
