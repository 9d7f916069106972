"""A loop written by the release before the typed loop state is read, verified and continued.

The fixture (tests/store/fixtures/prev_release/README.md says how it was made) holds the files
that release wrote: `.state.loop`, `.state.log` (keyed with `home/key`), loop.json and its
sealed copy, runs/1..4, and the log's keyed mark and anchor. The file formats never change:
the state parses to the same bytes, the log verifies, and the next writes chain onto it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from automaton.commands import loops as loop_cmds
from automaton.commands.human import Human
from automaton.commands.loop_gate import check_gate
from automaton.core.chain import verify_text
from automaton.core.loopstate import Verdict, usd_to_micro
from automaton.runner.tick import tick
from automaton.store import key, loops
from automaton.store.layout import Project

FIXTURE = Path(__file__).parent / "fixtures" / "prev_release"
PY = sys.executable


def _install(project: Path) -> Project:
    """The fixture's loop as loop `demo` of `project`, its key under the test HOME's
    ~/.config/automaton, and its mark and anchor written for the loop's path here."""
    p = Project(project.resolve())
    folder = p.loops_dir / "demo"
    shutil.copytree(FIXTURE / "loop", folder)
    home = Path(os.environ["HOME"]) / ".config" / "automaton"
    home.mkdir(parents=True, mode=0o700)
    shutil.copyfile(FIXTURE / "home" / "key", home / "key")
    (home / "key").chmod(0o600)
    key.forget()
    log = folder / loops.LOG_FILE
    mark = key.mark_path(log)
    mark.parent.mkdir(mode=0o700, exist_ok=True)
    here = os.path.realpath(log)
    mark.write_text((FIXTURE / "home" / "log.mark").read_text().replace("@LOG@", here))
    anchor = mark.with_name(mark.name + ".anchor")
    anchor.write_text((FIXTURE / "home" / "log.anchor").read_text().replace("@LOG@", here))
    for f in (mark, anchor):
        f.chmod(0o600)
    return p


def test_the_previous_release_state_parses_to_the_same_bytes_and_verifies(project: Path) -> None:
    p = _install(project)
    rec = loops.inspect(p, "demo")
    assert rec.tamper == "" and rec.chain.ok and len(rec.chain.lines) == 13
    s = rec.state
    assert (s.status, s.halt_reason, s.halt_detail) == ("halted", "human_intervention",
                                                        "halted by a human for the fixture")
    assert (s.iteration_count, s.resumed_count, s.iterations_at_approval) == (4, 1, 3)
    # USD as the file holds it, 6 places, in integer micro-USD
    assert (s.spent_micro_usd, s.spent_micro_usd_at_approval) == (1_508_333, 1_458_333)
    assert s.spent_micro_usd == usd_to_micro(1.508333) and s.spent_usd == 1.508333
    assert s.last_verdict == Verdict(0.75, False, False, "3/4 passed", "summary")
    assert s.score_history == (0.75,) and s.accepted_drift == () and s.worktree_path is None
    data = (p.loops_dir / "demo" / loops.STATE_FILE).read_bytes()
    assert loops.encode_state(s) == data  # written back byte for byte
    assert verify_text((p.loops_dir / "demo" / loops.LOG_FILE).read_text(), key.load_key(create=False)).ok


def test_the_previous_release_loop_is_approved_ticked_and_continues(project: Path) -> None:
    p = _install(project)
    # Its verify command names the interpreter of the checkout that wrote it: a human points it
    # at this one, and the approval shows that diff and seals it.
    config = p.loops_dir / "demo" / loops.CONFIG_FILE
    text = config.read_text()
    wrote = json.loads(text)["roles"]["verify"]["command"][0]
    assert text.count(json.dumps(wrote)) == 1
    config.write_text(text.replace(json.dumps(wrote), json.dumps(PY)))
    human = Human("tests", "tests")
    out = loop_cmds.approve_loop(p, "demo", loop_cmds.review_loop(p, "demo", human=human), human=human)
    assert out.ok, out.lines
    s = loops.read_state(p, "demo")
    assert (s.status, s.resumed_count, s.iterations_at_approval, s.spent_micro_usd_at_approval) == (
        "running", 2, 4, 1_508_333)
    assert check_gate(p, "demo").ok
    ran = tick(p, "demo")  # the scripted harness's fifth step: "4 passed", $0.01
    assert ran.code == 0, ran.lines
    s = loops.read_state(p, "demo")
    assert (s.iteration_count, s.spent_micro_usd, s.last_verdict and s.last_verdict.score) == (5, 1_518_333, 1.0)
    loop = loops.Loop.resolve(p, "demo")
    rec = loop.inspect()
    # A loop without a worktree now records the checkout's HEAD as its base on its first tick
    # here (WORKTREE), so the drift gate judges every change since then.
    events = [line.event for line in rec.chain.lines[13:]]
    assert rec.tamper == "" and events == ["APPROVED", "WORKTREE", "TICK_START", "TICK"]
    last = rec.chain.lines[-1]
    assert (last.fields["iterations"], last.fields["spent_usd"], last.fields["spent_usd_at_approval"]) == (
        "5", "1.518333", "1.508333")
    assert verify_text(loop.log_file.read_text(), key.load_key(create=False)).ok
