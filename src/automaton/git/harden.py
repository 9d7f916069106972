"""How every git call automaton makes is hardened against a hostile repository.

An agent owns the worktree and can write the repository's `.git/config`, `.git/hooks`,
`.gitattributes` and the index. Nothing it writes there may make automaton's own git calls run
a program, hide changes, or read configuration automaton did not choose:

- `-c` settings that switch off every config-driven program git would run for the commands
  automaton uses (hooks, fsmonitor, signing, pagers, editors, transports, auto-gc) and the
  settings that would hide drift (replace refs, relative diffs);
- every clean/smudge/process filter driver the repository's config defines is emptied for the
  call (`filter.<name>.clean=` …): `.gitattributes` can name one for any path, and `git add`,
  `git status` and `git worktree add` would run it;
- `--no-ext-diff --no-textconv` on the porcelain commands that diff content;
- an environment with only the `GIT_*` variables listed in `KEPT_ENV`: no inherited
  `GIT_DIR`, `GIT_INDEX_FILE`, `GIT_CONFIG_PARAMETERS`, `GIT_EXEC_PATH`, object directories …;
  system and global config switched off (`GIT_CONFIG_NOSYSTEM=1`, `GIT_CONFIG_GLOBAL=/dev/null`)
  unless a caller reads the user's identity (`user_config=True`, reading only).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from automaton.proc import Captured, run_capture

# Every key is a git config setting that makes git run a program or changes what a
# query reports; later `-c` settings win over every config file.
HARDENING_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.hooksPath", os.devnull),  # no hook of any kind (post-commit, reference-transaction …)
    ("core.fsmonitor", "false"),  # a program git would start to watch the worktree
    ("core.useReplaceRefs", "false"),  # `git replace` must not swap the trees drift compares
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("commit.gpgSign", "false"),  # gpg.program would run
    ("tag.gpgSign", "false"),
    ("log.showSignature", "false"),  # verifying runs gpg.program too
    ("protocol.allow", "never"),  # no transport: ssh commands, remote helpers, lazy fetches
    ("submodule.recurse", "false"),  # a checkout would otherwise fetch submodules
    # A submodule (or a repository the agent nested in the worktree and some command recorded as
    # a gitlink) has a config of its own that no `-c` here reaches: a status or diff that asks
    # whether it is dirty starts git inside it, which runs its filter drivers and fsmonitor.
    # Never recurse; the drift check names changed gitlinks itself (`automaton.git.nested`).
    ("diff.ignoreSubmodules", "all"),
    ("status.submoduleSummary", "false"),
    ("gc.auto", "0"),  # no background gc/maintenance (and its pre-auto-gc hook) after a commit
    ("maintenance.auto", "false"),
    ("diff.relative", "false"),  # paths always relative to the worktree top
)

# The only inherited GIT_* variables a git call sees: identity and dates (tests and users pin
# them), and the ceiling/discovery settings that stop repository discovery.
KEPT_ENV = frozenset({
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
    "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM",
})
# Kept as well when the caller asks for the user's own config (reading identity only).
USER_CONFIG_ENV = frozenset({"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM"})
# Set by a caller only, never inherited: an index file of automaton's own (the drift check's,
# `automaton.git.content.PrivateIndex`), which that caller lets git rewrite; and the one
# setting a state remote's network call adds (`automaton.git.remote.credential_env`: the push
# credential as `http.extraHeader`, in that process's environment only).
CALLER_ENV = frozenset({"GIT_INDEX_FILE", "GIT_OPTIONAL_LOCKS", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0",
                        "GIT_CONFIG_VALUE_0"})

_CREDENTIAL_CONFIG = frozenset({"GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0"})

# Porcelain commands that diff content: external diff drivers and textconv programs are off.
_DIFFING = frozenset({"diff", "log", "show", "diff-tree"})
# Commands that never convert file content, so no filter driver can run: the config probe
# for filter drivers is skipped for them.
_NO_CONTENT = frozenset({"rev-parse", "config", "ls-tree", "symbolic-ref", "merge-base", "for-each-ref",
                         "show-ref", "var", "version", "cat-file"})
# Commands that never read a worktree file's content (clean) nor write one (smudge), given
# only these options: they compare trees, a tree with the index, or list names. A clean or
# smudge filter runs only where git converts between a worktree file and a blob; `diff-tree`
# compares two trees, `diff-index --cached` a tree with the index, `ls-files` lists the index
# (or, `--others`, names on disk: never read), `read-tree -i` (no `-u`) fills an index only,
# `worktree list` reads the worktrees' administrative files. Any option outside a command's
# set (`ls-files -m` re-hashes racily clean files through the clean filter; `read-tree -u`
# checks files out) means the probe runs as before.
_NO_CONTENT_WITH: dict[str, frozenset[str]] = {
    "diff-tree": frozenset({"-r", "-z", "--raw", "--name-only", "--no-renames", "--no-abbrev", "--root",
                            "--ignore-submodules=none", "--no-ext-diff", "--no-textconv", "--"}),
    "diff-index": frozenset({"--cached", "--raw", "-z", "--no-renames", "--name-only", "--quiet",
                             "--ignore-submodules=none", "--"}),
    "ls-files": frozenset({"-v", "-z", "--others", "-s", "--stage", "--cached", "--full-name", "--"}),
    "read-tree": frozenset({"--reset", "-m", "-i", "--empty"}),
    "worktree": frozenset({"list", "--porcelain", "-z"}),
}
_FILTER_KEYS = ("clean", "smudge", "process")
# Commands that compare the worktree with the index: `--ignore-submodules=all` goes last, so a
# caller's own `--ignore-submodules=none` cannot make git enter a submodule's worktree.
_WORKTREE_DIFFING = frozenset({"status", "diff-files"})
IGNORE_SUBMODULES = "--ignore-submodules=all"


def git_env(*, user_config: bool = False, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of one git call: `base` (default os.environ) without any `GIT_*`
    variable outside KEPT_ENV, plus the fixed settings below."""
    keep = KEPT_ENV | USER_CONFIG_ENV if user_config else KEPT_ENV
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if not k.upper().startswith("GIT_") or k in keep}
    env.update(GIT_NO_REPLACE_OBJECTS="1", GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", GIT_EDITOR=":",
               GIT_SEQUENCE_EDITOR=":", GIT_NO_LAZY_FETCH="1", GIT_OPTIONAL_LOCKS="0")
    if not user_config:
        env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    return env


