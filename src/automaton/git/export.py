"""A clean checkout of one commit for the verifier: the committed tree and nothing else, with
every protected path taken from the base commit.

The tree is read from the object database (`git ls-tree`, `git cat-file --batch`), not with
`git archive`: an archive applies the commit's own `.gitattributes` (`export-ignore`,
`export-subst`, filter drivers), which the agent wrote. Every path is checked before anything
is written (no `..`, no `.git`, no absolute path: a crafted tree object can hold them), files
are created with O_EXCL|O_NOFOLLOW in folders created by the export, and symlinks come last,
only when their target stays inside the export (absolute targets never do); a symlink that
would lead out is left out and listed in `ExportResult.skipped`.

`refresh_export` brings a folder kept from an earlier export to the same result without
writing what is already there: every file in it is compared with its blob (nothing about the
folder is trusted: the verifier that ran in it could write anything there), what differs is
written again, and everything else is removed. The caller keeps the folder where no agent
process of a later tick can write, and only while no process of an earlier run survives it
(runner/verify.py says where and when).

Compared, not necessarily read: given a `StatRecord`, a file whose stat data (inode, size,
mtime, ctime, mode, one link) are the ones recorded, sealed, when an earlier refresh read it
and found its blob, is the same file with the same content: every write, rename, chmod or
link changes the ctime, which the kernel sets and no unprivileged process can set back
(`utimensat` sets mtime only). The rule is git's own for its index (`git.content` relies on it
for the drift check), with git's racy-clean guard: a file whose recorded ctime is not at least
`RACY_NS` older than the record is read again, so a write in the same clock tick as the
recorded one cannot keep the ctime. The record is sealed with the user's key (the caller's
`seal`) and kept where no agent process may write; one that does not verify is ignored (every
file read, as without one).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pathspec.util import normalize_file

from automaton.core.digest import equal
from automaton.git import submodules
from automaton.git.errors import DriftError, GitMissing, git_text, nul_fields, require_commit, require_commit_id
from automaton.git.protect import default_protected, protected_changes, protected_spec, split_protected
from automaton.git.tree import EXECUTABLE, GITLINK, SYMLINK, Entry, list_tree, read_blobs

__all__ = ["MAX_EXPORT_BYTES", "MAX_EXPORT_FILES", "ExportError", "ExportResult", "StatRecord", "default_protected",
           "export_tree", "fill_submodules", "protected_changes", "refresh_export"]

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
    # refresh_export: files found in the folder with the right content and mode, kept as they
    # were (export_tree: 0), and entries removed from it (found there, not in the export)
    kept: int = 0
    cleared: int = 0
    # submodule folders left empty: their commit is in no local `modules/` folder (git/submodules.py)
    empty_submodules: tuple[str, ...] = ()
    # refresh_export with a StatRecord: of the kept files, those trusted by their recorded stat
    # data without being read
    trusted: int = 0


@dataclass(frozen=True)
class StatRecord:
    """Where `refresh_export` keeps the stat data of the files it found right (`path`: a file
    beside the export, never inside it), and `seal`, which returns the MAC (hex) of bytes under
    the user's key (see the module docstring)."""

    path: Path
    seal: Callable[[bytes], str]


# A recorded file is trusted by its stat data only when its ctime is this much older than the
# record: file timestamps come from a clock that ticks coarsely (a jiffy; git assumes a second).
RACY_NS = 2_000_000_000
_RECORD_MAGIC = b"automaton-export-stats-1"
# (blob id, inode, device, size, mtime ns, ctime ns) of one file
_Stat = tuple[str, int, int, int, int, int]


