"""Reading a program's argument list: operands, option values, git's subcommand.

Generic helpers for the hooks' shell analysis; program-specific option tables are in
`hooks.options`.
"""

from __future__ import annotations


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


def option_values(args: list[str], names: tuple[str, ...], clusters: bool = True) -> list[str]:
    """Values given to any of the options `names`: `-o X`, `-oX`, `-sSo X` (a single letter ending
    or inside a short cluster: the rest of the cluster, else the next word), `--out=X`, `--out X`.
    Reading every letter before it as a flag may find a value too many, never one too few.
    `clusters=False`, for programs whose single-dash options are whole words (a compiler's
    `-fno-omit-frame-pointer`): a single-dash name matches only at the start of a word (`-oX`,
    `-MFdeps`; also `-o=X`, Go's flag syntax, read both as `=X` and as `X`)."""
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
            elif not clusters:
                rest = arg[len(name):] if arg.startswith(name) else ""
                out += [rest, rest[1:]] if rest.startswith("=") else [rest] if rest else []
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
