"""The checks of `--doctor` that look outside automaton: the agent CLI, its login, the verifier.

None of them calls an agent: a login is only looked for where the CLI keeps it (or in its API
key variable), and the verify command runs on an export of the loop's base commit, never on
the agent's work.

`--audit` (a verb of the fast argv path, cli/fastpath.py) loads this module for `hook_findings`
(commands.reports); the imports only a check of `--doctor` needs are made in that check (`# lazy:`).
"""

from __future__ import annotations

import importlib
import itertools
import os
import re
import shlex
import shutil
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from automaton.commands.loop_status import score_text
from automaton.commands.writable import agent_policy
from automaton.core import jsontext
from automaton.core.errors import AutomatonError
from automaton.core.loopconfig import LoopConfig
from automaton.core.loopstate import LoopState
from automaton.core.sandbox import Policy
from automaton.core.scope import Scope
from automaton.core.secrets import without_credentials
from automaton.core.verdicts import from_agent, from_command
from automaton.git import run_git
from automaton.git.errors import DriftError, GitMissing
from automaton.git.export import export_tree
from automaton.git.protect import collected_patterns, effective_protected, protected_spec
from automaton.git.tree import list_tree
from automaton.harnesses import REGISTRY
from automaton.proc import run_streaming
from automaton.store.atomic import read_all, read_left
from automaton.store.layout import Project
from automaton.store.loops import Loop

_MARK = {"ok": "ok      ", "problem": "PROBLEM ", "warning": "warning ", "note": "note    "}
# Seconds the verify command may run on the base commit (at most the loop's own harness timeout).
VERIFY_TIMEOUT_S = 600
MAX_JUNIT_BYTES = 64 << 20  # the JUnit file of the verify command's run on the base commit
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

    module = REGISTRY.get(harness.name)
    return getattr(importlib.import_module(module), "EXECUTABLE", None) if module else None


def harness_checks(name: str, config: LoopConfig, path_env: str | None) -> list[Finding]:
    """The agent CLI on the PATH a tick gets (`path_env`: the one run-tick.sh exports; None:
    not scheduled, so this shell's PATH), then its login."""
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
    if found:
        out += _tested(name, h, found)
    out.append(_login(name, h, scheduled=path_env is not None))
    return out


def _tested(name: str, harness: str, found: str) -> list[Finding]:
    """Whether the CLI at `found` is a version automaton's end-to-end suite ran against
    (`harnesses.versions`); nothing for a harness with no tested range (command, aider)."""
    from automaton.harnesses import versions  # lazy: kept off --audit (module docstring)

    tested = versions.TESTED.get(harness)
    if tested is None:
        return []
    version = versions.version_of(os.path.realpath(found), tested.package)
    span = versions.range_text(harness)
    if version is None:
        return [Finding(name, "harness-version", "note", f"cannot read the version of {found}"
                        f" (not an npm install of {tested.package}); automaton was tested with {harness} {span}")]
    if versions.in_range(harness, version):
        return [Finding(name, "harness-version", "ok", f"{harness} {version} is in the tested range ({span})")]
    return [Finding(name, "harness-version", "warning", f"{harness} {version} is outside the tested range ({span}):"
                    " its hook payloads, flags or output may differ from what automaton reads",
                    f"install {tested.package}@{tested.highest}, or run make e2e against this version")]


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


