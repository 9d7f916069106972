"""The state an agent CLI writes in the home directory to run at all, never its settings.

A sandboxed interactive session (`automaton --sandbox -- AGENT`) gets these paths writable
besides its working tree, and so does a loop tick of a CLI that has no private configuration
folder (aider). A tick of claude, codex, gemini or opencode gets none of them: it runs on a
private copy of the configuration in its temp folder (`automaton.runner.agentconfig`). Settings, instructions,
hooks, skills and plugins stay read-only: an agent that could rewrite them would change the
rules of its own next run. Sources (public documentation, not verified against the real
binaries unless said):

- Claude Code: code.claude.com/docs/en/claude-directory ("~/.claude also holds data Claude
  Code writes as you work: transcripts, prompt history, file snapshots, caches, and logs");
  transcripts in `projects/`, `history.jsonl`; `todos/`, `shell-snapshots/`, `statsig/`,
  `session-env/`, `ide/`, `file-history/`, `plans/`, `debug/` as seen in user reports.
  `~/.claude.json` is written on every start (github.com/anthropics/claude-code issues
  #34799 and #27691: a read-only one makes it hang). Caution: that file also holds the
  user-scope `mcpServers`, so an agent in a sandboxed session can plant a server a later,
  unconfined claude starts (ticks do not grant it: see above).
- Codex: `~/.codex/sessions/` (rollouts; openai/codex issue #2288), `history.jsonl` (prompt
  history, per third-party readers of it), `log/`. Verified with codex-cli 0.171.0 under
  strace (tests/e2e): it will not start ("failed to initialize in-process app-server client:
  Read-only file system") without its SQLite state (`state_5.sqlite`, `logs_2.sqlite`, … and
  their `-wal`/`-shm` journals, created beside them), `installation_id` (opened read-write)
  and `thread-writer-locks/`. The SQLite files would need create rights in `~/.codex` itself,
  where `config.toml` and `AGENTS.md` live, so a session moves them: `SESSION_ENV` sets
  `CODEX_SQLITE_HOME` to `~/.codex/sqlite/` (a folder only sandboxed sessions use: an
  unconfined codex keeps reading `~/.codex/*.sqlite`, so what an agent writes there never
  reaches it). `installation_id` is created empty when missing (codex writes its id into
  it). Left read-only, which codex survives with a logged error: `skills/` (it installs
  its system skills there: instructions), `tmp/` (its PATH aliases: programs a later codex
  puts first on PATH), `.tmp*` files in `~/.codex`, `shell_snapshots/` (shell code a later
  codex sources).
- Gemini CLI: `~/.gemini/tmp/<project_hash>/` (geminicli.com/docs/cli/commands, chat
  checkpoints). `~/.gemini/history/` (checkpointing, off by default) is not included.
  Verified with gemini-cli 0.61.0 (tests/e2e): it will not start ("An unexpected critical error
  occurred:Error: EROFS: read-only file system, open '~/.gemini/projects.json.<uuid>.tmp'")
  unless it can create files in `~/.gemini` itself: every start registers the project in
  `projects.json`, written to a temporary file renamed over it, under a `projects.json.lock`
  folder (`ProjectRegistry.save`), and it creates `installation_id` there when missing. Create
  and rename rights in `~/.gemini` would let the agent replace `settings.json` (hooks, MCP
  servers), so a session runs it on a private copy instead (`private_home`).
- aider: `~/.aider/caches/` (aider/versioncheck.py: VERSION_CHECK_FNAME); its chat and input
  histories are `.aider*` files in the repository, i.e. in the worktree.
- opencode: `~/.local/share/opencode/` (sessions, logs, auth; opencode.ai/docs/troubleshooting)
  and `~/.local/state/opencode/`. Caution: the data folder also holds tools opencode
  downloads and later runs. `$XDG_DATA_HOME`/`$XDG_STATE_HOME` overrides are not followed.
- command, scripted, anything else: nothing.

Landlock binds rules to existing files, so `agent_state_dirs` creates the missing folders
(mode 0700). It creates no file: a missing `~/.claude.json` (claude never logged in here)
stays uncreatable inside the sandbox.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# (folders, files) per harness, relative to the home directory.
STATE: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "claude": ((".claude/projects", ".claude/todos", ".claude/shell-snapshots", ".claude/statsig",
                ".claude/session-env", ".claude/ide", ".claude/file-history", ".claude/plans", ".claude/debug"),
               (".claude.json", ".claude/history.jsonl")),
    "codex": ((".codex/sessions", ".codex/log", ".codex/sqlite", ".codex/thread-writer-locks"),
              (".codex/history.jsonl", ".codex/installation_id")),
    "gemini": ((".gemini/tmp",), ()),
    "aider": ((".aider/caches",), ()),
    "opencode": ((".local/share/opencode", ".local/state/opencode"), ()),
}
# Files created empty (mode 0600) when missing, for an agent that cannot start without
# opening them read-write; relative to the home directory.
CREATED: dict[str, tuple[str, ...]] = {"codex": (".codex/installation_id",)}

# Agents that cannot start without creating files beside their own settings: a sandboxed
# session points the CLI's switch (`variable`) at a private folder in the session's temp
# folder, whose `folder` holds copies of the user's (`copied`: names of files or folders;
# None: the whole folder) and links to granted state folders of `STATE` (`linked`), so that
# what those hold outlives the session. Nothing is copied back: what the agent writes in the
# copy dies with the session. `default`: where the switch points when unset, relative to the
# home folder ("" for the home folder itself).
# - Gemini CLI (GEMINI_CLI_HOME): its settings, logins, instructions, commands, extensions and
#   skills as a tick copies them (runner.agentconfig), and `projects.json`, so that a project
#   keeps its short id and finds its chats in the linked `tmp/`.
# - OpenCode 1.18.33 (verified, tests/e2e): it will not start without creating
#   `~/.cache/opencode` ("EROFS: read-only file system, mkdir '~/.cache'") and writing
#   `~/.config/opencode/.gitignore` (it installs its plugin package in the configuration
#   folder). Both hold code a later, unconfined opencode loads (plugins, provider packages), so
#   neither is granted: XDG_CONFIG_HOME gets a copy of the configuration folder, XDG_CACHE_HOME
#   an empty one (opencode fetches its provider packages again, as in a tick). Side effect, as
#   in a tick: the agent's own git no longer reads ~/.config/git/config.
@dataclass(frozen=True)
class PrivateHome:
    """variable: the CLI's switch; default: its value when unset, under the home folder;
    folder: the CLI's folder under it; copied and linked: see above."""

    variable: str
    default: str
    folder: str
    copied: tuple[str, ...] | None
    linked: tuple[str, ...] = ()


