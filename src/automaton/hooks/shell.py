"""Best-effort analysis of a shell command line an agent wants to run (DESIGN §7).

BEST EFFORT, by design: a shell is a programming language and a command line can write files
in ways no static reading sees (a script it runs, a path built at run time). What is denied:

- human acts and hidden commands (`hooks.humanacts`): `automaton --approve`/`--focus` in any
  spelling, `AUTOMATON_APPROVER`/`_TASK`/`_HOME`, `hooksPath`, pseudo-terminal wrappers, typing
  into terminals, and any line that mentions automaton while holding a run-time construct
  (`$(…)`, `$VAR`, `eval`, `xargs`, `python -c`, …);
- `git commit --no-verify` / `-n` (any spelling, git aliases set on the command line);
- changing a scheduler (`hooks.schedules`: crontab writes, launchctl load/bootout, schtasks
  /create, systemctl --user enable/stop, …): it holds the loop ticks;
- any command that is not read-only on a line that names a `.state*` file or `.automaton/`;
- a line that cannot be parsed, a write target holding a variable or command substitution, a
  relative target after an unknown `cd`.

Every other write the reading finds (redirections, heredocs into files, `hooks.writers`'s
commands, PowerShell cmdlets, the literal of `sh -c '…'` read as its own line) is returned as a
target for the policy to judge one by one. The guarantees stay elsewhere: the loop's drift gate
(DESIGN §5 gate 5) and the task's transition checks (forbidden artifacts, tamper-evident `.state`).
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from automaton.hooks import humanacts as acts
from automaton.hooks import schedules
from automaton.hooks import shellparse as parse
from automaton.hooks.shellparse import Program, Unsafe, git_subcommand
from automaton.hooks.writers import sed_in_place, targets

__all__ = ["Analysis", "Unsafe", "analyze", "git_subcommand"]


@dataclass
class Analysis:
    """Write targets found: (path as written, directory it is relative to)."""

    targets: list[tuple[str, Path]] = field(default_factory=list)


SPECIAL_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "nul", "$null"})
READ_ONLY = frozenset({
    "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ls", "stat", "wc",
    "diff", "cmp", "file", "sha256sum", "shasum", "md5sum", "echo", "printf", "test", "[", "true",
    "false", "pwd", "cd", "realpath", "readlink", "basename", "dirname", "jq", "tree", "automaton",
    "sort", "uniq", "cut", "tr", "column", "nl", "od", "hexdump", "xxd", "get-content", "gc", "type",
    "get-childitem", "gci", "dir", "select-string", "sls", "test-path", "resolve-path", "get-item",
    "write-output", "write-host",
})
GIT_READ_ONLY = frozenset({"log", "show", "diff", "status", "ls-files", "rev-parse", "blame", "grep"})
_COMMIT_VALUE_FLAGS = frozenset("mFcCtuS")
_PROTECTED_TEXT = re.compile(r"\.state|\.automaton", re.IGNORECASE)
_UNKNOWN = re.compile(r"[$`]")
_GLOB = re.compile(r"[*?\[]")
_MAX_DEPTH = 4


def analyze(command: str, cwd: Path, *, powershell: bool = False) -> Analysis:
    """The write targets of `command` run in `cwd`; raises Unsafe with the reason to deny.

    `powershell`: the line is for Claude Code's `PowerShell` tool (backslashes are path
    separators, the backtick escapes)."""
    out = Analysis()
    _analyze(command, cwd, powershell, out, 0)
    return out


def _analyze(command: str, cwd: Path | None, powershell: bool, out: Analysis, depth: int) -> Path | None:
    if depth > _MAX_DEPTH:
        raise Unsafe("shells nested too deep: automaton denies what it cannot read")
    text, bodies = parse.strip_heredocs(command)
    toks = parse.tokens(text, powershell)
    views = acts.Views.of(command, toks)
    acts.check_text(views)
    mention = acts.mention(views)
    dynamic = acts.dynamic_text(text, bodies, powershell)
    # A `.state`/`.automaton` named anywhere (quotes removed or not) makes every non-read-only
    # command on the line suspect: the reading cannot follow every program's arguments.
    mentions_protected = any(_PROTECTED_TEXT.search(t) for t in views.texts)
    here: Path | None = cwd
    for cmd in parse.simple_commands(toks, bodies):
        for target in cmd.writes:
            _add(out, target, here)
        prog = parse.program(cmd.words)
        if prog is None:
            continue
        acts.check_program(prog, cmd.stdin)
        schedules.check(prog)
        dynamic = dynamic or acts.dynamic_program(prog)
        if mention and dynamic:
            raise Unsafe(f"{dynamic} on a line that mentions {mention!r}: the hook cannot know what it runs")
        inline = acts.shell_inline(prog.args) if prog.name in acts.SHELLS else None
        if inline is not None:  # `sh -c 'LITERAL'`: read the literal as its own line
            _analyze(prog.args[inline], _chdir(here, prog), powershell, out, depth + 1)
            continue
        if mentions_protected and not _read_only(prog.name, prog.args):
            raise Unsafe(f"{prog.name!r} on a line naming .state or .automaton/: those are written only by automaton")
        if prog.name == "git":
            _git_hooks_skipped(prog.args)
        if ("xargs" in prog.via or "parallel" in prog.via) and not _read_only(prog.name, prog.args):
            raise Unsafe(f"xargs feeds {prog.name} paths read at run time: automaton cannot tell what it writes")
        if prog.name in ("cd", "pushd", "popd", "set-location", "sl", "chdir"):
            here = _cd(here, prog.args) if prog.name != "popd" else None
            continue
        where = _chdir(here, prog)
        for target in targets(prog, cmd, where):
            _add(out, target, where)
    if mention and dynamic:
        raise Unsafe(f"{dynamic} on a line that mentions {mention!r}: the hook cannot know what it runs")
    return here


def _chdir(here: Path | None, prog: Program) -> Path | None:
    """The directory a wrapper (`env -C DIR`, `sudo -D DIR`) runs the program in."""
    for d in prog.chdir:
        here = _cd(here, [d])
    return here


def _git_hooks_skipped(args: list[str]) -> None:
    """Deny git calls that skip hooks: `--no-verify` (any unambiguous abbreviation, after any
    global options such as `-C DIR`, or inside an alias given with `-c alias.X=…`), `-n` inside a
    short-option cluster of `commit` (`-anm`), and aliases defined on the command line.
    git-commit(1): `-n, --no-verify`; gitcli(7): long options may be abbreviated."""
    if any(len(a) >= len("--no-veri") and "--no-verify".startswith(a) for a in args) \
            or any("no-verify" in a for a in args):
        raise Unsafe("git --no-verify would skip automaton's pre-commit hook")
    sub = git_subcommand(args)
    head = args[:sub] if sub is not None else args
    if any(a.lower().startswith("alias.") for a in head) or any("alias." in a.lower() for a in head
                                                                  if a.startswith("--config-env")):
        raise Unsafe("a git alias defined on the command line can hide what git runs (a hook-skipping commit)")
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


def _read_only(name: str, args: list[str]) -> bool:
    if name == "git":
        sub = git_subcommand(args)
        return sub is not None and args[sub] in GIT_READ_ONLY
    if name == "find":
        return not any(a in ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint") for a in args)
    if name == "sed":
        return not sed_in_place(args)
    return name in READ_ONLY


def _cd(here: Path | None, args: list[str]) -> Path | None:
    """The directory after `cd ARGS`; None when it cannot be known (later relative targets deny)."""
    plain = [a for a in args if not a.startswith("-")]
    if here is None or len(plain) != 1 or _UNKNOWN.search(plain[0]):
        return None
    return Path(os.path.join(here, os.path.expanduser(plain[0])))


def _add(out: Analysis, target: str, here: Path | None) -> None:
    if target.lower() in SPECIAL_TARGETS or target.startswith("/dev/fd/"):
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
