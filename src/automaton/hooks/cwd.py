"""Where each command of a shell line runs: the directories `cd`, `pushd` and `popd` may have
moved the shell to, for the hooks' best-effort analysis.

A set of possible directories, not one: `cd a || cd b`, a `cd` that may fail before `;`, and
`cd` under `CDPATH` leave the shell in one of several places, and every write target is then
judged in each of them (denying too much is safe, too little is not). `None` means unknown (a
`cd $VAR`, `cd -` with no known previous directory, `popd` past what the line pushed): a
relative write target after it is denied by the caller. The shell rules followed (bash(1)
"SHELL GRAMMAR", "SHELL BUILTIN COMMANDS"):

- `( … )`, `$( … )`, backticks and `<( … )` / `>( … )` run in a subshell: a `cd` inside ends
  with it;
- every element of a pipeline runs in a subshell, and so does a command ended by `&`: a `cd`
  there moves nothing;
- `cd X && Y`: Y runs only where the `cd` succeeded; after the next `;`, newline, `||` or `&`
  the shell may be in either place (a failed `cd` does not stop the line);
- `cd` with no operand goes to `$HOME`; `cd -` to `$OLDPWD`; an operand that does not start with
  `/`, `.` or `..` is looked up in every `CDPATH` entry too (the line's own `CDPATH=` or
  `export CDPATH=`, else the hook's environment, which is the agent's, else a plain assignment
  in a shell startup file; one computed at run time makes such a `cd` unknown);
- `pushd DIR` / `popd` keep a stack; `pushd` alone swaps; `+N`/`-N` rotations are unknown.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

Dirs = frozenset[Path] | None  # the possible directories; None = unknown

MAX_DIRS = 16
_UNKNOWN = re.compile(r"[$`]")
PIPES = frozenset({"|", "|&"})
UNKNOWN_CDPATH = "\0"  # CDPATH is set to something only known at run time
STARTUP_FILES = (".bashrc", ".bash_profile", ".profile", ".zshrc", ".zshenv")


def union(a: Dirs, b: Dirs) -> Dirs:
    if a is None or b is None:
        return None
    both = a | b
    return both if len(both) <= MAX_DIRS else None


class Where:
    """The possible working directories while walking a line's simple commands in order."""

    def __init__(self, start: Dirs, cdpath: str | None = None) -> None:
        self.here: Dirs = start
        self.pending: Dirs = frozenset()  # where a failed `cd X &&` left the shell
        self.previous: Dirs = None  # $OLDPWD
        self.cdpath = cdpath  # None: not set on the line, look it up on first use
        self.saved: list[tuple[Dirs, Dirs, Dirs, list[Dirs]]] = []
        self.stack: list[Dirs] = []  # pushd

    def enter(self, scopes: list[str], before: str) -> None:
        """Apply the subshell events and the list operator that come before a command."""
        for event in scopes:
            if event in ("(", "$(", "<(", ">(", "`("):
                self.saved.append((self.here, self.pending, self.previous, list(self.stack)))
            elif self.saved:
                self.here, self.pending, self.previous, self.stack = self.saved.pop()
        if before != "&&":
            self.here = union(self.here, self.pending)
            self.pending = frozenset()

    def set_cdpath(self, value: str | None) -> None:
        """`CDPATH=…` on the line (None: set to something only known at run time)."""
        self.cdpath = UNKNOWN_CDPATH if value is None or _UNKNOWN.search(value) else value

    def change(self, verb: str, args: list[str], after: str, piped: bool) -> None:
        """`cd`/`chdir`/`set-location`/`sl`/`pushd`/`popd` with `args`, followed by `after`."""
        if piped or after in PIPES or after == "&":
            return  # a subshell: nothing moves
        old = self.here
        if verb == "popd":
            new: Dirs = self._popd(args)
        elif verb == "pushd":
            new = self._pushd(args, old)
        else:
            new = self._cd(args, old)
        self.previous = old
        if after == "&&":
            self.pending = union(self.pending, old)
            self.here = new
        else:
            self.here = union(new, old)

    def _cd(self, args: list[str], old: Dirs) -> Dirs:
        plain = [a for a in args if not (a.startswith("-") and a != "-")]
        if args and args[0] == "--":
            plain = args[1:]
        if not plain:
            return frozenset({Path(os.path.expanduser("~"))})
        if len(plain) != 1 or _UNKNOWN.search(plain[0]):
            return None
        target = plain[0]
        if target == "-":
            return self.previous
        target = os.path.expanduser(target)
        if os.path.isabs(target):
            return frozenset({Path(os.path.normpath(target))})
        if old is None:
            return None
        found = {Path(os.path.normpath(os.path.join(base, target))) for base in old}
        if self.cdpath is None:
            self.cdpath = os.environ.get("CDPATH") or _startup_cdpath() or ""
        if self.cdpath and not re.match(r"^\.\.?(/|$)", target):
            if self.cdpath == UNKNOWN_CDPATH:
                return None
            for entry in self.cdpath.split(":"):
                for base in old:
                    found.add(Path(os.path.normpath(os.path.join(base, os.path.expanduser(entry) or ".", target))))
        return frozenset(found) if len(found) <= MAX_DIRS else None

    def _pushd(self, args: list[str], old: Dirs) -> Dirs:
        plain = [a for a in args if a != "-n"]
        if "-n" in args:  # adds to the stack without changing directory
            self.stack.append(None)
            return old
        if not plain:
            if not self.stack:
                return None
            top = self.stack.pop()
            self.stack.append(old)
            return top
        if re.match(r"^[+-][0-9]+$", plain[0]):
            self.stack = [None for _ in self.stack]
            return None
        self.stack.append(old)
        return self._cd(plain, old)

    def _popd(self, args: list[str]) -> Dirs:
        if args or not self.stack:
            self.stack = []
            return None
        return self.stack.pop()


def _startup_cdpath() -> str | None:
    """CDPATH as the shell startup files in $HOME set it: the agent's shell may carry it without
    exporting it to the hook (Claude Code sources them for its Bash tool). The last plain
    assignment (`CDPATH=a:b`, `export CDPATH="$HOME/x:."`) wins; any other line naming CDPATH
    makes it UNKNOWN_CDPATH; None when no file names it."""
    home = os.path.expanduser("~")
    found: str | None = None
    for name in STARTUP_FILES:
        text = _startup_text(os.path.join(home, name))
        if text is None:
            continue
        if text == UNKNOWN_CDPATH:
            return UNKNOWN_CDPATH
        for line in text.splitlines():
            if "CDPATH" not in line or line.lstrip().startswith("#"):
                continue
            plain = _PLAIN_CDPATH.match(line.replace("${HOME}", home).replace("$HOME", home))
            if plain is None:
                return UNKNOWN_CDPATH
            found = plain.group(2)
    return found


def _startup_text(path: str) -> str | None:
    """The first MiB of a startup file, None when it cannot be read, UNKNOWN_CDPATH when it is
    not a regular file: read through `store.atomic.open_regular`, which never waits on a FIFO
    (a hook that does not answer lets the tool call through)."""
    from automaton.store.atomic import open_regular

    try:
        fd = open_regular(path)
    except OSError as exc:
        import errno

        return UNKNOWN_CDPATH if exc.errno == errno.EINVAL else None  # a FIFO, device or socket
    except ValueError:
        return None
    try:
        return os.read(fd, 1 << 20).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


_PLAIN_CDPATH = re.compile(r"^\s*(?:export\s+)?CDPATH=(['\"]?)([^'\"$`;&|\s]*)\1\s*$")
