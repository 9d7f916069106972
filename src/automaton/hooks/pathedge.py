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

# Unicode categories Cc, Cf, Zs, Zl and Zp as fixed ranges of code points (the hook does not import
# unicodedata, which costs its start-up, nor compiles a character class of them, which costs half
# a millisecond): Unicode 14 (Python 3.11) plus the format controls U+13439–U+1343F that Unicode 15
# added. tests/test_imports.py checks them against unicodedata: every such code point is here, and
# nothing else that is assigned.
_EDGE = ((0x00, 0x20), (0x7F, 0xA0), (0xAD, 0xAD), (0x600, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD),
         (0x70F, 0x70F), (0x890, 0x891), (0x8E2, 0x8E2), (0x1680, 0x1680), (0x180E, 0x180E),
         (0x2000, 0x200F), (0x2028, 0x202F), (0x205F, 0x2064), (0x2066, 0x206F), (0x3000, 0x3000),
         (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x1343F),
         (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F))


def _is_edge(char: str) -> bool:
    """Whether `char` is of category Cc, Cf, Zs, Zl or Zp (`_EDGE`)."""
    code = ord(char)
    return any(low <= code <= high for low, high in _EDGE)


def edge_reason(name: str, where: str) -> str | None:
    """Why `name` (read from `where`, e.g. "a '*** Add File:' patch header") cannot be judged:
    it starts or ends with a character that some reader trims and another keeps, or one that
    cannot be seen; None when both edges are plain."""
    if not name:
        return None
    if _is_edge(name[0]):
        char, side = name[0], "starts"
    elif _is_edge(name[-1]):
        char, side = name[-1], "ends"
    else:
        return None
    return (f"the path {name!r} in {where} {side} with U+{ord(char):04X}, an invisible or white-space character"
            " that the programs reading such paths trim differently: automaton cannot tell which file is written;"
            " name the path without it")