PRIVATE_HOME: dict[str, tuple[PrivateHome, ...]] = {
    "gemini": (PrivateHome("GEMINI_CLI_HOME", "", ".gemini",
                           ("settings.json", "oauth_creds.json", "google_accounts.json", "installation_id", "user_id",
                            "GEMINI.md", ".env", "trustedFolders.json", "projects.json", "commands", "extensions",
                            "skills"),
                           ("tmp",)),),
    "opencode": (PrivateHome("XDG_CONFIG_HOME", ".config", "opencode", None),
                 PrivateHome("XDG_CACHE_HOME", ".cache", "opencode", ())),
}

# Variables a sandboxed session sets on the agent (relative paths are under the home directory).
SESSION_ENV: dict[str, dict[str, str]] = {"codex": {"CODEX_SQLITE_HOME": ".codex/sqlite"}}


def agent_state_dirs(harness: str, home: Path) -> tuple[Path, ...]:
    """The absolute paths (folders, then files) harness `harness` (a loop.json harness name:
    claude, codex, gemini, aider, opencode, command, scripted) must be able to write under
    `home`; () for one with no such state or an unknown name. Missing folders are created
    (mode 0700), and the files of `CREATED` (empty, mode 0600, never through a link), best
    effort: one that cannot be created simply stays unwritable."""
    folders, files = STATE.get(harness, ((), ()))
    for rel in folders:
        with contextlib.suppress(OSError):
            (home / rel).mkdir(mode=0o700, parents=True, exist_ok=True)
    for rel in CREATED.get(harness, ()):
        with contextlib.suppress(OSError):
            os.close(os.open(home / rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    return tuple(home / rel for rel in (*folders, *files))


def session_env(harness: str, home: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of `SESSION_ENV` for `harness` (paths made absolute under `home`) that
    `environ` does not set already: the user's own choice wins (its folder is then not granted)."""
    return {k: str(home / v) for k, v in SESSION_ENV.get(harness, {}).items() if k not in environ}


def private_home(harness: str, home: Path, tmp: Path, environ: Mapping[str, str]) -> tuple[dict[str, str],
                                                                                         list[str]]:
    """({variable: its private folder}, one line per user file that exists but could not be
    copied) for `harness` in a sandboxed session (`PRIVATE_HOME`); ({}, []) for a harness
    without one. Each private folder is `tmp/<harness>-<variable in lower case>` (`tmp`: the
    session's temp folder, writable to the agent and removed after it); the copies come from
    where the user's own `variable` in `environ` points, else its default under `home`; the
    links point at the granted folders under `home`. OSError when a private folder itself
    cannot be made."""
    env: dict[str, str] = {}
    problems: list[str] = []
    for spec in PRIVATE_HOME.get(harness, ()):
        root = tmp / f"{harness}-{spec.variable.lower()}"
        mine = root / spec.folder
        real = Path(environ.get(spec.variable) or home / spec.default) / spec.folder
        if spec.copied is None and (p := _copy(real, mine)) is not None:
            problems.append(p)
        mine.mkdir(mode=0o700, parents=True, exist_ok=True)
        problems += [p for name in spec.copied or () if (p := _copy(real / name, mine / name)) is not None]
        for name in spec.linked:
            (mine / name).symlink_to(home / spec.default / spec.folder / name, target_is_directory=True)
        env[spec.variable] = str(root)
    return env, problems


def _copy(src: Path, dest: Path) -> str | None:
    """Copy file or folder `src` (symlinks inside kept as links, no FIFO or device) to `dest`;
    None when done or when `src` does not exist, else the line saying why not."""
    try:
        if not src.exists():
            return None
        if src.is_dir():
            shutil.copytree(src, dest, symlinks=True, ignore=_special)
        elif src.is_file():
            shutil.copy2(src, dest)
        else:  # a FIFO would block the session's start
            return f"{src}: not a regular file; not copied into the session's private home"
    except (OSError, shutil.Error) as exc:
        return f"{src}: not copied into the session's private home ({getattr(exc, 'strerror', None) or exc})"
    return None


def _special(folder: str, names: list[str]) -> set[str]:
    """The entries of `folder` that are neither folder, file nor symlink (FIFOs, sockets)."""
    return {n for n in names if not ((p := Path(folder) / n).is_symlink() or p.is_dir() or p.is_file())}


def visible_paths(*, home: Path, cwd: Path | None = None, project_root: Path | None = None,
                  argv: Sequence[str] = (), path_env: str | None = None) -> tuple[Path, ...]:
    """What an agent must still read where it lies beneath a folder the namespace layer
    replaces with an empty one (`/tmp`, `/run`, …): the project, HOME, the working directory,
    the folder of `argv[0]` when it is a path and of each other absolute path in `argv` that
    exists (a script the command runs), and every absolute folder on `path_env` (the child's
    PATH; default this process's). Sockets inside these stay reachable."""
    out = [p for p in (project_root, home) if p is not None]
    out += program_paths(argv, cwd)
    for entry in (os.environ.get("PATH", "") if path_env is None else path_env).split(os.pathsep):
        if entry and os.path.isabs(entry):
            out += _with_venv(Path(entry))
    return tuple(dict.fromkeys(out))


def _with_venv(folder: Path) -> list[Path]:
    """`folder`, and the virtual environment it is the `bin` of (the folder holding
    `pyvenv.cfg`, whose `lib/` the interpreter in `bin` imports from)."""
    root = folder.parent
    return [folder, root] if (root / "pyvenv.cfg").is_file() else [folder]


def own_install() -> list[Path]:
    """The running automaton's own install, which the hooks inside an agent's sandbox import
    (read-only there): this interpreter's prefix and the folder holding the `automaton`
    package (site-packages, or the source folder of an editable install)."""
    package = Path(os.path.abspath(__file__)).parent.parent
    return [Path(sys.prefix), package.parent]


def _program_folders(program: str) -> list[Path]:
    """The folder of `program` as named and, when it is a link (npm puts `node_modules/.bin/X`
    links to the package's script), the folder it really lives in; each with its virtual
    environment, and for a program inside a `node_modules` tree the outermost `node_modules`,
    whose other packages the program loads (codex's script loads its platform binary from a
    sibling package). A link's target must be visible too, or exec fails with ENOENT."""
    named = Path(os.path.abspath(program))
    real = Path(os.path.realpath(program))
    out = _with_venv(named.parent)
    if real.parent != named.parent:
        out += _with_venv(real.parent)
    modules = [p for p in (named, real) for p in p.parents if p.name == "node_modules"]
    out += [min(modules, key=lambda p: len(p.parts))] if modules else []
    return out


def program_paths(argv: Sequence[str], cwd: Path | None = None) -> list[Path]:
    """What any sandboxed command needs to see to start at all: its working directory (`cwd`,
    default this process's), the folders of `argv[0]` (looked up on PATH when it is a bare
    name: `_program_folders`, the real one behind a link too) and the folder of each other
    absolute path in `argv` that exists (a script it runs)."""
    out = [Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))]
    if argv:
        found = argv[0] if os.sep in argv[0] else shutil.which(argv[0])
        if found:
            out += _program_folders(found)
    out += [Path(a).parent for a in argv[1:] if os.path.isabs(a) and os.path.exists(a)]
    return out
