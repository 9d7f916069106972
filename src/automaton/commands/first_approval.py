"""No loop runs a loop.json no human saw: the loops that start halted for a first approval.

`--create-loop` seals loop.json without a human. That is safe for a packaged template as it
ships; it is not for a loop.json an agent could have written or loosened: one from a project
template (`.automaton/templates/loops/T`, which an agent in the main checkout can write, and
which may shadow a packaged template of the same name), one that turns the kernel sandbox
off, one that names a notify command or webhook (a program run or a URL posted to, unconfined,
by the runner), or one whose brakes are looser than the packaged template of the same name
(or, without one, the packaged defaults of config.md). Such a loop is created `halted` with
halt_reason `human_intervention` and halt_detail `first_approval: <why>`, and only a human
`--approve --loop NAME`, which shows the whole loop.json, lets its first tick run.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from automaton.core.errors import BadInput
from automaton.core.gates import FIRST_APPROVAL
from automaton.core.loopconfig import DEFAULT_MAX_OUTPUT_MB, DEFAULT_MAX_UNSCORED, LoopConfig
from automaton.store import loops
from automaton.store.config import loop_defaults
from automaton.store.layout import Project, framework_home

_Get = Callable[[LoopConfig], "float | None"]
# Brakes where a higher value is looser: (name as in loop.json, how to read it).
_HIGHER_IS_LOOSER: tuple[tuple[str, _Get], ...] = (
    ("brakes.max_iterations", lambda c: c.brakes.max_iterations),
    ("brakes.max_budget_usd", lambda c: c.brakes.max_budget_usd),
    ("brakes.max_tick_usd", lambda c: c.brakes.max_tick_usd),
    ("brakes.score_plateau_window", lambda c: c.brakes.score_plateau_window),
    ("brakes.max_unscored", lambda c: c.brakes.max_unscored),
    ("harness.timeout_s", lambda c: c.harness.timeout_s),
    ("harness.max_output_mb", lambda c: c.harness.max_output_mb),
)
# Brakes where a lower value is looser: a smaller epsilon sees fewer plateaus, a lower target
# excuses more of them.
_LOWER_IS_LOOSER: tuple[tuple[str, _Get], ...] = (
    ("brakes.plateau_epsilon", lambda c: c.brakes.plateau_epsilon),
    ("brakes.target_score", lambda c: c.brakes.target_score),
)


def is_first_approval(detail: object) -> bool:
    """Whether a halt_detail is that of a loop waiting for its first approval."""
    return isinstance(detail, str) and detail.startswith(FIRST_APPROVAL)


def detail(reasons: list[str]) -> str:
    """The halt_detail of a loop created halted for `reasons` (non-empty)."""
    return f"{FIRST_APPROVAL}: " + "; ".join(reasons)


def reasons(project: Project, config: LoopConfig, raw: Mapping[str, object], template_dir: Path) -> list[str]:
    """Why the loop `config` (parsed from `raw`, the loop.json object as created from the
    template at `template_dir`) needs a human's first approval; [] when it may run at once."""
    found: list[str] = []
    if _inside(template_dir, project.dot):
        found.append(f"made from the project's template {template_dir.relative_to(project.root).as_posix()}"
                     " (not a packaged one)")
    if config.sandbox == "off":
        found.append('"sandbox": "off" (the agent runs unconfined)')
    if config.isolation == "landlock-only":
        found.append('"isolation": "landlock-only" (no namespaces around the agent)')
    if config.notify is not None and config.notify.command is not None:
        found.append(f"notify.command runs {config.notify.command!r} outside the sandbox")
    if config.notify is not None and config.notify.webhook is not None:
        found.append(f"notify.webhook posts to {config.notify.webhook}")
    found += _looser(config, _packaged(config.template))
    return found


def _inside(path: Path, folder: Path) -> bool:
    """Whether `path` is named beneath `folder`, compared as named (absolute, not resolved): a
    project template that is a link to a folder elsewhere is still the project's template."""
    try:
        Path(os.path.abspath(path)).relative_to(os.path.abspath(folder))
    except ValueError:
        return False
    return True


def _packaged(template: str) -> LoopConfig | Mapping[str, float | int]:
    """The packaged template of that name parsed, or the packaged defaults without one."""
    path = framework_home() / "templates" / "loops" / template / loops.CONFIG_FILE
    try:
        data = path.read_bytes()
    except OSError:
        return {**loop_defaults(), "max_output_mb": DEFAULT_MAX_OUTPUT_MB, "max_unscored": DEFAULT_MAX_UNSCORED}
    try:
        return loops.parse_config_bytes(data, str(path))
    except BadInput as exc:  # a broken packaged template leaves nothing to compare with: ask the human
        raise BadInput(f"{exc.message}; the packaged template is the reference of a new loop's brakes") from None


def _reference(ref: LoopConfig | Mapping[str, float | int], name: str, get: _Get) -> float | None:
    if isinstance(ref, LoopConfig):
        return get(ref)
    return ref.get(name.rpartition(".")[2])


def _filled_from(pattern: str, packaged: str) -> bool:
    """Whether `pattern` is the packaged file_scope pattern `packaged` itself, or it with each
    `{{name}}` filled by a relative path (a `--var` the human gave `--create-loop`)."""
    if pattern == packaged or "{{" not in packaged:
        return pattern == packaged
    parts = re.split(r"\{\{[a-z][a-z0-9_]*\}\}", packaged)
    shape = r"(?!\.\.(?:/|$))[^/*?\[\]!]+(?:/(?!\.\.(?:/|$))[^/*?\[\]!]+)*"
    return re.fullmatch(shape.join(re.escape(part) for part in parts), pattern) is not None


def _looser(config: LoopConfig, ref: LoopConfig | Mapping[str, float | int]) -> list[str]:
    """Each brake of `config` looser than the reference, as `name X (packaged Y)`."""
    out: list[str] = []
    for name, get in _HIGHER_IS_LOOSER:
        mine, theirs = get(config), _reference(ref, name, get)
        if mine is None and theirs is not None:  # unbounded (a local harness's budget)
            out.append(f"{name} unbounded (packaged {theirs:g})")
        elif mine is not None and theirs is not None and mine > theirs:
            out.append(f"{name} {mine:g} (packaged {theirs:g})")
    for name, get in _LOWER_IS_LOOSER:
        mine, theirs = get(config), _reference(ref, name, get)
        if mine is not None and theirs is not None and mine < theirs:
            out.append(f"{name} {mine:g} (packaged {theirs:g})")
    if isinstance(ref, LoopConfig):
        if ref.blast_radius.use_worktree and not config.blast_radius.use_worktree:
            out.append("blast_radius.use_worktree false (the agent works in the main checkout)")
        wider = [p for p in config.blast_radius.file_scope
                 if not any(_filled_from(p, theirs) for theirs in ref.blast_radius.file_scope)]
        if wider:
            out.append(f"blast_radius.file_scope adds {', '.join(wider)}")
    return out
