"""Human acts and hidden commands in a shell line: what the hook denies by name (SECURITY.md#threat-model).

Sign-offs and focus changes (`automaton --approve` / `--focus`) are human acts, and the CLI's
own check for a human (a terminal on stdin, `commands.human.require_human`) is a weak signal:
a pseudo-terminal wrapper gives an agent one. So the hook denies, on every line:

- `--approve`/`--focus` (and their unique prefixes, which older parsers accepted) next to any
  spelling of automaton, and the other human acts (`--resume-loop`, `--rearm-loop`,
  `--remove-loop`, `--upgrade-loops`, `--gc-worktrees`, and the widening `--create-loop`,
  `--install-schedule`, `--publish-caps`);
  `AUTOMATON_APPROVER`/`AUTOMATON_TASK`/`AUTOMATON_HOME`; `hooksPath`;
- pseudo-terminal wrappers (`script`, `unbuffer`, `expect`, `socat … pty`, `ssh -t`, `tmux`
  and `screen` beyond listing, Python/Perl/Node pty modules) and typing into another terminal
  (`tmux send-keys`, `screen -X stuff`, `xdotool type`, `TIOCSTI`);
- a line that mentions automaton in any form AND holds a construct whose meaning exists only at
  run time (`$(…)`, backticks, `$'…'`, `${…}`, `$VAR`, `eval`, `source`, `sh -c` of a script
  file or stdin, `xargs`, `find -exec`, `python -c`, `perl -e`, `node -e`, …): the hook cannot
  know what it runs.

Every check runs on several readings of the line ("views"): the raw text, the words after quote
removal, both with `\\xHH`/octal/`\\u` escapes decoded, and lowercase forms without quotes,
backslashes, backticks and carets (`autom\\aton`, `--a''pprove`, `AUTOMATON`, PowerShell's
`` --ap`prove``); a mention of automaton is also looked for in the letters alone
(`'autom' + 'aton'`). Still best effort: a name built from character codes is invisible here.
"""

from __future__ import annotations

import re

from automaton.core.record import record  # not dataclasses: on the hook path
from automaton.hooks.shellparse import Program, Unsafe, operands

_APPROVE = re.compile(r"--ap(p(r(o(ve?)?)?)?)?(?![\w-])", re.IGNORECASE)
_FOCUS = re.compile(r"--fo(c(us?)?)?(?![\w-])", re.IGNORECASE)
# The other human acts: releasing a human's pause, re-arming or removing a loop, accepting a
# rollback, and the widening commands (a new loop, or an OS schedule, runs an agent unattended;
# published account caps may raise what every runner spends).
_LOOP_ACTS = re.compile(r"--(resume-loop|rearm-loop|remove-loop|accept-rollback|create-loop|install-schedule"
                        r"|upgrade-loops|gc-worktrees|publish-caps)"
                        r"(?![\w-])", re.IGNORECASE)
_MENTION = re.compile(r"automaton|status\.py|loop-runner\.py", re.IGNORECASE)
_MENTION_LETTERS = re.compile(r"automaton|statuspy|looprunnerpy")
_STEER_ENV = re.compile(r"automaton_(task|home)\b", re.IGNORECASE)
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|0?[0-7]{1,3})")
_DROPPED = re.compile(r"[\\`^'\"]")
_PTY_TEXT = re.compile(r"\b(?:pty|openpty|forkpty|posix_openpt|ptmx|ptyprocess|pexpect|io::pty|node-pty|"
                       r"conpty|winpty|tiocsti)\b")
_TYPING_TEXT = re.compile(r"\bkeystroke\b|\bdo script\b|tell application \w*\s*\"?(?:terminal|iterm)")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

PTY_PROGRAMS = frozenset({"script", "unbuffer", "expect", "zpty", "dtach", "abduco", "winpty", "empty",
                          "ptyrun", "faketty", "mosh", "mosh-client"})
