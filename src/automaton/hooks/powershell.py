"""The paths PowerShell's file cmdlets write (Claude Code's `PowerShell` tool, code.claude.com/docs/en/hooks).

Cmdlet and parameter names are case-insensitive and parameters may be shortened to any unique
prefix (about_Parameters); values come as `-Path X`, `-Path:X` or by position, and a list as
`a,b`. Which positions and parameters name written paths follows each cmdlet's syntax on
learn.microsoft.com (Set-Content, Add-Content, Clear-Content, Out-File, Tee-Object, Copy-Item,
Move-Item, Remove-Item, New-Item, Rename-Item, Export-Csv, Expand-Archive, Compress-Archive,
Invoke-WebRequest). An unknown parameter's value is taken as a path (denying too much is safe);
a writer that would take its paths from the pipeline raises `Unsafe`.
"""

from __future__ import annotations

import os
import re

from automaton.hooks.shellparse import Simple, Unsafe

# cmdlet or alias -> what its positional arguments are ("path" written, "skip" not a path)
_ROLES: dict[tuple[str, ...], tuple[str, ...]] = {
    ("set-content", "sc", "add-content", "ac"): ("path", "skip"),
    ("clear-content", "clc", "out-file", "tee-object", "export-csv", "epcsv", "export-clixml",
     "remove-item", "ri", "del", "erase", "rd", "new-item", "ni", "md"): ("path",),
    ("copy-item", "cpi", "copy"): ("skip", "path"),
    ("move-item", "mi", "move"): ("path", "path"),
    ("rename-item", "ren", "rni"): ("path", "newname"),
    ("expand-archive", "compress-archive"): ("skip", "path"),
    ("invoke-webrequest", "iwr", "invoke-restmethod", "irm", "start-bitstransfer"): ("skip", "path"),
}
CMDLETS: dict[str, tuple[str, ...]] = {name: roles for names, roles in _ROLES.items() for name in names}
# whose -Path / -LiteralPath is only read (the source of a copy, the archive to expand)
_READS_PATH = frozenset({"copy-item", "cpi", "copy", "expand-archive", "compress-archive"})
_WRITTEN = ("destination", "destinationpath", "filepath", "outfile", "outputpath")
_PATHS = ("path", "literalpath", "pspath", "lp")
_SWITCHES = ("force", "recurse", "nonewline", "append", "passthru", "whatif", "confirm", "noclobber",
             "asbytestream", "notypeinformation", "useculture", "container", "usebasicparsing", "resume",
             "includeheader", "update", "noprofile", "verbose", "debug")
_VALUES = ("value", "encoding", "itemtype", "type", "filter", "include", "exclude", "stream", "credential",
           "inputobject", "width", "delimiter", "uri", "method", "body", "headers", "compressionlevel",
           "erroraction", "warningaction", "source", "contenttype", "usermessage", "timeoutsec")
_NUMBER = re.compile(r"^-[0-9.]+$")


def cmdlet_targets(name: str, args: list[str], cmd: Simple) -> list[str]:
    """Paths the cmdlet `name` (lowercase) writes; Unsafe when they come from the pipeline."""
    roles = list(CMDLETS[name])
    got: dict[str, list[str]] = {"path": [], "newname": [], "name": []}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-") and len(arg) > 1 and not _NUMBER.match(arg):
            key, colon, value = arg[1:].partition(":")
            role = _role(name, key.lower())
            if role == "switch" and not colon:
                i += 1
                continue
            if not colon:
                value = args[i + 1] if i + 1 < len(args) else ""
                i += 1
        else:
            role, value = (roles.pop(0) if roles else "path"), arg
        if role in got:
            got[role].extend(v for v in value.split(",") if v)
        i += 1
    paths = got["path"]
    anchor = paths[0] if paths else "."
    paths += [os.path.join(os.path.dirname(anchor), n) for n in got["newname"]]
    paths += [os.path.join(anchor, n) for n in got["name"]]
    if not paths and cmd.piped and name not in ("invoke-webrequest", "iwr", "invoke-restmethod", "irm"):
        raise Unsafe(f"{name} takes its paths from the pipeline: automaton cannot tell which files it writes")
    return paths


def _role(cmdlet: str, key: str) -> str:
    """What the parameter `-key` (any unique prefix) gives: a written path, a name, a value, a switch."""
    def hit(names: tuple[str, ...]) -> bool:
        return bool(key) and any(n.startswith(key) for n in names)

    if hit(_WRITTEN):
        return "path"
    if hit(_PATHS):
        return "skip" if cmdlet in _READS_PATH else "path"
    if key == "newname" or (len(key) > 1 and "newname".startswith(key)):
        return "newname"
    if key == "name" or (len(key) > 1 and "name".startswith(key) and cmdlet in ("new-item", "ni", "md")):
        return "name"
    if hit(_SWITCHES) and not hit(_VALUES):
        return "switch"
    if hit(_VALUES):
        return "skip"
    return "path"  # unknown: its value may be a path