def subcommand_index(args: Sequence[str]) -> int:
    """Index of the git subcommand in `args` (after global options such as `-c k=v`); len(args)
    when there is none."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-c", "-C"):
            i += 2
        elif arg.startswith("-"):
            i += 1
        else:
            return i
    return len(args)


class UnsafeConfig(Exception):
    """The repository's config defines something a `-c` setting cannot switch off."""


@dataclass(frozen=True)
class RepoConfig:
    """What one config read (`_probe`) found in a repository's own config (system and global
    config are off for it, as for every hardened call): `filters`, the `-c` arguments that empty
    every filter driver it defines; `excludes_file`, the last `core.excludesFile` value as
    written (no `~` expanded), None when it sets none."""

    filters: tuple[str, ...] = ()
    excludes_file: str | None = None


# Inside `probe_once()`: (repo, its `.git` pointer's bytes or b"" for a folder, config
# environment) -> what its config read found; `_settled`: the window caches worktrees' probes too.
_probed: dict[tuple[str, bytes, tuple[tuple[str, str], ...]], RepoConfig] | None = None
_settled = False
_trusted: tuple[str, ...] = ()  # resolved common git folders whose linked worktrees' probes are cached


@contextmanager
def probe_once(*, pointers_settled: bool = False, trusted: Sequence[str | os.PathLike[str]] = ()) -> Iterator[None]:
    """Within the block, each repository's filter drivers are probed once, not before every git
    call that converts content (a drift check makes five such calls). For a sequence of calls
    during which nothing else writes the repository's config: a gate, which runs under the
    loop's lock while no agent of that loop runs, and a tick's commit with the checks on it,
    after the agent's processes were killed. A repository whose `.git` is a file (a worktree's
    pointer, which the agent may write) is probed before every call all the same, unless
    `pointers_settled`: the caller knows no process of the agent is alive (a tick after its
    agent's role ended on Linux, where the runner is a child subreaper and killed every
    descendant); then its probe is cached too, keyed by the pointer's bytes.

    `trusted`: common git folders (a repository's `.git` folder, which the kernel sandbox keeps
    read-only for every agent) whose linked worktrees are cached within the window although
    their pointer is a file: a pointer whose bytes name `<trusted>/worktrees/<id>` leads git to
    config files inside that read-only folder only, so it needs no probe per call (the cache
    is keyed by the pointer's bytes, read before every call; a pointer rewritten to name any
    other folder is probed before every call as before). A window inside another keeps the
    outer window's trusted folders too."""
    global _probed, _settled, _trusted
    outer, _probed = _probed, ({} if _probed is None else _probed)
    was, was_trusted = _settled, _trusted
    _settled = pointers_settled or (outer is not None and was)  # a window inside a settled one stays settled
    _trusted = (*was_trusted, *(os.path.realpath(t) for t in trusted)) if outer is not None else \
        tuple(os.path.realpath(t) for t in trusted)
    try:
        yield
    finally:
        _probed, _settled, _trusted = outer, was, was_trusted