TYPING_PROGRAMS = frozenset({"xdotool", "ydotool", "wtype", "ttyecho", "writevt",
                             # tmux commands after `\;` are separate words to this reader
                             "send-keys", "send-prefix", "paste-buffer", "pasteb", "stuff"})
# tmux(1) commands that only list or read, with their documented aliases; tmux also accepts
# unique prefixes, which are therefore denied (spell the command out).
TMUX_READ = frozenset({"ls", "list-sessions", "lsw", "list-windows", "lsp", "list-panes", "lsc",
                       "list-clients", "lsb", "list-buffers", "lsk", "list-keys", "capturep",
                       "capture-pane", "has", "has-session", "display", "display-message", "show",
                       "show-options", "showw", "show-window-options", "showenv", "show-environment",
                       "info", "server-info", "list-commands", "lscm", "kill-session",
                       "kill-server", "kill-window", "killw", "kill-pane", "killp", "-v", "-V"})
TMUX_VALUE = frozenset({"-L", "-S", "-f", "-c", "-T"})
SCREEN_READ = frozenset({"-ls", "-list", "-wipe", "-v", "-version", "--version", "-h", "--help"})
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "hush"})
# interpreter -> flags that take inline code (python(1), perl(1), node(1), ruby(1), php(1), …)
INLINE_CODE: dict[str, frozenset[str]] = {
    "perl": frozenset({"-e", "-E"}), "ruby": frozenset({"-e"}), "node": frozenset({"-e", "-p", "--eval", "--print"}),
    "nodejs": frozenset({"-e", "-p", "--eval", "--print"}), "bun": frozenset({"-e", "--eval", "-p", "--print"}),
    "deno": frozenset({"eval"}), "php": frozenset({"-r"}), "lua": frozenset({"-e"}), "osascript": frozenset({"-e"}),
    "rscript": frozenset({"-e"}), "julia": frozenset({"-e", "--eval"}), "tclsh": frozenset(),
}
INTERPRETERS = frozenset({*SHELLS, *INLINE_CODE, "expect", "awk", "gawk", "mawk", "nawk", "pwsh",
                          "powershell"})
ALWAYS_DYNAMIC = frozenset({"eval", "source", ".", "xargs", "parallel", "iex", "invoke-expression", "pwsh",
                            "powershell", "cmd", "awk", "gawk", "mawk", "nawk", "su", "runuser", "ssh",
                            "watch", "trap", "alias", "invoke-command", "start-job", "at", "batch"})


@record(frozen=True)
class Views:
    """Readings of one line: `texts` (raw, dequoted, decoded, lowercase-stripped) and `letters`
    (lowercase letters, digits and `_` only)."""

    texts: tuple[str, ...]
    letters: str

    @classmethod
    def of(cls, command: str, words: list[str]) -> Views:
        base = [command, " ".join(words)]
        base += [_ESCAPE.sub(_decode, t) for t in base]
        stripped = [_DROPPED.sub("", t.lower()) for t in base]
        letters = re.sub(r"[^a-z0-9_]", "", stripped[2] + " " + stripped[3])
        return cls(tuple(base + stripped), letters)

    def search(self, pattern: re.Pattern[str]) -> re.Match[str] | None:
        for text in self.texts:
            found = pattern.search(text)
            if found:
                return found
        return None


def _decode(match: re.Match[str]) -> str:
    code = match.group(1)
    try:
        value = int(code[1:], 16) if code[0] in "xuU" else int(code, 8)
        return chr(value)
    except (ValueError, OverflowError):
        return match.group(0)


def mention(views: Views) -> str | None:
    """How the line names automaton (or its sign-off flags), or None."""
    found = views.search(_MENTION) or views.search(_APPROVE) or views.search(_FOCUS)
    if found:
        return found.group(0)
    if "automaton_" in views.letters or _MENTION_LETTERS.search(views.letters):
        return "automaton"
    return None


