"""Best-effort analysis of a shell command line an agent wants to run (DESIGN §7).

BEST EFFORT, by design: a shell is a programming language and a command line can write files
in ways no static reading sees (a script it runs, `python -c`, variables, aliases). What this
catches: command lines that run `automaton --approve` / `--focus` (any spelling of the
program, argparse abbreviations like `--appr`, env prefixes) or name `AUTOMATON_APPROVER`;
`git commit --no-verify` (it would skip the pre-commit hook); any non-read-only command that
mentions a `.state*` file or `.automaton/`; and the common write forms — redirections (`>`,
`>>`, `>|`, `&>`), `tee`, `sed -i`, `cp`/`mv`/`install`/`ln`/`rsync` targets, `touch`, `rm`,
`mkdir`, `truncate`, `dd of=`, heredocs into files — whose targets are returned for the
policy to judge one by one. A line that cannot be parsed (unbalanced quotes, an unterminated
heredoc) or whose write target holds a variable or command substitution is denied.
The guarantees stay elsewhere: the loop's drift gate (DESIGN §5 gate 5) and the task's
transition checks (forbidden artifacts, tamper-evident `.state`).
"""

from __future__ import annotations

import glob
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path


class Unsafe(Exception):
    """The command line must be denied; the message is the one-line reason."""


@dataclass
class Analysis:
    """Write targets found: (path as written, directory it is relative to)."""

    targets: list[tuple[str, Path]] = field(default_factory=list)


SEPARATORS = frozenset({";", "&&", "||", "|", "|&", "&", "(", ")", "<(", ">(", "$(", ";;", "\n", "{", "}"})
REDIRECT_OUT = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
REDIRECT_IN = frozenset({"<", "<<<", "<&"})
KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for",
                      "case", "esac", "!", "time", "in"})
WRAPPERS = frozenset({"sudo", "nohup", "nice", "command", "exec", "builtin", "stdbuf", "timeout",
                      "doas", "xargs"})
SPECIAL_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
READ_ONLY = frozenset({
    "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ls", "stat", "wc",
    "diff", "cmp", "file", "sha256sum", "shasum", "md5sum", "echo", "printf", "test", "[", "true",
    "false", "pwd", "cd", "realpath", "readlink", "basename", "dirname", "jq", "tree", "automaton",
    "sort", "uniq", "cut", "tr", "column", "nl", "od", "hexdump", "xxd",
})
GIT_READ_ONLY = frozenset({"log", "show", "diff", "status", "ls-files", "rev-parse", "blame", "grep"})
ALL_ARGS = frozenset({"touch", "rm", "rmdir", "mkdir", "truncate", "unlink", "shred", "tee"})
FIRST_SKIPPED = frozenset({"chmod", "chown", "chgrp"})
LAST_ARG = frozenset({"cp", "install", "ln", "rsync", "scp"})

_APPROVE = re.compile(r"--ap(p(r(o(ve?)?)?)?)?(?![\w-])")
_FOCUS = re.compile(r"--fo(c(us?)?)?(?![\w-])")
_AUTOMATON = re.compile(r"automaton|status\.py")
_STEER_ENV = re.compile(r"(AUTOMATON_(?:TASK|HOME))\b")
_HOOKS_PATH = re.compile(r"hookspath", re.IGNORECASE)
_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path",
                                "--config-env", "--super-prefix", "--list-cmds"})
_COMMIT_VALUE_FLAGS = frozenset("mFcCtuS")
_PROTECTED_TEXT = re.compile(r"\.state|\.automaton")
_HEREDOC = re.compile(r"(?<!<)<<(?!<)(-?)\s*(['\"]?)([A-Za-z0-9_.-]+)\2")
_UNKNOWN = re.compile(r"[$`]")
_GLOB = re.compile(r"[*?\[]")
_PUNCT = frozenset("();<>|&\n")
_OPERATORS = sorted(SEPARATORS | REDIRECT_OUT | REDIRECT_IN | {"<<", "<<-"}, key=len, reverse=True)


def analyze(command: str, cwd: Path) -> Analysis:
    """The write targets of `command` run in `cwd`; raises Unsafe with the reason to deny."""
    _human_acts(command)
    tokens = _tokens(_strip_heredocs(command))
    # The same checks on the words as the shell sees them after quote removal: `--a''pprove`,
    # `autom"aton"`, `--\\approve` and `AUTOMATON_APP''ROVER=` are plain text to the shell.
    flat = " ".join(tokens)
    _human_acts(flat)
    mentions_protected = bool(_PROTECTED_TEXT.search(command) or _PROTECTED_TEXT.search(flat))
    out = Analysis()
    here: Path | None = cwd
    for words, redirects in _simple_commands(tokens):
        for target in redirects:
            _add(out, target, here)
        name, args = _program(words)
        if name is None:
            continue
        if mentions_protected and not _read_only(name, args):
            raise Unsafe(f"{name!r} on a line naming .state or .automaton/: those are written only by automaton")
        if name == "git":
            _git_hooks_skipped(args)
        if name == "cd":
            here = _cd(here, args)
            continue
        for target in _targets(name, args):
            _add(out, target, here)
    return out


