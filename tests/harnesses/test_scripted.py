"""The scripted fake harness: deterministic replay of recorded edits, in a process of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from automaton.core.errors import BadInput
from automaton.core.record import replace
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


def write_script(tmp_path: Path, doc: dict[str, object]) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(doc))
    return path


def test_the_replay_is_a_real_process_with_the_result_as_its_last_line(
        tmp_path: Path, make_req: Callable[..., HarnessRequest]) -> None:
    script = write_script(tmp_path, {"implement": [{"actions": [{"write": "a.txt", "content": "x"}],
                                                    "text": "two\nlines", "cost_usd": 0.25}]})
    req = make_req(args=(str(script),))
    argv = scripted.invocation(req).argv
    replay = str(Path(scripted.__file__).with_name("_replay.py"))
    assert argv == [sys.executable, "-P", "-S", replay, str(script), "implement", "1"]
    res = get("scripted").run(req)
    assert (res.exit_status, res.final_text, res.cost_usd, res.error) == (0, "two\nlines", 0.25, None)
    lines = req.transcript.read_text().splitlines()
    assert lines[:2] == ["scripted implement step 1", "write a.txt"]
    assert json.loads(lines[-1]) == {"text": "two\nlines", "cost_usd": 0.25, "exit_status": 0, "error": None}


def test_a_recorded_failure_is_the_process_exit_status(tmp_path: Path, make_req: Callable[..., HarnessRequest]) -> None:
    script = write_script(tmp_path, {"implement": [{"text": "", "exit_status": 3, "error": "model refused"}]})
    res = get("scripted").run(make_req(args=(str(script),)))
    assert (res.exit_status, res.error, res.unavailable) == (3, "model refused", None)


def test_an_edit_that_cannot_be_made_fails_the_step_without_a_traceback(
        tmp_path: Path, make_req: Callable[..., HarnessRequest]) -> None:
    script = write_script(tmp_path, {"implement": [{"actions": [{"replace": "missing.py", "old": "a", "new": "b"}],
                                                    "text": "edited", "cost_usd": 0.1}]})
    req = make_req(args=(str(script),))
    res = get("scripted").run(req)
    assert res.exit_status == 1 and res.cost_usd == 0.1
    assert res.error == "scripted harness: replace missing.py failed (No such file or directory)"
    assert "replace missing.py: failed (ENOENT)" in req.transcript.read_text()
    assert "Traceback" not in (req.run_dir / "implement.stderr.log").read_text()


def test_attempt_write_without_a_sandbox_writes_anywhere(tmp_path: Path,
                                                         make_req: Callable[..., HarnessRequest]) -> None:
    script = write_script(tmp_path, {"implement": [{"actions": [
        {"attempt_write": "../outside.txt", "content": "raised"},
        {"attempt_write": str(tmp_path / "absolute.txt"), "content": "raised"},
        {"attempt_write": "no-such-dir/x.txt", "content": "x"}], "text": "tried", "cost_usd": 0}]})
    req = make_req(args=(str(script),))
    res = get("scripted").run(req)
    assert res.exit_status == 0 and res.error is None
    assert (tmp_path / "outside.txt").read_text() == "raised" and (tmp_path / "absolute.txt").read_text() == "raised"
    log = req.transcript.read_text()
    assert "attempt_write ../outside.txt: written\n" in log
    assert f"attempt_write {tmp_path / 'absolute.txt'}: written\n" in log
    assert "attempt_write no-such-dir/x.txt: failed (ENOENT)\n" in log


def test_attempt_write_inside_the_kernel_sandbox_is_denied(tmp_path: Path,
                                                           make_req: Callable[..., HarnessRequest]) -> None:
    from automaton import sandbox
    from automaton.core.sandbox import Policy

    if not sandbox.available().ok:
        pytest.skip(f"no kernel sandbox here: {sandbox.available().detail}")
    brakes = tmp_path / "loop.json"
    brakes.write_text('{"max_iterations": 5}')
    script = write_script(tmp_path, {"implement": [{"actions": [
        {"write": "src/fix.py", "content": "ok\n"},
        {"attempt_write": "../loop.json", "content": '{"max_iterations": 9999}'}], "text": "done", "cost_usd": 0.5}]})
    req = make_req(args=(str(script),))
    tmp = tmp_path / "agent-tmp"
    res = get("scripted").run(replace(req, sandbox=Policy((req.cwd, tmp), tmpdir=tmp, label="test implement",
                                                          visible=(tmp_path,))))
    assert (res.exit_status, res.error, res.unavailable, res.cost_usd) == (0, None, None, 0.5)
    assert brakes.read_text() == '{"max_iterations": 5}'
    assert (req.cwd / "src/fix.py").read_text() == "ok\n"
    said = req.transcript.read_text()  # EROFS where the namespace layer shows the folder read-only
    assert any(f"attempt_write ../loop.json: denied ({e})\n" in said for e in ("EACCES", "EROFS")), said


def test_a_bad_attempt_write_is_bad_input_before_any_process(tmp_path: Path,
                                                             make_req: Callable[..., HarnessRequest]) -> None:
    script = write_script(tmp_path, {"implement": [{"actions": [{"attempt_write": 7}]}]})
    req = make_req(args=(str(script),))
    with pytest.raises(BadInput, match="attempt_write path 7"):
        get("scripted").run(req)
    assert not req.transcript.exists()


def test_the_replay_process_imports_only_what_it_needs(tmp_path: Path,
                                                      make_req: Callable[..., HarnessRequest]) -> None:
    # The argv the tick runs: the replay file by its path, so not even the package is imported.
    script = write_script(tmp_path, {"implement": [{"text": "hi", "cost_usd": 0}]})
    python, *flags = scripted.invocation(make_req(args=(str(script),))).argv
    done = subprocess.run([python, "-X", "importtime", *flags], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["text"] == "hi"
    modules = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    heavy = {m for m in modules if m.split(".")[0] in ("automaton", "rich", "subprocess", "threading", "filelock",
                                                       "pathspec", "dataclasses", "typing", "site")}
    assert heavy == set()


def test_the_replay_module_still_runs_as_the_package_module(tmp_path: Path) -> None:
    script = write_script(tmp_path, {"implement": [{"text": "hi", "cost_usd": 0}]})
    done = subprocess.run([sys.executable, "-P", "-m", "automaton.harnesses.scripted", str(script), "implement", "1"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and json.loads(done.stdout.splitlines()[-1])["text"] == "hi", done.stderr


@pytest.mark.parametrize("args", [[], ["s.json", "implement"], ["s.json", "implement", "zero"],
                                  ["s.json", "implement", "0"]])
def test_the_replay_entry_point_answers_bad_arguments_in_one_line(tmp_path: Path, args: list[str]) -> None:
    done = subprocess.run([sys.executable, "-P", "-m", "automaton.harnesses.scripted", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and done.stderr.startswith("usage:") and len(done.stderr.splitlines()) == 1


def test_a_script_that_vanished_is_reported_by_the_replay_itself(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-P", "-m", "automaton.harnesses.scripted", str(tmp_path / "gone.json"),
                           "implement", "1"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["error"] == f"scripted harness: script {tmp_path / 'gone.json'} not found"


@pytest.mark.parametrize(("doc", "message"), [
    (None, "script .* not found$"),
    ({"implement": [{"actions": [{"rename": "a"}]}]}, r"unknown action \['rename'\]: use one of write, append"),
    ({"implement": "not a list"}, "'implement' must be a list of steps"),
])
def test_an_unusable_script_is_bad_input_naming_it_once(tmp_path: Path, make_req: Callable[..., HarnessRequest],
                                                        doc: object, message: str) -> None:
    path = tmp_path / "script.json"
    if doc is not None:
        path.write_text(json.dumps(doc))
    with pytest.raises(BadInput, match=message) as info:
        get("scripted").run(make_req(args=(str(path),)))
    assert info.value.message.count(str(path)) == 1


def test_attempt_chmod_and_connect_without_a_sandbox_reach_outside(tmp_path: Path,
                                                                   make_req: Callable[..., HarnessRequest]) -> None:
    import socket
    import threading

    target = tmp_path / "readonly.txt"
    target.write_text("x")
    target.chmod(0o444)
    path = tmp_path / "human.sock"
    got: list[bytes] = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen(1)

        def accept() -> None:
            conn, _ = server.accept()
            with conn:
                got.append(conn.recv(100))

        waiter = threading.Thread(target=accept, daemon=True)
        waiter.start()
        script = write_script(tmp_path, {"implement": [{"actions": [
            {"attempt_chmod": "../readonly.txt"},
            {"attempt_connect": "../human.sock", "content": "run-shell"},
            {"attempt_connect": "../nobody.sock"}], "text": "tried", "cost_usd": 0}]})
        req = make_req(args=(str(script),))
        res = get("scripted").run(req)
        waiter.join(5)
    assert res.exit_status == 0 and res.error is None
    assert target.stat().st_mode & 0o777 == 0o777
    assert got == [b"run-shell"]
    log = req.transcript.read_text()
    assert "attempt_chmod ../readonly.txt: done\n" in log
    assert "attempt_connect ../human.sock: done\n" in log
    assert "attempt_connect ../nobody.sock: denied (ENOENT)\n" in log


def test_a_bad_attempt_chmod_is_bad_input_before_any_process(tmp_path: Path,
                                                             make_req: Callable[..., HarnessRequest]) -> None:
    script = write_script(tmp_path, {"implement": [{"actions": [{"attempt_chmod": ""}]}]})
    req = make_req(args=(str(script),))
    with pytest.raises(BadInput, match="attempt_chmod path ''"):
        get("scripted").run(req)
    assert not req.transcript.exists()
