"""The kernel sandbox of a tick: which paths each role's processes may write.

Every process a tick starts for a role (implement, verify, orchestrate) gets a `Policy`:
writable are the loop's worktree (or, for the verifier, its clean export), a temp dir of that
run's own (`scratch`: it holds the role's private copy of the agent CLI's configuration,
`runner.agentconfig`, and the verifier's JUnit file and bytecode cache) and, for a CLI without
such a copy, its own state folders in the home folder; hidden is the
folder of the record key; masked (and, until a mount namespace is in force, hidden too) are
the user's credential stores (`commands.writable.secret_stores`); everything else (the main
checkout, `.automaton/`, every `.git`, the loop's `runs/`) is read-only. A verify command gets
no network. With
`"sandbox": "off"` in loop.json there is no policy and every tick says so.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from automaton.commands.writable import agent_policy, grants, secret_stores
from automaton.core.loopconfig import LoopConfig
from automaton.core.sandbox import Policy
from automaton.harnesses import HOOKLESS, hook_notes
from automaton.runner.agentconfig import PRIVATE
from automaton.sandbox import agent_state_dirs, available

# The policy of one run: (working directory, role, harness whose state folders are writable,
# the run's own temp dir from `scratch`) -> Policy, None with the sandbox off.
PolicyFor = Callable[[Path, str, str, Path], Policy | None]

LANDLOCK_ONLY_WARNING = ('loop {name}: "isolation": "landlock-only" and {why}')
SANDBOX_OFF_WARNING = ('loop {name}: "sandbox": "off" in loop.json: the agent runs unconfined and can reach'
                       " the brakes' own files; only the hooks and the gates stand in its way")


def refusal(cfg: LoopConfig) -> str | None:
    """Why a tick of this loop may not run here (one line with the fix), None when it may.
    `"sandbox": "on"` (the default) needs a working kernel sandbox, and `"isolation":
    "namespaces"` (the default) its namespaces too."""
    if cfg.sandbox == "off":
        return None

    found = available()
    if not found.ok:
        return found.detail
    return None if found.isolated or cfg.isolation == "landlock-only" else f"{found.isolation_detail} in loop.json"


def _landlock_only(cfg: LoopConfig) -> str | None:
    """The line every tick prints when it runs under Landlock alone; None when it does not."""
    if cfg.sandbox == "off" or cfg.isolation != "landlock-only":
        return None

    found = available()
    return None if not found.ok or found.isolated else LANDLOCK_ONLY_WARNING.format(name=cfg.name,
                                                                                    why=found.isolation_detail)


def warnings(cfg: LoopConfig, project_root: Path | None = None) -> list[str]:
    """What every tick prints about its confinement, once per tick: the sandbox switched off,
    each credential store the sealed project config (or the agent's model provider) leaves
    readable (with `project_root`), and for a harness whose agent runs no hook one line saying
    what holds instead (the kernel sandbox, `hook_notes`; with the sandbox off only the gates
    between ticks)."""
    out = [SANDBOX_OFF_WARNING.format(name=cfg.name)] if cfg.sandbox == "off" else []
    alone = _landlock_only(cfg)
    if alone:
        out.append(alone)
    if project_root is not None and cfg.sandbox != "off":
        out += [f"loop {cfg.name}: {line}" for line in secret_stores(project_root, cfg.harness.name).notes()]
    why = HOOKLESS.get(cfg.harness.name)
    if why and cfg.sandbox == "off":
        out.append(f"loop {cfg.name}: {why}, and the sandbox is off: only the gates between ticks hold")
    elif why:
        out.append(f"loop {cfg.name}: {hook_notes(cfg.harness.name)}")
    return out


def left_out(cfg: LoopConfig, project_root: Path, *, in_worktree: bool) -> str | None:
    """One line naming the main checkout's top-level entries a tick's agent may not write
    although the phase table would allow them (`commands.writable.grants`); None in a
    worktree, with the sandbox off, or when nothing was left out."""
    if cfg.sandbox == "off" or in_worktree:
        return None
    note = grants(project_root, None, None).note(project_root)
    return None if note is None else f"loop {cfg.name}: {note}"


@contextlib.contextmanager
def private_tmp(name: str, n: int) -> Iterator[Path]:
    """The tick's temp dir (mode 0700), removed when the tick ends. It is the runner's alone:
    no confined process may write it, only the folder `scratch` makes in it for each run."""
    path = Path(tempfile.mkdtemp(prefix=f"automaton-{name}-{n}-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def scratch(tmp: Path, role: str) -> Path:
    """A new, empty folder (mode 0700) in the tick's temp dir `tmp`, for one run of `role`: its
    TMPDIR, its private agent configuration, the verifier's JUnit file and bytecode cache.

    Never one folder for two runs: a confined process may leave anything in the folder it can
    write (a link to the record key where the runner later copies a file, bytecode the next
    Python run would load, a link where the runner seeds a configuration), so the runner reads
    back only what the run it made the folder for wrote, and never with a link followed."""
    return Path(tempfile.mkdtemp(prefix=f"{role}-", dir=tmp))



def role_policy(cfg: LoopConfig, cwd: Path, own_tmp: Path, *, project_root: Path, in_worktree: bool,
                label: str, harness: str | None = None, network: bool = True,
                hide: tuple[Path, ...] = ()) -> Policy | None:
    """The policy of one role run with working directory `cwd` and temp dir `own_tmp` (its own:
    `scratch`); None with the sandbox off.

    In a worktree the worktree itself is writable. In the main checkout (a loop without a
    worktree) the project's top-level entries are, except `tasks/`, `.automaton/`, `.git` and
    agent settings folders, and each entry `commands.writable.grants` leaves out (a link out of
    the project, automaton's own install: `left_out` says which). `harness`: the agent whose
    state folders are writable too (default: the loop's harness; the verify command passes
    "command": none). An agent with a private configuration folder in `own_tmp`
    (`runner.agentconfig.PRIVATE`) gets nothing in the home folder: its real configuration,
    `~/.claude.json` included, stays read-only. The credential stores are masked and hidden
    (`secret_stores`; BadInput for an invalid or unsealed `.automaton/config.json`).
    `network`: False for a private network namespace (the verify command). `hide`: more paths
    the process may neither read nor write (the loop's holdout tests, `runner.freeze`)."""
    if cfg.sandbox == "off":
        return None

    work = [cwd] if in_worktree else list(grants(project_root, None, None).paths)
    agent = harness or cfg.harness.name
    own = () if agent in PRIVATE else agent_state_dirs(agent, Path.home())
    # The programs the loop.json names (sealed by a human) stay readable where they lie in /tmp.
    argv = [*(cfg.harness.command or ()), *(cfg.roles.verify.command or ())]
    policy = agent_policy(project_root, [*work, own_tmp, *own], own_tmp, label, agent=agent, cwd=cwd, argv=argv,
                          isolation=cfg.isolation, network=network)
    if hide:
        policy = replace(policy, hidden=(*policy.hidden, *hide))
    return policy
