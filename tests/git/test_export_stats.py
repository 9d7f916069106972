"""refresh_export with a StatRecord: files whose sealed stat data are unchanged are not read
again, and nothing a verifier can do to a file keeps its stat data (git.export docstring)."""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from pathlib import Path

import pytest

from automaton.git import export
from automaton.git.export import StatRecord, refresh_export
from tests.git.test_export import PROTECTED, agent_commit, layout
from tests.git.test_export_refresh import fresh, snapshot


def record(tmp_path: Path, key: bytes = b"user key") -> StatRecord:
    return StatRecord(tmp_path / "export.stat", lambda data: hmac.new(key, data, hashlib.sha256).hexdigest())


def later(monkeypatch: pytest.MonkeyPatch) -> None:
    """The record's clock 10 s ahead: every file written so far is old enough to trust."""
    real = time.time_ns
    monkeypatch.setattr(export.time, "time_ns", lambda: real() + 10_000_000_000)


def no_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count the files refresh_export reads (their blob id computed)."""
    read: list[str] = []
    real = export._blob_id

    def counted(fd: int, size: int, hex_len: int) -> str:
        read.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real(fd, size, hex_len)

    monkeypatch.setattr(export, "_blob_id", counted)
    return read


def test_unchanged_files_are_not_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, base = layout(tmp_path)
    head = agent_commit(repo)
    kept, stats = tmp_path / "kept", record(tmp_path)
    refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base, stats=stats)  # writes every file
    read = no_reads(monkeypatch)
    second = refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base, stats=stats)
    assert len(read) == second.kept and second.trusted == 0  # read once: too recent to trust yet
    later(monkeypatch)
    read.clear()
    refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base, stats=stats)  # records them
    read.clear()
    third = refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base, stats=stats)
    assert read == [] and third.trusted == third.kept == second.kept
    assert snapshot(kept) == fresh(repo, head, base, tmp_path / "fresh")


def test_whatever_a_verifier_did_is_undone_with_a_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, base = layout(tmp_path)
    head = agent_commit(repo)
    kept, stats = tmp_path / "kept", record(tmp_path)
    refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base, stats=stats)
    time.sleep(0.05)  # past the file clock's tick: the rewrites below get a later ctime (RACY_NS in real use)
    later(monkeypatch)
    refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base, stats=stats)
    assert refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base, stats=stats).trusted > 0
    want = fresh(repo, head, base, tmp_path / "fresh")
    app = kept / "src" / "app.py"  # rewritten in place, size and mtime kept
    before = os.stat(app)
    app.write_text("def f(): return 9\n")
    os.utime(app, ns=(before.st_atime_ns, before.st_mtime_ns))
    swapped = kept / "tests" / "test_app.py"  # replaced by a copy through a rename
    (kept / "tmp").write_text(swapped.read_text())
    os.utime(kept / "tmp", ns=(swapped.stat().st_atime_ns, swapped.stat().st_mtime_ns))
    os.replace(kept / "tmp", swapped)
    os.chmod(kept / "run.sh", 0o644)  # mode
    os.link(kept / "conftest.py", tmp_path / "outside-link")  # a second link
    res = refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base, stats=stats)
    assert snapshot(kept) == want
    # README.md and pytest.ini trusted; tests/test_app.py read (a new inode, the same content) and
    # kept; app.py, run.sh and conftest.py read and written anew
    assert (res.trusted, res.kept) == (2, 3)


def test_a_record_sealed_with_another_key_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, base = layout(tmp_path)
    head = agent_commit(repo)
    kept = tmp_path / "kept"
    refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base, stats=record(tmp_path))
    later(monkeypatch)
    refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base, stats=record(tmp_path, b"forger"))
    res = refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base, stats=record(tmp_path))
    assert res.trusted == 0 and res.kept > 0
    (tmp_path / "export.stat").write_bytes(b"garbage\n")
    assert refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base, stats=record(tmp_path)).trusted == 0


def test_a_file_written_just_before_the_record_is_read_again(tmp_path: Path) -> None:
    """The racy guard: a file whose ctime is within RACY_NS of the record is never trusted, as a
    write in the same tick of the file clock would keep that ctime."""
    repo, base = layout(tmp_path)
    head = agent_commit(repo)
    kept, stats = tmp_path / "kept", record(tmp_path)
    for _ in range(3):
        res = refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base, stats=stats)
    assert res.trusted == 0 and res.kept > 0


def test_a_fifo_or_symlink_in_place_of_the_record_neither_hangs_nor_is_followed(tmp_path: Path) -> None:
    repo, base = layout(tmp_path)
    head = agent_commit(repo)
    kept, stats = tmp_path / "kept", record(tmp_path)
    os.mkfifo(stats.path)
    refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base, stats=stats)  # a FIFO: no record
    stats.path.unlink()
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    stats.path.with_name(stats.path.name + ".tmp").symlink_to(target)
    refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base, stats=stats)  # reads and records
    assert target.read_text() == "keep me\n" and stats.path.read_bytes().startswith(b"automaton-export-stats-1 ")
