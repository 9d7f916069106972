"""`--install-hooks claude|codex|gemini|opencode|git`: put automaton's hook where each tool looks.

Agent settings are merged, never clobbered: other keys and other hooks stay as they are; our
own handler (its command holds `--hook <agent>`) is replaced, so installing twice equals
installing once. The hook is installed for every tool (matcher `*`): a tool the hook does not
know is denied there, MCP tools included.

Where the agent has first-party deny rules, they are written too, as a second wall that does not
depend on the hook process: Claude Code `permissions.deny` gets `Edit(…)` rules for `.state*`,
`.automaton/`, `.git/` and the hook settings (an `Edit` rule covers Edit, Write and
NotebookEdit; patterns follow gitignore, `**/` matching at any depth: code.claude.com
docs/en/permissions "Read and Edit", tools-reference "Configure tools with permission rules"),
merged into the existing list. Codex's sandbox settings (`sandbox_workspace_write`) have no
per-path deny (workspace-write already keeps `.git` and `.codex` read-only; its beta permission
profiles replace `--sandbox` rather than add to it), so nothing is written and the output says so.

Installing is refused (exit 1, naming the file and key) over a settings file that switches every
hook off: Claude `disableAllHooks: true` (in `.claude/settings.json` or
`.claude/settings.local.json`), Codex `[features] hooks = false` (or the older `codex_hooks`) in
`.codex/config.toml`, Gemini `hooksConfig.enabled: false` / `hooks.enabled: false` /
`tools.enableHooks: false` in `.gemini/settings.json`: a hook written there would never run.

The command is absolute (the `automaton` script next to `sys.executable`, or
`sys.executable -m automaton`), pins `--project`, and ends in `|| exit 2` so that even a
missing or broken executable blocks instead of failing open (every agent runs the command
through a shell). Where: Claude `.claude/settings.json` → `hooks.PreToolUse`
(code.claude.com/docs/en/hooks; a loop worktree gets `loop_settings()` through
`claude --settings`, because project settings do not follow a worktree); Codex
`.codex/hooks.json` → `hooks.PreToolUse` (developers.openai.com/codex/hooks; the project layer
must be trusted in `/hooks`); Gemini `.gemini/settings.json` → `hooks.BeforeTool` (gemini-cli
docs/hooks/reference.md; the folder must be trusted). OpenCode has no command hooks: a project
plugin `.opencode/plugin/automaton.js` (`opencode_plugin`, no npm dependencies) runs the same
command with node's `child_process.spawnSync` in its `tool.execute.before` event and throws
(which blocks the call) unless the command exits 0; like the git hook it is a whole file, so
one automaton did not write (no `OPENCODE_MARKER`) is refused. git: `pre-commit` in
`git rev-parse --git-path hooks`.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from automaton.core import jsontext
from automaton.core.errors import BadInput, Refused
from automaton.core.names import LoopName
from automaton.core.outcome import Outcome
from automaton.store.atomic import atomic_write
from automaton.store.layout import Project

AGENT_TARGETS: dict[str, tuple[str, str]] = {  # agent -> (settings file, event)
    "claude": (".claude/settings.json", "PreToolUse"),
    "codex": (".codex/hooks.json", "PreToolUse"),
    "gemini": (".gemini/settings.json", "BeforeTool"),
}
NOTES: dict[str, str] = {
    "claude": "Claude Code loads it from sessions started in the project root",
    # codex-cli 0.171.0 skips an untrusted project's whole .codex/ layer, hooks included, even
    # with --dangerously-bypass-hook-trust ("Untrusted project-local configuration is disabled").
    "codex": "trust the project in Codex first (codex exec --trust, outside automaton --sandbox where"
             " ~/.codex/config.toml is read-only), then its hooks once (/hooks) or run codex with"
             " --dangerously-bypass-hook-trust; Codex has no per-path deny list in its sandbox settings, so only"
             " the hook guards .state*, .automaton/ and the hook settings (workspace-write keeps .git and .codex"
             " read-only)",
    # gemini-cli 0.61.0: --skip-trust sets GEMINI_CLI_TRUST_WORKSPACE only after the settings
    # are read, so its project hooks stay unloaded ("Hook registry initialized with 0 hook entries").
    "gemini": "Gemini CLI runs project hooks only in a trusted folder (trust it once in Gemini CLI, or set"
              " GEMINI_CLI_TRUST_WORKSPACE=true; --skip-trust does not load them)",
}
# Claude Code permission rules (gitignore patterns relative to the settings' folder, `**/` = any
# depth, a leading `/` = that folder), written to permissions.deny. `.automaton/` is anchored: a
# loop's worktree lives below it, and its agent must still edit the worktree.
CLAUDE_DENY = ("Edit(**/.state*)", "Edit(/.automaton/**)", "Edit(**/.git/**)", "Edit(**/.claude/settings.json)",
               "Edit(**/.claude/settings.local.json)", "Edit(**/.codex/**)", "Edit(**/.gemini/settings.json)")
GIT_MARKER = "# automaton pre-commit hook"
OPENCODE_PLUGIN = ".opencode/plugin/automaton.js"
OPENCODE_MARKER = "// automaton opencode plugin"
OPENCODE_NOTE = ("OpenCode loads it from sessions started in the project (restart running ones); outside the"
                 " sandbox it also installs its plugin package into .opencode/ (package.json, node_modules/)")
# opencode-ai 1.18.33 (`Config.ensureGitignore`) creates `.gitignore` in every `.opencode/` it
# loads and stops at start-up when it cannot ("Unexpected error … FileSystem.writeFile"), unless
# one exists; `.opencode/` is never writable inside automaton's sandbox, so the install writes
# it. Its lines are OpenCode's own less `.gitignore` itself, so that it can be committed with
# the plugin (a loop worktree gets only committed files). Its dependency install only warns.
OPENCODE_GITIGNORE = (".opencode/.gitignore", "node_modules\npackage.json\npackage-lock.json\nbun.lock\n")
# Milliseconds the plugin waits for the hook, well past its own deadline (hooks.DEADLINE_S), so
# that only a hook that hangs is cut off (and then the call is blocked).
OPENCODE_TIMEOUT_MS = 30000
LOOP_SETTINGS = "claude-settings.json"


def automaton_argv() -> list[str]:
    """The absolute command that runs automaton with this interpreter."""
    bindir = Path(os.path.abspath(sys.executable)).parent  # not realpath: stay in the venv
    script = bindir / ("automaton.exe" if os.name == "nt" else "automaton")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [os.path.abspath(sys.executable), "-m", "automaton"]


def shell_join(argv: list[str]) -> str:
    return subprocess.list2cmdline(argv) if os.name == "nt" else shlex.join(argv)


def hook_command(agent: str, project: Project) -> str:
    """The hook's shell command: absolute, project pinned, fail closed (`|| exit 2`)."""
    argv = [*automaton_argv(), "--hook", agent, "--project", str(project.root)]
    return f"{shell_join(argv)} || exit 2"


