"""Tokens and simple commands of one shell line, for the hooks' best-effort analysis (DESIGN §7).

A reading, not a shell: quotes are removed the way the shell removes them (POSIX `shlex`), a
PowerShell line keeps its backslashes (they are path separators there, the escape character is
the backtick), heredoc bodies are set aside, and the line is cut into simple commands with their
redirections and where their standard input comes from. Whatever this cannot read raises
`Unsafe`: the hook denies what it cannot read.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field


class Unsafe(Exception):
    """The command line must be denied; the message is the one-line reason."""


@dataclass
class Simple:
    """One simple command: its `words`, output redirect targets (`writes`), input redirect files
    (`reads`), the text a heredoc or here-string feeds it (`stdin`), and whether its standard
    input is the previous command's output (`piped`)."""

    words: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    stdin: str | None = None
    piped: bool = False


@dataclass(frozen=True)
class Program:
    """What a simple command runs after env assignments, keywords and wrappers: `name` (lowercase
    basename, `.exe` dropped: a case-insensitive volume runs `RM` as `rm`), its `args`, the
    directories wrappers change to first (`env -C`, `sudo -D`), and the wrappers passed."""

    name: str
    args: list[str]
    chdir: list[str]
    via: list[str]


SEPARATORS = frozenset({";", "&&", "||", "|", "|&", "&", "(", ")", "<(", ">(", "$(", ";;", "\n", "{", "}"})
PIPES = frozenset({"|", "|&"})
REDIRECT_OUT = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
REDIRECT_IN = frozenset({"<", "<&"})
KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for",
                      "case", "esac", "!", "time", "in", "function", "select", "coproc"})
