"""The bound on the verifier's kept exports across loops (runner/exportcache.py): past it a
tick exports into its temp folder and says so in one line naming the folder and the setting."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from automaton.runner import exportcache, verify
from automaton.store.layout import kept_export_of, kept_exports_dir
from tests.runner.test_verify_kept import cfg, repo  # noqa: F401 (a fixture)

MIB = 1 << 20


def test_the_sizes_of_every_kept_export_count_against_the_bound(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    top = tmp_path / "exports"
    top.mkdir()
    mine, other = top / "a", top / "b"
    monkeypatch.setenv(exportcache.SETTING, "10")
    exportcache.record(other, 6 * MIB)
    assert exportcache.over_bound(mine) is None  # its own size unknown yet: 6 MiB of 10
    exportcache.record(mine, 4 * MIB)
    assert exportcache.over_bound(mine) is None  # exactly the bound
    exportcache.record(mine, 4 * MIB + 1)
    line = exportcache.over_bound(mine)
    assert line is not None and str(top) in line and "AUTOMATON_EXPORTS_MAX_MB=10" in line and "\n" not in line
    monkeypatch.setenv(exportcache.SETTING, "0")
    assert exportcache.over_bound(tmp_path / "exports" / "c") is not None  # 0 keeps none


@pytest.mark.parametrize("value", ["ten", "-1", "1.5", "١٢"])
def test_a_bad_setting_is_one_line_naming_it_never_a_failure(value: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(exportcache.SETTING, value)
    line = exportcache.over_bound(tmp_path / "x")
    assert line is not None and f"AUTOMATON_EXPORTS_MAX_MB={value!r}" in line and "\n" not in line


def test_the_size_file_holds_only_a_number(tmp_path: Path) -> None:
    exportcache.size_file(tmp_path / "x").write_text("lots\n")
    assert exportcache.recorded(tmp_path / "x") == 0
    assert exportcache.recorded(tmp_path / "missing") == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kept only where a subreaper exists")
def test_past_the_bound_a_tick_exports_into_its_temp_folder_and_says_so(
        repo: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    path, base = repo
    notes: list[str] = []
    where = verify.place(cfg(), path, base, base, tmp_path / "t", path, notes)
    assert where.cwd == kept_export_of(path, "demo") and notes == []
    assert exportcache.recorded(where.cwd) > 0  # its size, recorded after the refresh
    exportcache.record(kept_exports_dir() / "another-loop", 5 * MIB)
    monkeypatch.setenv(exportcache.SETTING, "4")
    again = verify.place(cfg(), path, base, base, tmp_path / "t", path, notes)
    assert again.cwd == tmp_path / "t" / "verify-tree" and again.idle is None
    assert (again.cwd / "conftest.py").read_text() == "# base\n"
    assert len(notes) == 1 and str(kept_exports_dir()) in notes[0] and "AUTOMATON_EXPORTS_MAX_MB=4" in notes[0]
    assert not where.cwd.exists()  # the loop's own kept export is removed, its size still counted
    assert exportcache.recorded(where.cwd) > 0


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="needs FIFOs")
@pytest.mark.timeout(20)
def test_a_fifo_in_place_of_a_size_file_counts_as_nothing_and_never_hangs(tmp_path: Path) -> None:
    import os

    os.mkfifo(exportcache.size_file(tmp_path / "x"))
    assert exportcache.recorded(tmp_path / "x") == 0
