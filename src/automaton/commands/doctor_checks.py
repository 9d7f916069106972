"""The checks of `--doctor` that look outside automaton: the agent CLI, its login, the verifier.

None of them calls an agent: a login is only looked for where the CLI keeps it (or in its API
key variable), and the verify command runs on an export of the loop's base commit, never on
the agent's work.
"""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from automaton.core.loopconfig import LoopConfig
from automaton.core.verdicts import from_agent, from_command
from automaton.git import run_git
from automaton.store.layout import Project

_MARK = {"ok": "ok      ", "problem": "PROBLEM ", "warning": "warning ", "note": "note    "}
# Seconds the verify command may run on the base commit (at most the loop's own harness timeout).
VERIFY_TIMEOUT_S = 600
# harness -> (files under HOME that hold a login, API key variables). Only where checking is
# free: anything else says "cannot check" rather than guess (a paid call is never a check).
LOGINS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "claude": ((".claude.json", ".claude/.credentials.json"), ("ANTHROPIC_API_KEY",)),
    "codex": ((".codex/auth.json",), ("OPENAI_API_KEY",)),
}


@dataclass(frozen=True)
class Finding:
    """One check: `loop` (None: the project), `check` (a short id such as "harness"), `level`
    ("ok" | "problem" | "warning" | "note"), `message` (one line), `fix` (the step, or None)."""

    loop: str | None
    check: str
    level: str
    message: str
    fix: str | None = None

    def line(self) -> str:
        where = f"{self.loop}: " if self.loop else "project: "
        return f"{_MARK[self.level]}{where}{self.message}" + (f"; fix: {self.fix}" if self.fix else "")


def harness_executable(config: LoopConfig) -> str | None:
    """The program a tick starts for the agent: `harness.command[0]`, or the adapter's
    EXECUTABLE; None for an in-process harness (`scripted`) or an unknown one."""
    harness = config.harness
    if harness.name == "command":
        return harness.command[0] if harness.command else None
    from automaton.harnesses import REGISTRY

    module = REGISTRY.get(harness.name)
    return getattr(importlib.import_module(module), "EXECUTABLE", None) if module else None


def harness_checks(name: str, config: LoopConfig, path_env: str | None) -> list[Finding]:
    """The agent CLI on the PATH a tick gets (`path_env`: the one run-tick.sh exports; None:
    not scheduled, so this shell's PATH), then its login."""
    from automaton.harnesses import REGISTRY

    h = config.harness.name
    if h not in REGISTRY:
        return [Finding(name, "harness", "problem", f"unknown harness {h!r}",
                        f"set harness.name to one of {', '.join(sorted(REGISTRY))}")]
    exe = harness_executable(config)
    if exe is None:
        return [Finding(name, "harness", "ok", f"harness {h} runs inside automaton (nothing to install)")]
    where = "the PATH run-tick.sh exports" if path_env is not None else "this shell's PATH (not scheduled)"
    found = shutil.which(exe, path=path_env if path_env is not None else os.environ.get("PATH", os.defpath))
    out = [Finding(name, "harness", "ok", f"harness {h}: {found} (on {where})") if found else
           Finding(name, "harness", "problem", f"harness executable {exe!r} is not on {where}",
                   f"install it or fix PATH, then automaton --install-schedule {name}" if path_env is not None
                   else "install it or fix PATH")]
    out.append(_login(name, h, scheduled=path_env is not None))
    return out


def _login(name: str, harness: str, *, scheduled: bool) -> Finding:
    if harness not in LOGINS:
        return Finding(name, "login", "note", f"cannot check whether {harness} is logged in without calling it")
    files, variables = LOGINS[harness]
    home = Path.home()
    present = [f"~/{f}" for f in files if (home / f).is_file()]
    if present:
        return Finding(name, "login", "ok", f"{harness} login found ({present[0]})")
    keys = [v for v in variables if os.environ.get(v)]
    login = f"run {harness} once and log in (it writes ~/{files[0]})"
    if keys and scheduled:
        return Finding(name, "login", "problem", f"{harness} is logged in only through {keys[0]} in this shell, and"
                       " a scheduled tick does not get it (run-tick.sh exports PATH only)",
                       f"{login}, or have the scheduler set {keys[0]}")
    if keys:
        return Finding(name, "login", "ok", f"{harness} API key found in {keys[0]} (this shell only)")
    return Finding(name, "login", "problem", f"{harness} does not look logged in: no ~/{files[0]} and no"
                   f" {' or '.join(variables)}", login)


