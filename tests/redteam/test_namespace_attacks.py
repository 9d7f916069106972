"""What Landlock alone left open to the agent of a tick, closed by the namespace layer.

S18: connect to the human's tmux server (a UNIX socket in /tmp) and have it run a command
outside the sandbox. S19: chmod the main checkout's files and `.git/config` (Landlock does not
mediate chmod/chown/utime/setxattr). S20: where namespaces are missing the tick refuses, unless
the sealed loop.json says `"isolation": "landlock-only"`, and then it warns.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from automaton.runner.tick import tick
from automaton.sandbox import available, namespaces_work
from automaton.store import loops as store
from tests.helpers import socket_in_tmp
from tests.redteam.conftest import Looped, gate, loop_dir
from tests.redteam.test_sandbox_attacks import PASSING, agent, second_tick, transcript

needs_namespaces = pytest.mark.skipif(not sys.platform.startswith("linux") or not namespaces_work(),
                                      reason=f"no user namespaces here: {available().isolation_detail}")


@pytest.fixture
def tmux_like() -> Iterator[tuple[Path, list[bytes]]]:
    """A UNIX socket server in /tmp/automaton-tmux-*/default that records what it is sent
    (a tmux server would run it)."""
    with socket_in_tmp("automaton-tmux-") as server:
        yield server


@needs_namespaces
def test_s18_the_humans_tmux_socket_is_out_of_reach(looped: Looped, tmp_path: Path,
                                                     tmux_like: tuple[Path, list[bytes]]) -> None:
    path, got = tmux_like
    proj, _ = looped(harness=agent(tmp_path, f"""
        import socket
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect({str(path)!r})
            s.sendall(b'run-shell "touch /tmp/escaped"')
            print('connected')
        except OSError as exc:
            print('denied', errno.errorcode.get(exc.errno))
    """), roles=PASSING)
    second_tick(proj)
    assert "denied ENOENT" in transcript(proj), transcript(proj)
    assert got == []


@needs_namespaces
def test_s19_modes_of_the_main_checkout_and_git_config_stay(looped: Looped, tmp_path: Path) -> None:
    proj, _ = looped(harness=agent(tmp_path, """
        for p in (main / 'README.md', main / '.git' / 'config', loop / 'loop.json'):
            for what, fn in (('chmod', lambda: os.chmod(p, 0o777)), ('utime', lambda: os.utime(p, (0, 0))),
                             ('xattr', lambda: os.setxattr(p, 'user.x', b'1'))):
                try:
                    fn()
                    print('changed', what, p)
                except OSError as exc:
                    print('denied', what, errno.errorcode.get(exc.errno))
    """), roles=PASSING)
    before = {p: os.stat(p) for p in (proj.root / "README.md", proj.root / ".git" / "config")}
    second_tick(proj)
    log = transcript(proj)
    assert "changed" not in log and log.count("denied") == 9 and log.count("EROFS") == 9, log
    for p, st in before.items():
        now = os.stat(p)
        assert (stat.S_IMODE(now.st_mode), now.st_mtime_ns) == (stat.S_IMODE(st.st_mode), st.st_mtime_ns)


def test_s20_no_namespaces_no_tick_unless_landlock_only(looped: Looped, monkeypatch: pytest.MonkeyPatch) -> None:
    if not available().ok:
        pytest.skip(f"no kernel sandbox here: {available().detail}")
    proj, _ = looped(roles=PASSING)
    monkeypatch.setenv("AUTOMATON_NAMESPACES_UNAVAILABLE", "1")
    before = store.read_state(proj, "demo")
    out = tick(proj, "demo")
    assert out.code == 1 and out.data is not None and out.data["reason"] == "sandbox_unavailable"
    assert "UNIX sockets in /tmp and /run" in out.lines[0] and '"isolation": "landlock-only"' in out.lines[0]
    assert store.read_state(proj, "demo").iteration_count == before.iteration_count

    doc = json.loads((loop_dir(proj) / "loop.json").read_text())
    doc["isolation"] = "landlock-only"
    (loop_dir(proj) / "loop.json").write_text(json.dumps(doc))
    assert gate(proj).json["halt_reason"] == "human_intervention"  # sealed like a brake


def test_s20_landlock_only_runs_and_says_what_stays_open(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.runner.loopkit import make_loop

    if not available().ok:
        pytest.skip(f"no kernel sandbox here: {available().detail}")
    monkeypatch.setenv("AUTOMATON_NAMESPACES_UNAVAILABLE", "1")
    proj = make_loop(project, isolation="landlock-only", roles=PASSING)
    out = tick(proj, "demo")
    assert out.code == 0, out.lines
    [line] = [w for w in out.warnings if "landlock-only" in w]
    assert line.startswith('loop demo: "isolation": "landlock-only" and ') and "chmod/chown/utime/xattr" in line