def _human_acts(text: str) -> None:
    """Deny sign-offs, focus changes and the environment variables that steer the brakes."""
    if _AUTOMATON.search(text) and (_APPROVE.search(text) or _FOCUS.search(text)):
        raise Unsafe("sign-offs and focus are human acts: an agent may not run automaton --approve or --focus")
    if "AUTOMATON_APPROVER" in text:
        raise Unsafe("AUTOMATON_APPROVER names a human approver: an agent may not set or use it")
    steer = _STEER_ENV.search(text)
    if steer:
        raise Unsafe(f"{steer.group(1)} chooses what automaton enforces: an agent may not set it")
    if _HOOKS_PATH.search(text):
        raise Unsafe("core.hooksPath would move git's hooks away from automaton's pre-commit hook")


def _git_hooks_skipped(args: list[str]) -> None:
    """Deny git calls that skip hooks: `--no-verify` (any unambiguous abbreviation, after any
    global options such as `-C DIR`) and `-n` inside a short-option cluster of `commit` (`-anm`).
    git-commit(1): `-n, --no-verify`; gitcli(7): long options may be abbreviated."""
    if any(len(a) >= len("--no-veri") and "--no-verify".startswith(a) for a in args):
        raise Unsafe("git --no-verify would skip automaton's pre-commit hook")
    sub = _git_subcommand(args)
    if sub is None or args[sub] != "commit":
        return
    for arg in args[sub + 1:]:
        if arg == "--":
            break
        if arg.startswith("-") and not arg.startswith("--"):
            for ch in arg[1:]:
                if ch == "n":
                    raise Unsafe("git commit -n (--no-verify) would skip automaton's pre-commit hook")
                if ch in _COMMIT_VALUE_FLAGS:
                    break  # the rest of the cluster is that option's value (`-mnote`)


def _git_subcommand(args: list[str]) -> int | None:
    """Index of git's subcommand in `args`, past global options (git(1): `-C <path>`, `-c k=v`, …)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _GIT_VALUE_OPTIONS:
            i += 2
        elif arg.startswith("-"):
            i += 1
        else:
            return i
    return None


def _tokens(text: str) -> list[str]:
    # Newlines separate commands: make them operator tokens, not whitespace. A backslash-newline
    # is a line continuation.
    lexer = shlex.shlex(text.replace("\\\n", " "), posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        raw = list(lexer)
    except ValueError as exc:
        raise Unsafe(f"cannot parse the command line ({exc}): automaton denies what it cannot read") from None
    out: list[str] = []
    for tok in raw:
        out.extend(_split_operators(tok) if tok and set(tok) <= _PUNCT else [tok])
    return out


def _split_operators(run: str) -> list[str]:
    """shlex groups a run of punctuation (`)>`, `;(`): split it into known operators, longest first."""
    ops: list[str] = []
    while run:
        for op in _OPERATORS:
            if run.startswith(op):
                ops.append(op)
                run = run[len(op):]
                break
        else:
            ops.append(run[0])
            run = run[1:]
    return ops


def _strip_heredocs(text: str) -> str:
    """Drop heredoc bodies (shlex cannot read them); their operators and targets stay."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        for match in _HEREDOC.finditer(line):
            strip_tabs, delim = match.group(1) == "-", match.group(3)
            while i < len(lines) and (lines[i].lstrip("\t") if strip_tabs else lines[i]) != delim:
                i += 1
            if i >= len(lines):
                raise Unsafe(f"heredoc {delim!r} is never closed: automaton denies what it cannot read")
            i += 1
    return "\n".join(out)


def _simple_commands(tokens: list[str]) -> list[tuple[list[str], list[str]]]:
    """Split tokens into simple commands: (words, output redirection targets)."""
    found: list[tuple[list[str], list[str]]] = []
    words: list[str] = []
    redirects: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if "`" in tok:  # command substitution: each side of a backtick is its own command
            for n, piece in enumerate(tok.split("`")):
                if n:
                    found.append((words, redirects))
                    words, redirects = [], []
                if piece:
                    words.append(piece)
        elif tok in SEPARATORS:
            found.append((words, redirects))
            words, redirects = [], []
        elif tok in REDIRECT_OUT or tok in REDIRECT_IN or tok == "<<" or tok == "<<-":
            if words and words[-1].isdigit():
                words.pop()  # `2>file`: the fd number is not an argument
            target = tokens[i + 1] if i + 1 < len(tokens) else ""
            i += 1
            if tok in REDIRECT_OUT and not (tok == ">&" and (target.isdigit() or target == "-")):
                redirects.append(target)
        elif tok != "$":
            words.append(tok)
        i += 1
    found.append((words, redirects))
    return [(w, r) for w, r in found if w or r]


