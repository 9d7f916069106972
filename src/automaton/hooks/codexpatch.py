"""The paths a Codex `apply_patch` writes, read the way Codex's own parser reads the patch.

The grammar and its leniencies follow openai/codex `codex-rs/apply-patch/src/parser.rs`
(re-implemented here from its behaviour, not copied):

- the whole text is trimmed of Unicode white space, then cut into lines at `\\n` (a trailing
  `\\r` dropped from each line, as Rust's `str::lines` does);
- the first line, trimmed, must be `*** Begin Patch` and the last, trimmed, `*** End Patch`;
  failing that, a text wrapped as a heredoc (`<<EOF`, `<<'EOF'`, `<<"EOF"` first, a last line
  ending in `EOF`, at least four lines) is unwrapped and checked again;
- a hunk header line is trimmed before its marker is matched, so indented headers count:
  `*** Add File: P` (followed by `+` lines), `*** Delete File: P`, `*** Update File: P`; the
  path is everything after the marker (`"*** Add File: "` ends in one space, so a second space
  stays in the path);
- `*** Move to: P` counts only directly after `*** Update File:` and only unindented;
- an update hunk's chunks end at a line that starts with `*`; blank lines between chunks are
  skipped; a chunk line must start with ` `, `+`, `-`, or be `@@`/`@@ …`/`*** End of File`.

`exact_paths` returns what that parser would write and raises BadPatch where it would refuse the
patch (Codex then writes nothing, but the hook still denies: a patch that does not parse is not
one automaton can vouch for). `patch_paths` adds every header-like line in any spelling (any
indentation, any case, any spacing), so that an older or more lenient Codex cannot write a path
the exact reading missed: denying too much is safe.

OpenCode's `apply_patch` reads the same grammar with its own parser (sst/opencode
`packages/opencode/src/patch/index.ts` `parsePatchHeader`): a header line must start with the
marker unindented, the colon need not be followed by a space, and the path is
`line.slice(marker.length).trim()`, JavaScript's trim, which removes U+FEFF that Rust's keeps
and keeps U+0085 that Rust's removes. The loose reading covers its headers; a path whose edge
holds a character the two trims (or Python's) treat differently, or any other invisible one,
raises BadPatch (`hooks.pathedge`): which file is written would depend on the agent.
"""

from __future__ import annotations

import re

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD, DELETE, UPDATE, MOVE = "*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: "
EOF_MARKER = "*** End of File"
# Rust's char::is_whitespace (Unicode White_Space), which `str::trim` strips.
_RUST_WS = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
           "\u2028\u2029\u202f\u205f\u3000"
# A header-like line, up to its colon; group 1 is the rest of the line, untrimmed.
_LOOSE = re.compile(r"^[^\S\n]*\*+\s*(?:(?:add|delete|update)\s*file|move\s*to|rename\s*to)\s*:(.*)$",
                    re.IGNORECASE | re.MULTILINE)
# Trimmed from a loose path: space and tab (every reader trims them; where Codex keeps a second
# leading space, its exact reading is judged too) and the CR of a CRLF line end.
_PLAIN_EDGES = " \t\r"


class BadPatch(Exception):
    """Codex's parser would refuse this patch; the message says why."""


def _trim(text: str) -> str:
    return text.strip(_RUST_WS)


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _body(lines: list[str]) -> list[str]:
    """The hunk lines between the patch markers (heredoc wrapper allowed); BadPatch otherwise."""
    def strict(ls: list[str]) -> list[str] | None:
        if ls and _trim(ls[0]) == BEGIN and _trim(ls[-1]) == END and len(ls) >= 2:
            return ls[1:-1]
        return None

    found = strict(lines)
    if found is not None:
        return found
    if len(lines) >= 4 and lines[0] in ("<<EOF", "<<'EOF'", '<<"EOF"') and lines[-1].endswith("EOF"):
        found = strict(lines[1:-1])
        if found is not None:
            return found
    raise BadPatch("the patch does not start with '*** Begin Patch' and end with '*** End Patch'")


def exact_paths(text: str) -> list[str]:
    """Every path the patch adds, deletes, updates or moves to, as Codex's parser reads it."""
    rest = _body(_lines(_trim(text)))
    found: list[str] = []
    while rest:
        header = _trim(rest[0])
        if header.startswith(ADD):
            found.append(header[len(ADD):])
            n = 1
            while n < len(rest) and rest[n].startswith("+"):
                n += 1
            rest = rest[n:]
        elif header.startswith(DELETE):
            found.append(header[len(DELETE):])
            rest = rest[1:]
        elif header.startswith(UPDATE):
            found.append(header[len(UPDATE):])
            rest = rest[1:]
            if rest and rest[0].startswith(MOVE):
                found.append(rest[0][len(MOVE):])
                rest = rest[1:]
            rest = _update_chunks(rest, found[-1])
        else:
            raise BadPatch(f"{header[:60]!r} is not a hunk header Codex accepts")
    return found


def _update_chunks(rest: list[str], path: str) -> list[str]:
    """The lines after an update hunk's chunks; BadPatch for an empty or malformed hunk."""
    chunks = 0
    while rest:
        if not _trim(rest[0]):
            rest = rest[1:]
            continue
        if rest[0].startswith("*"):
            break
        start = 1 if rest[0] == "@@" or rest[0].startswith("@@ ") else 0
        if start == 0 and chunks:
            raise BadPatch(f"update hunk for {path!r}: a chunk must start with '@@', got {rest[0][:40]!r}")
        n = start
        while n < len(rest):
            line = rest[n]
            if line == EOF_MARKER:
                if n == start:
                    raise BadPatch(f"update hunk for {path!r} does not contain any lines")
                n += 1
                break
            if line and line[0] not in " +-":
                if n == start:
                    raise BadPatch(f"update hunk for {path!r}: unexpected line {line[:40]!r}")
                break
            n += 1
        if n == start:
            raise BadPatch(f"update hunk for {path!r} does not contain any lines")
        chunks += 1
        rest = rest[n:]
    if not chunks:
        raise BadPatch(f"update file hunk for path {path!r} is empty")
    return rest


def patch_paths(text: str) -> list[str]:
    """The exact paths (BadPatch if Codex would refuse the patch) and every header-like line's
    path in any spelling, de-duplicated in order."""
    loose = loose_paths(text)  # first: a path with an unclear edge is refused whatever else is wrong
    return list(dict.fromkeys(exact_paths(text) + loose))


def loose_paths(text: str) -> list[str]:
    """The path of every header-like line (any indentation, case or spacing), in order; BadPatch
    when one starts or ends with a character the agents' parsers trim differently (or cannot be
    seen), `hooks.pathedge`."""
    found: list[str] = []
    for match in _LOOSE.finditer(text):
        from automaton.hooks.pathedge import edge_reason  # lazy: a shell command seldom holds a header

        path = match.group(1).strip(_PLAIN_EDGES)
        marker = match.group(0)[:match.start(1) - match.start(0)].strip()
        why = edge_reason(path, f"a {marker!r} patch header")
        if why:
            raise BadPatch(why)
        if path:
            found.append(path)
    return found
