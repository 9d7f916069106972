"""The docs under docs/ name real code: every module path they quote exists, and every name
quoted right after a module (`runner/tick.py` `tick`) is defined or used in that module. A
refactor that moves a function makes this fail until the docs say where it went."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "automaton"
DOCS = sorted((ROOT / "docs").glob("*.md"))
# `runner/tick.py`, `proc.py`, `tests/docs/test_x.py`, `bench/bench_hook.py`, then the names
# quoted right after it: `runner/tick.py` `tick`, `core/gates.py` `gate_budget` / `run_gates`.
MODULE = re.compile(r"`((?:[\w.-]+/)*[\w-]+\.py)`((?:\s*(?:,|/|and)?\s*`(?![\w.]*\.py`)[\w.]+`)*)")
NAME = re.compile(r"`([\w.]+)`")
# The made-up module docs/adding-a-harness.md walks through.
EXAMPLES = {"src/automaton/harnesses/acme.py"}


def module_path(quoted: str) -> Path:
    """A quoted module: relative to the repository for tests/, bench/, src/; else to the package."""
    if quoted.split("/")[0] in ("tests", "bench", "src"):
        return ROOT / quoted
    return PACKAGE / quoted


def mentions() -> list[tuple[str, int, str, list[str]]]:
    found = []
    for doc in DOCS:
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
            for hit in MODULE.finditer(line):
                found.append((doc.name, n, hit.group(1), NAME.findall(hit.group(2))))
    return found


def test_the_docs_quote_modules() -> None:
    assert len(mentions()) > 50  # the check below is not vacuous


@pytest.mark.parametrize("doc", [d.name for d in DOCS])
def test_every_quoted_module_and_name_exists(doc: str) -> None:
    problems = []
    for name, n, quoted, names in mentions():
        if name != doc or quoted in EXAMPLES:
            continue
        path = module_path(quoted)
        if not path.is_file():
            problems.append(f"docs/{doc}:{n}: `{quoted}` does not exist")
            continue
        text = path.read_text(encoding="utf-8")
        for dotted in names:
            for part in dotted.split("."):
                if not re.search(rf"\b{re.escape(part)}\b", text):
                    problems.append(f"docs/{doc}:{n}: `{quoted}` has no `{part}`")
    assert not problems, "\n".join(problems)
