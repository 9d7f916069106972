"""The scripted fake harness: deterministic replay of recorded edits."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from automaton.core.errors import BadInput
from automaton.harnesses import HarnessRequest, get, scripted

SCRIPT = {"implement": [
    {"actions": [{"write": "src/a.py", "content": "x = 1\n"}], "text": "wrote a", "cost_usd": 0.05},
    {"actions": [{"replace": "src/a.py", "old": "1", "new": "2"}, {"append": "notes.md", "content": "hi"}],
     "text": "edited"},
]}


def test_replays_each_iteration(tmp_path: Path, make_req: Callable[..., HarnessRequest]) -> None:
    loop = tmp_path / "loop"
    loop.mkdir()
    (loop / "script.json").write_text(json.dumps(SCRIPT))
    h = get("scripted")
    first = h.run(make_req(args=("script.json",), loop_dir=loop, iteration=1))
    work = make_req().cwd
    assert (work / "src/a.py").read_text() == "x = 1\n"
    assert first.final_text == "wrote a" and first.cost_usd == 0.05
    second = h.run(make_req(args=("script.json",), loop_dir=loop, iteration=2))
    assert (work / "src/a.py").read_text() == "x = 2\n" and (work / "notes.md").read_text() == "hi"
    assert second.cost_usd is None  # a step without cost_usd reports an unknown cost
    assert "replace src/a.py" in make_req().transcript.read_text()
    third = h.run(make_req(args=("script.json",), loop_dir=loop, iteration=3))
    assert third.cost_usd == 0.0 and "nothing left" in third.final_text


def test_paths_must_stay_inside_the_worktree(tmp_path: Path, make_req: Callable[..., HarnessRequest]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"implement": [{"actions": [{"write": "../escape.txt", "content": "x"}]}]}))
    with pytest.raises(BadInput, match="inside the worktree"):
        get("scripted").run(make_req(args=(str(bad),)))
    assert not (tmp_path / "escape.txt").exists()


def test_packaged_scripts_resolve(make_req: Callable[..., HarnessRequest]) -> None:
    path = scripted.script_path(make_req(args=("pkg:ci-triage-demo",)))
    assert path.is_file(), path
    with pytest.raises(BadInput, match="invalid packaged script"):
        scripted.script_path(make_req(args=("pkg:../x",)))


def test_missing_args_is_bad_input(make_req: Callable[..., HarnessRequest]) -> None:
    with pytest.raises(BadInput, match=r"harness\.args\[0\]"):
        get("scripted").run(make_req())
