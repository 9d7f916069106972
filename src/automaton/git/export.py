"""A clean checkout of one commit for the verifier: the committed tree and nothing else, with
every protected path taken from the base commit.

The tree is read from the object database (`git ls-tree`, `git cat-file --batch`), not with
`git archive`: an archive applies the commit's own `.gitattributes` (`export-ignore`,
`export-subst`, filter drivers), which the agent wrote. Every path is checked before anything
is written (no `..`, no `.git`, no absolute path: a crafted tree object can hold them), files
are created with O_EXCL|O_NOFOLLOW in folders created by the export, and symlinks come last,
only when their target stays inside the export (absolute targets never do); a symlink that
would lead out is left out and listed in `ExportResult.skipped`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from automaton.git.errors import DriftError, GitMissing, require_commit, require_commit_id
from automaton.git.protect import default_protected, protected_changes, protected_spec
from automaton.git.tree import EXECUTABLE, GITLINK, SYMLINK, Entry, list_tree, read_blobs

__all__ = ["MAX_EXPORT_BYTES", "MAX_EXPORT_FILES", "ExportError", "ExportResult", "default_protected",
           "export_tree", "protected_changes"]

# Bounds of one export: it is a repository-sized copy, written for every tick.
MAX_EXPORT_FILES = 200_000
MAX_EXPORT_BYTES = 4 * 1024 * 1024 * 1024


class ExportError(DriftError):
    """The commit cannot be exported: git failed or is missing, the destination is not an empty
    folder, the tree holds an unsafe path, or it is larger than the bounds."""


@dataclass(frozen=True)
class ExportResult:
    """dest: the export folder; commit: the exported commit (full id); files: entries written
    (files, symlinks, submodule folders); bytes: file content written; restored: protected
    paths whose base version replaced the commit's (changed or deleted by the commit);
    removed: protected paths of the commit that the base lacks (left out); skipped: symlinks
    whose target leads out of `dest` (left out)."""

    dest: Path
    commit: str
    files: int
    bytes: int
    restored: tuple[str, ...]
    removed: tuple[str, ...]
    skipped: tuple[str, ...]


def _check_path(path: str) -> None:
    parts = path.split("/")
    windows_sep = os.name == "nt" and "\\" in path
    if path.startswith("/") or windows_sep or any(p in ("", ".", "..") or p.lower() == ".git" for p in parts):
        raise ExportError(f"the tree holds an unsafe path {path!r}; nothing was exported")


def _plan(tree: dict[str, Entry], base: dict[str, Entry], protected: list[str]) -> tuple[
        dict[str, Entry], list[str], list[str]]:
    """(entries to write, restored, removed): the commit's entries with protected ones replaced
    by the base's. Where a commit entry and a protected base entry collide (one is a folder
    of the other), the base entry wins."""
    spec = protected_spec(protected)
    plan = {p: e for p, e in tree.items() if not spec.match_file(p)}
    kept = {p: e for p, e in base.items() if spec.match_file(p)}
    restored = sorted(p for p, e in kept.items() if tree.get(p) != e)
    removed = sorted(p for p in tree if spec.match_file(p) and p not in base)
    for path in kept:  # drop commit entries that sit at a folder of, or under, a protected path
        parts = path.split("/")
        for i in range(1, len(parts)):
            plan.pop("/".join(parts[:i]), None)
    prefixes = tuple(p + "/" for p in kept)
    plan = {p: e for p, e in plan.items() if not p.startswith(prefixes)}
    plan.update(kept)
    return plan, restored, removed


class _Writer:
    """Creates folders and files strictly inside `root` (a folder the export made empty)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.dirs: set[str] = {""}

    def folder(self, rel: str) -> str:
        if rel not in self.dirs:
            parent = rel.rpartition("/")[0]
            self.folder(parent)
            full = os.path.join(self.root, rel)
            os.mkdir(full, 0o755)
            if os.path.realpath(full) != os.path.join(self.root, *rel.split("/")):
                raise ExportError(f"{rel!r} does not stay a folder of the export (letter case?)")
            self.dirs.add(rel)
        return os.path.join(self.root, rel)

    def file(self, rel: str, data: bytes, executable: bool) -> None:
        parent, _, name = rel.rpartition("/")
        full = os.path.join(self.folder(parent), name)
        fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            os.fchmod(f.fileno(), 0o755 if executable else 0o644)

    def inside(self, full: str) -> bool:
        real = os.path.realpath(full)
        return real == self.root or real.startswith(self.root + os.sep)


