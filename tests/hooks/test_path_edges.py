"""Paths read out of free text whose edges the agents' readers trim differently (hooks/pathedge.py).

Codex reads an `apply_patch` header path with Rust's `str::trim`, OpenCode with JavaScript's
`trim` (which also removes U+FEFF and keeps U+0085), sed and patch with their own blanks, and
automaton with Python's `str.strip`: a path with such a character at an edge is one file to one
reader and another to the next, so it is denied, whichever agent sends it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.hooks.codexpatch import BadPatch, loose_paths, patch_paths
from automaton.hooks.pathedge import edge_reason
from tests.helpers import Result
from tests.hooks.conftest import assert_allowed, assert_denied

Hook = Callable[..., Result]
P = "*** Begin Patch\n{}*** End Patch\n"

# ECMAScript WhiteSpace + LineTerminator (what JavaScript's trim removes), Rust's White_Space,
# and Python's str.isspace: each set as its language's reference defines it.
JS_TRIM = set("\t\x0b\x0c \xa0\ufeff\n\r\u2028\u2029\u1680\u202f\u205f\u3000") | {chr(c) for c in range(0x2000, 0x200b)}
RUST_TRIM = set("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") | {chr(c) for c in range(0x2000, 0x200b)}
PY_TRIM = {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}
INVISIBLE = set("\u200b\u200c\u200d\u200e\u200f\u2060\u2066\u00ad\u180e\U000e0041")


def opencode(project: Path, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"hook_event_name": "tool.execute.before", "session_id": "s", "call_id": "c", "tool_name": tool,
            "tool_input": tool_input, "cwd": str(project)}


def codex(project: Path, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"hook_event_name": "PreToolUse", "cwd": str(project), "tool_name": tool, "tool_input": tool_input}


def test_every_trimmed_or_invisible_character_is_refused_at_either_edge() -> None:
    python_documented = set("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000")
    assert not PY_TRIM ^ (python_documented | set(map(chr, range(0x2000, 0x200b))))  # as this test assumes it
    for char in sorted(JS_TRIM | RUST_TRIM | PY_TRIM | INVISIBLE):
        assert edge_reason(f"{char}.git/hooks/x", "here"), hex(ord(char))
        assert edge_reason(f"src/a.py{char}", "here"), hex(ord(char))
        assert edge_reason(f"src/a{char}b.py", "here") is None  # inside a name every reader keeps it
    assert edge_reason("src/a.py", "here") is None and edge_reason("", "here") is None
    why = edge_reason("\ufeff.git/hooks/pre-commit", "a '*** Add File:' patch header")
    assert why is not None and "starts with U+FEFF" in why and "'*** Add File:' patch header" in why


@pytest.mark.parametrize("char", ["\ufeff", "\x85", "\u3000", "\u200b", "\u2028", "\x1c", "\xa0"])
@pytest.mark.parametrize("hunk", [
    "*** Add File: {c}.git/hooks/pre-commit\n+x\n",
    "*** Add File:{c}/etc/cron.d/x\n+x\n",  # OpenCode needs no space after the colon
    "*** Delete File: src/app.py{c}\n",
    "*** Update File: src/app.py\n*** Move to: {c}.git/hooks/x\n@@\n-x = 1\n+x = 2\n",
    "   *** Update File: {c}src/app.py\n@@\n-x = 1\n+x = 2\n",
])
def test_a_patch_path_with_an_unclear_edge_is_denied_for_opencode_and_codex(
        task: Path, project: Path, hook: Hook, char: str, hunk: str) -> None:
    text = P.format(hunk.format(c=char))
    assert_denied(hook("opencode", opencode(project, "apply_patch", {"patchText": text})), f"U+{ord(char):04X}")
    assert_denied(hook("codex", codex(project, "apply_patch", {"command": text})), f"U+{ord(char):04X}")
    shell = f"apply_patch <<'EOF'\n{text}EOF"
    assert_denied(hook("codex", codex(project, "Bash", {"command": shell})), f"U+{ord(char):04X}")


def test_the_red_team_payload_is_denied(task: Path, project: Path, hook: Hook) -> None:
    text = "*** Begin Patch\n*** Add File: \ufeff.git/hooks/pre-commit\n+x\n*** End Patch\n"
    result = hook("opencode", opencode(project, "apply_patch", {"patchText": text}))
    assert_denied(result, "apply_patch:", "starts with U+FEFF", "'*** Add File:' patch header")


def test_plain_patch_paths_still_pass(task: Path, project: Path, hook: Hook) -> None:
    for hunk in ("*** Add File: src/new.py\n+x\n", "*** Add File: src/new.py  \r\n+x\n",
                 "*** Add File: src/a\u3000b.py\n+x\n"):
        assert_allowed(hook("opencode", opencode(project, "apply_patch", {"patchText": P.format(hunk)})))
    text = P.format("*** Add File: src/new.py\n+x\n")
    assert_allowed(hook("codex", codex(project, "apply_patch", {"command": text})))


def test_the_readers_raise_bad_patch() -> None:
    for text in (P.format("*** Add File: \ufeffa.py\n+x\n"), "cat <<E\n*** Add File: a.py\u200b\nE"):
        with pytest.raises(BadPatch, match="U\\+"):
            loose_paths(text)
    with pytest.raises(BadPatch, match="U\\+FEFF"):  # the edge is named before any other fault
        patch_paths("*** Add File: \ufeffa.py\n")
    assert loose_paths(P.format("*** Add File:  a.py \r\n+x\n")) == ["a.py"]


# ---- the same kind in the shell readers: sed `w FILE`, a diff's `+++ NAME` -------------------------

@pytest.mark.parametrize("command", [
    "sed -n 'w \u3000tasks/notes/SPEC.md' README.md",  # sed writes a folder '\u3000tasks'
    "sed -n 's/a/b/w \ufefftasks/notes/SPEC.md' README.md",
    "sed -n 'w tasks/notes/SPEC.md\u00a0' tasks/notes/SPEC.md",
    "sed -n 'w tasks/notes/SPEC.md ' tasks/notes/SPEC.md",  # sed keeps trailing blanks in the name
])
def test_a_sed_file_with_an_unclear_edge_is_denied(project: Path, make_task: Callable[..., Path], hook: Hook,
                                                   command: str) -> None:
    make_task("notes", "research")
    payload = codex(project, "Bash", {"command": command})
    assert_denied(hook("claude", payload), "sed")
    assert_allowed(hook("claude", codex(project, "Bash", {"command": "sed -n 'w tasks/notes/SPEC.md' README.md"})))


@pytest.mark.parametrize("old, new", [("a/src/app.py\u3000", "b/src/app.py\u3000"),
                                      ("\ufeffa/src/app.py", "b/src/app.py"), ("a/src/app.py", "b/src/app.py\x0c")])
def test_a_diff_name_with_an_unclear_edge_is_denied(task: Path, project: Path, hook: Hook, old: str, new: str) -> None:
    diff = f"--- {old}\n+++ {new}\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    for command in (f"patch -p1 <<'EOF'\n{diff}EOF", f"git apply <<'EOF'\n{diff}EOF"):
        assert_denied(hook("claude", codex(project, "Bash", {"command": command})), "U+")
    plain = "--- a/src/app.py\t2026-01-01\n+++ b/src/app.py \r\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    assert_allowed(hook("claude", codex(project, "Bash", {"command": f"patch -p1 <<'EOF'\n{plain}EOF"})))
