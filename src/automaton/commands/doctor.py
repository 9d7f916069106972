"""`--doctor [--loop NAME]`: preflight checks before a loop is left alone for the night.

Each check gives a `Finding`: "ok", "problem" (the loop cannot run as configured: exit 1),
"warning" or "note". Nothing is written: the key is only read, the verify command runs on an
export of the base commit in a temporary folder (removed after), no agent is ever called (a
paid API call is not a check), and no schedule is changed. Project checks: git repository with
a commit, the key file's mode, `.automaton/config.json` sealed, the credential stores kept from
agents (`secrets_checks`), automaton not installed inside the project. Loop checks (`doctor_loop`).
One exception to "nothing is written": `--doctor --loop NAME --state-remote REMOTE` first
fetches the loop's state from the remote into its folder, verified with the record key, as a
tick does (nothing is pushed): on a fresh clone (a CI runner) the loop exists only there.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from automaton import install_paths
from automaton.commands import remote_account, remote_state
from automaton.commands.config_seal import sessions_mode
from automaton.commands.doctor_checks import (
    Finding,
    collection_check,
    harness_checks,
    holdout_check,
    hook_findings,
    python_check,
    verify_check,
)
from automaton.commands.loops_common import project_config_problem
from automaton.commands.schedule_info import schedule_info
from automaton.commands.writable import secret_stores
from automaton.core.errors import AutomatonError, ExitCode, message_lines
from automaton.core.gates import FIRST_APPROVAL
from automaton.core.loopconfig import LoopConfig
from automaton.core.loopstate import LoopState
from automaton.core.names import LoopName
from automaton.core.outcome import Outcome
from automaton.git import run_git
from automaton.git.remote import TOKEN_ENV
from automaton.harnesses import hook_notes
from automaton.sandbox import available, layers
from automaton.store import account, loops
from automaton.store import project_config as pc
from automaton.store.key import key_path, load_secret, secret_source
from automaton.store.layout import Project
from automaton.store.locks import Busy, locked
from automaton.store.loops import TICK_LOCK, Loop


def project_checks(project: Project, *, own: tuple[str, ...] | None = None) -> list[Finding]:
    """Git with a commit, the key file's mode, the project config seal, the credential stores,
    where automaton itself is installed (`own`: its install's real paths, default
    `install_paths.own_roots()`), and the agent hooks' liveness (`doctor_checks.hook_findings`:
    one problem each)."""
    out: list[Finding] = []
    head = run_git(project.root, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
    if head.code == 127:
        out.append(Finding(None, "git", "problem", "git is not installed", "install git"))
    elif run_git(project.root, ["rev-parse", "--git-dir"]).code != 0:
        out.append(Finding(None, "git", "problem", f"{project.root} is not in a git repository",
                           "git init, then commit the project"))
    elif head.code != 0:
        out.append(Finding(None, "git", "problem", "the repository has no commit yet: a loop's worktree starts"
                           " from one", "git add -A && git commit -m 'initial'"))
    else:
        out.append(Finding(None, "git", "ok", f"git repository, HEAD {head.out.strip()[:12]}"))
    out.append(_key_check(project.root))
    unsealed = project_config_problem(project)
    if unsealed is not None:
        out.append(Finding(None, "config", "problem", unsealed))
    else:
        out += secrets_checks(project)
        out.append(sessions_check(project))
        out.append(allow_tools_check(project))
    inside = install_paths.inside(str(project.root), install_paths.own_roots() if own is None else own)
    if inside is not None:
        out.append(Finding(None, "install", "warning", f"automaton runs from {inside}, inside the project: the"
                           " sandbox never grants it and the hook denies edits there, but --install-hooks and"
                           " --install-schedule refuse", install_paths.FIX))
    out += [Finding(None, "hooks", "problem", line) for line in hook_findings(project)]
    return out


def secrets_checks(project: Project) -> list[Finding]:
    """The credential stores in force for an agent (`writable.secret_stores`): one finding
    naming the entries present on this machine and how the kernel keeps them from agents,
    then one warning per entry the sealed config.json unhides."""
    stores = secret_stores(project.root, "command")
    home = Path.home()
    here = [("~/" + str(p.relative_to(home))) if p.is_relative_to(home) else str(p) for p in stores.paths]
    found = available()
    how = {"landlock": "hidden by Landlock (unreadable)", "seatbelt": "hidden by Seatbelt (unreadable)"}.get(
        found.mechanism, "NOT hidden: no kernel sandbox here")
    listed = ", ".join(here) if here else "none present"
    out = [Finding(None, "secrets", "ok" if found.ok else "warning",
                   f"{len(stores.entries)} credential store(s) kept from agents, {how}; present here: {listed}")]
    out += [Finding(None, "secrets", "warning", line, "remove it from sandbox.unhide in .automaton/config.json")
            for line in stores.notes()]
    return out


def sessions_check(project: Project) -> Finding:
    """How interactive agent sessions are held (the sealed config.json's "sessions"): "ok" when
    sandboxed and this machine has the sandbox; "problem" when sandboxed without one (every
    session's writes are denied); "warning" for hooks-only (best effort), with the change to make
    where the sandbox works and nothing was recorded."""
    try:
        rules = pc.sessions(project)
    except AutomatonError as exc:
        return Finding(None, "sessions", "problem", exc.message)
    label = pc.sessions_label(rules)
    mode, detail = sessions_mode()
    if rules.mode == "sandboxed":
        if mode == "sandboxed":
            return Finding(None, "sessions", "ok", label)
        return Finding(None, "sessions", "problem", f"{label}; but no kernel sandbox works here ({detail}), so"
                       " every session's writing tool calls are denied",
                       'fix the sandbox, or a human sets "sessions": "hooks-only" and runs'
                       " automaton --approve --config")
    if rules.explicit or mode != "sandboxed":
        return Finding(None, "sessions", "warning", label if mode == "sandboxed" else f"{label} ({detail})")
    return Finding(None, "sessions", "warning", f'{pc.BEST_EFFORT}: .automaton/config.json has no "sessions" key',
                   "automaton --install-hooks claude (or codex, gemini)"
                   ' from your terminal: it records "sessions": "sandboxed" and seals it')


def _secret_key_check(root: Path) -> Finding | None:
    """The record key handed in as a secret (`store.key.secret_source`): present, readable,
    64 hex digits, not exposed to other users, and not inside the project (where it could be
    committed, and every agent reads the checkout). None when no secret is handed in."""
    try:
        source = secret_source()
        if source is None:
            return None
        load_secret(source)
    except AutomatonError as exc:
        return Finding(None, "key", "problem", exc.message, "hand in the 64 hex digits of the record key")
    kind, path = source
    if path is None:
        return Finding(None, "key", "ok", f"record key from ${kind} (64 hex digits), withheld from every agent")
    real, top = os.path.realpath(path), os.path.realpath(root)
    if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
        return Finding(None, "key", "problem", f"${kind} {path} lies inside the project {root}: it could be"
                       " committed, and agents read the checkout", "mount the key outside the project")
    return Finding(None, "key", "ok", f"record key from ${kind} {path}, hidden from every agent")


def allow_tools_check(project: Project) -> Finding:
    """The sealed `hooks.allow_tools` (tools the hooks cannot read, let through on a human's
    word): a note listing the patterns, or saying every such tool is denied."""
    try:
        patterns = pc.allow_tools(project)
    except AutomatonError as exc:
        return Finding(None, "allow-tools", "problem", exc.message)
    if not patterns:
        return Finding(None, "allow-tools", "note", "tools the hooks cannot read (MCP tools, SlashCommand) are all"
                       ' denied; a human may list some in .automaton/config.json "hooks": {"allow_tools": [...]}'
                       " and run automaton --approve --config")
    return Finding(None, "allow-tools", "note", f"sealed hooks.allow_tools lets through: {', '.join(patterns)}"
                   " (a human's word that they write no project file; the kernel sandbox still holds a"
                   " sandboxed agent's writes)")


def _key_check(root: Path) -> Finding:
    handed = _secret_key_check(root)
    if handed is not None:
        return handed
    try:
        path = key_path()
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        return Finding(None, "key", "note", "no key file yet: automaton creates it (mode 0600) on its first write")
    except (OSError, AutomatonError) as exc:
        return Finding(None, "key", "problem", f"cannot read the key file: {exc}", "fix HOME or its permissions")
    if os.name != "nt" and mode & 0o077:
        return Finding(None, "key", "problem", f"key file {path} has mode {mode:04o}: others may read or change it",
                       f"chmod 600 {path}")
    return Finding(None, "key", "ok", f"key file {path} is private ({mode:04o})")


def _config_fix(path: Path, problem: str, loop: str) -> str:
    """The fix of one loop.json problem (`<path>: <field> must be …`, `<path>: unknown key '<field>' …`):
    the file, the field when the line names one, and the command that seals the edit."""
    said = re.match(r"(?:unknown key ')?([A-Za-z_][\w.]*)(?:'| must be |: )", problem.removeprefix(f"{path}: "))
    what = f"{said.group(1)} in {path}" if said and said.group(1) not in ("not", "duplicate") else str(path)
    return f"correct {what}, then a human runs automaton --approve --loop {loop} (it shows the diff and seals it)"


def _not_approved(config: LoopConfig, state: LoopState, tamper: str | None) -> str | None:
    """Why the loop's loop.json is not one a human approved (changed since its seal, a state
    that is tampered, or a first approval still pending), or None."""
    if tamper:
        return "the loop's state is tampered"
    if config.sha256 != state.config_sha256:
        return "loop.json differs from the sealed one"
    if state.status == "halted" and str(state.halt_detail or "").startswith(FIRST_APPROVAL):
        return "no human has approved this loop.json yet (first_approval)"
    return None


def doctor_loop(project: Project, name: LoopName) -> list[Finding]:
    """The checks of one loop: config and state readable, status, harness on the tick's PATH,
    agent login, verify command scoring on the base commit, sandbox, schedule, hook note. A
    loop that cannot be resolved is one problem finding."""
    try:
        loop = Loop.resolve(project, name)
    except AutomatonError as exc:
        return [Finding(name, "state", "problem", exc.message)]
    return _loop_checks(loop)


def _loop_checks(loop: Loop, flag: str | None = None) -> list[Finding]:
    project, name = loop.project, loop.name
    out: list[Finding] = []
    try:
        rec = loop.inspect()
    except AutomatonError as exc:
        return [Finding(name, "state", "problem", exc.message)]
    state = rec.state
    if rec.tamper:
        out.append(Finding(name, "state", "problem", f"state tampered: {rec.tamper}",
                           f"a human reviews it, then automaton --approve --loop {name}"))
    elif state.status == "halted":
        detail = f": {state.halt_detail}" if state.halt_detail else ""
        out.append(Finding(name, "status", "problem", f"halted ({state.halt_reason}{detail})",
                           f"a human reviews it, then automaton --approve --loop {name}"))
    elif state.status == "paused":
        out.append(Finding(name, "status", "warning", "paused: no tick runs", f"automaton --resume-loop {name}"))
    else:
        out.append(Finding(name, "status", "ok" if state.status == "running" else "note", state.status))
    try:
        config = loop.read_config()
    except AutomatonError as exc:
        return [*out, *(Finding(name, "config", "problem", line, _config_fix(loop.config_file, line, name))
                        for line in message_lines(exc))]
    if config.sha256 != state.config_sha256 and not rec.tamper:
        out.append(Finding(name, "config", "problem", "loop.json differs from the sealed one: the next gate halts"
                           " (config_changed)", f"review it, then automaton --approve --loop {name}"))
    info = schedule_info(project, name, last_tick_at=state.last_tick_at)
    out += harness_checks(name, config, info["path"])
    unseen = _not_approved(config, state, rec.tamper)
    if unseen is None:
        out.append(verify_check(project, name, config, state, info["path"]))
        python = python_check(project, name, config, info["path"])
        if python is not None:
            out.append(python)
    else:  # its command is whatever the file says now: nothing a human approved runs here
        out.append(Finding(name, "verify", "note", f"verify command not run: {unseen}",
                           f"review it, then automaton --approve --loop {name}"))
    out.append(_sandbox_check(name, config))
    tests = collection_check(project, name, config, state)
    if tests is not None:
        out.append(tests)
    holdout = holdout_check(loop, config, state)
    if holdout is not None:
        out.append(holdout)
    out += _provider_notes(project, name, config)
    if flag is None:
        out += _schedule_checks(name, config, state.status, info)
    else:  # a runner of the remote's (a CI job, a pod): its engine fires the ticks, not this machine
        out.append(Finding(name, "schedule", "note", "state fetched from its state remote: the engine that runs this"
                           " fires the ticks (this machine's schedule is not checked)"))
    out += state_remote_checks(project.root, name, flag or config.state_remote)
    note = hook_notes(config.harness.name)
    if note:
        out.append(Finding(name, "hooks", "note", f"harness {config.harness.name}: {note}"))
    return out


def _sandbox_check(name: str, config: LoopConfig) -> Finding:
    if config.sandbox == "off":
        return Finding(name, "sandbox", "warning", '"sandbox": "off" in loop.json: the agent runs unconfined and'
                       " only the hooks and the gates stand in its way")

    found = available()
    if found.ok and not found.isolated and config.isolation != "landlock-only":
        return Finding(name, "sandbox", "problem", f"every tick refuses to run: {layers(found)}")
    if found.ok and not found.isolated:
        return Finding(name, "sandbox", "warning", f'"isolation": "landlock-only": {layers(found)}')
    if found.ok and found.mechanism == "landlock" and not found.filtered:
        return Finding(name, "sandbox", "warning", f"kernel sandbox available: {found.detail}; layers: {layers(found)}")
    if found.ok:
        return Finding(name, "sandbox", "ok", f"kernel sandbox available: {found.detail}; layers: {layers(found)}")
    return Finding(name, "sandbox", "problem", f"no kernel sandbox here, so every tick refuses to run: {found.detail}")


def _provider_notes(project: Project, name: str, config: LoopConfig) -> list[Finding]:
    """A note per credential store the loop's agent keeps readable for its model provider."""
    if config.sandbox == "off":
        return []
    try:
        stores = secret_stores(project.root, config.harness.name)
    except AutomatonError:
        return []  # the project config finding says why
    return [Finding(name, "secrets", "note", f"{e} stays readable to {config.harness.name}: its model provider"
                    " needs it") for e in stores.provider]


def _schedule_checks(name: str, config: LoopConfig, status: str, info: dict[str, Any]) -> list[Finding]:
    install = f"automaton --install-schedule {name}"
    if not info["installed"]:
        if status == "running":
            return [Finding(name, "schedule", "problem", "not scheduled: no tick runs unattended", install)]
        return [Finding(name, "schedule", "note", f"not scheduled (the loop is {status})")]
    if info["problem"]:
        return [Finding(name, "schedule", "problem", info["problem"])]
    out: list[Finding] = []
    want = config.schedule.interval_seconds
    if info["interval_seconds"] != want:
        # A warning, not a problem: `--install-schedule --interval` chooses another pace on
        # purpose; the brakes do not depend on it.
        out.append(Finding(name, "schedule", "warning", f"the schedule fires every {info['interval_seconds']} s but"
                           f" loop.json says {want} s", f"{install} (it takes loop.json's interval), or set"
                           f" schedule.interval_seconds in loop.json and approve it"))
    for what, path in (("interpreter", info["python"]), ("runner", info["runner"])):
        if path and not Path(path).exists():
            out.append(Finding(name, "schedule", "problem", f"the scheduled tick runs the {what} {path}, which is gone",
                               install))
    if status == "complete" and info["unit"] == "present":
        out.append(Finding(name, "schedule", "warning", "complete, but the schedule is still enabled (its disable"
                           " failed or was undone; the next fire is refused and turns it off)",
                           f"automaton --uninstall-schedule {name}"))
    if not out:
        out.append(Finding(name, "schedule", "ok", f"{info['scheduler']} every {info['interval_seconds']} s,"
                           f" unit {info['unit']}" + (f", next fire {info['next_fire']}" if info["next_fire"] else "")))
    return out


def doctor(project: Project, name: str | None = None, state_remote: str | None = None) -> Outcome:
    """`--doctor [--loop NAME [--state-remote REMOTE]]`: the project checks, then each loop's
    (only NAME's with `--loop`; with `state_remote`, its state fetched from that remote first,
    `fetch_state`). Lines: one per finding (PROBLEM lines carry their fix), then "no problems
    found" or "N problem(s) found". data: {ok, problems (int), findings: [{loop, check, level,
    message, fix}]}. Exit 1 with any problem (a state that cannot be fetched is one), 0
    otherwise; exit 2 for an unknown or untracked --loop."""
    findings = project_checks(project)
    if name is not None:
        unfetched = None if state_remote is None else fetch_state(project, name, state_remote)
        if unfetched is not None:  # its state is not here: the remote's checks only
            findings += [unfetched, *state_remote_checks(project.root, name, state_remote)]
        else:  # exit 2 for an unknown or untracked --loop, before any check
            findings += _loop_checks(Loop.resolve(project, name), state_remote)
    else:
        targets = loops.list_loops(project)
        if not targets:
            findings.append(Finding(None, "loops", "note",
                                    "no loops yet: automaton --create-loop NAME --from-template T"))
        for each in targets:
            findings += doctor_loop(project, each)
    problems = [f for f in findings if f.level == "problem"]
    lines = [f.line() for f in findings]
    lines.append(f"{len(problems)} problem(s) found" if problems else "no problems found")
    data = {"ok": not problems, "problems": len(problems), "findings": [asdict(f) for f in findings]}
    return Outcome(ExitCode.REFUSED if problems else ExitCode.OK, lines, data)


def fetch_state(project: Project, name: str, remote: str) -> Finding | None:
    """Fetch loop `name`'s state from `remote` into its folder under its tick lock
    (`commands.remote_state.sync_in`: verified with the record key; nothing pushed). None when
    it is there; a problem finding saying why not (unreachable, no state and no local loop, a
    state that does not verify, a tick of the loop running here)."""
    loop = LoopName.of(name)
    folder = project.loop_dir(loop)
    try:
        remote_state.check_remote(remote, "--state-remote")
        folder.mkdir(parents=True, exist_ok=True)
        with locked(folder / TICK_LOCK, timeout_s=0):
            remote_state.sync_in(project, loop, remote)
    except Busy:
        return Finding(loop, "state-remote", "problem", f"a tick of loop {loop} runs here: its state was not fetched",
                       "run --doctor again once it ends")
    except AutomatonError as exc:
        return Finding(loop, "state-remote", "problem", exc.message)
    except OSError as exc:
        return Finding(loop, "state-remote", "problem", f"cannot write the loop folder {folder}: {exc.strerror}",
                       "check the disk and permissions")
    return None


def _remote_url(root: Path, remote: str) -> str:
    """The URL `remote` names: its `remote.<name>.url` in the repository's config, else itself."""
    done = run_git(root, ["config", "--get", f"remote.{remote}.url"])
    return done.out.strip() if done.code == 0 and done.out.strip() else remote


def state_remote_checks(root: Path, name: str, remote: str | None) -> list[Finding]:
    """The push credential of a loop whose state lives in `remote` (None: no state remote, no
    finding). An https remote: ok when `$AUTOMATON_GIT_TOKEN` is set (sent by the runner's
    fetch and push only), a warning otherwise (the tick reads no credential helper of the
    user's). Any other remote (ssh, a local path, file://): a note that git's own access is
    used and the token, if set, is not. The URL is never shown (it may hold a password)."""
    if remote is None:
        return []
    return [credential_check(root, name, remote), account_check(root, name, remote)]


def account_check(root: Path, name: str, remote: str) -> Finding:
    """The account ledger and published caps in `remote` (`commands.remote_account.read`:
    verified with the record key, never moved back against this clone's mark) and this
    machine's caps.json (a remote tick applies the lower of the two): ok, or the problem every
    tick of the loop would stop on."""
    try:
        read = remote_account.read(root, remote)
        account.read_caps()
    except AutomatonError as exc:
        return Finding(name, "account-ledger", "problem", exc.message)
    caps = "published caps" if read.caps is not None else "no caps published"
    lines = len(read.ledger.entries)
    return Finding(name, "account-ledger", "ok", f"the account ledger in state remote {remote} verifies with the"
                   f" record key ({lines} reservation(s), {caps}); this machine's caps.json reads")


def credential_check(root: Path, name: str, remote: str) -> Finding:
    """The push credential finding of `state_remote_checks` (never showing the URL)."""
    url = _remote_url(root, remote)
    scheme = urlsplit(url).scheme.lower() if "://" in url else ""
    token = bool(os.environ.get(TOKEN_ENV, "").strip())
    if scheme in ("https", "http"):
        host = urlsplit(url).hostname or "?"
        if token:
            return Finding(name, "state-remote", "ok", f"state remote {remote} ({scheme}://{host}): push credential"
                           f" from ${TOKEN_ENV}, sent by the runner's own fetch and push only")
        return Finding(name, "state-remote", "warning", f"state remote {remote} ({scheme}://{host}) and no"
                       f" ${TOKEN_ENV}: the tick's fetch and push carry no credential (a tick reads no credential"
                       " helper of yours), so a private remote refuses them",
                       f"hand the runner a token that may push as ${TOKEN_ENV}")
    kind = "ssh" if scheme == "ssh" or (not scheme and ":" in url.split("/", 1)[0]) else "local"
    unused = f"; ${TOKEN_ENV} is set but not used" if token else ""
    return Finding(name, "state-remote", "note", f"state remote {remote} is {kind}: git's own access"
                   f" ({'ssh keys' if kind == 'ssh' else 'file permissions'}) pushes, no token needed{unused}")


__all__ = ["Finding", "doctor", "doctor_loop", "fetch_state", "project_checks", "state_remote_checks"]