def _prepare(dest: Path) -> str:
    if os.path.islink(dest):
        raise ExportError(f"{dest} is a symlink; the export needs an empty folder")
    if dest.exists():
        if not dest.is_dir() or any(dest.iterdir()):
            raise ExportError(f"{dest} is not an empty folder; nothing was exported")
    else:
        dest.mkdir(parents=True)
    return os.path.realpath(dest)


def export_tree(repo: Path, commit: str, dest: Path, *, protected: list[str], base_commit: str,
                max_files: int = MAX_EXPORT_FILES, max_bytes: int = MAX_EXPORT_BYTES) -> ExportResult:
    """Write the tree of `commit` into the empty (or missing) folder `dest`, every path matching
    `protected` (gitignore patterns) as in `base_commit` (see the module docstring).

    Raises ExportError (a DriftError) when git is missing or fails, either commit is unknown,
    `dest` is not an empty folder, the tree holds an unsafe path, or it has more than
    `max_files` entries or `max_bytes` bytes; nothing is verified then. OSError from writing
    is turned into ExportError too (a half-written `dest` is the caller's to remove).
    """
    try:
        require_commit_id(base_commit, "base_commit")
        tip = require_commit(repo, commit, "commit")
        base = require_commit(repo, base_commit, "base_commit")
        plan, restored, removed = _plan(list_tree(repo, tip), list_tree(repo, base), protected)
        for path in plan:
            _check_path(path)
        total = sum(e.size for e in plan.values())
        if len(plan) > max_files or total > max_bytes:
            raise ExportError(f"commit {tip} has {len(plan)} entries and {total} bytes, over the export bounds"
                              f" ({max_files} entries, {max_bytes} bytes)")
        root = _prepare(dest)
        skipped = _write(repo, plan, _Writer(root))
    except ExportError:
        raise
    except (DriftError, GitMissing) as exc:
        raise ExportError(str(exc)) from None
    except OSError as exc:
        raise ExportError(f"cannot write the export in {dest}: {exc}") from None
    files = len(plan) - len(skipped)
    return ExportResult(dest, tip, files, total, tuple(restored), tuple(removed), tuple(skipped))


def _write(repo: Path, plan: dict[str, Entry], out: _Writer) -> list[str]:
    """Write `plan` into `out`; returns the symlinks left out."""
    blobs = sorted((e for e in plan.values() if e.mode not in (SYMLINK, GITLINK)), key=lambda e: e.path)
    links = sorted((e for e in plan.values() if e.mode == SYMLINK), key=lambda e: e.path)
    by_oid: dict[str, list[Entry]] = {}
    for entry in blobs + links:
        by_oid.setdefault(entry.oid, []).append(entry)
    oids = list(by_oid)
    targets: dict[str, bytes] = {}
    for oid, data in read_blobs(repo, oids, [by_oid[o][0].size for o in oids]):
        for entry in by_oid[oid]:
            if entry.mode == SYMLINK:
                targets[entry.path] = data
            else:
                out.file(entry.path, data, entry.mode == EXECUTABLE)
    for entry in plan.values():
        if entry.mode == GITLINK:
            out.folder(entry.path)  # a submodule is checked out as an empty folder
    skipped = []
    made: list[str] = []
    for entry in links:  # last: no file is ever written through a symlink of the export
        target = os.fsdecode(targets[entry.path])
        parent, _, name = entry.path.rpartition("/")
        full = os.path.join(out.folder(parent), name)
        if os.path.isabs(target) or "\0" in target or not out.inside(os.path.join(os.path.dirname(full), target)):
            skipped.append(entry.path)
            continue
        os.symlink(target, full)
        made.append(full)
    # A later symlink can change where an earlier one leads (`a -> b/..` once `b -> .` exists):
    # check them all again until none leads out.
    while bad := [full for full in made if not out.inside(full)]:
        for full in bad:
            os.unlink(full)
            made.remove(full)
            skipped.append(os.path.relpath(full, out.root).replace(os.sep, "/"))
    return sorted(skipped)