def git_folder_of(root: str | os.PathLike[str]) -> tuple[str, ...]:
    """`(<root>/.git,)` when it is a real folder (a main checkout's git folder: the common
    folder of its linked worktrees), for `probe_once(trusted=...)`; () otherwise."""
    folder = os.path.join(root, ".git")
    return (folder,) if os.path.isdir(folder) and not os.path.islink(folder) else ()


def filter_overrides(repo: str, env: Mapping[str, str], timeout_s: float) -> list[str]:
    """`-c` arguments that empty every filter driver the config of `repo` defines
    (`repo_config(...).filters`).

    Raises UnsafeConfig for a driver whose name holds `=` or a newline: `-c` splits at the
    first `=`, so such a name could set another driver's command instead of emptying it.
    """
    return list(repo_config(repo, env, timeout_s).filters)


def repo_config(repo: str, env: Mapping[str, str], timeout_s: float) -> RepoConfig:
    """The filter drivers and `core.excludesFile` of `repo`'s config, read with one `git config`
    process: once per `probe_once` window and repository (see there), else at every call.
    `env`: the environment the git call that needs it runs with (its `GIT_CONFIG*` variables
    key the cache). Raises UnsafeConfig (see `filter_overrides`)."""
    # A repository whose `.git` is a folder is probed once per window: the kernel sandbox keeps
    # every `.git` folder read-only, so its config cannot change under the cache. A worktree's
    # `.git` is a file the agent may rewrite (the worktree is its to write) to name a git folder
    # of its own, whose config it can edit between two calls while keeping the pointer's bytes
    # (or follow through a link it swaps): there the cache holds only in a window opened with
    # `pointers_settled` (no process of the agent can be alive), else every call is probed.
    # The probe reads the repository's config only: a network call's credential (CALLER_ENV's
    # GIT_CONFIG_*) stays with the call it is for.
    env = {k: v for k, v in env.items() if k not in _CREDENTIAL_CONFIG}
    pointer = _pointer(repo)
    if _probed is None or (pointer and not _settled and not _leads_to_trusted(repo, pointer)):
        return _probe(repo, env, timeout_s)
    key = (repo, pointer, tuple(sorted((k, v) for k, v in env.items() if k.startswith("GIT_CONFIG"))))
    if key not in _probed:
        _probed[key] = _probe(repo, env, timeout_s)
    return _probed[key]


