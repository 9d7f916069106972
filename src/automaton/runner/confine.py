"""The kernel sandbox of a tick: which paths each role's processes may write.

Every process a tick starts for a role (implement, verify, orchestrate) gets a `Policy`:
writable are the loop's worktree (or, for the verifier, its clean export), a private temp dir
(which holds the role's private copy of the agent CLI's configuration, `runner.agentconfig`)
and, for a CLI without such a copy, its own state folders in the home folder; hidden is the
folder of the record key; everything else (the main checkout, `.automaton/`, every `.git`,
the loop's `runs/`) is read-only. With
`"sandbox": "off"` in loop.json there is no policy and every tick says so.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from automaton.commands.writable import hidden_paths, project_writable
from automaton.core.loopconfig import LoopConfig
from automaton.core.sandbox import Policy
from automaton.harnesses import HOOKLESS, hook_notes

SANDBOX_OFF_WARNING = ('loop {name}: "sandbox": "off" in loop.json: the agent runs unconfined and can reach'
                       " the brakes' own files; only the hooks and the gates stand in its way")


def refusal(cfg: LoopConfig) -> str | None:
    """Why a tick of this loop may not run here (one line with the fix), None when it may.
    `"sandbox": "on"` (the default) needs a working kernel sandbox."""
    if cfg.sandbox == "off":
        return None
    from automaton.sandbox import available

    found = available()
    return None if found.ok else found.detail


def warnings(cfg: LoopConfig) -> list[str]:
    """What every tick prints about its confinement, once per tick: the sandbox switched off,
    and for a harness whose agent runs no hook one line saying what holds instead (the kernel
    sandbox, `hook_notes`; with the sandbox off only the gates between ticks)."""
    out = [SANDBOX_OFF_WARNING.format(name=cfg.name)] if cfg.sandbox == "off" else []
    why = HOOKLESS.get(cfg.harness.name)
    if why and cfg.sandbox == "off":
        out.append(f"loop {cfg.name}: {why}, and the sandbox is off: only the gates between ticks hold")
    elif why:
        out.append(f"loop {cfg.name}: {hook_notes(cfg.harness.name)}")
    return out


@contextlib.contextmanager
def private_tmp(name: str, n: int) -> Iterator[Path]:
    """A temp dir (mode 0700) for the tick's processes, removed when the tick ends."""
    path = Path(tempfile.mkdtemp(prefix=f"automaton-{name}-{n}-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def role_policy(cfg: LoopConfig, cwd: Path, tmp: Path, *, project_root: Path, in_worktree: bool,
                label: str, harness: str | None = None) -> Policy | None:
    """The policy of one role run with working directory `cwd`; None with the sandbox off.

    In a worktree the worktree itself is writable. In the main checkout (a loop without a
    worktree) the project's top-level entries are, except `tasks/`, `.automaton/`, `.git` and
    agent settings folders. `harness`: the agent whose state folders are writable too
    (default: the loop's harness; the verify command passes "command": none). An agent with a
    private configuration folder in `tmp` (`runner.agentconfig.PRIVATE`) gets nothing in the
    home folder: its real configuration, `~/.claude.json` included, stays read-only."""
    if cfg.sandbox == "off":
        return None
    from automaton.runner.agentconfig import PRIVATE
    from automaton.sandbox import agent_state_dirs

    work = [cwd] if in_worktree else project_writable(project_root, None, None)
    name = harness or cfg.harness.name
    own = () if name in PRIVATE else agent_state_dirs(name, Path.home())
    return Policy(tuple([*work, tmp, *own]), hidden_paths(), tmp, label)