def _program(words: list[str]) -> tuple[str | None, list[str]]:
    """The program a simple command runs (after env assignments, keywords and wrappers)."""
    i = 0
    while i < len(words):
        word = words[i]
        if word in KEYWORDS or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):
            i += 1
        elif os.path.basename(word) == "env":
            i += 1
            while i < len(words) and (words[i].startswith("-") or "=" in words[i]):
                i += 1
        elif word in WRAPPERS:
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 1
            if word == "timeout" and i < len(words):
                i += 1  # the duration
        else:
            break
    if i >= len(words):
        return None, []
    name, args = os.path.basename(words[i]), words[i + 1:]
    if re.match(r"^python[0-9.]*$", name) and args[:2] == ["-m", "automaton"]:
        return "automaton", args[2:]
    return name, args


def _read_only(name: str, args: list[str]) -> bool:
    if name == "git":
        sub = [a for a in args if not a.startswith("-")][:1]
        return bool(sub) and sub[0] in GIT_READ_ONLY
    if name == "find":
        return not any(a in ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint") for a in args)
    if name == "sed":
        return not _sed_in_place(args)
    return name in READ_ONLY


def _sed_in_place(args: list[str]) -> bool:
    return any(a == "--in-place" or a.startswith("--in-place=") or re.match(r"^-[a-zA-Z]*i", a) for a in args)


def _targets(name: str, args: list[str]) -> list[str]:
    """Paths a known writer writes (best effort)."""
    plain = [a for a in args if not a.startswith("-") or a == "-"]
    if name in ALL_ARGS:
        return plain
    if name in FIRST_SKIPPED:
        return plain[1:]
    if name == "mv":
        return plain  # the sources disappear too
    if name in LAST_ARG:
        for i, arg in enumerate(args):
            if arg in ("-t", "--target-directory") and i + 1 < len(args):
                return [args[i + 1]]
            if arg.startswith("--target-directory="):
                return [arg.split("=", 1)[1]]
        return plain[-1:]
    if name == "sed" and _sed_in_place(args):
        script_flags = ("-e", "-f", "--expression", "--file")
        if not any(a in script_flags for a in args):
            return plain[1:]  # the first operand is the script
        values = {i + 1 for i, a in enumerate(args) if a in script_flags}
        return [a for i, a in enumerate(args) if i not in values and (not a.startswith("-") or a == "-")]
    if name == "dd":
        return [a[3:] for a in args if a.startswith("of=")]
    if name == "git":
        return _git_targets(args)
    if name == "find" and not _read_only(name, args):
        return [a for a in args if not a.startswith(("-", "(", "!", ")"))][:1] or ["."]
    return []


def _git_targets(args: list[str]) -> list[str]:
    """Paths git subcommands remove or move (git-worktree(1), git-rm(1), git-mv(1), git-clean(1)):
    `git worktree remove --force .` deletes a loop's worktree as surely as `rm -rf .`;
    `git clean` deletes what the repository ignores, automaton's runtime files included."""
    sub = _git_subcommand(args)
    if sub is None:
        return []
    rest = [a for a in args[sub + 1:] if not a.startswith("-")]
    if args[sub] == "worktree":
        return rest[1:] if rest[:1] in (["remove"], ["move"]) else []
    if args[sub] in ("rm", "mv"):
        return rest
    if args[sub] == "clean":
        return rest or ["."]
    return []


def _cd(here: Path | None, args: list[str]) -> Path | None:
    """The directory after `cd ARGS`; None when it cannot be known (later relative targets deny)."""
    plain = [a for a in args if not a.startswith("-")]
    if here is None or len(plain) != 1 or _UNKNOWN.search(plain[0]):
        return None
    return Path(os.path.join(here, os.path.expanduser(plain[0])))


def _add(out: Analysis, target: str, here: Path | None) -> None:
    if target in SPECIAL_TARGETS or target.startswith("/dev/fd/"):
        return
    if not target or _UNKNOWN.search(target):
        shown = target or "an empty target"
        raise Unsafe(f"cannot tell where {shown!r} points: automaton denies writes it cannot resolve")
    if here is None and not os.path.isabs(os.path.expanduser(target)):
        raise Unsafe(f"cannot tell which directory {target!r} is in after an unknown cd")
    base = here if here is not None else Path("/")
    out.targets.append((target, base))
    if _GLOB.search(target):  # a glob may match a protected name (`.st*`): check each match too
        pattern = os.path.join(base, os.path.expanduser(target))
        out.targets.extend((match, base) for match in sorted(glob.glob(pattern, include_hidden=True)))
