"""What an agent under the kernel sandbox may write in the project, and what it never sees.

Shared by the two use cases that confine an agent: an interactive session
(`commands.sandbox_session`, `automaton --sandbox`) and a loop tick in the main checkout
(`runner.confine`). The writable set is the task's phase scope made coarse enough for the
kernel, which grants rights per directory or per existing file (Landlock and Seatbelt alike):

| phase | writable in the project |
|---|---|
| research … referee (one artifact each) | the phase's artifact file (SPEC.md, …) |
| implement | every top-level entry except `tasks/`, `.automaton/`, `.git`, agent settings |
|           | folders; and the task's IMPLEMENTATION.md |
| doc_review | the task's DOC_REVIEW.md, `docs/`, every existing `*.md` outside `tasks/`, `.automaton/`, `.git` |
| `:awaiting_approval`, `:approved`, new, complete, human_intervention | nothing |
| no task (no `--task`, no focus) | as implement, without a task file |

The task's folder itself is never granted: the kernel grants the artifact FILE (its inode),
which the session creates empty first (`store.tasks.ensure_artifact`), so `.state`, its log
and every other file there stay read-only, and the agent cannot create, delete or rename
anything in the folder. An editor that saves by writing a temp file and renaming it over the
artifact fails there (EACCES); writing the file in place works. An artifact that is a symlink
or has another hard link is not granted at all (it could be `.state`'s inode).

The folder of the record key is hidden from every
agent (`key_dir`), and so is a key file handed in as a secret (`$AUTOMATON_RECORD_KEY_FILE`,
`handed_key_file`), and so are the web browsers' profile folders (`hidden_paths`): they hold the
dashboard's session cookie, which carries a human's approvals. The user's credential stores
(`core.secrets.CREDENTIAL_STORES`, widened or narrowed by the sealed `.automaton/config.json`)
are masked (`secret_stores`): empty where a mount namespace is in force, hidden like the key
where only Landlock or Seatbelt is.

Every path in the writable set is checked where it really lives (`grants`): the kernel
grants a symlink's target, so an entry whose real path leaves the project (`shellrc ->
~/.bashrc`, `notes -> /etc`), is the project itself, or lands in an entry never writable
(`x -> .git`) is left out, and so is an entry holding or inside automaton's own install
(`install_paths`: a `.venv` that automaton runs from, or that the project's installed hooks
and loop schedules run, `configured_installs`). Landlock cannot carve a hole in a
grant, so such an entry is not granted at all; the agent still reads it.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from automaton import install_paths
from automaton.core import jsontext
from automaton.core import phases as ph
from automaton.core.errors import BadInput
from automaton.core.sandbox import Policy
from automaton.core.secrets import CREDENTIAL_STORES, RECORD_KEY_ENV, expand, provider_stores
from automaton.sandbox import visible_paths
from automaton.store.layout import DOT, TASKS, Project
from automaton.store.project_config import sandbox_lists

# Top-level entries never writable by an agent: brake state, git internals, agent settings
# (OpenCode's `.opencode/` holds plugins and tools it runs, `opencode.json` its configuration).
NEVER = frozenset({TASKS, DOT, ".git", ".claude", ".codex", ".gemini", ".opencode", "opencode.json",
                   "opencode.jsonc"})
KEY_DIR = (".config", "automaton")
# Where `--install-hooks` puts the agents' hook commands (hooks/install.py AGENT_TARGETS).
HOOK_SETTINGS = (".claude/settings.json", ".codex/hooks.json", ".gemini/settings.json")
OPENCODE_PLUGIN = ".opencode/plugin/automaton.js"  # hooks/install.py OPENCODE_PLUGIN
# Profile folders of the common browsers (cookie stores), relative to HOME: a session cookie of
# `automaton --dashboard` read from one would let an agent approve its own halt. Linux (XDG,
# snap, flatpak) and macOS locations; a browser not listed here is a documented residual risk.
BROWSER_PROFILES = (
    (".config", "chromium"), (".config", "google-chrome"), (".config", "google-chrome-beta"),
    (".config", "google-chrome-unstable"), (".config", "BraveSoftware"), (".config", "microsoft-edge"),
    (".config", "vivaldi"), (".config", "opera"), (".mozilla",), ("snap", "chromium"), ("snap", "firefox"),
    (".var", "app", "org.chromium.Chromium"), (".var", "app", "com.google.Chrome"),
    (".var", "app", "org.mozilla.firefox"), ("Library", "Application Support", "Google", "Chrome"),
    ("Library", "Application Support", "Chromium"), ("Library", "Application Support", "Firefox"),
    ("Library", "Application Support", "BraveSoftware"), ("Library", "Application Support", "Microsoft Edge"),
    ("Library", "Cookies"), ("Library", "Containers", "com.apple.Safari"),
)


def key_dir(home: Path | None = None) -> Path:
    """The folder of the per-user record key (`~/.config/automaton`), hidden from every agent."""
    return (home or Path.home()).joinpath(*KEY_DIR)


def handed_key_file(env: Mapping[str, str] | None = None) -> Path | None:
    """The record key file `$AUTOMATON_RECORD_KEY_FILE` names in `env` (default: this
    process's), when it is an absolute path; None otherwise (a relative one is refused where
    the key is read, `store.key.secret_source`)."""
    named = (os.environ if env is None else env).get(RECORD_KEY_ENV[1], "")
    return Path(named) if named and os.path.isabs(named) else None


def hidden_paths(home: Path | None = None, env: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """What no sandboxed agent may read or write: the record key's folder (always, even before
    it exists), the key file handed in as a secret (`handed_key_file` of `env`), and each
    browser profile folder of BROWSER_PROFILES that exists now."""
    base = home or Path.home()
    handed = handed_key_file(env)
    return (key_dir(base), *(() if handed is None else (handed,)),
            *(p for p in (base.joinpath(*rel) for rel in BROWSER_PROFILES) if p.is_dir()))


@dataclass(frozen=True)
class SecretStores:
    """The credential stores in force for one agent: `entries` (the `~/…` or absolute entries
    hidden: the packaged list less `unhidden` and `provider`, plus the project's `hide`),
    `unhidden` (taken out by the sealed config.json's `sandbox.unhide`), `provider` (kept
    readable because the agent's model provider needs them, `core.secrets.PROVIDERS`) and
    `paths` (the absolute paths of `entries` that exist now: what a `Policy` masks)."""

    entries: tuple[str, ...]
    unhidden: tuple[str, ...]
    provider: tuple[str, ...]
    paths: tuple[Path, ...]

    def notes(self) -> list[str]:
        """One line per entry a sealed change or a provider switch leaves readable to agents."""
        out = [f"sandbox: {e} is readable to agents: .automaton/config.json unhides it (sealed by a human)"
               for e in self.unhidden]
        return out + [f"sandbox: {e} is readable to the agent: its model provider needs it" for e in self.provider]


def secret_stores(project_root: Path, agent: str, home: Path | None = None,
                  env: Mapping[str, str] | None = None) -> SecretStores:
    """The credential stores no process of harness `agent` ("command" for a verify command or
    a plain command) may read, for the project at `project_root`, under `home` (default: this
    user's), with `env` (default: this process's) for the XDG folders and provider switches.
    BadInput (exit 2) for an invalid `.automaton/config.json`; ConfigNotSealed when it is not
    the sealed one (its `sandbox` lists are then not trusted either way)."""
    base, env = home or Path.home(), os.environ if env is None else env
    lists = sandbox_lists(Project(project_root.resolve()))
    keep = provider_stores(env, agent)
    packaged = [e for e in CREDENTIAL_STORES if e not in lists.unhide and e not in keep]
    entries = tuple(dict.fromkeys([*packaged, *lists.hide]))
    paths = tuple(dict.fromkeys(p for e in entries for p in expand(e, base, env) if p.exists()))
    return SecretStores(entries, lists.unhide, tuple(sorted(keep - set(lists.unhide))), paths)


def agent_policy(project_root: Path, writable: Sequence[Path], tmp: Path, label: str, *, agent: str, cwd: Path,
                 argv: Sequence[str], isolation: str, network: bool = True, home: Path | None = None,
                 stores: SecretStores | None = None) -> Policy:
    """The sandbox of one agent process (a tick's role, `--doctor`'s verify run, an interactive
    session): `writable` (it holds `tmp`, the private temp dir); hidden: the record key's folder,
    the browser profiles and the credential stores (`stores`, default `secret_stores` for
    `agent`), which are masked too; visible where they lie in `/tmp`: the project, HOME, `cwd`
    and the programs `argv` names (`sandbox.visible_paths`). The one place these are put
    together, so that every confined process hides the same things. BadInput as
    `secret_stores`."""
    base = home or Path.home()
    masked = (stores or secret_stores(project_root, agent, base)).paths
    seen = visible_paths(home=base, cwd=cwd, project_root=project_root, argv=list(argv))
    return Policy(tuple(writable), (*hidden_paths(base), *masked), tmp, label, masked=masked, network=network,
                  visible=seen, isolation=isolation)


def _project_entries(root: Path) -> list[Path]:
    try:
        return sorted(p for p in root.iterdir() if p.name not in NEVER and not p.name.lower().startswith(".state"))
    except OSError as exc:
        raise BadInput(f"cannot list the project {root}: {exc.strerror}") from None


def _markdown(root: Path) -> list[Path]:
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == root:
            dirnames[:] = [d for d in dirnames if d not in NEVER]
        dirnames[:] = [d for d in dirnames if d != ".git"]
        found += [Path(dirpath) / f for f in filenames if f.lower().endswith(".md")]
    return sorted(found)


@dataclass(frozen=True)
class Grants:
    """What the kernel lets an agent write in the project: `paths` (as listed, absolute), and
    `left_out`: (path, why) for each candidate not granted (see the module text)."""

    paths: tuple[Path, ...]
    left_out: tuple[tuple[Path, str], ...]

    def note(self, root: Path) -> str | None:
        """One line naming what was left out, or None when nothing was."""
        if not self.left_out:
            return None
        parts = []
        for path, why in self.left_out:
            try:
                rel = path.relative_to(root).as_posix()
            except ValueError:
                rel = str(path)
            parts.append(f"{rel} ({why})")
        return "not writable: " + "; ".join(parts) + "; the agent still reads them"


def _why_not(path: Path, real_root: str, task_dir: Path | None, own: tuple[str, ...]) -> str | None:
    """Why `path` may not be granted, or None. The task's artifact file may lie in `tasks/`."""
    real = os.path.realpath(path)
    if real == real_root:
        return "links to the project root itself"
    if not real.startswith(real_root.rstrip(os.sep) + os.sep):
        return f"links out of the project to {real}"
    parts = real[len(real_root.rstrip(os.sep)) + 1:].split(os.sep)
    if task_dir is not None and path.parent == task_dir:  # the phase's artifact file
        if parts != [TASKS, task_dir.name, path.name]:
            return f"the task's {path.name} links to {real}, not to {TASKS}/{task_dir.name}/{path.name}"
    elif parts[0].lower() in NEVER or parts[-1].lower().startswith(".state"):
        return f"links to {parts[0]}, which no agent writes"
    hit = install_paths.clash(real, own)
    if hit is not None:
        return f"holds or lies in automaton's own install {hit}; {install_paths.FIX}"
    return None


def _json(path: Path) -> object:
    try:
        return jsontext.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _hook_commands(doc: object) -> list[str]:
    """Every `command` string holding `--hook` anywhere in a settings document."""
    if isinstance(doc, dict):
        own = doc.get("command")
        found = [own] if isinstance(own, str) and "--hook" in own else []
        return found + [c for v in doc.values() for c in _hook_commands(v)]
    if isinstance(doc, list):
        return [c for v in doc for c in _hook_commands(v)]
    return []


def _plugin_commands(path: Path) -> list[str]:
    """The hook command of automaton's OpenCode plugin (its `const COMMAND = "…";` line, a JSON
    string), or [] when the file is missing, unreadable or holds no such line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    found: list[str] = []
    for line in text.splitlines():
        head, sep, rest = line.partition("const COMMAND = ")
        if sep and not head.strip():
            try:
                value = jsontext.loads(rest.strip().removesuffix(";"))
            except ValueError:
                continue
            if isinstance(value, str) and "--hook" in value:
                found.append(value)
    return found


def _program(command: str) -> str | None:
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    return words[0] if words else None


def configured_installs(root: Path) -> list[str]:
    """The absolute programs the project's installed hooks and loop schedules run: the first
    word of each hook command (agent settings, the git pre-commit hook) and each loop's
    `schedule.json` `python` and `runner`. A file that is missing or unreadable names nothing.
    Every file read here is one no agent writes (`NEVER`, `.git`, `.automaton/`)."""
    commands = [c for rel in HOOK_SETTINGS for c in _hook_commands(_json(root / rel))]
    commands += _plugin_commands(root / OPENCODE_PLUGIN)
    try:
        pre_commit = (root / ".git" / "hooks" / "pre-commit").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        pre_commit = ""
    commands += [line for line in pre_commit.splitlines() if "--hook" in line]
    found = [_program(c) for c in commands]
    for saved in sorted((root / DOT / "loops").glob("*/schedule.json")):
        data = _json(saved)
        if isinstance(data, dict):
            found += [data.get("python"), data.get("runner")]
    return [f for f in found if isinstance(f, str) and os.path.isabs(f)]


def grants(root: Path, phase: str | None, task_dir: Path | None, *, own: tuple[str, ...] | None = None) -> Grants:
    """`project_writable`, each path checked where it really lives (the module text).
    `own`: the real paths of automaton's install (default: `install_paths.own_roots()` of the
    running automaton and of the programs `configured_installs` names)."""
    real_root = os.path.realpath(root)
    if own is None:
        files = [*install_paths.running_files(), *configured_installs(root)]
        own = install_paths.own_roots(files=files)
    roots = own
    kept: list[Path] = []
    left: list[tuple[Path, str]] = []
    for path in project_writable(root, phase, task_dir):
        why = _why_not(path, real_root, task_dir, roots)
        if why is None:
            kept.append(path)
        else:
            left.append((path, why))
    return Grants(tuple(kept), tuple(left))


def artifact_of(phase: str | None) -> str | None:
    """The artifact file an agent at `phase` writes (SPEC.md for research, …); None for a
    phase that writes none (sub-states, new, complete, human_intervention, no task)."""
    if phase is None or ":" in phase:
        return None
    return ph.ARTIFACT.get(phase)


def project_writable(root: Path, phase: str | None, task_dir: Path | None) -> list[Path]:
    """The project paths the kernel lets an agent at `phase` write (see the module table).
    `phase` None: no task is in force. The artifact file is listed as it is; the caller makes
    sure it exists and may be granted (`store.tasks.ensure_artifact`), else leaves it out."""
    if phase is None:
        return _project_entries(root)
    name = artifact_of(phase)
    if name is None or task_dir is None:
        return []
    own = task_dir / name
    if phase == "implement":
        return [*_project_entries(root), own]
    if phase == "doc_review":
        docs = root / "docs"
        return [own, *([docs] if docs.is_dir() else []), *_markdown(root)]
    return [own]
