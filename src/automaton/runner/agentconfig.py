"""Agent CLIs in a tick run on a private copy of the user's configuration; the real one is watched.

The user-level configuration of an agent CLI names commands that the user's NEXT ordinary,
unconfined session starts: Claude Code's user-scope `mcpServers` in `~/.claude.json` and the
`hooks`, `statusLine`, `apiKeyHelper`, `env` of `~/.claude/settings.json`; Codex's
`mcp_servers`, `notify` and `hooks` in `~/.codex/config.toml`; Gemini CLI's `mcpServers`,
`hooks` and tool-discovery commands in `~/.gemini/settings.json`; OpenCode's `mcp`, `plugin`,
`formatter`, `lsp`; aider's `lint-cmd`/`test-cmd` in `~/.aider.conf.yml`. An agent that could
write one of them would plant a command outside every sandbox. Two layers keep them:

1. `seed` gives each role of a tick its own configuration folder, copied from the user's real
   one (settings, instructions and credentials) when the role starts and pointed at by the
   CLI's own switch; nothing is ever copied back. The folder lies in the role's own temp
   folder (`runner.confine.scratch`: new for each role, mode 0700, writable by that role's
   sandbox alone, inside the tick's temp folder, which no confined process may write, removed
   when the tick ends), so what an agent writes there, a link included, reaches neither a
   later role, nor the next tick, nor the user. The role's sandbox then grants nothing in the home
   folder (`runner.confine.role_policy`): the user's real files are read-only to it.
2. `Baseline` reads the command-bearing keys (`COMMAND_KEYS`) of every CLI's user-level files
   (`watched`) before the first role and compares them after the agent ran: a change halts the
   loop `human_intervention` with detail `agent_config_changed: <diff>`. This is the only layer
   for a CLI without a switch (aider), and the only one with `"sandbox": "off"`.

The switches (each CLI's own documentation or source; not run against the real binaries here):

- Claude Code: `CLAUDE_CONFIG_DIR` (code.claude.com/docs/en/env-vars) moves `~/.claude/` and
  also `~/.claude.json`, which becomes `$CLAUDE_CONFIG_DIR/.claude.json` (anthropics/claude-code
  issue #24479, where setting it made Claude use `~/.claude/.claude.json`). Linux keeps the login
  in `.credentials.json` there. macOS keeps it in the Keychain under a service name that gets a
  hash of the folder once `CLAUDE_CONFIG_DIR` is set (anthropics/claude-code issue #92252), so a
  Keychain login does not reach the private copy: such a tick needs `CLAUDE_CODE_OAUTH_TOKEN`
  (`claude setup-token`) or `ANTHROPIC_API_KEY`, else it halts `harness_unavailable`.
- Codex: `CODEX_HOME` "sets the root for Codex state, including config, auth, logs, sessions,
  skills" and must exist; `CODEX_SQLITE_HOME` defaults to it
  (developers.openai.com/codex/environment-variables).
- Gemini CLI: `GEMINI_CLI_HOME` replaces the home folder in `homedir()`
  (google-gemini/gemini-cli `packages/core/src/utils/paths.ts`), so its state is read from
  `$GEMINI_CLI_HOME/.gemini/` (`Storage.getGlobalGeminiDir`). Not checked: whether a login a
  Gemini build keeps in the system keychain reaches the copy (GEMINI_API_KEY always does).
- OpenCode: no folder switch of its own for everything (`OPENCODE_CONFIG_DIR` adds a folder, it
  does not replace one); its global paths come from `xdg-basedir`
  (anomalyco/opencode `packages/opencode/src/global/index.ts`): `$XDG_CONFIG_HOME/opencode`,
  `$XDG_DATA_HOME/opencode` (auth.json, downloaded tools), `$XDG_STATE_HOME/opencode`,
  `$XDG_CACHE_HOME/opencode`. All four are pointed into the private folder, and only the
  configuration folder and the logins (`auth.json`, `mcp-auth.json`) are copied: the cache and
  the data folder hold packages and tools opencode later runs, so each role starts them empty
  and opencode fetches what it needs again (network, time). Side effect: the agent's own git
  no longer reads `~/.config/git/config` (it still reads ~/.gitconfig).
- aider: no such switch: `~/.aider.conf.yml` is read from the home folder (Aider-AI/aider
  `aider/args.py` default config files); the `Baseline` watches it whole.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from automaton.commands.halts import halt_now
from automaton.core import jsontext
from automaton.store.atomic import read_all
from automaton.store.loops import Loop

if TYPE_CHECKING:  # Death is a Literal core.loopstate defines for the type checker only
    from automaton.core.loopstate import Death

AGENT_CONFIG_CHANGED = "agent_config_changed"
HALT_REASON: Death = "human_intervention"

# Keys whose values are commands (or load code: plugins, env for the CLI's own process) in the
# watched files, at any depth. Sources: Claude Code settings.md ("hooks", "statusLine",
# "apiKeyHelper", "awsAuthRefresh", "awsCredentialExport", "otelHeadersHelper", "env",
# "enabledPlugins", "extraKnownMarketplaces", "fileSuggestion", "enableAllProjectMcpServers",
# "enabledMcpjsonServers": they start a project's `.mcp.json` servers unasked) and mcp.md
# (user/local scope "mcpServers" in ~/.claude.json); Codex config reference ("mcp_servers", "notify", "hooks");
# Gemini CLI docs/get-started/configuration.md ("mcpServers", "hooks", "discoveryCommand",
# "callCommand", "toolDiscoveryCommand", "toolCallCommand", "bugCommand"); opencode.ai/docs/config
# ("mcp", "plugin", "formatter", "lsp").
COMMAND_KEYS = frozenset({
    "mcpServers", "hooks", "statusLine", "apiKeyHelper", "awsAuthRefresh", "awsCredentialExport",
    "otelHeadersHelper", "env", "enabledPlugins", "extraKnownMarketplaces", "fileSuggestion",
    "enableAllProjectMcpServers", "enabledMcpjsonServers",
    "mcp_servers", "notify",
    "discoveryCommand", "callCommand", "toolDiscoveryCommand", "toolCallCommand", "bugCommand",
    "mcp", "plugin", "formatter", "lsp",
})
WHOLE = "<whole file>"  # the key of a file compared as text (not JSON/TOML, or unparsable)
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH")
_SHOWN_CHARS = 160
_SHOWN_CHANGES = 8

# What each CLI's private folder gets from the user's: (folder, names) pairs; a name may be a
# file or a folder (copied whole, symlinks kept as links). Settings, instructions, credentials,
# user commands/agents/skills/plugins; never transcripts, histories or caches.
_CLAUDE = ("settings.json", ".credentials.json", "CLAUDE.md", "agents", "commands", "skills", "plugins",
           "output-styles")
_CODEX = ("config.toml", "auth.json", "AGENTS.md", "AGENTS.override.md", "prompts", "skills", "rules")
_GEMINI = ("settings.json", "oauth_creds.json", "google_accounts.json", "installation_id", "user_id", "GEMINI.md",
           ".env", "trustedFolders.json", "commands", "extensions", "skills")
_OPENCODE_DATA = ("auth.json", "mcp-auth.json")

# Harnesses with a private configuration folder in ticks (see the module docstring).
PRIVATE = frozenset({"claude", "codex", "gemini", "opencode"})


def _dir(environ: Mapping[str, str], name: str, default: Path) -> Path:
    value = environ.get(name)
    return Path(value) if value else default


def _plan(harness: str, root: Path, home: Path, environ: Mapping[str, str]) -> tuple[
        dict[str, str], list[tuple[Path, Path]]]:
    """(the variables pointing `harness` at `root`, the (source, destination) copies that seed it)."""
    if harness == "claude":
        real = _dir(environ, "CLAUDE_CONFIG_DIR", home / ".claude")
        glob = real / ".claude.json" if environ.get("CLAUDE_CONFIG_DIR") else home / ".claude.json"
        return ({"CLAUDE_CONFIG_DIR": str(root)},
                [(glob, root / ".claude.json"), *((real / n, root / n) for n in _CLAUDE)])
    if harness == "codex":
        real = _dir(environ, "CODEX_HOME", home / ".codex")
        return {"CODEX_HOME": str(root), "CODEX_SQLITE_HOME": str(root)}, [(real / n, root / n) for n in _CODEX]
    if harness == "gemini":
        real = _dir(environ, "GEMINI_CLI_HOME", home) / ".gemini"
        return {"GEMINI_CLI_HOME": str(root)}, [(real / n, root / ".gemini" / n) for n in _GEMINI]
    if harness == "opencode":
        config = _dir(environ, "XDG_CONFIG_HOME", home / ".config") / "opencode"
        data = _dir(environ, "XDG_DATA_HOME", home / ".local" / "share") / "opencode"
        env = {"XDG_CONFIG_HOME": str(root / "config"), "XDG_DATA_HOME": str(root / "data"),
               "XDG_STATE_HOME": str(root / "state"), "XDG_CACHE_HOME": str(root / "cache")}
        return env, [(config, root / "config" / "opencode"),
                     *((data / n, root / "data" / "opencode" / n) for n in _OPENCODE_DATA)]
    return {}, []


@dataclass(frozen=True)
class Seeded:
    """A role's private configuration: `env` (the variables to set on the agent, {} for a
    harness without a switch), `root` (the folder, None then), `problems` (one line per user
    file that exists but could not be copied: the CLI runs without it)."""

    env: dict[str, str]
    root: Path | None
    problems: tuple[str, ...] = ()


def seed(harness: str, root: Path, home: Path | None = None, environ: Mapping[str, str] | None = None) -> Seeded:
    """Create `root` afresh (mode 0700; anything already there is removed) and copy into it the
    user's configuration of `harness` (a loop.json harness name) from `home` (default: this
    user's) as `environ` (default: this process's) locates it. Files keep their modes; a
    missing source is skipped. Never raises for a source it cannot read (listed in `problems`);
    OSError when `root` itself cannot be made. A harness not in `PRIVATE`: nothing is made."""
    env, copies = _plan(harness, root, home or Path.home(), os.environ if environ is None else environ)
    if not env:
        return Seeded({}, None)
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(mode=0o700, parents=True)
    problems = [p for src, dest in copies if (p := _copy(src, dest)) is not None]
    if harness == "opencode":
        for sub in ("state", "cache"):
            (root / sub).mkdir(mode=0o700, exist_ok=True)
    return Seeded(env, root, tuple(problems))


def _copy(src: Path, dest: Path) -> str | None:
    """Copy file or folder `src` to `dest`; None when done or when `src` does not exist."""
    try:
        if not src.exists():
            return None
        dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dest, symlinks=True, ignore=_special)
        elif src.is_file():
            shutil.copy2(src, dest)
        else:  # a FIFO or device would block the runner or feed it without end
            return f"{src}: not a regular file; not copied into the private configuration"
    except (OSError, shutil.Error) as exc:
        return f"{src}: not copied into the private configuration ({exc.strerror or exc})"
    return None


def _special(folder: str, names: list[str]) -> set[str]:
    """The entries of `folder` copytree must skip: neither folder, file nor symlink (FIFOs,
    sockets, devices)."""
    keep = set()
    for name in names:
        path = Path(folder) / name
        if not (path.is_symlink() or path.is_dir() or path.is_file()):
            keep.add(name)
    return keep


def watched(home: Path | None = None, environ: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """The user-level configuration files of every agent CLI automaton runs (all of them, not
    only the loop's: with the sandbox off an agent can write any), located as `environ`
    (default: this process's) says, under `home` (default: this user's)."""
    home, environ = home or Path.home(), os.environ if environ is None else environ
    claude = _dir(environ, "CLAUDE_CONFIG_DIR", home / ".claude")
    opencode = _dir(environ, "XDG_CONFIG_HOME", home / ".config") / "opencode"
    return (
        claude / ".claude.json" if environ.get("CLAUDE_CONFIG_DIR") else home / ".claude.json",
        claude / "settings.json",
        _dir(environ, "CODEX_HOME", home / ".codex") / "config.toml",
        _dir(environ, "GEMINI_CLI_HOME", home) / ".gemini" / "settings.json",
        opencode / "opencode.json", opencode / "opencode.jsonc", opencode / "config.json",
        home / ".aider.conf.yml",
    )


def commands_in(path: Path) -> dict[str, str]:
    """The command-bearing entries of one file: {dotted key path: canonical JSON of its value}.
    A JSON or TOML file that parses gives its `COMMAND_KEYS` entries at any depth; any other
    file (YAML, JSONC with comments, a half-written file) is one entry `WHOLE` with its text. A
    missing file: {}. An unreadable one: {WHOLE: "<unreadable: why>"}; one that is no regular
    file (a FIFO): {WHOLE: "<not a regular file>"} (never "unchanged")."""
    try:
        raw = read_all(path)  # opened without blocking, regular files only: a FIFO never hangs the runner
    except FileNotFoundError:
        return {}
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.EISDIR):
            return {WHOLE: "<not a regular file>"}
        return {WHOLE: f"<unreadable: {exc.strerror or exc}>"}
    text = raw.decode("utf-8", errors="replace")
    try:
        doc: object = tomllib.loads(text) if path.suffix == ".toml" else jsontext.loads(text) \
            if path.suffix == ".json" else None
    except (ValueError, tomllib.TOMLDecodeError):
        doc = None
    if not isinstance(doc, dict):
        return {WHOLE: text}
    found: dict[str, str] = {}
    _walk(doc, "", found)
    return found


def _walk(node: dict[str, object], prefix: str, found: dict[str, str]) -> None:
    """Collect `COMMAND_KEYS` entries. An empty value ({}, [], "", null, false) counts as absent:
    Claude Code itself adds `"mcpServers": {}` to every folder it is first started in, which
    the user may do while a tick runs."""
    for key, value in node.items():
        where = f"{prefix}{key}"
        if key == "env" and isinstance(value, dict):  # one entry per variable: a secret's value stays hidden
            found.update({f"{where}.{k}": json.dumps(v, sort_keys=True, default=str) for k, v in value.items()})
        elif key in COMMAND_KEYS:
            if value not in ({}, [], "", None, False):
                found[where] = json.dumps(value, sort_keys=True, default=str)
        elif isinstance(value, dict):
            _walk(value, f"{where}.", found)


@dataclass(frozen=True)
class Baseline:
    """The command-bearing entries of the watched files (`watched`) at one moment:
    {file path: {key path: JSON value}}."""

    files: dict[str, dict[str, str]]

    @classmethod
    def take(cls, home: Path | None = None, environ: Mapping[str, str] | None = None) -> Baseline:
        """Read every watched file now (see `commands_in`)."""
        return cls({str(p): commands_in(p) for p in watched(home, environ)})

    def changes(self, now: Baseline) -> list[str]:
        """One line per entry added, removed or changed from self to `now`, e.g.
        `/home/u/.claude.json mcpServers: changed to {"evil": …}`; [] when none. Values are
        cut to 160 characters and hidden under a key that names a secret."""
        lines = []
        for name in sorted(set(self.files) | set(now.files)):
            old, new = self.files.get(name, {}), now.files.get(name, {})
            for key in sorted(set(old) | set(new)):
                if key not in new:
                    lines.append(f"{name} {key}: removed")
                elif old.get(key) != new[key]:
                    verb = "added" if key not in old else "changed to"
                    lines.append(f"{name} {key}: {verb} {_shown(key, new[key])}")
        return lines


def _shown(key: str, value: str) -> str:
    if any(word in key.upper() for word in _SECRET_WORDS) and key != WHOLE:
        return "<hidden>"
    return value if len(value) <= _SHOWN_CHARS else value[:_SHOWN_CHARS] + "…"


def detail(lines: list[str]) -> str:
    """The halt detail for `lines` (from `Baseline.changes`): `agent_config_changed: a; b …`
    with at most 8 lines and how many more; the user's files are named so a human can look."""
    shown = "; ".join(lines[:_SHOWN_CHANGES])
    more = f" (+{len(lines) - _SHOWN_CHANGES} more)" if len(lines) > _SHOWN_CHANGES else ""
    return f"{AGENT_CONFIG_CHANGED}: {shown}{more}"


def halt_if_changed(loop: Loop, baseline: Baseline) -> str | None:
    """Compare the watched files with `baseline` now; on a change halt `loop`
    (`human_intervention`, detail `agent_config_changed: …`, gate "tick"; through
    `commands.halts.halt_now`, which never overwrites a halt already recorded) and return
    `"human_intervention: <detail>"`. None when nothing changed."""
    lines = baseline.changes(Baseline.take())
    if not lines:
        return None

    why = detail(lines)
    halt_now(loop, HALT_REASON, why, "tick")
    return f"{HALT_REASON}: {why}"
