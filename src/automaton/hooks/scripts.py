"""The files a `sed` or `awk` program writes, read from the program text itself.

Both look read-only (`sed -n 1,5p`, `awk '{print $1}'`) but their programs can write files and
run commands:

- sed (GNU sed manual "sed scripts", POSIX sed): the `w FILE` / `W FILE` commands and the `w FILE`
  flag of `s///` write FILE; the `e` command and the `e` flag of `s///` run a command (GNU).
  `--sandbox` rejects all three, so such a program writes nothing.
- awk (POSIX awk "Output Statements", gawk manual "Redirection"): `print … > FILE`,
  `print … >> FILE`, `printf … > FILE` write FILE; `print … | CMD`, `CMD | getline`, `|&` and
  `system(…)` run commands; gawk `@load` and `-l` load code.

Each is read by a small parser that follows the language's own token rules (sed: addresses,
delimiters, escapes; awk: strings, regex literals, comments, parentheses). A written FILE that is
a string literal is returned; a file computed at run time, a command run, or a program the parser
cannot read raises `Unsafe`.
"""

from __future__ import annotations

from automaton.hooks.shellparse import Unsafe

_SED_FILE_CMDS = "wW"
_SED_TEXT_CMDS = "aic"  # GNU one-line forms: the rest of the line is text
_SED_LABEL_CMDS = "btT:"
_SED_READ_CMDS = "rR"


def sed_writes(script: str) -> list[str]:
    """Files a sed script writes; Unsafe for `e` (runs a command) or a script it cannot read."""
    out: list[str] = []
    i, n = 0, len(script)
    while i < n:
        ch = script[i]
        if ch in " \t\n;{}!":
            i += 1
            continue
        if ch == "#":
            i = _line_end(script, i)
            continue
        i = _sed_address(script, i)
        if i < n and script[i] == ",":
            i = _sed_address(script, i + 1)
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            break
        cmd = script[i]
        i += 1
        if cmd in "};\n":
            continue
        if cmd == "s":
            i, flags_end, written = _sed_substitute(script, i)
            out += written
            i = flags_end
        elif cmd == "y":
            i = _skip_delimited(script, i, 2)
        elif cmd in _SED_FILE_CMDS:
            end = _line_end(script, i)
            out.append(_sed_file(script[i:end]))
            i = end
        elif cmd == "e":
            raise Unsafe("sed 'e' runs a command: automaton cannot read it")
        elif cmd in _SED_TEXT_CMDS or cmd in _SED_READ_CMDS:
            i = _line_end(script, i)
            while cmd in _SED_TEXT_CMDS and 0 < i < n and script[i - 1] == "\\":
                i = _line_end(script, i + 1)  # `a\` text continued on the next lines
        elif cmd in _SED_LABEL_CMDS:
            while i < n and script[i] not in ";\n":
                i += 1
        elif cmd in "=dDgGhHlLnNpPqQxzFv0123456789":
            while i < n and script[i] not in ";\n}":
                i += 1
        else:
            raise Unsafe(f"sed: cannot read the command {cmd!r} of the script: automaton denies what it cannot read")
    for name in out:
        if not name:
            raise Unsafe("sed w without a file name: automaton denies what it cannot read")
    return out


def _sed_file(text: str) -> str:
    """The file a `w FILE` names: the rest of the line after blanks, trailing blanks included
    (GNU sed `read_filename`, BSD sed likewise); Unsafe when an edge of it holds a character
    that readers trim differently or that cannot be seen (`hooks.pathedge`)."""
    from automaton.hooks.pathedge import edge_reason  # lazy: only a sed script that writes reaches it

    name = text.lstrip(" \t")
    why = edge_reason(name, "a sed 'w' command")
    if why:
        raise Unsafe(f"sed: {why}")
    return name


def _line_end(text: str, i: int) -> int:
    end = text.find("\n", i)
    return len(text) if end < 0 else end