# wrapper -> its options that take a separate value (sudo(8), doas(1), nice(1), timeout(1), …)
WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "--user", "--group",
                       "--host", "--prompt", "--chdir", "--role", "--type", "--other-user"}),
    "doas": frozenset({"-u", "-C"}),
    "nohup": frozenset(), "command": frozenset(), "builtin": frozenset(), "noglob": frozenset(),
    "exec": frozenset({"-a"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"}),
    "stdbuf": frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "setsid": frozenset(), "chronic": frozenset(), "caffeinate": frozenset({"-t", "-w"}),
    "sshpass": frozenset({"-p", "-f", "-d", "-P"}),
    "xargs": frozenset({"-I", "-n", "-P", "-L", "-d", "-a", "-E", "-s", "--arg-file", "--delimiter",
                        "--max-args", "--max-procs", "--max-lines", "--max-chars", "--replace"}),
    "parallel": frozenset({"-j", "-S", "--jobs", "-a", "--arg-file", "-I", "--sshlogin"}),
}
CHDIR_OPTIONS = {"env": ("-C", "--chdir"), "sudo": ("-D", "--chdir")}
ENV_VALUE = frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
_HEREDOC = re.compile(r"(?<!<)<<(?!<)(-?)\s*(['\"]?)([A-Za-z0-9_.-]+)\2")
_PUNCT = frozenset("();<>|&\n")
_OPERATORS = sorted(SEPARATORS | REDIRECT_OUT | REDIRECT_IN | {"<<", "<<-", "<<<"}, key=len, reverse=True)


def strip_heredocs(text: str) -> tuple[str, list[tuple[str, bool]]]:
    """The line without heredoc bodies (shlex cannot read them), and each body in order with
    whether the shell expands `$…` in it (an unquoted delimiter, bash(1) "Here Documents")."""
    lines = text.split("\n")
    out: list[str] = []
    bodies: list[tuple[str, bool]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        for match in _HEREDOC.finditer(line):
            strip_tabs, quoted, delim = match.group(1) == "-", match.group(2), match.group(3)
            start = i
            while i < len(lines) and (lines[i].lstrip("\t") if strip_tabs else lines[i]) != delim:
                i += 1
            if i >= len(lines):
                raise Unsafe(f"heredoc {delim!r} is never closed: automaton denies what it cannot read")
            bodies.append(("\n".join(lines[start:i]), not quoted))
            i += 1
    return "\n".join(out), bodies


def tokens(text: str, powershell: bool = False) -> list[str]:
    """The words and operators of `text` after quote removal; Unsafe when it cannot be read."""
    if powershell:
        # PowerShell's escape character is the backtick; a backslash is a path separator
        # (about_Special_Characters). `/` means the same to Windows paths and survives shlex.
        text = text.replace("\\", "/")
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


def simple_commands(toks: list[str], bodies: list[tuple[str, bool]]) -> list[Simple]:
    """Cut tokens into simple commands; heredoc `bodies` are handed out in order."""
    found: list[Simple] = []
    cur = Simple()
    left = list(bodies)
    i = 0
    while i < len(toks):
        tok = toks[i]
        if "`" in tok:  # command substitution: each side of a backtick is its own command
            for n, piece in enumerate(tok.split("`")):
                if n:
                    found.append(cur)
                    cur = Simple()
                if piece:
                    cur.words.append(piece)
        elif tok in SEPARATORS:
            found.append(cur)
            cur = Simple(piped=tok in PIPES)
        elif tok in REDIRECT_OUT or tok in REDIRECT_IN or tok in ("<<", "<<-", "<<<"):
            if cur.words and cur.words[-1].isdigit():
                cur.words.pop()  # `2>file`: the fd number is not an argument
            target = toks[i + 1] if i + 1 < len(toks) else ""
            i += 1
            if tok in REDIRECT_OUT and not (tok == ">&" and (target.isdigit() or target == "-")):
                cur.writes.append(target)
            elif tok == "<":
                cur.reads.append(target)
            elif tok == "<<<":
                cur.stdin = target
            elif tok in ("<<", "<<-"):
                cur.stdin = left.pop(0)[0] if left else None
        elif tok != "$":
            cur.words.append(tok)
        i += 1
    found.append(cur)
    return [c for c in found if c.words or c.writes or c.reads]


def program(words: list[str]) -> Program | None:
    """The program a simple command runs, or None (only assignments/keywords)."""
    i, chdir, via = 0, [], []
    while i < len(words):
        word = words[i]
        base = _base(word)
        if word in KEYWORDS or _ASSIGNMENT.match(word):
            i += 1
            while word == "time" and i < len(words) and words[i].startswith("-"):
                i += 1
        elif base == "env":
            via.append("env")
            i += 1
            while i < len(words) and (words[i].startswith("-") or "=" in words[i]):
                if words[i] in ENV_VALUE and i + 1 < len(words):
                    if words[i] in CHDIR_OPTIONS["env"]:
                        chdir.append(words[i + 1])
                    if words[i] in ("-S", "--split-string"):
                        raise Unsafe("env -S splits a string into a command: automaton cannot read it")
                    i += 1
                elif words[i].startswith("--chdir="):
                    chdir.append(words[i].split("=", 1)[1])
                i += 1
        elif base in WRAPPERS:
            via.append(base)
            i += 1
            while i < len(words) and words[i].startswith("-"):
                if words[i] in WRAPPERS[base] and i + 1 < len(words):
                    if words[i] in CHDIR_OPTIONS.get(base, ()):
                        chdir.append(words[i + 1])
                    i += 1
                i += 1
            if base == "timeout" and i < len(words):
                i += 1  # the duration
        else:
            break
    if i >= len(words):
        return None
    name, args = _base(words[i]), words[i + 1:]
    if re.match(r"^python[0-9.]*$", name) and args[:2] == ["-m", "automaton"]:
        return Program("automaton", args[2:], chdir, via)
    return Program(name, args, chdir, via)


def _base(word: str) -> str:
    name = os.path.basename(word.replace("\\", "/")).lower()
    return name[:-4] if name.endswith(".exe") else name


def operands(args: list[str], takes_value: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """The non-option arguments: options and the separate values of `takes_value` skipped,
    everything after `--` kept; a lone `-` is an operand."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            out.extend(args[i + 1:])
            break
        if arg.startswith("-") and arg != "-":
            if arg in takes_value:
                i += 1
        else:
            out.append(arg)
        i += 1
    return out


def option_values(args: list[str], names: tuple[str, ...]) -> list[str]:
    """Values given to any of the options `names`: `-o X`, `-oX`, `-sSo X` (a single letter ending
    or inside a short cluster: the rest of the cluster, else the next word), `--out=X`, `--out X`.
    Reading every letter before it as a flag may find a value too many, never one too few."""
    out: list[str] = []
    for i, arg in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else None
        for name in names:
            if arg == name:
                if nxt is not None:
                    out.append(nxt)
            elif name.startswith("--"):
                if arg.startswith(name + "="):
                    out.append(arg[len(name) + 1:])
            elif arg.startswith("-") and not arg.startswith("--") and name[1] in arg[1:]:
                rest = arg[arg.index(name[1], 1) + 1:]
                if rest:
                    out.append(rest)
                elif nxt is not None:
                    out.append(nxt)
    return out


GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path",
                               "--config-env", "--super-prefix", "--list-cmds"})


def git_subcommand(args: list[str]) -> int | None:
    """Index of git's subcommand in `args`, past global options (git(1): `-C <path>`, `-c k=v`, …)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in GIT_VALUE_OPTIONS:
            i += 2
        elif arg.startswith("-"):
            i += 1
        else:
            return i
    return None