def _stat_of(oid: str, st: os.stat_result) -> _Stat:
    return oid, st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _load_record(record: StatRecord | None) -> dict[str, _Stat]:
    """{path: stat data} of the sealed record, only the entries old enough to trust (RACY_NS);
    {} when there is none, or it does not verify or parse."""
    if record is None:
        return {}
    try:  # never through a symlink, never blocking on a FIFO someone put there
        fd = os.open(record.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return {}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {}
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read()
    except OSError:
        return {}
    finally:
        os.close(fd)
    head, _, body = data.partition(b"\n")
    words = head.split(b" ")
    if len(words) != 3 or words[0] != _RECORD_MAGIC or not words[1].isdigit():
        return {}
    try:
        if not equal(words[2].decode("ascii"), record.seal(words[1] + b"\n" + body)):
            return {}
        fields = body.split(b"\0")
        limit = int(words[1]) - RACY_NS
        found: dict[str, _Stat] = {}
        for i in range(0, len(fields) - 1, 7):
            path, oid, *nums = fields[i:i + 7]
            ino, dev, size, mtime, ctime = map(int, nums)
            if ctime < limit:
                found[os.fsdecode(path)] = (oid.decode("ascii"), ino, dev, size, mtime, ctime)
    except (ValueError, UnicodeDecodeError):
        return {}
    return found


def _save_record(record: StatRecord, taken_ns: int, stats: dict[str, _Stat]) -> None:
    """Write the sealed record of `stats` (taken no earlier than `taken_ns`), atomically."""
    body = b"".join(b"%s\0%s\0%d\0%d\0%d\0%d\0%d\0" % (os.fsencode(p), oid.encode("ascii"), ino, dev, size,
                                                            mtime, ctime)
                    for p, (oid, ino, dev, size, mtime, ctime) in sorted(stats.items()))
    stamp = b"%d" % taken_ns
    mac = record.seal(stamp + b"\n" + body).encode("ascii")
    tmp = record.path.with_name(record.path.name + ".tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)  # whatever is there (a symlink too) goes; O_EXCL below never follows one
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(_RECORD_MAGIC + b" " + stamp + b" " + mac + b"\n" + body)
    os.replace(tmp, record.path)


def _check_path(path: str) -> None:
    parts = path.split("/")
    windows_sep = os.name == "nt" and "\\" in path
    if path.startswith("/") or windows_sep or any(p in ("", ".", "..") or p.lower() == ".git" for p in parts):
        raise ExportError(f"the tree holds an unsafe path {path!r}; nothing was exported")


def _plan(tree: dict[str, Entry], base: dict[str, Entry], protected: list[str]) -> tuple[
        dict[str, Entry], list[str], list[str]]:
    """(entries to write, restored, removed): the commit's entries with protected ones replaced
    by the base's (a `+` pattern: only the paths the base has). Where a commit entry and a
    protected base entry collide (one is a folder of the other), the base entry wins."""
    every, existing = split_protected(protected)
    matches = protected_matcher(every)
    in_base = protected_matcher(existing) if existing else None
    # once per path: it is most of the cost
    hit = {p: matches(p) or (in_base is not None and p in base and in_base(p)) for p in tree.keys() | base.keys()}
    plan = {p: e for p, e in tree.items() if not hit[p]}
    kept = {p: e for p, e in base.items() if hit[p]}
    restored = sorted(p for p, e in kept.items() if tree.get(p) != e)
    removed = sorted(p for p in tree if hit[p] and p not in base)
    for path in kept:  # drop commit entries that sit at a folder of, or under, a protected path
        parts = path.split("/")
        for i in range(1, len(parts)):
            plan.pop("/".join(parts[:i]), None)
    prefixes = tuple(p + "/" for p in kept)
    plan = {p: e for p, e in plan.items() if not p.startswith(prefixes)}
    plan.update(kept)
    return plan, restored, removed


def protected_matcher(protected: list[str]) -> Callable[[str], bool]:
    """`protected_spec(protected).match_file`, faster for the many paths no pattern matches:
    one regular expression made of every pattern's (pathspec's own, named groups unnamed) says
    first whether any pattern matches at all; only then does pathspec decide (a negation or
    a later pattern may still say no). Exactly pathspec's answer; pathspec's alone where its
    patterns do not expose what this needs. Plain patterns (`core.scope`) need neither."""
    scope = protected_spec(protected)
    if scope.plain is not None:
        return scope.match_file


    spec = scope.spec
    try:
        regexes = [p.regex for p in spec.patterns if p.regex is not None]
        flags = {r.flags for r in regexes}
        sources = [re.sub(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>", "(?:", r.pattern) for r in regexes]
        if len(flags) > 1 or any("(?P=" in src for src in sources):
            return spec.match_file
        anyone = re.compile("|".join(f"(?:{src})" for src in sources), flags.pop() if flags else 0) if sources else None
    except (AttributeError, TypeError, re.error):
        return spec.match_file

    def matches(path: str) -> bool:
        if anyone is None or anyone.match(normalize_file(path)) is None:
            return False
        return spec.match_file(path)

    return matches


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


def _commits(repo: Path, commit: str, base_commit: str) -> tuple[str, str]:
    """The full ids of `commit` and `base_commit`, both checked to be commits: one
    `git cat-file --batch-check` for the two; anything it does not answer plainly is asked of
    `rev-parse` one by one, whose refusal names the culprit (DriftError)."""
    require_commit_id(base_commit, "base_commit")
    if commit and not any(c.isspace() for c in commit):
        asked = f"{commit}^{{commit}}\n{base_commit}^{{commit}}\n"
        answer = [line.split() for line in git_text(repo, ["cat-file", "--batch-check"], stdin=asked).splitlines()]
        if len(answer) == 2 and all(len(a) == 3 and a[1] == "commit" for a in answer):
            return answer[0][0], answer[1][0]
    return require_commit(repo, commit, "commit"), require_commit(repo, base_commit, "base_commit")


def _bounded(plan: dict[str, Entry], total: int, tip: str, max_files: int, max_bytes: int) -> None:
    if len(plan) > max_files or total > max_bytes:
        raise ExportError(f"commit {tip} has {len(plan)} entries and {total} bytes, over the export bounds"
                          f" ({max_files} entries, {max_bytes} bytes)")


@contextmanager
def _export_errors(dest: Path) -> Iterator[None]:
    """Every failure of an export as ExportError (git's, a missing git, the file system's)."""
    try:
        yield
    except ExportError:
        raise
    except (DriftError, GitMissing) as exc:
        raise ExportError(str(exc)) from None
    except OSError as exc:
        raise ExportError(f"cannot write the export in {dest}: {exc}") from None


def export_tree(repo: Path, commit: str, dest: Path, *, protected: list[str], base_commit: str,
                max_files: int = MAX_EXPORT_FILES, max_bytes: int = MAX_EXPORT_BYTES) -> ExportResult:
    """Write the tree of `commit` into the empty (or missing) folder `dest`, every path matching
    `protected` (gitignore patterns) as in `base_commit` (see the module docstring).

    Raises ExportError (a DriftError) when git is missing or fails, either commit is unknown,
    `dest` is not an empty folder, the tree holds an unsafe path, or it has more than
    `max_files` entries or `max_bytes` bytes; nothing is verified then. OSError from writing
    is turned into ExportError too (a half-written `dest` is the caller's to remove).
    """
    with _export_errors(dest):
        tip, base = _commits(repo, commit, base_commit)
        plan, restored, removed = _plan(list_tree(repo, tip), list_tree(repo, base), protected)
        for path in plan:
            _check_path(path)
        total = sum(e.size for e in plan.values())
        _bounded(plan, total, tip, max_files, max_bytes)
        root = _prepare(dest)
        out = _Writer(root)
        _write_files(repo, plan, [e for e in plan.values() if e.mode not in (SYMLINK, GITLINK)], out)
        skipped = _write_links(repo, plan, out)
        empty = fill_submodules(repo, tip, Path(root), [e for e in plan.values() if e.mode == GITLINK])
    files = len(plan) - len(skipped)
    return ExportResult(dest, tip, files, total, tuple(restored), tuple(removed), tuple(skipped),
                        empty_submodules=tuple(empty))


def refresh_export(repo: Path, commit: str, dest: Path, *, protected: list[str], base_commit: str,
                   max_files: int = MAX_EXPORT_FILES, max_bytes: int = MAX_EXPORT_BYTES,
                   stats: StatRecord | None = None) -> ExportResult:
    """Make `dest` hold exactly what `export_tree` writes into an empty folder, reusing the files
    an earlier export left there when their content is right.

    Nothing in `dest` is trusted: every regular file of it that the export has at that path is
    read and its git blob id compared with the commit's (mode and link count too); a file that
    differs is written again from the object database; every other entry (a file, folder,
    fifo or device the export lacks, anything named `.git`) is removed without following a
    symlink; every symlink is removed and made again under export_tree's rules; folders get
    the mode a new one gets. `dest` itself is replaced when it is not a folder. Same errors as
    export_tree, except that `dest` need not be empty; on an error `dest` is left partly
    updated (the next call repairs it). The caller must make sure no other process writes in
    `dest` meanwhile: what this call compared is what the verifier sees only then.

    `stats`: where the stat data of the files found right are recorded, sealed, so that the
    next call reads only the files whose stat data changed (the module docstring says why that
    holds); a record that cannot be written is removed (the next call reads every file).
    """
    with _export_errors(dest):
        tip, base = _commits(repo, commit, base_commit)
        plan, restored, removed = _plan(*_list_both(repo, tip, base), protected)
        for path in plan:
            _check_path(path)
        _bounded(plan, 0, tip, max_files, max_bytes)
        root = _prepare_kept(dest)
        taken_ns = time.time_ns()  # before any stat below: the racy guard counts from here
        sync = _Sync(root, plan, max_bytes, _load_record(stats))
        sync.walk()
        missing = [e for e in plan.values() if e.mode not in (SYMLINK, GITLINK) and e.path not in sync.good]
        sizes = _sizes(repo, {e.oid for e in missing} | {e.oid for e in plan.values() if e.mode == SYMLINK})
        total = sync.good_bytes + sum(sizes[e.oid] for e in missing)
        _bounded(plan, total, tip, max_files, max_bytes)
        sized = {p: (Entry(p, e.mode, e.oid, sizes[e.oid]) if e.oid in sizes else e) for p, e in plan.items()}
        out = _Writer(root)
        out.dirs |= sync.dirs
        _write_files(repo, sized, [sized[e.path] for e in missing], out)
        skipped = _write_links(repo, sized, out)
        empty = fill_submodules(repo, tip, Path(root), [e for e in plan.values() if e.mode == GITLINK])
    if stats is not None and sync.trusted < len(sync.stats):  # else the record holds every file it would
        _keep_record(stats, taken_ns, sync.stats)
    files = len(plan) - len(skipped)
    return ExportResult(dest, tip, files, total, tuple(restored), tuple(removed), tuple(skipped),
                        kept=len(sync.good), cleared=sync.cleared, trusted=sync.trusted,
                        empty_submodules=tuple(empty))


def _keep_record(stats: StatRecord, taken_ns: int, found: dict[str, _Stat]) -> None:
    """Save the record of the files found right; when it cannot be written, remove the old one
    (it would only be ignored or trusted for files this call found right anyway, but a record
    left behind by a failure is never the point)."""
    try:
        _save_record(stats, taken_ns, found)
    except OSError:
        try:
            os.unlink(stats.path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise ExportError(f"cannot write or remove the export's stat record {stats.path}: {exc}") from None


def _list_both(repo: Path, tip: str, base: str) -> tuple[dict[str, Entry], dict[str, Entry]]:
    """`_list_names` of `tip` and of `base`, the two git processes running at once (one when
    they are the same commit: a tick that changed nothing since the loop began)."""
    if tip == base:
        listed = _list_names(repo, tip)
        return listed, dict(listed)
    found: dict[str, dict[str, Entry] | BaseException] = {}

    def list_base() -> None:
        try:
            found["base"] = _list_names(repo, base)
        except BaseException as exc:  # re-raised below, in the caller's thread
            found["base"] = exc

    other = threading.Thread(target=list_base, name="automaton-ls-tree")
    other.start()
    try:
        listed = _list_names(repo, tip)
    finally:
        other.join()
    if isinstance(found["base"], BaseException):
        raise found["base"]
    return listed, found["base"]


def _list_names(repo: Path, rev: str) -> dict[str, Entry]:
    """Like tree.list_tree, without the sizes (size -1): `ls-tree -l` looks up every blob for
    its size, which costs more than the listing; the export asks for the sizes of the blobs it
    writes only (`_sizes`)."""
    out = git_text(repo, ["ls-tree", "-r", "-z", "--full-tree", rev])
    found: dict[str, Entry] = {}
    for field in nul_fields(out):
        meta, tab, path = field.partition("\t")
        parts = meta.split()
        if not tab or len(parts) != 3 or parts[1] not in ("blob", "commit"):
            raise DriftError(f"unexpected git ls-tree entry {field[:60]!r}")
        found[path] = Entry(path, parts[0], parts[2], -1 if parts[1] == "blob" else 0)
    return found


def _sizes(repo: Path, oids: set[str]) -> dict[str, int]:
    """{oid: size in bytes} of blobs (`git cat-file --batch-check`); DriftError for one missing."""
    if not oids:
        return {}
    wanted = sorted(oids)
    out = git_text(repo, ["cat-file", "--batch-check"], stdin="".join(f"{o}\n" for o in wanted))
    found: dict[str, int] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "blob" and parts[2].isdigit():
            found[parts[0]] = int(parts[2])
    lost = [o for o in wanted if o not in found]
    if lost:
        raise DriftError(f"git cat-file cannot read blob {lost[0]} in {repo}")
    return found


def _prepare_kept(dest: Path) -> str:
    """`dest` as a real folder (made when missing; a symlink or file there is removed, never
    followed), with the mode `Path.mkdir` gives a new one (as `_prepare`)."""
    try:
        st = os.lstat(dest)
    except FileNotFoundError:
        dest.mkdir(parents=True)
        return os.path.realpath(dest)
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(dest)
        dest.mkdir()
    elif stat.S_IMODE(st.st_mode) != (mode := 0o777 & ~_umask()):
        os.chmod(dest, mode)
    return os.path.realpath(dest)


def _umask() -> int:
    """This process's umask, read without changing it where Linux shows it (os.umask can only
    be read by setting it, which would race the threads that create files meanwhile)."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_READ_CHUNK = 1024 * 1024


class _Sync:
    """One pass over a kept export folder (see refresh_export): `good` the paths whose file is
    right (`good_bytes` their bytes), `dirs` the folders kept, `cleared` the entries removed."""

    def __init__(self, root: str, plan: dict[str, Entry], max_bytes: int, record: dict[str, _Stat]) -> None:
        self.root, self.plan, self.max_bytes, self.record = root, plan, max_bytes, record
        self.stats: dict[str, _Stat] = {}  # the stat data of every file found right, for the next record
        self.trusted = 0
        self.good: set[str] = set()
        self.good_bytes = 0
        self.read_bytes = 0  # all files read, right or not: bounded by max_bytes, as the export is
        self.cleared = 0
        self.dirs: set[str] = {""}
        self.needed: set[str] = set()
        for path, entry in plan.items():
            if entry.mode == GITLINK:
                self.needed.add(path)
            parts = path.split("/")
            for i in range(1, len(parts)):
                self.needed.add("/".join(parts[:i]))
        self.folder_mode = 0o755 & ~_umask()  # what `_Writer.folder` makes

    def walk(self) -> None:
        todo = [""]
        while todo:
            rel = todo.pop()
            with os.scandir(os.path.join(self.root, rel)) as listing:
                entries = list(listing)
            for item in entries:
                path = f"{rel}/{item.name}" if rel else item.name
                if item.is_dir(follow_symlinks=False):
                    if path in self.needed and item.name.lower() != ".git":
                        if stat.S_IMODE(item.stat(follow_symlinks=False).st_mode) != self.folder_mode:
                            os.chmod(item.path, self.folder_mode)
                        self.dirs.add(path)
                        todo.append(path)
                    else:
                        self._remove_tree(item.path)
                elif not (item.is_file(follow_symlinks=False)
                          and (self._recorded(path, item) or self._right(path, item.path))):
                    os.unlink(item.path)  # a symlink, a file that differs, a fifo, socket or device
                    self.cleared += path not in self.plan  # (a plan file or symlink is made again)

    def _remove_tree(self, full: str) -> None:
        remove_tree(full)
        self.cleared += 1

    def _recorded(self, path: str, item: os.DirEntry[str]) -> bool:
        """Whether the file `item` is the plan's file at `path` by its stat data alone: the
        record (already limited to entries old enough, `_load_record`) has it with the plan's
        blob, and its inode, device, size, mtime, ctime, mode and one link are unchanged."""
        entry, known = self.plan.get(path), self.record.get(path)
        if entry is None or known is None or known[0] != entry.oid or entry.mode in (SYMLINK, GITLINK):
            return False
        try:
            st = item.stat(follow_symlinks=False)
        except OSError:
            return False
        mode = 0o755 if entry.mode == EXECUTABLE else 0o644  # as `_Writer.file` sets it
        if (not stat.S_ISREG(st.st_mode) or stat.S_IMODE(st.st_mode) != mode or st.st_nlink != 1
                or _stat_of(entry.oid, st) != known):
            return False
        self.good.add(path)
        self.good_bytes += st.st_size
        self.stats[path] = known
        self.trusted += 1
        return True

    def _right(self, path: str, full: str) -> bool:
        """Whether the regular file at `full` is the plan's file at `path`: same blob id (its
        content read now), same mode, one link."""
        entry = self.plan.get(path)
        if entry is None or entry.mode in (SYMLINK, GITLINK):
            return False
        try:
            fd = os.open(full, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            return False
        try:
            st = os.fstat(fd)
            mode = 0o755 if entry.mode == EXECUTABLE else 0o644  # as `_Writer.file` sets it
            if (not stat.S_ISREG(st.st_mode) or stat.S_IMODE(st.st_mode) != mode or st.st_nlink != 1
                    or self.read_bytes + st.st_size > self.max_bytes):
                return False  # (past the bound: written again rather than read; a verifier's sparse files)
            self.read_bytes += st.st_size
            if _blob_id(fd, st.st_size, len(entry.oid)) != entry.oid:
                return False
        finally:
            os.close(fd)
        self.stats[path] = _stat_of(entry.oid, st)
        self.good.add(path)
        self.good_bytes += st.st_size
        return True


def remove_tree(path: str | Path) -> None:
    """Remove the folder `path` and everything in it, never following a symlink: every entry is
    opened relative to its parent's descriptor with O_NOFOLLOW, so a process still writing in
    the tree that swaps a folder for a link (to $HOME, say) gets only its link removed. A folder
    a verifier made unreadable or unwritable gets mode 0700 through its own descriptor first.
    Missing is fine; a symlink or file in its place is removed itself. OSError when something
    still cannot be removed."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(path)
        return
    full = os.path.abspath(path)
    parent = os.open(os.path.dirname(full), os.O_RDONLY | os.O_DIRECTORY)
    try:
        _remove_at(parent, os.path.basename(full))
    finally:
        os.close(parent)


_NOFOLLOW_DIR = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0)


def _remove_at(dir_fd: int, name: str, tries: int = 3) -> None:
    """Remove entry `name` of the open folder `dir_fd` and, for a folder, all it holds."""
    try:
        fd = os.open(name, _NOFOLLOW_DIR, dir_fd=dir_fd)
    except FileNotFoundError:
        return
    except NotADirectoryError:
        os.unlink(name, dir_fd=dir_fd)
        return
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symlink: removed itself
            os.unlink(name, dir_fd=dir_fd)
            return
        if exc.errno != errno.EACCES:
            raise
        # A folder without read right for us: give it a mode through an O_PATH descriptor of
        # exactly that inode (never through the name, which may be a link by now), then open it.
        handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
        try:
            os.chmod(f"/proc/self/fd/{handle}", 0o700)
        finally:
            os.close(handle)
        fd = os.open(name, _NOFOLLOW_DIR, dir_fd=dir_fd)
    try:
        os.fchmod(fd, 0o700)  # write and search on it, so its entries can go
        for entry in list(os.scandir(fd)):
            if entry.is_dir(follow_symlinks=False):
                _remove_at(fd, entry.name)
                continue
            try:
                os.unlink(entry.name, dir_fd=fd)
            except IsADirectoryError:  # swapped for a folder meanwhile
                _remove_at(fd, entry.name)
            except FileNotFoundError:
                pass
    finally:
        os.close(fd)
    try:
        os.rmdir(name, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno != errno.ENOTEMPTY or tries <= 1:
            raise
        _remove_at(dir_fd, name, tries - 1)  # something was added meanwhile: empty it again


def _blob_id(fd: int, size: int, hex_len: int) -> str:
    """git's blob id of the `size` bytes of open file `fd` (SHA-1, or SHA-256 in a repository
    whose ids have 64 hex digits); "" when the file does not hold exactly `size` bytes."""
    make = hashlib.sha1 if hex_len == 40 else hashlib.sha256
    if size < _READ_CHUNK:  # one read: a regular file returns less than asked only at its end
        data = os.read(fd, size + 1)
        return make(b"blob %d\0%b" % (size, data), usedforsecurity=False).hexdigest() if len(data) == size else ""
    digest = make(b"blob %d\0" % size, usedforsecurity=False)
    left = size
    while left > 0:
        chunk = os.read(fd, min(left, _READ_CHUNK))
        if not chunk:
            return ""
        digest.update(chunk)
        left -= len(chunk)
    return "" if os.read(fd, 1) else digest.hexdigest()


def _write_files(repo: Path, plan: dict[str, Entry], blobs: list[Entry], out: _Writer) -> None:
    """Write the regular files `blobs` and the submodule folders of `plan` into `out`."""
    blobs = sorted(blobs, key=lambda e: e.path)
    by_oid: dict[str, list[Entry]] = {}
    for entry in blobs:
        by_oid.setdefault(entry.oid, []).append(entry)
    oids = list(by_oid)
    for oid, data in read_blobs(repo, oids, [by_oid[o][0].size for o in oids]):
        for entry in by_oid[oid]:
            out.file(entry.path, data, entry.mode == EXECUTABLE)
    for entry in plan.values():
        if entry.mode == GITLINK:
            out.folder(entry.path)  # a submodule's folder: filled from local objects (git/submodules.py)


def fill_submodules(repo: Path, commit: str, dest: Path, gitlinks: list[Entry]) -> list[str]:
    """Write into `dest/<path>` (an empty folder) the files of each submodule commit of
    `gitlinks` (entries of `commit`'s tree), read from the local `modules/` folder that holds
    it (git/submodules.py), with export_tree's rules and without a `.git`. Returns the paths
    left empty (no local copy of the commit, or a folder that is not an empty real folder).
    Raises DriftError when git fails or a submodule's tree is unsafe, as for the superproject."""
    found, empty = submodules.locate(repo, commit, gitlinks)
    for entry, store in found:
        folder = dest / entry.path
        if not folder.is_dir() or folder.is_symlink() or any(folder.iterdir()):
            empty.append(entry.path)
            continue
        try:
            export_tree(store, entry.oid, folder, protected=[], base_commit=entry.oid)
        except DriftError as exc:
            raise DriftError(f"submodule {entry.path}: {exc}") from None
    return sorted(empty)


def _write_links(repo: Path, plan: dict[str, Entry], out: _Writer) -> list[str]:
    """Make the symlinks of `plan` in `out`, last: no file is ever written through a symlink of
    the export. Returns those left out (they would lead out of it)."""
    links = sorted((e for e in plan.values() if e.mode == SYMLINK), key=lambda e: e.path)
    targets = dict(read_blobs(repo, [e.oid for e in links], [e.size for e in links])) if links else {}
    skipped = []
    made: list[str] = []
    for entry in links:
        target = os.fsdecode(targets[entry.oid])
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