def check_text(views: Views) -> None:
    """Deny sign-offs, focus changes, the variables that steer the brakes, pty modules, typing."""
    named = views.search(_MENTION) or _MENTION_LETTERS.search(views.letters)
    if named and (views.search(_APPROVE) or views.search(_FOCUS)):
        raise Unsafe("sign-offs and focus are human acts: an agent may not run automaton --approve or --focus")
    act = views.search(_LOOP_ACTS) if named else None
    if act:
        raise Unsafe(f"{act.group(0)} is a human act: an agent may not run it")
    if "automaton_approver" in views.letters:
        raise Unsafe("AUTOMATON_APPROVER names a human approver: an agent may not set or use it")
    steer = views.search(_STEER_ENV)
    if steer or "automaton_task" in views.letters or "automaton_home" in views.letters:
        which = steer.group(0).upper() if steer else "AUTOMATON_TASK/AUTOMATON_HOME"
        raise Unsafe(f"{which} chooses what automaton enforces: an agent may not set it")
    if "hookspath" in views.letters:
        raise Unsafe("core.hooksPath would move git's hooks away from automaton's pre-commit hook")


def check_program(prog: Program, stdin: str | None = None) -> None:
    """Deny pseudo-terminal wrappers and typing into another terminal (no mention needed: what
    they run is often a script the hook never sees). Inline interpreter code (its args, or the
    heredoc it reads: `stdin`) may not load a pty module or push keys (`TIOCSTI`)."""
    name, args = prog.name, prog.args
    lowered = [a.lower() for a in args]
    if name in INTERPRETERS or re.match(r"^(python|pypy|node)[0-9.]*$", name):
        code = " ".join(lowered) + " " + (stdin or "").lower()
        pty = _PTY_TEXT.search(code)
        if pty:
            raise Unsafe(f"{pty.group(0)!r} in {name} code opens or types into a terminal: the terminal"
                         " check of a human act must not be satisfied by an agent")
        if name == "osascript" and _TYPING_TEXT.search(code):
            raise Unsafe("osascript driving a terminal application would type into a human's terminal")
    if name in PTY_PROGRAMS:
        raise Unsafe(f"{name} runs a command on a pseudo-terminal: the terminal check of a human act"
                     " must not be satisfied by an agent")
    if name in TYPING_PROGRAMS:
        raise Unsafe(f"{name} types into a terminal: an agent may not drive a human's terminal")
    if name == "socat" and any("pty" in a or "tty" in a for a in lowered):
        raise Unsafe("socat with a pty address runs a command on a pseudo-terminal")
    if name in ("ssh", "autossh") and (_ssh_tty(args) or any("requesttty" in a for a in lowered)):
        raise Unsafe("ssh -t runs a command on a pseudo-terminal")
    if name == "systemd-run" and any(a in ("-t", "--pty", "--shell", "-S") or a.startswith("-t") for a in args):
        raise Unsafe("systemd-run --pty runs a command on a pseudo-terminal")
    if name == "machinectl" and any(a in ("shell", "login") for a in lowered):
        raise Unsafe("machinectl shell opens a terminal")
    if name == "tmux":
        _tmux(args)
    if name == "screen" and not (args and all(a in SCREEN_READ for a in args)):
        raise Unsafe("screen opens or drives terminals: an agent may only list sessions (screen -ls)")


def _ssh_tty(args: list[str]) -> bool:
    # ssh(1): -t forces a pty; these options take a value, so a cluster stops at them.
    for arg in args:
        if not arg.startswith("-") or arg.startswith("--"):
            continue
        for ch in arg[1:]:
            if ch == "t":
                return True
            if ch in "bcDEeFIiJLlmOopQRSWw":
                break
    return False


