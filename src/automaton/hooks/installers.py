"""The folders package installers write when told where: pip's `--target`, npm's `--prefix`.

pip (`pip`, `pip3.12`, `python -m pip`, `uv pip`): `-t/--target`, `--prefix`, `--root` and
`--src` (pip install), `-d/--dest` (pip download), `-w/--wheel-dir` (pip wheel), `--log` and
`--report` files, and the same settings from `PIP_TARGET=…`-style assignments on the command
(pip's user guide "Environment Variables"). pip reads its options with optparse, which takes any
unambiguous prefix of a long option (`--tar src` is `--target src`), so a prefix of one of
these is read as it (pip's own `--pre` and `pip list --local` excepted).

npm: `--prefix DIR` (`-C DIR`, `--prefix=DIR`, `npm_config_prefix=DIR`, or an abbreviation such
as `--prefi`, nopt's rule) makes the command work in DIR: install, ci, update, … write its
`node_modules` and lockfile there; `--pack-destination` is where `npm pack` writes. Commands
that run scripts or only read (`run`, `test`, `exec`, `ls`, `view`, …) write there no more than
they do without it.

What an installer writes without such an option (`pip install -e .`'s egg-info, npm's
`node_modules` in the current folder) is not counted, like any other build.
"""

from __future__ import annotations

import re

from automaton.hooks.argv import operands, option_values
from automaton.hooks.shellparse import Program

_PIP_NAME = re.compile(r"^pip[0-9.]*$")
_PYTHON = re.compile(r"^(python|pypy)[0-9.]*$")
_PIP_OUTS = ("-t", "--target", "--prefix", "--root", "--src", "-d", "--dest", "-w", "--wheel-dir", "--log",
             "--log-file", "--local-log", "--report")
_PIP_OTHERS = frozenset({"--pre", "--local"})  # pip options that are prefixes of an output option
_PIP_ENV = re.compile(r"^PIP_(TARGET|PREFIX|ROOT|SRC|DEST|WHEEL_DIR|LOG|LOG_FILE|REPORT)=(.*)$", re.IGNORECASE)
_NPM_OUTS = ("--prefix", "-C", "--pack-destination")
_NPM_ENV = re.compile(r"^npm_config_(prefix|pack_destination)=(.*)$", re.IGNORECASE)
# npm commands (with their aliases) that only read, or run a package's scripts: a prefix given to
# them names where to look, not where to write.
_NPM_READ = frozenset({"run", "run-script", "rum", "urn", "test", "tst", "t", "start", "stop", "restart", "exec",
                       "x", "ls", "list", "la", "ll", "view", "v", "info", "show", "outdated", "search", "s", "se",
                       "find", "help", "prefix", "root", "bin", "explain", "why", "doctor", "whoami", "ping", "fund",
                       "query", "docs", "home", "bugs", "repo", "completion", "help-search", "sbom"})


def targets(prog: Program) -> list[str] | None:
    """The paths `prog` writes as a package installer, or None when it is not pip or npm."""
    pip = pip_args(prog.name, prog.args)
    if pip is not None:
        return _pip(pip, prog.assigns)
    if prog.name == "npm":
        return _npm(prog.args, prog.assigns)
    return None


def pip_args(name: str, args: list[str]) -> list[str] | None:
    """pip's own arguments: `pip ARGS`, `python [-I…] -m pip ARGS`, `uv pip ARGS`; else None."""
    if _PIP_NAME.match(name):
        return args
    if name == "uv" and args[:1] == ["pip"]:
        return args[1:]
    i = 0
    while _PYTHON.match(name) and i < len(args) and args[i].startswith("-"):
        if re.match(r"^-[a-zA-Z]*m$", args[i]):  # `-m`, `-Im`: the module comes next
            return args[i + 2:] if args[i + 1:i + 2] == ["pip"] else None
        i += 2 if args[i] in ("-W", "-X") else 1
    return None


def _pip(args: list[str], assigns: list[str]) -> list[str]:
    found = option_values(_expand(args, _PIP_OUTS, _PIP_OTHERS), _PIP_OUTS)
    found += [m.group(2) for m in map(_PIP_ENV.match, assigns) if m]
    return [f for f in found if f != "-"]


def _npm(args: list[str], assigns: list[str]) -> list[str]:
    expanded = _expand(args, _NPM_OUTS, frozenset())
    if next(iter(operands(expanded, frozenset(_NPM_OUTS))), "") in _NPM_READ:
        return []
    return option_values(expanded, _NPM_OUTS) + [m.group(2) for m in map(_NPM_ENV.match, assigns) if m]


def _expand(args: list[str], names: tuple[str, ...], others: frozenset[str]) -> list[str]:
    """`args` with each abbreviated long option spelled out where it abbreviates one of `names`
    (`--tar=src` -> `--target=src`); an exact name of `others` is left as it is."""
    out: list[str] = []
    for arg in args:
        key, eq, value = arg.partition("=")
        if key.startswith("--") and len(key) > 2 and key not in names and key not in others:
            full = next((n for n in names if n.startswith(key)), key)
            arg = full + eq + value
        out.append(arg)
    return out
