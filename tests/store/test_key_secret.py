"""The record key handed in as a secret (`$AUTOMATON_RECORD_KEY`, `$AUTOMATON_RECORD_KEY_FILE`):
used as given, never created or copied to disk, refused when bad (without echoing it), and
withheld (`$AUTOMATON_RECORD_KEY_WITHHELD`) reads as a hidden key."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from automaton.core.errors import BadInput, CorruptState
from automaton.store import chainlog, key

HEX = "0123456789abcdef" * 4


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    key.forget()
    yield
    key.forget()


def key_file(tmp_path: Path, text: str = HEX + "\n", mode: int = 0o400) -> Path:
    path = tmp_path / "secret" / "record-key"
    path.parent.mkdir()
    path.write_text(text)
    path.chmod(mode)
    return path


def test_a_key_from_the_environment_seals_logs_and_is_never_written(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", HEX)
    assert key.load_key(create=True) == bytes.fromhex(HEX)
    log = tmp_path / ".state.log"
    chainlog.append_event(log, "CREATED", {}, "new")
    assert " mac=" in log.read_text() and chainlog.read_chain(log).ok
    assert not key.key_path().exists()  # never copied to disk
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", "f" * 64)  # another key: the macs no longer verify
    assert not chainlog.read_chain(log).ok


def test_a_key_file_is_read_and_never_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = key_file(tmp_path)
    monkeypatch.setenv("AUTOMATON_RECORD_KEY_FILE", str(path))
    assert key.load_key(create=False) == bytes.fromhex(HEX)
    key.forget()
    missing = tmp_path / "nowhere" / "key"
    monkeypatch.setenv("AUTOMATON_RECORD_KEY_FILE", str(missing))
    with pytest.raises(BadInput, match="does not exist"):
        key.load_key(create=True)
    assert not missing.exists() and not key.key_path().exists()


def test_the_variable_comes_before_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY_FILE", str(key_file(tmp_path, "a" * 64 + "\n")))
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", HEX)
    assert key.load_key(create=False) == bytes.fromhex(HEX)


@pytest.mark.parametrize("value", ["abc", HEX.upper(), HEX + "00", "not a key at all, but a secret"])
def test_a_bad_key_variable_is_refused_without_echoing_it(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", value)
    with pytest.raises(CorruptState) as caught:
        key.load_key(create=True)
    assert "$AUTOMATON_RECORD_KEY" in caught.value.message and value not in caught.value.message


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
def test_a_key_file_every_user_can_read_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY_FILE", str(key_file(tmp_path, mode=0o644)))
    with pytest.raises(BadInput, match="lets every user see"):
        key.load_key(create=False)


def test_a_relative_key_file_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY_FILE", "record-key")
    with pytest.raises(BadInput, match="not an absolute path"):
        key.load_key(create=False)


def test_a_withheld_key_reads_as_hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the runner withheld a handed-in key, its agent's processes (the hook among them)
    read keyed lines on their chain alone and write nothing, as under a hidden key folder;
    without the marker a missing key would read as tampering."""
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", HEX)
    log = tmp_path / ".state.log"
    chainlog.append_event(log, "CREATED", {}, "new")
    monkeypatch.delenv("AUTOMATON_RECORD_KEY")
    assert not chainlog.read_chain(log).ok  # no key at all: keyed lines cannot be trusted
    monkeypatch.setenv("AUTOMATON_RECORD_KEY_WITHHELD", "1")
    check = chainlog.read_chain(log)
    assert check.ok and check.unverified
    with pytest.raises(key.KeyHidden):
        chainlog.append_event(log, "TRANSITION", {}, "research")


def test_the_names_are_the_ones_the_runner_withholds() -> None:
    from automaton.core.secrets import RECORD_KEY_ENV, RECORD_KEY_WITHHELD

    assert (key.KEY_ENV, key.KEY_FILE_ENV) == RECORD_KEY_ENV and key.WITHHELD_ENV == RECORD_KEY_WITHHELD