def _pointer(repo: str) -> bytes:
    """The bytes of `repo/.git` when it is a regular file (a worktree's pointer; symlinks
    followed, as git follows them), b"" when there is none, else a mark of what is there.
    Opened without blocking: the agent could put a FIFO there, which a plain open would wait on
    forever. Read on every cached use: microseconds, against a process."""
    try:
        fd = os.open(os.path.join(repo, ".git"), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:  # none, or a folder on a system that will not open one
        return b""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # a folder (the main repository), a FIFO, a device
            return b"" if stat.S_ISDIR(st.st_mode) else f"mode {st.st_mode:o} ino {st.st_ino}".encode()
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def _leads_to_trusted(repo: str, pointer: bytes) -> bool:
    """Whether the worktree pointer `pointer` (the bytes of `repo/.git`) names a git folder
    directly under `<a trusted common folder>/worktrees/` (see `probe_once`) by an absolute
    path that is already resolved (no link on it)."""
    if not _trusted or not pointer.startswith(b"gitdir: ") or not pointer.endswith(b"\n") or pointer.count(b"\n") != 1:
        return False
    try:
        named = os.fsdecode(pointer[len(b"gitdir: "):-1])
    except UnicodeDecodeError:
        return False
    # The name as written must be its own resolved path: no link on the way that someone could
    # swap between this check and git's read (its folders are the repository's, never the agent's).
    where = os.path.join(repo, named)
    if not os.path.isabs(named) or os.path.realpath(where) != where:
        return False
    parent, _, leaf = where.rpartition(os.sep)
    return bool(leaf) and any(parent == os.path.join(t, "worktrees") for t in _trusted)


_FILTER_KEY = re.compile(r"filter\.(.*)\.(clean|smudge|process|required)")


def _probe(repo: str, env: Mapping[str, str], timeout_s: float) -> RepoConfig:
    # Values too (for core.excludesFile): each record is `key NL value NUL`, or `key NUL` for a
    # key without a value. git's config parser refuses a newline in a key (a section or
    # subsection name), so the first newline ends the key.
    found = run_capture(["git", "--no-pager", "-C", repo, "config", "--null", "--get-regexp",
                         r"^(filter\..*\.(clean|smudge|process|required)|core\.excludesfile)$"],
                        env=env, stdin="", timeout_s=timeout_s, exact_bytes=True)
    if found.code in (1, 127, 128):  # 1: no such key; git missing or no repository fails the call itself too
        return RepoConfig()
    if found.code != 0:  # a timeout or a signal: unknown is never "no filters" (a window caches the answer)
        raise UnsafeConfig(f"cannot read which filter drivers the repository config defines"
                           f" (git config exit {found.code}); nothing was run")
    names: set[str] = set()
    excludes: str | None = None
    for record in found.out.split("\0"):
        key, _, value = record.partition("\n")
        if key == "core.excludesfile":
            excludes = value
            continue
        matched = _FILTER_KEY.fullmatch(key)
        if matched is None:
            if key:  # never a key git would print for the pattern: refuse rather than guess
                raise UnsafeConfig(f"unexpected key {key[:60]!r} in the repository config; nothing was run")
            continue
        names.add(matched.group(1))
    out: list[str] = []
    for name in sorted(names):
        if "=" in name or "\n" in name:
            raise UnsafeConfig(f"the repository config defines filter driver {name!r}, whose name"
                               " automaton cannot switch off; remove that [filter] section")
        out += [arg for key in _FILTER_KEYS for arg in ("-c", f"filter.{name}.{key}=")]
        out += ["-c", f"filter.{name}.required=false"]
    return RepoConfig(tuple(out), excludes)


def _reads_no_content(sub: str, rest: Sequence[str]) -> bool:
    """Whether `git <sub> <rest>` converts no file content (`_NO_CONTENT_WITH`): every option
    is in the command's set; other arguments (tree ids, paths) may be anything. `worktree`
    takes no argument but its options (only `worktree list`); `diff-index` only with `--cached`."""
    allowed = _NO_CONTENT_WITH.get(sub)
    if allowed is None or (sub == "worktree" and (not rest or rest[0] != "list")):
        return False
    # Options are read before `--` only: after it every word is a path (`diff-index T --
    # --cached` compares the worktree).
    opts = list(rest[:rest.index("--")]) if "--" in rest else list(rest)
    if sub == "diff-index" and "--cached" not in opts:  # without it, the worktree's files are compared
        return False
    if sub == "read-tree" and "-i" not in opts:  # without it git's up-to-date check may re-hash
        return False  # a racily clean file through the clean filter
    return all(arg in allowed for arg in opts if arg.startswith("-") or sub == "worktree")


def hardened_argv(repo: str, args: Sequence[str], env: Mapping[str, str], timeout_s: float) -> list[str]:
    """`git --no-pager -C repo <caller's global options> <hardening> <subcommand …>`.

    The hardening goes after the caller's own `-c` options so it wins over them too. Raises
    UnsafeConfig (see filter_overrides).
    """
    at = subcommand_index(args)
    sub = args[at] if at < len(args) else ""
    config = [arg for key, value in HARDENING_CONFIG
              # rev-parse runs no hook, and `--git-path hooks` must name the repository's own folder
              if not (key == "core.hooksPath" and sub == "rev-parse")
              for arg in ("-c", f"{key}={value}")]
    converts = sub == "cat-file" and any(a.startswith(("--filters", "--textconv")) for a in args)
    if not (sub in _NO_CONTENT or _reads_no_content(sub, args[at + 1:])) or converts:
        config += filter_overrides(repo, env, timeout_s)
    rest = list(args[at:])
    if sub in _DIFFING:
        rest[1:1] = ["--no-ext-diff", "--no-textconv"]
    if sub in _WORKTREE_DIFFING or (sub == "diff-index" and "--cached" not in rest):
        end = rest.index("--") if "--" in rest else len(rest)
        rest.insert(end, IGNORE_SUBMODULES)
    return ["git", "--no-pager", "--no-replace-objects", "-C", repo, *args[:at], *config, *rest]


def run_hardened(repo: str, args: Sequence[str], *, timeout_s: float, stdin: str,
                 user_config: bool, extra_env: Mapping[str, str] | None = None) -> Captured:
    """Run one hardened git call (see the module docstring); code 127 when git is missing,
    2 with the reason when the repository's config cannot be neutralised. `extra_env` may
    only set variables of KEPT_ENV and CALLER_ENV (ValueError otherwise: a programming error)."""
    env = git_env(user_config=user_config)
    if extra_env:
        if not set(extra_env) <= KEPT_ENV | CALLER_ENV:
            raise ValueError(f"run_git may not set {sorted(set(extra_env) - KEPT_ENV - CALLER_ENV)}")
        env.update(extra_env)
    try:
        argv = hardened_argv(repo, args, env, timeout_s)
    except UnsafeConfig as exc:
        return Captured(2, "", f"automaton: refusing to run git in {repo}: {exc}")
    return run_capture(argv, env=env, stdin=stdin, timeout_s=timeout_s, exact_bytes=True)