def _sed_address(script: str, i: int) -> int:
    n = len(script)
    if i < n and script[i] in "/\\":
        delim = script[i + 1] if script[i] == "\\" else "/"
        i = _skip_delimited(script, i + (2 if script[i] == "\\" else 1), 1, delim)
        while i < n and script[i] in "IM":
            i += 1
        return i
    while i < n and (script[i].isdigit() or script[i] in "$~+"):
        i += 1
    return i


def _skip_delimited(script: str, i: int, parts: int, delim: str | None = None) -> int:
    """Index after `parts` delimiter-terminated parts starting at `i` (delimiter at `i` unless given)."""
    n = len(script)
    if delim is None:
        if i >= n:
            raise Unsafe("sed: a command ends before its delimiter: automaton denies what it cannot read")
        delim = script[i]
        i += 1
    for _ in range(parts):
        while i < n and script[i] != delim:
            i += 2 if script[i] == "\\" else 1
        if i >= n:
            raise Unsafe("sed: an unterminated expression: automaton denies what it cannot read")
        i += 1
    return i


def _sed_substitute(script: str, i: int) -> tuple[int, int, list[str]]:
    i = _skip_delimited(script, i, 2)
    n = len(script)
    written: list[str] = []
    while i < n and script[i] not in ";\n}":
        flag = script[i]
        if flag == "w":
            end = _line_end(script, i + 1)
            written.append(_sed_file(script[i + 1:end]))
            return end, end, written
        if flag == "e":
            raise Unsafe("sed s///e runs the pattern space as a command: automaton cannot read it")
        i += 1
    return i, i, written


def awk_writes(program: str) -> list[str]:
    """Files an awk program writes through `print`/`printf` redirections; Unsafe for pipes,
    `system()`, `@load`, or a redirection to a file computed at run time."""
    out: list[str] = []
    tokens = _awk_tokens(program)
    in_print = False
    depth = 0
    for n, tok in enumerate(tokens):
        if tok in ("print", "printf"):
            in_print, depth = True, 0
        elif tok in (";", "\n", "{", "}"):
            in_print = False
        elif tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        elif tok in ("system", "@load", "|&"):
            raise Unsafe(f"awk {tok} runs or loads code: automaton cannot read it")
        elif tok == "|":
            raise Unsafe("awk pipes to or from a command: automaton cannot read it")
        elif tok in (">", ">>") and in_print and depth == 0:
            nxt = tokens[n + 1] if n + 1 < len(tokens) else ""
            if len(nxt) >= 2 and nxt[0] == nxt[-1] == '"':
                out.append(nxt[1:-1])
            else:
                raise Unsafe("awk print redirects to a file named at run time: automaton cannot tell which")
    return out


def _awk_tokens(text: str) -> list[str]:
    """awk tokens: strings, regex literals and comments kept whole (so `>` inside them is not an
    operator), operators `>>`, `>`, `|&`, `|`, `||`, words, and single characters."""
    toks: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in " \t\r\\":
            i += 1
        elif ch == "#":
            i = _line_end(text, i)
        elif ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            toks.append(text[i:j + 1])
            i = j + 1
        elif ch == "/" and (not toks or toks[-1] in "(,~!&|{};\n" or toks[-1] in ("&&", "||")):
            j = i + 1
            while j < n and text[j] not in "/\n":
                j += 2 if text[j] == "\\" else 1
            toks.append(text[i:j + 1])
            i = j + 1
        elif text.startswith((">>", "|&", "||", "&&", ">=", "<=", "==", "!="), i):
            toks.append(text[i:i + 2])
            i += 2
        elif ch.isalnum() or ch in "_@$":
            j = i
            while j < n and (text[j].isalnum() or text[j] in "_@$"):
                j += 1
            toks.append(text[i:j])
            i = j
        else:
            toks.append(ch)
            i += 1
    return toks