def _tmux(args: list[str]) -> None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in TMUX_VALUE else 1
    rest = args[i:]
    if not rest:
        raise Unsafe("tmux without a command opens a terminal session")
    # tmux chains commands with `;` (an escaped `\;` here): check each.
    starts = [0] + [n + 1 for n, a in enumerate(rest) if a == ";"]
    for n in starts:
        if n < len(rest) and rest[n] not in TMUX_READ:
            raise Unsafe(f"tmux {rest[n]} opens or drives a terminal: an agent may only list and read"
                         " tmux sessions")


def dynamic_text(text: str, bodies: list[tuple[str, bool]], powershell: bool = False) -> str | None:
    """The first construct in `text` (heredoc bodies set aside) that the shell expands at run time:
    `$(`, backticks, `$'`, `${`, `$NAME`, `$1`, `$@`… outside single quotes; None if none.
    `$?`, `$$`, `$!`, `$#` expand to numbers and are not counted. Bodies with an unquoted
    delimiter expand too."""
    found = _scan(text, powershell)
    for body, expands in bodies:
        found = found or (_scan(body, powershell, heredoc=True) if expands else None)
    return found


def _scan(text: str, powershell: bool, heredoc: bool = False) -> str | None:
    # In a heredoc body quotes are plain characters: only escapes, backticks and `$` count.
    escape = "`" if powershell else "\\"
    single = False
    double = heredoc
    i = 0
    while i < len(text):
        ch = text[i]
        if single:
            single = ch != "'"
        elif ch == escape:
            i += 1
        elif heredoc and ch in "'\"":
            pass
        elif ch == "'" and not double:
            single = True
        elif ch == '"':
            double = not double
        elif ch == "`":
            return "a backtick command substitution"
        elif ch == "$" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in "({":
                return f"'${nxt}…'"
            if nxt in "'\"" and not double:
                return f"'${nxt}…' quoting"
            if nxt in "@*-" or nxt.isdigit():
                return f"'${nxt}'"
            name = _NAME.match(text, i + 1)
            if name:
                return f"'${name.group(0)}'"
        i += 1
    return None


def dynamic_program(prog: Program) -> str | None:
    """Why `prog` runs something the hook cannot read (eval, source, a shell script or stdin,
    inline interpreter code, xargs, find -exec, …), or None. `sh -c 'LITERAL'` is read instead."""
    name, args = prog.name, prog.args
    if "xargs" in prog.via or "parallel" in prog.via:
        return "xargs"
    if name in ALWAYS_DYNAMIC or "watch" in prog.via:  # watch re-runs its line (read as `sh -c`)
        return "watch" if "watch" in prog.via else name
    if name == "find" and any(a in ("-exec", "-execdir", "-ok", "-okdir") for a in args):
        return "find -exec"
    if name in SHELLS:
        if shell_inline(args) is not None:
            return None  # the caller reads the literal as its own line
        return f"{name} running a script or its standard input"
    if re.match(r"^(python[0-9.]*|pypy[0-9.]*)$", name):
        return _python(name, args)
    if name in INLINE_CODE:
        flags = INLINE_CODE[name]
        if any(a in flags or (len(a) > 1 and a[0] == "-" and a[1] != "-" and any("-" + c in flags for c in a[1:]))
               for a in args):
            return f"{name} with inline code"
        if not operands(args):
            return f"{name} reading its program from standard input"
    return None


def _python(name: str, args: list[str]) -> str | None:
    # python(1): -c CODE runs inline code; -m MOD runs a module; -W/-X take a value.
    for arg in args:
        if arg == "-" or not arg.startswith("-") or arg.startswith("--"):
            return "python reading its program from standard input" if arg == "-" else None
        for ch in arg[1:]:
            if ch == "c":
                return f"{name} -c"
            if ch in "mWX":
                return None
    return f"{name} reading its program from standard input"


