"""pipes: the capped sink keeps the tail; a pump copies a pipe until end of file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from automaton.sandbox.pipes import Pump, Sink, finish


def test_the_sink_keeps_the_last_cap_bytes(tmp_path: Path) -> None:
    data = b"".join(b"%06d\n" % i for i in range(10000))  # 70,000 bytes
    with Sink(tmp_path / "out", 1000) as sink:
        for i in range(0, len(data), 333):
            sink.write(data[i:i + 333])
            assert (tmp_path / "out").stat().st_size < 2000 + 333
    assert (tmp_path / "out").read_bytes() == data[-1000:]
    assert sink.dropped == len(data) - 1000


def test_under_the_cap_nothing_is_dropped(tmp_path: Path) -> None:
    with Sink(tmp_path / "out", 100) as sink:
        sink.write(b"hello")
    assert (tmp_path / "out").read_bytes() == b"hello" and sink.dropped == 0


def test_cap_below_one_is_a_programming_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        Sink(tmp_path / "out", 0)


def test_a_pump_copies_until_end_of_file_and_a_held_pipe_is_given_up(tmp_path: Path) -> None:
    r, w = os.pipe()
    with Sink(tmp_path / "out", 1 << 20) as sink:
        pump = Pump(r, sink)
        os.write(w, b"abc")
        finish([pump], 0.3)  # w is still open (a holder out of reach): given up after 0.3 s
    assert (tmp_path / "out").read_bytes() == b"abc"
    with pytest.raises(BrokenPipeError):
        os.write(w, b"more")  # the read end is closed
    os.close(w)