def _ours(agent: str) -> Any:
    def test(handler: object) -> bool:
        command = handler.get("command") if isinstance(handler, dict) else None
        return isinstance(command, str) and f"--hook {agent}" in command
    return test


def hook_group(agent: str, project: Project) -> dict[str, Any]:
    """One matcher group running our hook for `agent`'s writing and shell tools."""
    from automaton.hooks import claude, codex, gemini

    matcher = {"claude": claude.MATCHER, "codex": codex.MATCHER, "gemini": gemini.MATCHER}[agent]
    handler: dict[str, Any] = {"type": "command", "command": hook_command(agent, project)}
    if agent == "gemini":
        handler["name"] = "automaton"
    return {"matcher": matcher, "hooks": [handler]}


def merge(doc: dict[str, Any], event: str, group: dict[str, Any], agent: str, where: Path) -> None:
    """Put `group` under `doc.hooks[event]`, dropping our older handlers, keeping all else."""
    hooks = doc.setdefault("hooks", {})
    if not isinstance(hooks, dict) or not isinstance(hooks.setdefault(event, []), list):
        raise BadInput(f"{where}: 'hooks.{event}' is not the documented shape; fix it by hand first")
    ours = _ours(agent)
    kept: list[Any] = []
    for old in hooks[event]:
        if isinstance(old, dict) and isinstance(old.get("hooks"), list):
            handlers = [h for h in old["hooks"] if not ours(h)]
            if len(handlers) != len(old["hooks"]):
                if not handlers:
                    continue
                old = {**old, "hooks": handlers}
        kept.append(old)
    hooks[event] = [*kept, group]


