"""The repository explains itself: no comment, docstring or message in src/ or tests/ points at a
document outside the repository, and every link to a section of the repository's own documents
(README.md#…, SECURITY.md#…, docs/*.md#…) names a section that exists.

`DESIGN.md` on its own is the design phase's artifact (`core/phases.py`) and stays; only
pointers to the old design document and its requirement sources are refused."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("src", "tests")
TEXT_SUFFIXES = {".py", ".md", ".json", ".jsonl", ".toml", ".txt", ".sh", ".bat", ".cfg", ".ini"}
SKIPPED_DIRS = {"__pycache__", ".pytest_cache"}
ROOT_DOCS = ("README.md", "SECURITY.md", "CHANGELOG.md", "BENCHMARKS.md")

# Pointers to documents that are not in the repository: the old design document and its
# sections, the requirement sources ("seed 000 R4", "seed 003 §4", bare "R4"), and the protocol
# notes that lived beside them. Cite the repository's docs or the upstream source instead.
OUTSIDE = [
    (re.compile(r"DESIGN(\.md)?\s*§"), "a section of the old design document"),
    (re.compile(r"\bDESIGN\s+\d"), "a section of the old design document"),
    (re.compile(r"(shared|\.\.)/(DESIGN|STYLE|PROTOCOLS)\b|shared/(seeds|reference)\b"),
     "a file outside the repository"),
    (re.compile(r"\bseeds?\s+0\d\d\b", re.IGNORECASE), "a seed requirement"),
    (re.compile(r"\bseeds?\s+\d*\s*(R\d+|§)", re.IGNORECASE), "a seed requirement"),
    (re.compile(r"\bPROTOCOLS(\.md)?\b"), "the protocol notes outside the repository"),
    (re.compile(r"(?<![\w/.#-])R(?:[1-9]|10)(?:[–-]R?\d+)?(?![\w])"), "a bare requirement id"),
]
# A line that builds a pattern to check for these references is not a reference.
CHECKER = re.compile(r"re\.compile\(")

# `README.md#exit-codes`, `docs/architecture.md#the-life-of-a-tick`, `docs/adding-a-harness.md`.
REF = re.compile(r"(?<![\w/.-])((?:docs/)?[A-Za-z0-9_-]+\.md)(?:#([\w-]+))?")
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES
                  and not SKIPPED_DIRS & set(p.relative_to(ROOT).parts) and ".egg-info" not in str(p))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    """Every heading anchor of a markdown file (repeated headings get -1, -2 …)."""
    seen: Counter[str] = Counter()
    found: set[str] = set()
    fenced = False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        heading = HEADING.match(line)
        if fenced or not heading:
            continue
        base = slug(heading.group(2))
        found.add(base if not seen[base] else f"{base}-{seen[base]}")
        seen[base] += 1
    return found


def own_doc(name: str) -> Path | None:
    """The repository document a reference names, or None when it is not one of ours."""
    if name.startswith("docs/") or name in ROOT_DOCS:
        return ROOT / name
    return None


def dangling(doc: Path | None, anchor: str | None, name: str) -> str | None:
    if doc is None:
        return None
    if not doc.is_file():
        return f"{name}: no such document in the repository"
    if anchor and anchor not in anchors(doc):
        return f"{name}#{anchor}: no such section (headings give: {', '.join(sorted(anchors(doc)))})"
    return None


def test_slug_follows_github() -> None:
    assert slug("Loops: bounded unattended agents") == "loops-bounded-unattended-agents"
    assert slug("### loop.json".lstrip("# ")) == "loopjson"
    assert slug("`--doctor [--loop NAME]`") == "--doctor---loop-name"


@pytest.mark.parametrize("folder", SCANNED)
def test_no_pointer_leaves_the_repository(folder: str) -> None:
    me = Path(__file__).resolve()
    found = []
    for path in files(ROOT / folder):
        if path.resolve() == me:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            if CHECKER.search(line):
                continue
            for pattern, what in OUTSIDE:
                hit = pattern.search(line)
                if hit:
                    found.append(f"{path.relative_to(ROOT)}:{n}: {what}: {hit.group(0)!r}: {line.strip()[:100]}")
    assert not found, "cite a section of a document in the repository instead:\n" + "\n".join(found)


def prose_lines(path: Path, text: str) -> set[int]:
    """Line numbers of a Python file's comments and docstrings: there a document name is a
    reference. Elsewhere (string data) only a name with a section anchor is one."""
    if path.suffix != ".py":
        return set()
    lines = {tok.start[0] for tok in tokenize.generate_tokens(io.StringIO(text).readline)
             if tok.type == tokenize.COMMENT}
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            lines.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return lines


@pytest.mark.parametrize("folder", SCANNED)
def test_references_to_our_documents_resolve(folder: str) -> None:
    found = []
    for path in files(ROOT / folder):
        text = path.read_text(encoding="utf-8", errors="replace")
        prose = prose_lines(path, text) if folder == "src" else set()  # tests make their own docs/*.md
        for n, line in enumerate(text.splitlines(), start=1):
            for hit in REF.finditer(line):
                if not hit.group(2) and n not in prose:
                    continue
                why = dangling(own_doc(hit.group(1)), hit.group(2), hit.group(1))
                if why:
                    found.append(f"{path.relative_to(ROOT)}:{n}: {why}")
    assert not found, "\n".join(found)


def test_links_between_our_documents_resolve() -> None:
    docs = [ROOT / name for name in ROOT_DOCS if (ROOT / name).is_file()] + sorted((ROOT / "docs").glob("*.md"))
    found = []
    for doc in docs:
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
            for hit in MD_LINK.finditer(line):
                target = hit.group(1)
                if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                    continue
                name, _, anchor = target.partition("#")
                resolved = (doc.parent / name).resolve() if name else doc
                if resolved.suffix != ".md":
                    continue
                why = dangling(resolved, anchor or None, name or doc.name)
                if why:
                    found.append(f"{doc.relative_to(ROOT)}:{n}: {why}")
    assert not found, "\n".join(found)