def base_commit(project: Project, config: LoopConfig, state: LoopState) -> str | None:
    """The commit the loop's work starts from: the recorded base_commit, else the tip of
    `blast_radius.base_branch`, else HEAD (what the first tick would take)."""
    if state.base_commit:
        return str(state.base_commit)
    ref = config.blast_radius.base_branch or "HEAD"
    got = run_git(project.root, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"])
    return got.out.strip() if got.code == 0 and got.out.strip() else None


def verify_policy(project: Project, config: LoopConfig, tree: Path, tmp: Path) -> Policy | None:
    """The sandbox `--doctor` runs a verify command in: a tick verifier's (the export and a temp
    dir writable, the key and the credential stores hidden, no network); None where the
    human-approved loop.json says `"sandbox": "off"`."""
    if config.sandbox == "off":
        return None

    return agent_policy(project.root, (tree, tmp), tmp, "doctor verify", agent="command", cwd=tree,
                        argv=config.roles.verify.command or (), isolation=config.isolation, network=False)


def verify_check(project: Project, name: str, config: LoopConfig, state: LoopState,
                 path_env: str | None = None) -> Finding:
    """Run the verify command on a clean export of the base commit (its submodules filled from
    the project's own objects, git/submodules.py; a submodule left empty is a problem), with
    the tick's PATH when scheduled, at most VERIFY_TIMEOUT_S seconds, inside the verifier's sandbox
    (`verify_policy`) and without credential variables, and read a score from it as a tick
    would. A problem when it cannot start, times out or gives no score; an agent verifier is a
    note. The caller runs it only for a loop.json a human approved (`doctor.doctor_loop`)."""
    role = config.roles.verify
    if not role.command:
        return Finding(name, "verify", "note", f"the verifier is the agent prompt {role.prompt}: not run here"
                       " (it would be a paid agent call)")
    base = base_commit(project, config, state)
    if base is None:
        where = config.blast_radius.base_branch or "HEAD"
        return Finding(name, "verify", "problem", f"no base commit to verify ({where} does not name a commit)",
                       "commit the project, or fix blast_radius.base_branch")

    tmp = Path(tempfile.mkdtemp(prefix="automaton-doctor-"))
    try:
        tree = tmp / "tree"
        try:
            empty = export_tree(project.root, base, tree, protected=[], base_commit=base).empty_submodules
        except (DriftError, GitMissing, OSError) as exc:
            return Finding(name, "verify", "problem", f"cannot export the base commit {base[:12]}: {exc}")
        argv = list(role.command) + ([f"--junitxml={tmp / 'junit.xml'}"] if role.score == "junit" else [])
        env = without_credentials(dict(os.environ, AUTOMATON_ROLE="verify", PYTHONDONTWRITEBYTECODE="1"), "command")
        if path_env is not None:
            env["PATH"] = path_env
        timeout = min(config.harness.timeout_s, VERIFY_TIMEOUT_S)
        log = tmp / "verify.log"
        # Confined as a tick's verifier is: the command and the project's tests may be an agent's.
        got = run_streaming(argv, out_path=log, cwd=tree, env=env, timeout_s=timeout,
                            sandbox=verify_policy(project, config, tree, tmp))
        shown = " ".join(role.command)
        output = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
        if got.code in (126, 127):
            last = output.strip().splitlines()[-1:] or [""]
            return Finding(name, "verify", "problem", f"verify command {shown!r} cannot start: {last[0]}",
                           "install it, or fix roles.verify.command")
        if got.timed_out:
            return Finding(name, "verify", "problem", f"verify command {shown!r} ran past {timeout} s on the base"
                           " commit", "make it faster, or raise harness.timeout_s")
        # Never a link followed: the project's tests may leave one to the record key there.
        left = read_left(tmp / "junit.xml", MAX_JUNIT_BYTES)
        xml = None if left is None else left.decode("utf-8", errors="replace")
        verdict = from_agent(output) if role.score == "agent" else from_command(got.code, output, xml)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if empty:  # an empty submodule folder: the verifier scored code it never saw
        return Finding(name, "verify", "problem", f"submodule {', '.join(empty)} is empty in the verifier's export of"
                       f" {base[:12]}: its commit is in no local .git/modules folder",
                       "run git submodule update --init in the project, then automaton --doctor again")
    if verdict.score is None:
        return _unscored(name, shown, base, got.code, output, verdict.summary)

    return Finding(name, "verify", "ok", f"verify command {shown!r} scores {score_text(verdict.score)} on the base"
                   f" commit {base[:12]} ({verdict.summary})")


_LAST_LINES = 3


def _unscored(name: str, shown: str, base: str, code: int, output: str, summary: str) -> Finding:
    """The problem of a verify command that gave no score: its exit status and last output
    lines (the cause, e.g. `No module named pytest`), and a fix that fits it: a missing module
    is installed for the interpreter that runs the command; a failing command is fixed; only a
    command that succeeded without a score is told to print one."""
    lines = [" ".join(x.split()) for x in output.strip().splitlines() if x.strip()][-_LAST_LINES:]
    tail = " | ".join(lines)[-400:] or "no output"
    missing = _MISSING_MODULE.search(output)
    program = shown.split(" ", 1)[0]
    if missing is not None:
        module = missing.group(1).split(".")[0]
        fix = (f"install {module} for the Python that runs it ({program} -m pip install"
               f" {module.replace('_', '-')}), or point roles.verify.command at the project's own Python")
    elif code != 0:
        fix = "run the command by hand in a clean checkout of the base commit and fix what it says"
    else:
        fix = "make it print a test summary or JUnit XML (roles.verify.score)"
    return Finding(name, "verify", "problem", f"verify command {shown!r} exited {code} with no score on the base"
                   f" commit {base[:12]} ({summary}): every tick would be unscored; its last output: {tail}", fix)


_MISSING_MODULE = re.compile(r"No module named '?([A-Za-z_][\w.]*)'?")
_PROBE = ("import importlib.util, sys; print(' '.join(m for m in sys.argv[1:]"
          " if importlib.util.find_spec(m) is None))")


def python_check(project: Project, name: str, config: LoopConfig, path_env: str | None = None) -> Finding | None:
    """Whether the Python that runs a template's verifier (loop.json `roles.verify.command[0]`,
    the `{{python}}` chosen at `--create-loop`) imports the modules the template needs
    (`templates.verify_needs`), probed as the tick runs it: the tick's PATH, no credential
    variables, the verifier's sandbox. None when loop.json names no template that declares
    them (or it is gone), or the command does not start with a Python. The caller runs it only
    for a loop.json a human approved."""
    from automaton.commands.templates import template_dir, verify_needs  # lazy: kept off --audit (module docstring)

    argv = list(config.roles.verify.command or [])
    if not argv or not config.template or not os.path.basename(argv[0]).lower().startswith("python"):
        return None
    try:
        needs = verify_needs(template_dir(project, config.template)[0])
    except AutomatonError:
        return None
    if not needs:
        return None
    tmp = Path(tempfile.mkdtemp(prefix="automaton-doctor-"))
    try:
        env = without_credentials(dict(os.environ, PYTHONDONTWRITEBYTECODE="1"), "command")
        if path_env is not None:
            env["PATH"] = path_env
        log = tmp / "probe.log"
        got = run_streaming([argv[0], "-c", _PROBE, *needs], out_path=log, cwd=tmp, env=env, timeout_s=60,
                            sandbox=verify_policy(project, config, tmp, tmp))
        output = log.read_text(encoding="utf-8", errors="replace").strip() if log.is_file() else ""
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if got.code != 0 or got.timed_out:
        last = output.splitlines()[-1:] or ["no output"]
        return Finding(name, "python", "problem", f"the verifier's Python {argv[0]} (what every tick runs, under"
                       f" cron too) cannot start (exit {got.code}): {last[0]}",
                       "create the loop again with --var python=PATH naming a Python that works")
    absent = output.splitlines()[-1].split() if output else []
    if absent:
        pip = " ".join(m.replace("_", "-") for m in absent)
        return Finding(name, "python", "problem", f"the verifier's Python {argv[0]} (what every tick runs, under"
                       f" cron too) cannot import {', '.join(absent)}: every tick would be unscored",
                       f"{argv[0]} -m pip install {pip}, or create the loop again with --var python=PATH")
    return Finding(name, "python", "ok", f"the verifier's Python {argv[0]} (what every tick runs, under cron too)"
                   f" imports {', '.join(needs)}")


# --- The agent hooks' liveness (`--audit` and `--doctor`) ---
# Whether automaton's agent hooks are still alive: present, and not switched off.
#
# An agent that can edit its own settings (in a hooks-only session) could delete the hook or set
# a kill switch; the hook denies those edits, but a shell or script can still make them. So
# `--audit` (a VIOLATION line each) and `--doctor` (a problem each) read, for every agent whose
# project folder exists (`.claude/`, `.codex/`, `.gemini/`):
#
# - that automaton's handler is still there: a command with `--hook AGENT`, `--project` this
#   project and `|| exit 2`, in a group whose matcher is every tool (`*`), under the agent's
#   pre-tool event, in the project's or the user's settings;
# - that no kill switch is set, in the project's or the user's settings: Claude Code
#   `"disableAllHooks": true` (`.claude/settings.json`, `.claude/settings.local.json`,
#   `~/.claude/settings.json`; code.claude.com/docs/en/hooks "Disable or remove hooks"); Codex
#   `[features] hooks = false` or `codex_hooks = false` (`.codex/config.toml`,
#   `~/.codex/config.toml`; developers.openai.com/codex/hooks); Gemini CLI
#   `hooksConfig.enabled: false`, `hooks.enabled: false`, `tools.enableHooks: false`, or
#   `"automaton"` in `hooksConfig.disabled` (`.gemini/settings.json`, `~/.gemini/settings.json`;
#   gemini-cli docs/hooks/reference.md and its settings schema).
#
# A settings file that cannot be read (not JSON/TOML, a FIFO, unreadable) is a finding too: the
# agent may read it differently. Managed (system-wide) settings are not read.

EVENTS = {"claude": "PreToolUse", "codex": "PreToolUse", "gemini": "BeforeTool"}
FOLDERS = {"claude": ".claude", "codex": ".codex", "gemini": ".gemini"}
HOOK_FILES = {  # agent -> settings files that may hold its hooks (project-relative, or ~/)
    "claude": (".claude/settings.json", ".claude/settings.local.json", "~/.claude/settings.json"),
    "codex": (".codex/hooks.json", "~/.codex/hooks.json"),
    "gemini": (".gemini/settings.json", "~/.gemini/settings.json"),
}
CODEX_CONFIGS = (".codex/config.toml", "~/.codex/config.toml")
EVERY_TOOL = frozenset({"*", ""})


class Unreadable(Exception):
    """A settings file automaton cannot read as the agent would."""


def collection_check(project: Project, name: str, config: LoopConfig, state: LoopState) -> Finding | None:
    """A warning when `blast_radius.file_scope` lets the agent change test files the pytest
    verifier collects (`git.protect.collected_patterns`, read from the base commit's tree) that
    `blast_radius.protected` leaves unprotected: only the frozen test ids and the holdout then
    stand between the agent and a rewritten test. None when all are protected, when the
    verifier is not a pytest command, or when the base commit cannot be read."""
    from automaton.core.testids import runs_pytest  # lazy: kept off --audit (module docstring)

    argv = list(config.roles.verify.command or [])
    base = base_commit(project, config, state)
    if not argv or not runs_pytest(argv) or base is None:
        return None
    try:
        files = list(list_tree(project.root, base))
        collected, scope = Scope(collected_patterns(project.root)), Scope(config.blast_radius.file_scope)
        blast = config.blast_radius.protected
        protected = protected_spec(effective_protected(None if blast is None else list(blast), argv, project.root))
    except (DriftError, ValueError, TypeError):
        return None
    open_files = sorted(f for f in files if collected.match_file(f) and scope.match_file(f)
                        and not protected.match_file(f))
    if not open_files:
        return None
    shown = ", ".join(open_files[:5]) + (f" (+{len(open_files) - 5} more)" if len(open_files) > 5 else "")
    return Finding(name, "tests", "warning", f"file_scope lets the agent change test files the verifier collects,"
                   f" and they are not protected: {shown}",
                   "add them to blast_radius.protected (or leave protected unset for the defaults), or keep"
                   " tests the agent never sees in roles.verify.holdout")


def holdout_check(loop: Loop, config: LoopConfig, state: LoopState) -> Finding | None:
    """A problem when a commit the agent reaches holds the loop's holdout tests
    (`commands.holdout_git.exposed`, SECURITY.md S50: the next tick halts `holdout_committed`),
    or when that cannot be read; an ok line when the holdout is out of git; None without a
    holdout."""
    from automaton.commands import holdout_git  # lazy: kept off --audit (module docstring)

    if config.roles.verify.holdout is None:
        return None
    try:
        found = holdout_git.exposed(loop, config, state)
    except OSError as exc:
        found = holdout_git.Exposure(error=f"{exc.filename or loop.dir}: {exc.strerror or exc}")
    if found.error is not None:
        return Finding(loop.name, "holdout", "problem", f"cannot check whether git holds the holdout tests:"
                       f" {found.error}", "fix what it names; a tick refuses until then")
    if found.paths:
        return Finding(loop.name, "holdout", "problem", f"{holdout_git.what(found)}; the next tick"
                       f" halts ({holdout_git.HOLDOUT_COMMITTED})", holdout_git.steps(loop, config))
    return Finding(loop.name, "holdout", "ok", f"holdout tests {config.roles.verify.holdout}/ are not in the base"
                   " commit, the loop branch or HEAD")


def hook_findings(project: Project) -> list[str]:
    """One line per dead or switched-off hook of an agent the project uses; [] when all live."""
    out: list[str] = []
    for agent in ("claude", "codex", "gemini"):
        if os.path.isdir(project.root / FOLDERS[agent]):
            out += agent_findings(project, agent)
    return out


def agent_findings(project: Project, agent: str) -> list[str]:
    """The findings of one agent (its folder exists)."""
    out: list[str] = []
    present = False
    for rel in HOOK_FILES[agent]:
        path = _where(project, rel)
        try:
            doc = _json(path)
        except Unreadable as exc:
            out.append(f"{path}: {exc}; the {agent} hook's state cannot be checked: fix the file by hand")
            continue
        present = present or _has_hook(doc, agent, project)
        switch = _kill_switch(agent, doc)
        if switch:
            out.append(f"{path}: {switch} switches automaton's {agent} hook off: remove it by hand")
    if agent == "codex":
        for rel in CODEX_CONFIGS:
            out += _codex_config(_where(project, rel))
    if not present:
        files = " or ".join(HOOK_FILES[agent][:1] + HOOK_FILES[agent][-1:])
        out.append(f"automaton's {agent} hook is missing from {files} ({EVENTS[agent]}, matcher '*'): run"
                   f" automaton --install-hooks {agent}")
    return out


def _where(project: Project, rel: str) -> Path:
    return Path(os.path.expanduser(rel)) if rel.startswith("~") else project.root / rel


def _read(path: Path) -> str | None:
    try:
        return read_all(path).decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise Unreadable(f"cannot read ({getattr(exc, 'strerror', None) or exc})") from None


def _json(path: Path) -> dict[str, Any]:
    text = _read(path)
    if text is None or not text.strip():
        return {}
    try:
        data = jsontext.loads(text, unique=True)
    except ValueError as exc:
        raise Unreadable(f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise Unreadable("not a JSON object")
    return data


def _has_hook(doc: dict[str, Any], agent: str, project: Project) -> bool:
    hooks = doc.get("hooks")
    groups = hooks.get(EVENTS[agent]) if isinstance(hooks, dict) else None
    if not isinstance(groups, list):
        return False
    for group in groups:
        if not isinstance(group, dict) or group.get("matcher", "") not in EVERY_TOOL:
            continue
        handlers = group.get("hooks")
        if isinstance(handlers, list) and any(_ours(h, agent, project) for h in handlers):
            return True
    return False


def _ours(handler: object, agent: str, project: Project) -> bool:
    if not isinstance(handler, dict):
        return False
    command = handler.get("command")
    if not isinstance(command, str) or handler.get("type", "command") != "command":
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    pairs = set(itertools.pairwise(words))
    return (("--hook", agent) in pairs and ("--project", str(project.root)) in pairs
            and words[-3:] == ["||", "exit", "2"])


def _kill_switch(agent: str, doc: dict[str, Any]) -> str | None:
    if agent == "claude":
        return '"disableAllHooks": true' if doc.get("disableAllHooks") is True else None
    if agent != "gemini":
        return None
    for section, key in (("hooksConfig", "enabled"), ("hooks", "enabled"), ("tools", "enableHooks")):
        value = doc.get(section)
        if isinstance(value, dict) and value.get(key) is False:
            return f"{section}.{key}: false"
    config = doc.get("hooksConfig")
    disabled = config.get("disabled") if isinstance(config, dict) else None
    if isinstance(disabled, list) and "automaton" in disabled:
        return 'hooksConfig.disabled: ["automaton"]'
    return None


def _codex_config(path: Path) -> list[str]:
    try:
        text = _read(path)
        data = tomllib.loads(text) if text else {}
    except (Unreadable, tomllib.TOMLDecodeError) as exc:
        return [f"{path}: cannot read it as TOML ({exc}); the codex hook's state cannot be checked: fix it by hand"]
    features = data.get("features")
    return [f"{path}: [features] {key} = false switches automaton's codex hook off: remove it by hand"
            for key in ("hooks", "codex_hooks") if isinstance(features, dict) and features.get(key) is False]
