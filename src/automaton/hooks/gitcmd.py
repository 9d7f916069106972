"""git in a shell line: what it writes, and the ways it could skip automaton's pre-commit hook or
run code the hook never sees.

Denied (`check`): `--no-verify` in any spelling and `commit -n` (git-commit(1)); configuration
given on the command line (`-c KEY=VALUE`, `--config-env`) unless the key only changes output
or identity (`SAFE_KEYS`): `core.hooksPath`, `core.fsmonitor`, `include.path`, `alias.*=!…`,
filters, diff drivers, pagers and editors all run code or move hooks (git-config(1)); the
variables that load other configuration or other programs (`GIT_CONFIG_GLOBAL`,
`GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT`/`_KEY_n`/`_VALUE_n`, `GIT_EXEC_PATH`, `GIT_DIR`,
…; git(1) "ENVIRONMENT VARIABLES"), and `HOME`/`XDG_CONFIG_HOME` set for git (a global
configuration of the agent's choosing); `--exec-path`, `--git-dir`, `--work-tree`,
`--template`, `--upload-pack`/`--receive-pack`/`--exec`; and the subcommands that run commands
(`filter-branch`, `bisect run`, `rebase -x`, `submodule foreach`, `difftool`, `mergetool`,
`grep -O`).

Written (`targets`): `rm`, `mv`, `clean`, `worktree add/remove/move`, `checkout -- FILE`,
`restore`, `config` (the config file), `apply`/`am` (the patch's files), `stash --all` (every
ignored file: the project root), and `--output`/`-o` of `diff`/`log`/`show`/`format-patch`/
`archive`/`bundle`. Paths are relative to every `-C DIR` given before the subcommand.

Rewrites of the whole worktree (`rewrites_worktree`): `stash` (push, save, pop, apply, branch),
`reset --hard`/`--merge`/`--keep`, and moving to another commit (`checkout REF`, `switch REF`,
`merge`, `pull`, `rebase`, `cherry-pick`, `revert`) rewrite tracked files the line never names:
the hook allows them only where the scope is the whole project (as inline code).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from automaton.hooks.shellparse import Simple, Unsafe, git_subcommand, operands, option_values

READ_ONLY = frozenset({"log", "show", "diff", "status", "ls-files", "rev-parse", "blame", "grep", "branch",
                       "describe", "shortlog", "rev-list", "ls-tree", "cat-file", "reflog", "tag", "remote",
                       "whatchanged", "name-rev", "merge-base", "show-ref", "for-each-ref", "count-objects",
                       "help", "version", "var", "check-ignore", "diff-tree", "diff-files", "diff-index"})
_COMMIT_VALUE_FLAGS = frozenset("mFcCtuS")
# Keys whose values only change output, identity or harmless defaults (git-config(1)).
SAFE_KEYS = ("color.", "user.", "author.", "committer.", "advice.", "log.", "i18n.", "column.", "status.",
             "init.defaultbranch", "commit.gpgsign", "tag.gpgsign", "core.quotepath", "core.autocrlf",
             "core.safecrlf", "core.filemode", "core.longpaths", "core.ignorecase", "core.abbrev",
             "diff.noprefix", "diff.renames", "diff.algorithm", "diff.mnemonicprefix", "diff.context",
             "pull.rebase", "pull.ff", "merge.ff", "merge.conflictstyle", "rebase.autosquash",
             "rebase.autostash", "fetch.prune", "push.default", "push.autosetupremote", "gc.auto",
             "maintenance.auto", "safe.directory", "protocol.version", "blame.", "grep.linenumber",
             "format.pretty", "pretty.", "checkout.defaultremote", "pack.threads", "feature.manyfiles")
# Pagers and editors that run nothing but themselves.
SAFE_PROGRAMS = frozenset({"", "cat", "less", "less -r", "less -fr", "less -frx", "less -frsx", "more", "true",
                           ":", "vi", "vim", "nano"})
_PROGRAM_KEYS = re.compile(r"^(core\.pager|pager\.[^.]+|core\.editor|sequence\.editor)$")
HAZARD_ENV = re.compile(r"\b(GIT_CONFIG(?!_NOSYSTEM\b)\w*|GIT_EXEC_PATH|GIT_DIR|GIT_WORK_TREE|GIT_INDEX_FILE|"
                        r"GIT_TEMPLATE_DIR|GIT_SSH(?:_COMMAND)?|GIT_PROXY_COMMAND|GIT_EXTERNAL_DIFF|"
                        r"GIT_ASKPASS|GIT_OBJECT_DIRECTORY|GIT_ALTERNATE_OBJECT_DIRECTORIES)\b")
_HOME_ASSIGN = re.compile(r"^(HOME|XDG_CONFIG_HOME)=")
_GLOBAL_DENIED = ("--exec-path", "--git-dir", "--work-tree")
_ANY_DENIED = ("--upload-pack", "--receive-pack", "--exec")
_OUTPUT_VERBS = frozenset({"diff", "log", "show", "format-patch", "archive", "whatchanged", "range-diff",
                           "diff-tree", "diff-files", "diff-index"})


def check_text(texts: tuple[str, ...]) -> None:
    """Deny a line that names a variable making git load other configuration or programs."""
    for text in texts:
        found = HAZARD_ENV.search(text)
        if found:
            raise Unsafe(f"{found.group(1)} makes git load configuration or programs of the caller's choosing"
                         " (it can move or skip automaton's pre-commit hook)")


def check(args: list[str], assigns: list[str]) -> None:
    """Raise Unsafe for a git call that skips hooks or runs code the hook cannot see."""
    if any(len(a) >= len("--no-v") and "--no-verify".startswith(a) for a in args) \
            or any("no-verify" in a for a in args):
        raise Unsafe("git --no-verify would skip automaton's pre-commit hook")
    if any(_HOME_ASSIGN.match(a) for a in assigns):
        raise Unsafe("HOME or XDG_CONFIG_HOME set for git loads a global configuration of the caller's choosing")
    sub = git_subcommand(args)
    head = args[:sub] if sub is not None else args
    for key in option_values(head, ("-c",)) + [v.split("=", 1)[0] for v in option_values(head, ("--config-env",))]:
        _config_key(key)
    for arg in head:
        if any(arg == o or arg.startswith(o + "=") for o in _GLOBAL_DENIED):
            raise Unsafe(f"git {arg.split('=')[0]} points git at other programs or another repository")
    if sub is None:
        return
    verb, rest = args[sub], args[sub + 1:]
    for arg in rest:
        if arg == "--":
            break
        if any(arg == o or arg.startswith(o + "=") for o in _ANY_DENIED):
            raise Unsafe(f"git {verb} {arg.split('=')[0]} runs or installs programs the hook cannot see")
    if verb in ("init", "clone") and any(a == "--template" or a.startswith("--template=") for a in rest):
        raise Unsafe(f"git {verb} --template installs hooks from a folder of the caller's choosing")
    if verb == "clone":
        for key in option_values(rest, ("-c", "--config")):
            _config_key(key)
    _runs_code(verb, rest)
    if verb == "commit":
        _commit_n(rest)


def _config_key(given: str) -> None:
    key, _, value = given.partition("=")
    key = key.lower()
    if any(key == k or (k.endswith(".") and key.startswith(k)) for k in SAFE_KEYS):
        return
    if _PROGRAM_KEYS.match(key) and value.strip().lower() in SAFE_PROGRAMS:
        return
    raise Unsafe(f"git -c {key}: configuration on the command line can move or skip automaton's pre-commit hook"
                 " or run code (only output and identity keys are allowed)")


def _runs_code(verb: str, rest: list[str]) -> None:
    words = [a.lower() for a in rest]
    if verb in ("filter-branch", "filter-repo", "difftool", "mergetool") \
            or (verb == "bisect" and words[:1] == ["run"]) \
            or (verb == "submodule" and "foreach" in words) \
            or (verb == "rebase" and any(a in ("-x", "--exec") or a.startswith("--exec=") for a in rest)) \
            or (verb == "grep" and any(a.startswith(("-O", "--open-files-in-pager")) for a in rest)):
        raise Unsafe(f"git {verb} runs commands the hook cannot read")


def _commit_n(rest: list[str]) -> None:
    for arg in rest:
        if arg == "--":
            break
        if arg.startswith("-") and not arg.startswith("--"):
            for ch in arg[1:]:
                if ch == "n":
                    raise Unsafe("git commit -n (--no-verify) would skip automaton's pre-commit hook")
                if ch in _COMMIT_VALUE_FLAGS:
                    break  # the rest of the cluster is that option's value (`-mnote`)


def read_only(args: list[str]) -> bool:
    """A subcommand that writes no file (its `--output` aside, which `targets` reports)."""
    sub = git_subcommand(args)
    return sub is not None and args[sub] in READ_ONLY and not _outputs(args[sub], args[sub + 1:])


def _outputs(verb: str, rest: list[str]) -> list[str]:
    """Files written by `--output`/`-o` (GNU-style abbreviations of `--output` included)."""
    if verb not in _OUTPUT_VERBS and verb != "bundle":
        return []
    found: list[str] = []
    for i, arg in enumerate(rest):
        name, eq, value = arg.partition("=")
        nxt = rest[i + 1] if i + 1 < len(rest) else ""
        if (len(name) >= 5 and "--output".startswith(name)) or name == "--output-directory" \
                or (verb in ("format-patch", "archive") and name == "-o"):
            found.append(value if eq else nxt)
        elif verb == "format-patch" and arg.startswith("-o") and len(arg) > 2:
            found.append(arg[2:])
    if verb == "format-patch":
        return [os.path.join(d or ".", "0001-format-patch.patch") for d in found or ["."]]
    if verb == "bundle" and rest[:1] == ["create"] and len(rest) > 1:
        found.append(operands(rest[1:])[0] if operands(rest[1:]) else "")
    return found


def targets(args: list[str], cmd: Simple, here: Path | None) -> list[str]:
    """Paths git subcommands write (see the module docstring)."""
    sub = git_subcommand(args)
    if sub is None:
        return []
    prefix = os.path.join(*option_values(args[:sub], ("-C",))) if "-C" in args[:sub] else ""
    verb, rest_args = args[sub], args[sub + 1:]
    rest = operands(rest_args, frozenset({"-b", "-B", "--orphan", "-s", "--source", "-m", "--conflict"}))
    found: list[str] = _outputs(verb, rest_args)
    if verb == "worktree":
        found += _worktree(rest_args, rest)
    elif verb in ("rm", "mv", "restore"):
        found += rest
    elif verb == "clean" and not any(a in ("-n", "--dry-run") or re.match(r"^-[a-zA-Z]*n", a) for a in rest_args):
        found += rest or ["."]
    elif verb == "checkout":
        found += _checkout(rest_args, rest, here, prefix)
    elif verb == "config":
        found += _git_config(rest_args)
    elif verb == "stash" and any(a in ("-a", "--all") for a in rest_args):
        found.append(".")  # removes ignored files too: .automaton/ among them
    elif verb in ("apply", "am") and not any(a in ("--check", "--stat", "--numstat", "--summary", "--cached")
                                            for a in rest_args):
        from automaton.hooks import unpack

        found += unpack.patch_texts_targets(rest, cmd, here, verb)
    if any(a.startswith("--pathspec-from-file") for a in rest_args):
        raise Unsafe(f"git {verb} --pathspec-from-file: automaton cannot tell which paths it writes")
    return [os.path.join(prefix, t) if prefix and not os.path.isabs(t) else t for t in found]


_STASH_KEEPS = frozenset({"list", "show", "create", "store", "drop", "clear"})
_RESET_WORKTREE = frozenset({"--hard", "--merge", "--keep"})
_MOVES_HEAD = frozenset({"merge", "pull", "rebase", "cherry-pick", "revert"})


def rewrites_worktree(args: list[str], here: Path | None) -> str | None:
    """Why a git call rewrites tracked files it does not name (git-stash(1), git-reset(1),
    git-checkout(1), git-switch(1), …), or None. `here`: the directory it runs in, if known
    (`checkout X` is a path when X exists there)."""
    sub = git_subcommand(args)
    if sub is None:
        return None
    verb, rest = args[sub], args[sub + 1:]
    ops = operands(rest, frozenset({"-m", "--message", "-b", "-B", "--orphan", "-c", "-C", "--create",
                                    "--force-create", "-s", "--strategy", "-X", "--strategy-option"}))
    if verb == "stash" and not (ops[:1] and ops[0] in _STASH_KEEPS):
        return "git stash (it rewrites every tracked file it stashes or applies)"
    if verb == "reset" and any(a in _RESET_WORKTREE for a in rest):
        return f"git reset {next(a for a in rest if a in _RESET_WORKTREE)} (it rewrites every tracked file)"
    if verb in _MOVES_HEAD and not any(a in ("-h", "--help") for a in rest):
        return f"git {verb} (it rewrites the tracked files of another commit)"
    creates = any(a in ("-b", "-B", "-c", "-C", "--create", "--force-create", "--orphan") for a in rest)
    if verb == "switch" and (ops or "-" in rest) and not (creates and not ops):
        return "git switch (it rewrites the tracked files of another commit)"
    if verb == "checkout" and "--" not in rest and _checks_out_commit(ops, creates, here):
        return "git checkout of another commit (it rewrites its tracked files)"
    return None


def _checks_out_commit(ops: list[str], creates: bool, here: Path | None) -> bool:
    """`checkout -b NEW START` moves to START; `checkout X` moves to X unless X is a path here."""
    if creates:
        return bool(ops)
    return len(ops) == 1 and (here is None or not os.path.lexists(os.path.join(here, ops[0])))


def _worktree(rest_args: list[str], rest: list[str]) -> list[str]:
    """git-worktree(1): `remove`/`move` write their paths; `add [-f] [--detach] [--lock
    [--reason R]] [--orphan] [(-b|-B) BRANCH] PATH [COMMIT]` creates PATH (a write target: a
    worktree outside the project is a write outside it)."""
    if rest[:1] in (["remove"], ["move"]):
        return rest[1:]
    if rest[:1] == ["add"]:
        after = rest_args[rest_args.index("add") + 1:]
        return operands(after, frozenset({"-b", "-B", "--reason"}))[:1]
    return []


def _checkout(rest_args: list[str], rest: list[str], here: Path | None, prefix: str) -> list[str]:
    if "--" in rest_args:
        return rest_args[rest_args.index("--") + 1:]
    if not rest:
        return []
    first = rest[0]
    exists = here is not None and os.path.lexists(os.path.join(here, prefix, first))
    return rest if exists else rest[1:]  # `git checkout REF path…`: the first operand is the ref


def _git_config(args: list[str]) -> list[str]:
    reads = {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list", "get", "list",
             "--get-color", "--get-colorbool"}
    writes = {"--unset", "--unset-all", "--add", "--replace-all", "--rename-section", "--remove-section",
              "-e", "--edit", "set", "unset", "rename-section", "remove-section", "edit"}
    if any(a in reads for a in args) and not any(a in writes for a in args):
        return []
    names = operands(args, frozenset({"-f", "--file", "--blob", "--type", "--default", "--comment"}))
    if len(names) < 2 and not any(a in writes for a in args):
        return []  # `git config KEY` reads
    if "--global" in args:
        return ["~/.gitconfig"]
    if "--system" in args:
        return ["/etc/gitconfig"]
    return option_values(args, ("-f", "--file")) or [".git/config"]
