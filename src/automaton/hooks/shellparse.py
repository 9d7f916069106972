"""Tokens and simple commands of one shell line, for the hooks' best-effort analysis.

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

from automaton.core.record import field, record  # not dataclasses: on the hook path
from automaton.hooks.argv import GIT_VALUE_OPTIONS, git_subcommand, operands, option_values

__all__ = ["GIT_VALUE_OPTIONS", "Program", "Simple", "Unsafe", "git_subcommand", "operands", "option_values",
           "program", "simple_commands", "strip_heredocs", "tokens"]


class Unsafe(Exception):
    """The command line must be denied; the message is the one-line reason."""


@record
class Simple:
    """One simple command: its `words`, output redirect targets (`writes`), input redirect files
    (`reads`), the text a heredoc or here-string feeds it (`stdin`), whether its standard
    input is the previous command's output (`piped`), the list operators around it (`before`,
    `after`: `;`, `&&`, `||`, `|`, `&`, a newline, or "" at either end of the line) and the
    subshell scopes opened or closed since the previous command (`scopes`, in order: `(`, `$(`,
    `<(`, `>(`, a backtick opening as "`(", and ")" or "`)" closing)."""

    words: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    stdin: str | None = None
    piped: bool = False
    before: str = ""
    after: str = ""
    scopes: list[str] = field(default_factory=list)


@record(frozen=True)
class Program:
    """What a simple command runs after env assignments, keywords, wrappers and multi-call
    binaries (`busybox APPLET`): `name` (lowercase
    basename, `.exe` dropped: a case-insensitive volume runs `RM` as `rm`), its `args`, the
    directories wrappers change to first (`env -C`, `sudo -D`), the wrappers passed, and the
    `NAME=VALUE` assignments it runs with (before it or given to `env`). `sandbox_tasks`: the
    `--task` values of the `automaton --sandbox` wrappers passed ("" for one without `--task`)."""

    name: str
    args: list[str]
    chdir: list[str]
    via: list[str]
    assigns: list[str] = field(default_factory=list)
    sandbox_tasks: list[str] = field(default_factory=list)


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
    # flock(1): `flock [opts] FILE CMD…` or `flock [opts] FILE -c 'LINE'` (a shell line);
    # watch(1): `watch [opts] CMD…` runs the words joined by spaces through `sh -c` (`-x`: as they are).
    "flock": frozenset({"-w", "-E", "--timeout", "--wait", "--conflict-exit-code"}),
    "watch": frozenset({"-n", "-q", "--interval", "--equexit"}),
    # Multi-call binaries: `busybox APPLET ARGS…` runs `APPLET ARGS…` (busybox(1), toybox(1));
    # `busybox --help`/`--list` run nothing.
    "busybox": frozenset(), "toybox": frozenset(),
}
CHDIR_OPTIONS = {"env": ("-C", "--chdir"), "sudo": ("-D", "--chdir")}
# wrapper -> operands before the command it runs: timeout's duration, flock's lock file
WRAPPER_OPERANDS = {"timeout": 1, "flock": 1}
_WATCH_EXEC = re.compile(r"^(-[bcdegptw]*x|--exe(c)?)$")  # watch -x: the words run as they are, no `sh -c`
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


SCOPE_OPEN = frozenset({"(", "$(", "<(", ">("})


def simple_commands(toks: list[str], bodies: list[tuple[str, bool]]) -> list[Simple]:
    """Cut tokens into simple commands; heredoc `bodies` are handed out in order. A command
    with neither words nor redirections is dropped and its scope events move to the next one."""
    found: list[Simple] = []
    cur = Simple()
    left = list(bodies)
    backtick_open = False
    i = 0

    def close(sep: str) -> Simple:
        cur.after = sep
        found.append(cur)
        nxt = Simple(piped=sep in PIPES, before=sep if sep not in SCOPE_OPEN and sep != ")" else "")
        return nxt

    while i < len(toks):
        tok = toks[i]
        if "`" in tok:  # command substitution: each side of a backtick is its own command
            for n, piece in enumerate(tok.split("`")):
                if n:
                    cur = close("")
                    cur.scopes.append("`)" if backtick_open else "`(")
                    backtick_open = not backtick_open
                if piece:
                    cur.words.append(piece)
        elif tok in SEPARATORS:
            cur = close(tok)
            if tok in SCOPE_OPEN or tok == ")":
                cur.scopes.append(tok)
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
    return _drop_empty(found)


def _drop_empty(found: list[Simple]) -> list[Simple]:
    """Commands with words or redirections; an empty one passes on its scope events, and its
    `before` when the next command has none of its own."""
    kept: list[Simple] = []
    carry: list[str] = []
    before = ""
    for cmd in found:
        if cmd.words or cmd.writes or cmd.reads:
            cmd.scopes = carry + cmd.scopes
            cmd.before = cmd.before or before
            kept.append(cmd)
            carry, before = [], ""
        else:
            carry += cmd.scopes
            before = cmd.before or before
            if kept and not kept[-1].after:
                kept[-1].after = cmd.after
    return kept


def program(words: list[str]) -> Program | None:
    """The program a simple command runs, or None (only assignments/keywords)."""
    i, chdir, via, assigns = 0, [], [], []
    while i < len(words):
        word = words[i]
        base = _base(word)
        if word in KEYWORDS or _ASSIGNMENT.match(word):
            if _ASSIGNMENT.match(word):
                assigns.append(word)
            i += 1
            while word == "time" and i < len(words) and words[i].startswith("-"):
                i += 1
        elif base == "env":
            via.append("env")
            i += 1
            while i < len(words) and (words[i].startswith("-") or "=" in words[i]):
                if "=" in words[i] and not words[i].startswith("-"):
                    assigns.append(words[i])
                if words[i] in ENV_VALUE and i + 1 < len(words):
                    if words[i] in CHDIR_OPTIONS["env"]:
                        chdir.append(words[i + 1])
                    if words[i] in ("-S", "--split-string"):
                        raise Unsafe("env -S splits a string into a command: automaton cannot read it")
                    i += 1
                elif words[i].startswith("--chdir="):
                    chdir.append(words[i].split("=", 1)[1])
                elif words[i].startswith(("-S", "--split-string=")) and words[i] != "-":
                    raise Unsafe("env -S splits a string into a command: automaton cannot read it")
                i += 1
        elif base in WRAPPERS:
            via.append(base)
            start = i = i + 1
            while i < len(words) and words[i].startswith("-"):
                if _takes_value(words[i], WRAPPERS[base]) and i + 1 < len(words):
                    if words[i] in CHDIR_OPTIONS.get(base, ()):
                        chdir.append(words[i + 1])
                    i += 1
                i += 1
            i += WRAPPER_OPERANDS.get(base, 0)
            line = _shell_line(base, words[start:i], words[i:])
            if line is not None:  # `flock F -c LINE`, `watch CMD…`: read as `sh -c LINE`
                return Program("sh", ["-c", line], chdir, via, assigns)
        else:
            break
    if i >= len(words):
        return None
    name, args = _base(words[i]), words[i + 1:]
    if re.match(r"^python[0-9.]*$", name) and args[:2] == ["-m", "automaton"]:
        name, args = "automaton", args[2:]
    if name == "automaton" and "--sandbox" in (args[:args.index("--")] if "--" in args else args):
        return _sandboxed(args, Program(name, args, chdir, via, assigns))
    return Program(name, args, chdir, via, assigns)


def _takes_value(word: str, options: frozenset[str]) -> bool:
    """Whether a wrapper's option `word` takes the next word as its value: one of `options`, or a
    GNU abbreviation of a long one (`--int` for watch's `--interval`, getopt_long(3))."""
    if word in options:
        return True
    return word.startswith("--") and len(word) > 2 and "=" not in word and any(o.startswith(word) for o in options)


def _shell_line(wrapper: str, options: list[str], rest: list[str]) -> str | None:
    """The shell line a wrapper runs through `sh -c`, or None where it runs `rest` as a program:
    flock(1)'s `-c`/`--command LINE` after the lock file, and watch(1)'s words joined by spaces
    (procps watch hands them to `sh -c`, unless `-x`/`--exec`)."""
    if wrapper == "flock" and rest[:1] in (["-c"], ["--command"]):
        return rest[1] if len(rest) > 1 else ""
    if wrapper == "watch" and rest and not any(_WATCH_EXEC.match(o) for o in options):
        return " ".join(rest)
    return None


# Agent CLIs: `automaton --sandbox -- AGENT` starts an agent session, a human's act.
AGENT_CLIS = frozenset({"claude", "codex", "gemini", "automaton", "automaton-loop", "aider", "cursor-agent",
                        "opencode", "amp", "goose", "qwen", "copilot"})


def _sandboxed(args: list[str], outer: Program) -> Program | None:
    """`automaton --sandbox [--task T] [--project DIR] -- CMD…` read as a wrapper: the program
    CMD runs (its `via` and `sandbox_tasks` extended). Unsafe when CMD starts an agent session
    (an agent may not open a session of its own choosing) or the head holds anything else."""
    if "--" not in args:
        return outer  # the CLI refuses it (usage), running nothing
    cut = args.index("--")
    head, command = args[:cut], args[cut + 1:]
    task, i = "", 0
    while i < len(head):
        if head[i] in ("--task", "--project") and i + 1 < len(head):
            task = head[i + 1] if head[i] == "--task" else task
            i += 2
        elif head[i] == "--sandbox":
            i += 1
        else:
            return outer  # the CLI refuses it (bad input), running nothing
    inner = program(command)
    if inner is None:
        return outer
    if inner.name in AGENT_CLIS:
        raise Unsafe(f"automaton --sandbox -- {inner.name} starts an agent session: only a human starts one,"
                     " never an agent from inside its own")
    return Program(inner.name, inner.args, outer.chdir + inner.chdir, [*outer.via, "automaton --sandbox", *inner.via],
                   outer.assigns + inner.assigns, [task, *inner.sandbox_tasks])


def _base(word: str) -> str:
    name = os.path.basename(word.replace("\\", "/")).lower()
    return name[:-4] if name.endswith(".exe") else name
