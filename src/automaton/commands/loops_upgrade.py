"""`--upgrade-loops [--loop NAME] [--yes]`: bootstrap the state of loop folders that have only loop.json.

A loop folder without `.state.loop` and `.state.log` is UNTRACKED (a loop made before loops had
state, or a folder copied by hand): every loop command refuses it with the hint
`Run --upgrade-loops to bootstrap`. This human act gives each such folder its state: sealed to
the loop.json bytes the human was shown (sha256 in `.state.loop`, the bytes in
`sealed/loop.json`), every counter zero, logged `CREATED … bootstrapped_by=<human>` as the
first line of the keyed log.

Nobody has approved such a loop.json (an agent may have written it), so the loop starts halted
for its first approval (`commands.first_approval`): its first tick runs only after
`automaton --approve --loop NAME`, which shows the whole file. A folder with a `.state.loop` or
a `.state.log` is refused (its counters must never start over), and so is one whose deleted log
the key's anchor remembers (`--accept-rollback` is the human's way for that).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from automaton.commands import first_approval
from automaton.commands.excludes import exclude
from automaton.commands.loops import EXCLUDES
from automaton.core.digest import sha256_hex
from automaton.core.errors import BadInput, Refused
from automaton.core.loopconfig import initial_state
from automaton.core.names import LoopName, did_you_mean, folder_names
from automaton.core.outcome import Outcome
from automaton.store import loops
from automaton.store.chainlog import utc_now
from automaton.store.layout import Project

ACTION = "--upgrade-loops"
WHY = "bootstrapped by --upgrade-loops from a loop.json no human has approved yet"


@dataclass(frozen=True)
class Candidate:
    """One folder to bootstrap: the loop, its loop.json bytes as shown and their sha256 (hex)."""

    name: LoopName
    data: bytes
    sha256: str


@dataclass(frozen=True)
class Plan:
    """What `--upgrade-loops` would do: `candidates` and the lines shown before it asks."""

    candidates: tuple[Candidate, ...]
    lines: tuple[str, ...]


def plan(project: Project, name: str | None = None) -> Plan:
    """The untracked loop folders to bootstrap (`name`: only that one), read-only.

    Refused (exit 1) for a named loop that already has state; BadInput (exit 2) for a named
    folder that does not exist or has no loop.json, and for any candidate whose loop.json is
    not valid or names another loop (one line naming the file and the key)."""
    if name is not None:
        loop = LoopName.of(name)
        folder = project.loop_dir(loop)
        if not folder.is_dir():
            hint = did_you_mean(loop, [n for n in folder_names(project.loops_dir) if n != loops.ARCHIVE_DIR])
            raise BadInput(f"unknown loop {loop!r}{hint}: no folder {folder}")
        present = loops.state_files(folder)
        if present:
            raise Refused(f"loop {loop!r} already has state ({', '.join(present)}): nothing to bootstrap;"
                          " --upgrade-loops only seals a folder that has loop.json alone")
        names = [loop]
    else:
        names = _untracked(project)
    found = tuple(_candidate(project, loop) for loop in names)
    lines = [f"{c.name}: {project.loop_dir(c.name) / loops.CONFIG_FILE} (sha256 {c.sha256[:12]}) has no state:"
             " seal it, counters zero, halted until automaton --approve --loop " + str(c.name) for c in found]
    return Plan(found, tuple(lines))


def _untracked(project: Project) -> list[LoopName]:
    """Loop folders with a loop.json and neither state file, by name."""
    try:
        entries = sorted(project.loops_dir.iterdir())
    except FileNotFoundError:
        return []
    out = []
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir() or entry.is_symlink():
            continue
        try:
            loop = LoopName.of(entry.name)
        except BadInput:
            continue  # not a loop name: no loop command reaches it either
        if (entry / loops.CONFIG_FILE).is_file() and not loops.state_files(entry):
            out.append(loop)
    return out


def _candidate(project: Project, loop: LoopName) -> Candidate:
    path = project.loop_dir(loop) / loops.CONFIG_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise BadInput(f"loop {loop!r}: no {path}: there is nothing to bootstrap from") from None
    config = loops.parse_config_bytes(data, str(path))
    if config.name != loop:
        raise BadInput(f"{path}: \"name\" is {config.name!r} but the folder is {loop!r}: make them agree")
    return Candidate(loop, data, config.sha256)


def upgrade_loops(project: Project, shown: Plan, who: str) -> Outcome:
    """Bootstrap each folder of `shown` (the plan the human confirmed, by `who`).

    Refused (exit 1), before anything is written, when a loop.json no longer has the bytes that
    were shown; per loop as `store.loops.bootstrap` says. data: {bootstrapped: [names], by}."""
    for c in shown.candidates:
        now = loops.config_bytes(project, c.name)
        if now is None or sha256_hex(now) != c.sha256:
            raise Refused(f"{project.loop_dir(c.name) / loops.CONFIG_FILE} changed after it was shown: nothing was"
                          f" bootstrapped; run automaton {ACTION} again")
    out, done = Outcome(), []
    for c in shown.candidates:
        config = loops.parse_config_bytes(c.data, str(project.loop_dir(c.name) / loops.CONFIG_FILE))
        state = replace(initial_state(c.name, config.task, c.sha256, utc_now()), status="halted",
                        halt_reason="human_intervention", halt_detail=first_approval.detail([WHY]))
        loops.bootstrap(project, c.name, c.data, state,
                        {"loop": c.name, "template": config.template, "task": config.task, "status": state.status,
                         "bootstrapped_by": who})
        done.append(str(c.name))
        out.lines.append(f"bootstrapped loop {c.name} (by {who}): sealed, counters zero; halted until a human"
                         f" runs automaton --approve --loop {c.name}, which shows the whole loop.json")
    if not shown.candidates:
        out.lines.append("no loop folder without state: nothing to bootstrap")
    else:  # as --create-loop does: git never sees the state, the log and the sealed copy
        exclude(project, tuple(f".automaton/loops/*/{p}" for p in EXCLUDES), "# automaton loop runtime files")
    out.data = {"bootstrapped": done, "by": who}
    return out