def shell_inline(args: list[str]) -> int | None:
    """Index in `args` of the command string of `sh -c STRING` (`bash -lc`, `-xc`), or None."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-o", "+o", "-O", "+O"):  # bash(1): `-o pipefail` takes a value
            i += 2
            continue
        if arg.startswith("--") and arg != "--":
            i += 1
            continue
        if not arg.startswith(("-", "+")) or arg in ("-", "--"):
            return None
        if "c" in arg[1:]:
            return i + 1 if i + 1 < len(args) else None
        i += 1
    return None


_VERSION_FLAGS = frozenset({"-v", "-V", "--version", "-h", "--help", "-?"})
# Names of a process's standard input as a file operand.
STDIN_FILES = frozenset({"-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})
_SHELL_VALUE = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})


def shell_reads_stdin(name: str, args: list[str]) -> bool:
    """Whether a shell (`SHELLS`) or `source`/`.` with `args` (no `-c`: see `shell_inline`) reads
    its program from standard input: `-s`, no script operand, or the operand `/dev/stdin` (bash(1)
    "INVOCATION"). False for a script file (the hook never reads programs) and `--version`/`--help`."""
    if name in ("source", "."):
        return not args or args[0] in STDIN_FILES
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _SHELL_VALUE:
            i += 2
            continue
        if arg in ("--version", "--help") or (name == "fish" and arg in _VERSION_FLAGS):
            return False
        if arg in ("-", "--"):
            return i + 1 >= len(args) or args[i + 1] in STDIN_FILES
        if not arg.startswith(("-", "+")):
            return arg in STDIN_FILES
        if not arg.startswith("--") and "s" in arg[1:]:
            return True
        i += 1
    return True


def inline_code(prog: Program, stdin: str | None, dirs: list[str] | None) -> str | None:
    """A description of the inline code `prog` runs (`python -c`, `python - <<EOF`, `node -e`,
    `perl -e`, `ruby -e`, `php -r`, `deno eval`, an interpreter reading its program from
    standard input, …) unless it is provably read-only (Python only: `hooks.pycode`), else None
    (a script file, a module, a version query, not an interpreter). `stdin`: the heredoc the
    command reads, if any; `dirs`: the directories it may run in (None: unknown)."""
    name, args = prog.name, prog.args
    if re.match(r"^(python|pypy)[0-9.]*$", name):
        found = _python_code(args)
        if found is None:
            return None
        code = stdin if found == _STDIN else found
        if code is None:
            return f"{name} reading its program from standard input"
        # PYTHONPATH, PYTHONSTARTUP, PYTHONHOME, … make the interpreter run other files first.
        steer = next((a.split("=", 1)[0] for a in prog.assigns if a.upper().startswith("PYTHON")), None)
        if steer is not None or "-i" in args:
            return f"{name} inline code (run with {steer or '-i'}, which runs other code first)"
        from automaton.hooks.pycode import not_read_only

        why = not_read_only(code, dirs)
        return f"{name} inline code ({why})" if why else None
    if name not in INLINE_CODE:
        return None
    why = dynamic_program(prog)
    if why is None or (not operands(args) and any(a in _VERSION_FLAGS for a in args)
                       and not why.endswith("inline code")):
        return None
    return why


_STDIN = "\0stdin"  # no argv word holds a NUL


def _python_code(args: list[str]) -> str | None:
    """python(1)'s argv: the `-c` code, _STDIN when the program is read from standard input,
    None for a script, a module (`-m`) or a version/help query."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _VERSION_FLAGS:
            return None
        if arg == "-":
            return _STDIN
        if arg == "--":
            return None if i + 1 < len(args) else _STDIN
        if not arg.startswith("-"):
            return None
        if arg.startswith("--"):
            i += 2 if arg == "--check-hash-based-pycs" else 1
            continue
        for k, ch in enumerate(arg[1:], 1):
            if ch == "c":
                rest = arg[k + 1:]
                return rest or (args[i + 1] if i + 1 < len(args) else "")
            if ch == "m":
                return None
            if ch in "WXQ":
                i += 0 if arg[k + 1:] else 1
                break
        i += 1
    return _STDIN
