"""The frozen test set in the loop folder: sealed with the record key, reviewed and accepted by a human."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from automaton.store import frozen_tests


def test_a_sealed_set_reads_back_and_an_edited_one_does_not(tmp_path: Path) -> None:
    frozen_tests.write_frozen(tmp_path, "abc", "", ["t::b", "t::a", "t::a"])
    got = frozen_tests.read_frozen(tmp_path)
    assert got is not None and got.ids == ("t::a", "t::b") and got.base_commit == "abc"
    record = json.loads((tmp_path / frozen_tests.FROZEN).read_text())
    record["ids"] = ["t::a"]
    (tmp_path / frozen_tests.FROZEN).write_text(json.dumps(record))
    assert frozen_tests.read_frozen(tmp_path) is None
    (tmp_path / frozen_tests.FROZEN).write_text("[]")
    assert frozen_tests.read_frozen(tmp_path) is None
    (tmp_path / frozen_tests.FROZEN).unlink()
    assert frozen_tests.read_frozen(tmp_path) is None


def test_a_tests_removed_approval_shows_the_diff_and_makes_the_proposal_the_set(tmp_path: Path) -> None:
    old = frozen_tests.write_frozen(tmp_path, "abc", "", ["t::a", "t::b"])
    frozen_tests.write_proposed(tmp_path, old, ["t::b", "t::c"])
    lines, token = frozen_tests.review(tmp_path, "tests_removed: t::a (missing)")
    assert lines[1:] == ["  - t::a", "  + t::c"] and len(token) == 64
    frozen_tests.approve(tmp_path, "tests_removed: t::a (missing)")
    got = frozen_tests.read_frozen(tmp_path)
    assert got is not None and got.ids == ("t::b", "t::c")
    assert not (tmp_path / frozen_tests.PROPOSED).exists()
    assert frozen_tests.review(tmp_path, "commit_failed: x") == ([], "")


def test_a_holdout_change_approval_drops_the_set(tmp_path: Path) -> None:
    frozen_tests.write_frozen(tmp_path, "abc", "d1", ["t::a"])
    lines, token = frozen_tests.review(tmp_path, "holdout_changed: …")
    assert lines and token == frozen_tests.HOLDOUT_CHANGED
    frozen_tests.approve(tmp_path, "holdout_changed: …")
    assert frozen_tests.read_frozen(tmp_path) is None


def test_the_holdout_digest_covers_names_and_bytes_and_refuses_links(tmp_path: Path) -> None:
    folder = tmp_path / "holdout"
    (folder / "sub").mkdir(parents=True)
    (folder / "test_a.py").write_text("x")
    first = frozen_tests.holdout_digest(folder)
    (folder / "test_a.py").write_text("y")
    assert frozen_tests.holdout_digest(folder) != first
    (folder / "test_a.py").rename(folder / "sub" / "test_a.py")
    moved = frozen_tests.holdout_digest(folder)
    assert moved not in (first,)
    os.symlink("/etc/passwd", folder / "link.py")
    with pytest.raises(OSError):
        frozen_tests.holdout_digest(folder)
    with pytest.raises(OSError):
        frozen_tests.holdout_digest(tmp_path / "missing")