def base_commit(project: Project, config: LoopConfig, state: dict[str, Any]) -> str | None:
    """The commit the loop's work starts from: the recorded base_commit, else the tip of
    `blast_radius.base_branch`, else HEAD (what the first tick would take)."""
    if state["base_commit"]:
        return str(state["base_commit"])
    ref = config.blast_radius.base_branch or "HEAD"
    got = run_git(project.root, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"])
    return got.out.strip() if got.code == 0 and got.out.strip() else None


def verify_check(project: Project, name: str, config: LoopConfig, state: dict[str, Any],
                 path_env: str | None = None) -> Finding:
    """Run the verify command on a clean export of the base commit (the tick's PATH when
    scheduled, at most VERIFY_TIMEOUT_S seconds) and read a score from it as a tick would.
    A problem when it cannot start, times out or gives no score; an agent verifier is a note."""
    role = config.roles.verify
    if not role.command:
        return Finding(name, "verify", "note", f"the verifier is the agent prompt {role.prompt}: not run here"
                       " (it would be a paid agent call)")
    base = base_commit(project, config, state)
    if base is None:
        where = config.blast_radius.base_branch or "HEAD"
        return Finding(name, "verify", "problem", f"no base commit to verify ({where} does not name a commit)",
                       "commit the project, or fix blast_radius.base_branch")
    from automaton.git.errors import DriftError, GitMissing
    from automaton.git.export import export_tree
    from automaton.proc import run_capture

    tmp = Path(tempfile.mkdtemp(prefix="automaton-doctor-"))
    try:
        tree = tmp / "tree"
        try:
            export_tree(project.root, base, tree, protected=[], base_commit=base)
        except (DriftError, GitMissing, OSError) as exc:
            return Finding(name, "verify", "problem", f"cannot export the base commit {base[:12]}: {exc}")
        argv = list(role.command) + ([f"--junitxml={tmp / 'junit.xml'}"] if role.score == "junit" else [])
        env = dict(os.environ, AUTOMATON_ROLE="verify", PYTHONDONTWRITEBYTECODE="1")
        if path_env is not None:
            env["PATH"] = path_env
        timeout = min(config.harness.timeout_s, VERIFY_TIMEOUT_S)
        got = run_capture(argv, cwd=tree, env=env, timeout_s=timeout)
        shown = " ".join(role.command)
        if got.code == 127:
            return Finding(name, "verify", "problem", f"verify command {shown!r} cannot start: {got.err.strip()}",
                           "install it, or fix roles.verify.command")
        if got.code == 124:
            return Finding(name, "verify", "problem", f"verify command {shown!r} ran past {timeout} s on the base"
                           " commit", "make it faster, or raise harness.timeout_s")
        output = got.out + got.err
        junit = tmp / "junit.xml"
        xml = junit.read_text(encoding="utf-8", errors="replace") if junit.is_file() else None
        verdict = from_agent(output) if role.score == "agent" else from_command(got.code, output, xml)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if verdict.score is None:
        return Finding(name, "verify", "problem", f"verify command {shown!r} gave no score on the base commit"
                       f" {base[:12]} ({verdict.summary}): every tick would be unscored",
                       "make it print a test summary or JUnit XML (roles.verify.score)")
    from automaton.commands.loop_status import score_text

    return Finding(name, "verify", "ok", f"verify command {shown!r} scores {score_text(verdict.score)} on the base"
                   f" commit {base[:12]} ({verdict.summary})")
