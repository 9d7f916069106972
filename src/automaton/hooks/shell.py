"""Best-effort analysis of a shell command line an agent wants to run.

BEST EFFORT, by design: a shell is a programming language and a command line can write files
in ways no static reading sees (a script it runs, a path built at run time). This reading is
early feedback for an honest agent; the guarantee is the kernel sandbox around the agent and the
second line of defence (tamper-evident state, the loop's drift gate). What is denied:

- human acts and hidden commands (`hooks.humanacts`): `automaton --approve`/`--focus` in any
  spelling, `AUTOMATON_APPROVER`/`_TASK`/`_HOME`, `hooksPath`, pseudo-terminal wrappers, typing
  into terminals, and any line that mentions automaton while holding a run-time construct;
- what would start a process outside the agent's session or strip its marks (`hooks.detach`);
- `automaton --sandbox … -- CMD` is read as a wrapper: CMD is judged, an agent CLI as CMD is
  denied (`hooks.shellparse`), and its `--task` must be the task in scope (`policy.wrapped_reason`);
- inline interpreter code (`python -c`, `python - <<EOF`, `node -e`, `perl -e`, `ruby -e`,
  `php -r`, `deno eval`, …) outside a whole-project scope, unless it is Python proven
  read-only (`hooks.pycode`; `humanacts.inline_code`, judged in `policy.wrapped_reason`); and,
  the same way, code the line holds only as data: `eval` of a string built at run time, a
  shell (or `source /dev/stdin`) reading its program from standard input that is not a literal
  here-string, heredoc or `echo`/`printf`/`cat <<EOF` on the pipe's left side, and git that
  rewrites tracked files it does not name (`gitcmd.rewrites_worktree`: `stash`, `reset --hard`,
  moving to another commit); a literal `eval` string or program on standard input is read as
  its own line instead;
- git that skips hooks or runs code the hook cannot see (`hooks.gitcmd`);
- changing a scheduler (`hooks.schedules`);
- any command that is not read-only on a line that names a `.state*` file or `.automaton/`;
- a line that cannot be parsed, a write target holding a variable or command substitution, a
  relative target after a `cd` to an unknown place, a descriptor (`/dev/fd/N`) the line did not
  open itself.

Every other write the reading finds (redirections, heredocs into files, `hooks.writers`'s
commands, PowerShell cmdlets, the literal of `sh -c '…'` read as its own line; `busybox APPLET`
is the applet) is returned as a
target for the policy to judge, once for every directory the shell may be in (`hooks.cwd`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from automaton.core.record import field, record  # not dataclasses: on the hook path
from automaton.hooks import aliases, detach, gitcmd, schedules
from automaton.hooks import humanacts as acts
from automaton.hooks import shellparse as parse
from automaton.hooks.cwd import Dirs, Where
from automaton.hooks.shellparse import Program, Unsafe, git_subcommand
from automaton.hooks.writers import read_only, targets

__all__ = ["Analysis", "Unsafe", "analyze", "git_subcommand"]


@record
class Analysis:
    """Write targets found: (path as written, directory it is relative to)."""

    targets: list[tuple[str, Path]] = field(default_factory=list)
    # Those of the targets that `git worktree add` creates: a linked worktree's commits are the
    # project's own history, so it is never a temp write (`hooks.tempdirs`).
    linked: list[tuple[str, Path]] = field(default_factory=list)
    # `--task` values of `automaton --sandbox` wrappers on the line (the hook checks each is the
    # task in scope).
    sandbox_tasks: list[str] = field(default_factory=list)
    # Code the line runs that the hook cannot read or prove read-only (`python -c`, `node -e`,
    # `eval "$(…)"`, `curl … | sh`, `git stash`, …): one description each; allowed only where the
    # scope is the whole project.
    inline_code: list[str] = field(default_factory=list)


_PROTECTED_TEXT = re.compile(r"\.state|\.automaton", re.IGNORECASE)
_UNKNOWN = re.compile(r"[$`]")
_GLOB = re.compile(r"[*?\[]")
_OPENED_FD = re.compile(r"(?<![\w$-])([0-9]+)(?:>>|<>|>\||>)")
_CD = {"cd": "cd", "chdir": "cd", "set-location": "cd", "sl": "cd", "pushd": "pushd", "push-location": "pushd",
       "popd": "popd", "pop-location": "popd"}
_MAX_DEPTH = 4


def analyze(command: str, cwd: Path, *, powershell: bool = False) -> Analysis:
    """The write targets of `command` run in `cwd`; raises Unsafe with the reason to deny.

    `powershell`: the line is for Claude Code's `PowerShell` tool (backslashes are path
    separators, the backtick escapes)."""
    out = Analysis()
    _analyze(command, frozenset({cwd}), powershell, out, 0)
    return out


def _analyze(command: str, start: Dirs, powershell: bool, out: Analysis, depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise Unsafe("shells nested too deep: automaton denies what it cannot read")
    text, bodies = parse.strip_heredocs(command)
    toks = parse.tokens(text, powershell)
    views = acts.Views.of(command, toks)
    acts.check_text(views)
    gitcmd.check_text(views.texts[:2])
    mention = acts.mention(views)
    dynamic = acts.dynamic_text(text, bodies, powershell)
    # A `.state`/`.automaton` named anywhere (quotes removed or not) makes every non-read-only
    # command on the line suspect: the reading cannot follow every program's arguments.
    mentions_protected = any(_PROTECTED_TEXT.search(t) for t in views.texts)
    opened = {int(n) for n in _OPENED_FD.findall(text)}
    where = Where(start)
    line_git = False
    prev: parse.Simple | None = None
    for cmd in parse.simple_commands(toks, bodies):
        feeder, prev = prev, cmd
        where.enter(cmd.scopes, cmd.before)
        for word in cmd.words:
            if word.startswith("CDPATH="):
                where.set_cdpath(word.split("=", 1)[1])
        for target in cmd.writes:
            _add(out, target, where.here, opened)
        prog = parse.program(cmd.words)
        if prog is not None:
            acts.check_program(prog, cmd.stdin)
            schedules.check(prog)
        detach.check(prog, cmd.words)
        if prog is None:
            continue
        out.sandbox_tasks += [t for t in prog.sandbox_tasks if t]
        dynamic = dynamic or acts.dynamic_program(prog)
        if mention and dynamic:
            raise Unsafe(f"{dynamic} on a line that mentions {mention!r}: the hook cannot know what it runs")
        if prog.name == "export" and any(a.startswith("CDPATH=") for a in prog.args):
            where.set_cdpath(next(a for a in prog.args if a.startswith("CDPATH=")).split("=", 1)[1])
        inline = acts.shell_inline(prog.args) if prog.name in acts.SHELLS else None
        if inline is not None:  # `sh -c 'LITERAL'`: read the literal as its own line
            _analyze(prog.args[inline], _chdir(where.here, prog), powershell, out, depth + 1)
            continue
        runs_in = _chdir(where.here, prog)
        _runtime_code(prog, cmd, feeder, where, runs_in, (powershell, depth), out)
        code = acts.inline_code(prog, cmd.stdin, None if runs_in is None else sorted(str(d) for d in runs_in))
        if code is not None:
            out.inline_code.append(code)
        if mentions_protected and not read_only(prog.name, prog.args):
            raise Unsafe(f"{prog.name!r} on a line naming .state or .automaton/: those are written only by automaton")
        if prog.name == "git":
            gitcmd.check(prog.args, prog.assigns)
            line_git = True
        if ("xargs" in prog.via or "parallel" in prog.via) and not read_only(prog.name, prog.args):
            raise Unsafe(f"xargs feeds {prog.name} paths read at run time: automaton cannot tell what it writes")
        if prog.name in _CD:
            where.change(_CD[prog.name], prog.args, cmd.after, cmd.piped)
            continue
        bases = _chdir(where.here, prog)
        before = len(out.targets)
        for base in sorted(bases) if bases is not None else [None]:
            for target in targets(prog, cmd, base):
                _add(out, target, frozenset({base}) if base is not None else None, opened)
        if prog.name == "git" and "worktree" in prog.args:
            out.linked += out.targets[before:]
    if line_git and re.search(r"(?:^|[\s;&|(])(?:export\s+)?(?:HOME|XDG_CONFIG_HOME)=", text):
        raise Unsafe("HOME or XDG_CONFIG_HOME set on a line that runs git loads a global configuration of the"
                     " caller's choosing")
    if mention and dynamic:
        raise Unsafe(f"{dynamic} on a line that mentions {mention!r}: the hook cannot know what it runs")


def _runtime_code(prog: Program, cmd: parse.Simple, feeder: parse.Simple | None, where: Where, runs_in: Dirs,
                  how: tuple[bool, int], out: Analysis) -> None:
    """Code the command runs that the line spells only as data: `eval`'s string, the program a
    shell reads from standard input (`feeder`: the command on the pipe's left side), and git that
    rewrites tracked files it does not name. Read as its own line where literal, else recorded
    as inline code (allowed only where the scope is the whole project). `how`: (powershell, depth)."""
    powershell, depth = how
    if prog.name == "eval":
        _eval(prog.args, cmd, where, runs_in, powershell, out, depth)
    elif prog.name in acts.SHELLS | {"source", "."} and acts.shell_reads_stdin(prog.name, prog.args):
        code = _stdin_text(cmd, feeder)
        if code is None:
            out.inline_code.append(f"{prog.name} reading its program from standard input")
        elif code.strip():
            _analyze(code, runs_in, powershell, out, depth + 1)
    elif prog.name == "git":
        for base in sorted(runs_in) if runs_in is not None else [None]:
            rewrite = gitcmd.rewrites_worktree(prog.args, base)
            if rewrite is not None and rewrite not in out.inline_code:
                out.inline_code.append(rewrite)


def _eval(args: list[str], cmd: parse.Simple, where: Where, runs_in: Dirs, powershell: bool, out: Analysis,
          depth: int) -> None:
    """`eval WORDS…` runs the words joined by spaces as a line of the same shell (bash(1) "eval"):
    read it as its own line where it is a literal; a `$`/backtick in it is code known only at run
    time (inline code). A directory change inside it leaves the rest of the line somewhere unknown."""
    code = " ".join(args)
    if not code.strip():
        return
    if _UNKNOWN.search(code):
        out.inline_code.append("eval of a string built at run time")
        return
    _analyze(code, runs_in, powershell, out, depth + 1)
    subshell = cmd.piped or cmd.after in parse.PIPES or cmd.after == "&"
    if not subshell and any(w.lower() in _CD or w.startswith("CDPATH=") or w == "eval"
                            for w in parse.tokens(code, powershell)):
        where.here = None


def _stdin_text(cmd: parse.Simple, feeder: parse.Simple | None) -> str | None:
    """The program text a shell reading standard input gets, where the line spells it as a literal:
    a here-string or heredoc, `< /dev/null`, or `echo`/`printf`/`cat <<EOF` on the pipe's left
    side; None where it is known only at run time (a file, another program's output, a `$`)."""
    if cmd.stdin is not None:
        text: str | None = cmd.stdin
    elif cmd.reads:
        text = "" if all(r == "/dev/null" for r in cmd.reads) else None
    elif cmd.piped and not cmd.scopes and feeder is not None and feeder.after in parse.PIPES:
        text = _printed(feeder)
    else:
        text = None  # the tool's own standard input, or a descriptor opened earlier
    return None if text is None or _UNKNOWN.search(text) else text


def _printed(feeder: parse.Simple) -> str | None:
    """What `echo WORDS`, `printf TEXT` (no `%` or `\\`) or `cat <<EOF` writes, or None."""
    prog = parse.program(feeder.words)
    if prog is None or feeder.writes or feeder.scopes:
        return None
    args = prog.args
    if prog.name == "echo":
        while args and args[0] in ("-n", "-E"):
            args = args[1:]
        text = " ".join(args)
        return None if "\\" in text or (args and args[0].startswith("-")) else text
    if prog.name == "printf" and len(args) == 1 and not re.search(r"[%\\]", args[0]):
        return args[0]
    if prog.name == "cat" and not args and feeder.stdin is not None and not feeder.reads:
        return feeder.stdin
    return None


def _chdir(here: Dirs, prog: Program) -> Dirs:
    """The directories a wrapper (`env -C DIR`, `sudo -D DIR`) runs the program in."""
    if not prog.chdir:
        return here
    where = Where(here)
    for d in prog.chdir:
        where.change("cd", [d], "&&", False)
    return where.here


def _add(out: Analysis, target: str, here: Dirs, opened: set[int]) -> None:
    if aliases.sink(target) or target.lower() in ("nul", "$null"):
        return
    number = aliases.fd_number(target)
    if number is not None:
        if number in opened:
            return  # the file behind it is the line's own redirection, judged there
        raise Unsafe(f"{target} is a descriptor the command line did not open: automaton cannot tell which file it is")
    if not target or _UNKNOWN.search(target):
        shown = target or "an empty target"
        raise Unsafe(f"cannot tell where {shown!r} points: automaton denies writes it cannot resolve")
    expanded = os.path.expanduser(target)
    if os.path.isabs(expanded):
        bases = [Path("/")]
    elif here is None:
        raise Unsafe(f"cannot tell which directory {target!r} is in after a cd to an unknown place")
    else:
        bases = sorted(here)
    for base in bases:
        out.targets.append((target, base))
        if _GLOB.search(target):  # a glob may match a protected name (`.st*`): check each match too
            pattern = os.path.join(base, expanded)
            import glob  # only a glob target needs it (the hook path's imports are its cost)

            out.targets.extend((match, base) for match in sorted(glob.glob(pattern, include_hidden=True)))
