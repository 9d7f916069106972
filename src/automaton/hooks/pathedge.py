"""Paths taken out of free text (patch headers, a sed `w FILE`, a diff's `+++ NAME`) whose edges
the programs that read them could trim differently.

Each program trims a name it reads out of a line with its own idea of white space: Codex's patch
parser Rust's `str::trim` (Unicode White_Space), OpenCode's the JavaScript `String.prototype.trim`
(ECMAScript WhiteSpace and LineTerminator, which adds U+FEFF and leaves out U+0085), sed only
blanks, GNU patch and git ASCII white space, and automaton's own readers Python's `str.strip`
(which adds U+001C–U+001F). A name with such a character at an edge is written as one path by
one program and read as another by another: `\\ufeff.git/hooks/pre-commit` is a folder named
`\\ufeff.git` to Codex and `.git/hooks/pre-commit` to OpenCode. Rather than guess which program
runs, a name that starts or ends with a control, format or separator character (Unicode
categories Cc, Cf, Zs, Zl, Zp: every trim set above lies inside them, and the rest are invisible)
is refused: `edge_reason` says why.
"""

from __future__ import annotations

import re

# Unicode categories Cc, Cf, Zs, Zl and Zp as fixed ranges (the hook does not import unicodedata,
# which costs its start-up): Unicode 14 (Python 3.11) plus the format controls U+13439–U+1343F
# that Unicode 15 added. tests/test_imports.py checks it against unicodedata: every such code
# point is here, and nothing else that is assigned.
_EDGE = ("\x00-\x20\x7f-\xa0\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u1680\u180e"
         "\u2000-\u200f\u2028-\u202f\u205f-\u2064\u2066-\u206f\u3000\ufeff\ufff9-\ufffb"
         "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
         "\U000e0001\U000e0020-\U000e007f")
_AT_EDGE = re.compile(f"^[{_EDGE}]|[{_EDGE}]\\Z")


def edge_reason(name: str, where: str) -> str | None:
    """Why `name` (read from `where`, e.g. "a '*** Add File:' patch header") cannot be judged:
    it starts or ends with a character that some reader trims and another keeps, or one that
    cannot be seen; None when both edges are plain."""
    found = _AT_EDGE.search(name)
    if found is None:
        return None
    char = found.group()
    side = "starts" if found.start() == 0 else "ends"
    return (f"the path {name!r} in {where} {side} with U+{ord(char):04X}, an invisible or white-space character"
            " that the programs reading such paths trim differently: automaton cannot tell which file is written;"
            " name the path without it")
