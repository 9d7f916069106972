"""Reading commits' trees and blobs straight from the object database (`git ls-tree`,
`git cat-file --batch`): no index, no worktree, no attributes, no filters."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from automaton.git.errors import DriftError, git_text, nul_fields

# Bytes of blob content asked of one `git cat-file --batch` (its whole answer is held in memory).
BATCH_BYTES = 32 * 1024 * 1024

REGULAR, EXECUTABLE, SYMLINK, GITLINK = "100644", "100755", "120000", "160000"


@dataclass(frozen=True)
class Entry:
    """One non-tree entry of a commit's tree: `path` (posix, from the top), git `mode`
    ("100644", "100755", "120000" symlink, "160000" submodule), `oid` (object id hex) and
    `size` in bytes (0 for a submodule)."""

    path: str
    mode: str
    oid: str
    size: int


def list_tree(repo: Path, rev: str, paths: Sequence[str] = ()) -> dict[str, Entry]:
    """{path: Entry} of every blob, symlink and submodule in the tree of `rev` (recursive;
    limited to `paths` when given). Raises DriftError when git fails or answers oddly."""
    out = git_text(repo, ["ls-tree", "-r", "-l", "-z", "--full-tree", rev, "--", *paths])
    found: dict[str, Entry] = {}
    for field in nul_fields(out):
        meta, tab, path = field.partition("\t")
        parts = meta.split()
        if not tab or len(parts) != 4:
            raise DriftError(f"unexpected git ls-tree entry {field[:60]!r}")
        mode, kind, oid, size = parts
        if kind not in ("blob", "commit"):
            raise DriftError(f"unexpected git ls-tree entry {field[:60]!r}")
        found[path] = Entry(path, mode, oid, 0 if size == "-" else int(size))
    return found


def read_blobs(repo: Path, oids: Sequence[str], sizes: Sequence[int]) -> Iterator[tuple[str, bytes]]:
    """(oid, content) of each blob in `oids` (in order), `sizes` their sizes in bytes, asked in
    batches of about BATCH_BYTES. Raises DriftError when a blob is missing or git fails."""
    start = 0
    while start < len(oids):
        end, total = start, 0
        while end < len(oids) and (end == start or total + sizes[end] <= BATCH_BYTES):
            total += sizes[end]
            end += 1
        yield from _batch(repo, list(oids[start:end]))
        start = end


def _batch(repo: Path, oids: list[str]) -> Iterator[tuple[str, bytes]]:
    raw = git_text(repo, ["cat-file", "--batch"], stdin="".join(f"{o}\n" for o in oids)).encode(
        "utf-8", "surrogateescape")
    pos = 0
    for oid in oids:
        nl = raw.find(b"\n", pos)
        header = raw[pos:nl].decode("utf-8", "replace").split() if nl >= 0 else []
        if len(header) != 3 or header[1] != "blob" or not header[2].isdigit():
            raise DriftError(f"git cat-file cannot read blob {oid} in {repo}: {' '.join(header) or 'no answer'}")
        size = int(header[2])
        body = raw[nl + 1:nl + 1 + size]
        if len(body) != size:
            raise DriftError(f"git cat-file returned {len(body)} of {size} bytes of blob {oid} in {repo}")
        yield oid, body
        pos = nl + 1 + size + 1  # the content is followed by a newline