def read_json(path: Path) -> dict[str, Any]:
    """A settings file as a dict ({} when absent); BadInput when it is not a JSON object."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise BadInput(f"{path}: cannot read ({exc.strerror})") from None
    try:
        data = jsontext.loads(text, unique=True) if text.strip() else {}
    except ValueError as exc:
        raise BadInput(f"{path}: not valid JSON ({exc}); fix it by hand, automaton never overwrites it") from None
    if not isinstance(data, dict):
        raise BadInput(f"{path}: not a JSON object; fix it by hand, automaton never overwrites it")
    return data


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(data, indent=2) + "\n").encode("utf-8"))


def install(project: Project, agent: str, *, own: tuple[str, ...] | None = None) -> Outcome:
    """Install the hook of `agent` (claude|codex|gemini|opencode|git). data {agent, path, changed, command,
    deny} (`deny`: the first-party rules now in the agent's settings, [] where it has none).
    Refused (exit 1) over settings that switch every hook off, and when automaton itself is
    installed inside the project (`own`: its install's real paths, default
    `install_paths.own_roots()`); BadInput (exit 2) for settings that are not the documented shape."""
    from automaton.install_paths import refusal

    inside = refusal(str(project.root), "--install-hooks", own)
    if inside is not None:
        raise Refused(inside)
    if agent == "git":
        return install_git(project)
    if agent == "opencode":
        return install_opencode(project)
    if agent not in AGENT_TARGETS:
        raise BadInput(f"--install-hooks {agent!r}: use claude, codex, gemini, opencode or git")
    rel, event = AGENT_TARGETS[agent]
    path = project.root / rel
    before = read_json(path)
    refuse_disabled(project, agent, before)
    after = json.loads(json.dumps(before))
    group = hook_group(agent, project)
    merge(after, event, group, agent, path)
    deny = merge_deny(after, path) if agent == "claude" else []
    changed = after != before
    if changed:
        write_json(path, after)
    command = group["hooks"][0]["command"]
    word = "installed" if changed else "already installed"
    lines = [f"{agent} hook {word} in {rel} ({event}, matcher {group['matcher']!r})", f"command: {command}"]
    if deny:
        lines.append(f"deny rules in {rel} permissions.deny: {', '.join(deny)}")
    return Outcome(lines=[*lines, f"note: {NOTES[agent]}"],
                   data={"agent": agent, "path": str(path), "changed": changed, "command": command, "deny": deny})


def merge_deny(doc: dict[str, Any], where: Path) -> list[str]:
    """Add `CLAUDE_DENY` to `doc.permissions.deny`, keeping every rule already there (in order);
    returns the rules. BadInput when `permissions` or `deny` is not the documented shape."""
    permissions = doc.setdefault("permissions", {})
    if not isinstance(permissions, dict) or not isinstance(permissions.setdefault("deny", []), list):
        raise BadInput(f"{where}: 'permissions.deny' is not a list; fix it by hand first")
    rules: list[Any] = permissions["deny"]
    rules += [rule for rule in CLAUDE_DENY if rule not in rules]
    return list(CLAUDE_DENY)


def refuse_disabled(project: Project, agent: str, doc: dict[str, Any]) -> None:
    """Refused (exit 1, one line naming the file and key) when the agent's settings switch every
    hook off, so that the installed hook would never run."""
    found: tuple[Path, str] | None = None
    if agent == "claude":
        local = project.root / ".claude/settings.local.json"
        for path, data in ((project.root / AGENT_TARGETS["claude"][0], doc), (local, read_json(local))):
            if data.get("disableAllHooks") is True:
                found = (path, "disableAllHooks: true")
                break
    elif agent == "codex":
        found = _codex_disabled(project.root / ".codex/config.toml")
    elif agent == "gemini":
        for keys in (("hooksConfig", "enabled"), ("hooks", "enabled"), ("tools", "enableHooks")):
            section = doc.get(keys[0])
            if isinstance(section, dict) and section.get(keys[1]) is False:
                found = (project.root / AGENT_TARGETS["gemini"][0], f"{'.'.join(keys)}: false")
                break
    if found is not None:
        raise Refused(f"{found[0]}: {found[1]} switches every {agent} hook off; automaton will not install a hook"
                      " that never runs: remove that key by hand, then run --install-hooks again")


def _codex_disabled(path: Path) -> tuple[Path, str] | None:
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BadInput(f"{path}: cannot read it as TOML ({exc}); fix it by hand first") from None
    features = data.get("features")
    for key in ("hooks", "codex_hooks"):
        if isinstance(features, dict) and features.get(key) is False:
            return path, f"[features] {key} = false"
    return None


def loop_settings(project: Project, loop_name: str) -> Path:
    """Write `<loop folder>/claude-settings.json` and return its path, for the runner's
    `claude --settings PATH` inside the loop worktree (project settings do not follow a worktree).

    It holds the project's own `.claude/settings.json` (when there is one) with the automaton
    hook and deny rules merged in, pinned to this project, and `disableAllHooks: false` (settings
    given with `--settings` outrank project and user settings, so a kill switch there cannot
    reach the loop). BadInput when the project settings are not JSON.
    """
    folder = project.loop_dir(LoopName.of(loop_name))
    if not folder.is_dir():
        raise BadInput(f"unknown loop {loop_name!r}: no folder {folder}")
    path = folder / LOOP_SETTINGS
    doc = read_json(project.root / AGENT_TARGETS["claude"][0])
    merge(doc, "PreToolUse", hook_group("claude", project), "claude", path)
    merge_deny(doc, path)
    doc["disableAllHooks"] = False  # command-line settings outrank the project's and the user's
    write_json(path, doc)
    return path


# Hook managers that own the folder `core.hooksPath` names and write its scripts themselves:
# a file of automaton's there is overwritten or never run. husky (typicode/husky) sets
# core.hooksPath to `.husky/_` (v9; `.husky` before) and keeps `husky.sh` or `h` in it.
_MANAGED = (".husky",)
_MANAGER_FILES = ("husky.sh", "h")


def git_hooks_dir(project: Project, line: str) -> Path:
    """The folder git runs the project's hooks from, as git finds it: `core.hooksPath` from
    any config scope (the user's global config too, which automaton's hardened git otherwise
    never reads; read-only), else the repository's `hooks` folder. Refused (exit 1) with the
    fix when `core.hooksPath` names a hook manager's folder (husky) or a folder outside the
    project (a global one: this project's hook would run for every repository). BadInput when
    the project is no git repository."""
    from automaton.git import run_git

    found = run_git(project.root, ["rev-parse", "--git-path", "hooks"], user_config=True)
    own = run_git(project.root, ["rev-parse", "--git-common-dir"])
    if found.code != 0 or own.code != 0:
        raise BadInput(f"{project.root} is not a git repository ({(found.err or own.err).strip()}): run git init first")
    hooks_dir = project.root / Path(found.out.strip())
    if hooks_dir.resolve() == (project.root / Path(own.out.strip()) / "hooks").resolve():
        return hooks_dir
    where = hooks_dir.resolve()
    if any(part in _MANAGED for part in where.parts) or any((where / f).is_file() for f in _MANAGER_FILES):
        manager = where.parent if where.name == "_" else where
        raise Refused(f"core.hooksPath is {hooks_dir}, a hook manager's folder (husky): git runs its hooks,"
                      f" not automaton's; add this line to {manager / 'pre-commit'}: {line}")
    if where != project.root and project.root not in where.parents:
        raise Refused(f"core.hooksPath is {hooks_dir}, outside this project (a global setting?): automaton will"
                      f" not put this project's hook where every repository runs it; add this line to"
                      f" {hooks_dir / 'pre-commit'}, or give this repository its own hooks folder"
                      f" (git config core.hooksPath .githooks) and run --install-hooks git again: {line}")
    return hooks_dir


def install_git(project: Project) -> Outcome:
    """Install the pre-commit hook; refuses (exit 1) to replace a hook automaton did not write."""

    line = f"{shell_join([*automaton_argv(), '--hook', 'git', '--project', str(project.root)])} || exit 2"
    hooks_dir = git_hooks_dir(project, line)
    path = hooks_dir / "pre-commit"
    text = f"#!/bin/sh\n{GIT_MARKER}: installed by automaton --install-hooks git\n{line}\n"
    old = _read_own(path)
    if old is not None and GIT_MARKER not in old:
        raise Refused(f"{path} is another tool's hook: automaton will not overwrite it; add this line to it: {line}")
    changed = old != text
    if changed:
        hooks_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode("utf-8"))
    path.chmod(0o755)
    word = "installed" if changed else "already installed"
    return Outcome(lines=[f"git pre-commit hook {word} at {path}", f"runs: {line}"],
                   data={"agent": "git", "path": str(path), "changed": changed, "command": line})


def opencode_plugin(command: str) -> str:
    """The text of `.opencode/plugin/automaton.js` running `command` (a shell command line).

    OpenCode (opencode-ai 1.18.33, packages/plugin `Hooks`) calls every function a project
    plugin module exports with its context ({directory, worktree, ...}) and awaits the hooks it
    returns; `tool.execute.before` gets ({tool, sessionID, callID}, {args}). The payload on the
    hook's stdin is the one `hooks.opencode` reads. Only exit status 0, with the payload
    written in full, lets the call run: any other answer throws the hook's stderr (a denial's
    one line), or, when it said nothing, a reason of its own (could not start, broke the pipe,
    killed after OPENCODE_TIMEOUT_MS, died by a signal, another exit status)."""
    return f"""{OPENCODE_MARKER}: installed by automaton --install-hooks opencode; run that again rather than edit
// OpenCode runs this before every tool call; a throw blocks the call.
import {{ spawnSync }} from "node:child_process";

const COMMAND = {json.dumps(command)};
const TIMEOUT_MS = {OPENCODE_TIMEOUT_MS};

function refuse(why) {{
  throw new Error(`automaton denied this tool call: ${{why}}; denied to stay safe`);
}}

export const AutomatonHook = async ({{ directory }}) => ({{
  "tool.execute.before": async (input, output) => {{
    const payload = JSON.stringify({{
      hook_event_name: "tool.execute.before",
      session_id: input.sessionID,
      call_id: input.callID,
      tool_name: input.tool,
      tool_input: output.args,
      cwd: directory || process.cwd(),
    }});
    let done;
    try {{
      done = spawnSync("/bin/sh", ["-c", COMMAND], {{ input: payload, encoding: "utf8", timeout: TIMEOUT_MS }});
    }} catch (err) {{
      refuse(`the hook could not run (${{err}})`);
    }}
    if (done.status === 0 && !done.error) return;
    const said = (done.stderr || "").trim();
    if (said) throw new Error(said);
    if (done.error) refuse(`the hook could not run (${{done.error.message}})`);
    const how = done.status === null ? `died (${{done.signal}})` : `exited ${{done.status}}`;
    refuse(`the hook ${{how}} without a reason`);
  }},
}});
"""


def install_opencode(project: Project) -> Outcome:
    """Write `.opencode/plugin/automaton.js` (`opencode_plugin`), and `.opencode/.gitignore`
    (OPENCODE_GITIGNORE) where there is none. Refused (exit 1) over a plugin file there that
    automaton did not write (no OPENCODE_MARKER); installing twice changes nothing.
    data {agent, path, changed, command, deny: []}."""
    path = project.root / OPENCODE_PLUGIN
    command = hook_command("opencode", project)
    text = opencode_plugin(command)
    old = _read_own(path)
    if old is not None and not old.startswith(OPENCODE_MARKER):
        raise Refused(f"{path} is another plugin: automaton will not overwrite it; move it aside and run"
                      " --install-hooks opencode again")
    changed = old != text
    if changed:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode("utf-8"))
    ignore = project.root / OPENCODE_GITIGNORE[0]
    if not os.path.lexists(ignore):
        atomic_write(ignore, OPENCODE_GITIGNORE[1].encode("utf-8"))
        changed = True
    word = "installed" if changed else "already installed"
    lines = [f"opencode hook {word} in {OPENCODE_PLUGIN} (tool.execute.before, every tool)", f"command: {command}",
             f"note: {OPENCODE_NOTE}"]
    return Outcome(lines=lines, data={"agent": "opencode", "path": str(path), "changed": changed, "command": command,
                                      "deny": []})


def _read_own(path: Path) -> str | None:
    """The text of a file automaton may have installed (a git hook, a plugin); None when it does
    not exist; BadInput (exit 2) when it cannot be read as UTF-8 text."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot read ({exc})") from None
