"""No function in core/ or commands/ above cyclomatic complexity 20 (radon's `cc_visit`).

The brakes' rules (core/) and the use cases that apply them (commands/) stay small enough to
read and test branch by branch; a function that grows past the bound is split (decide, apply,
report) rather than the bound raised.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from radon.complexity import cc_visit

SRC = Path(__file__).resolve().parent.parent / "src" / "automaton"
PACKAGES = ("core", "commands")
LIMIT = 20


def _too_complex(source: str) -> list[tuple[str, int]]:
    return sorted((block.fullname, block.complexity) for block in cc_visit(source) if block.complexity > LIMIT)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_function_is_above_complexity_20(package: str) -> None:
    files = sorted((SRC / package).rglob("*.py"))
    assert files, f"no source files under {SRC / package}"
    found = {str(f.relative_to(SRC)): _too_complex(f.read_text(encoding="utf-8")) for f in files}
    assert {path: blocks for path, blocks in found.items() if blocks} == {}


def test_the_check_counts_branches() -> None:
    """The measure itself: 21 `if`s make a function of complexity 22, which the check reports."""
    body = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(21))
    assert _too_complex(f"def f(x):\n{body}    return -1\n") == [("f", 22)]
    assert _too_complex("def g(x):\n    return x\n") == []
