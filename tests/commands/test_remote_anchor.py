"""The anti-rollback anchor of a loop's log in the state remote (commands/remote_anchor.py):
a bare repository as the remote, fresh clones as runners (each its own HOME), and someone with
push rights who moves the refs back or edits the anchor."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from automaton.commands import remote_anchor, remote_manifest, remote_state
from automaton.core.chain import line_hash
from automaton.git import remote as git_remote
from tests.helpers import git, run_cli
from tests.runner import fleetkit as fk
from tests.runner.loopkit import make_loop

STATE = f"refs/automaton/loops/{fk.LOOP}"
ANCHOR = f"refs/automaton/anchors/{fk.LOOP}"
KEY = bytes.fromhex(fk.KEY)




def _ran(done: subprocess.CompletedProcess[str]) -> bool:
    return done.returncode == 0 and '"ran": true' in done.stdout


def _ref(fleet: fk.Fleet, ref: str) -> str:
    return git(fleet.bare, "rev-parse", ref).strip()


def _anchored(fleet: fk.Fleet) -> dict[str, str]:
    rows = git(fleet.bare, "show", f"{ANCHOR}:anchor").splitlines()
    assert rows[0] == remote_anchor.VERSION
    return {name: value for name, _, value in (row.partition(" ") for row in rows[1:])}


def _remote_log(fleet: fk.Fleet) -> list[str]:
    return git(fleet.bare, "show", f"{STATE}:.state.log").splitlines()


def _forge(bare: Path, files: dict[str, str], parent: str) -> str:
    """A commit in `bare` whose tree is `files`, with `parent` (what a pusher can make)."""
    def run(args: list[str], stdin: str = "") -> str:
        done = subprocess.run(["git", *args], cwd=bare, input=stdin, capture_output=True, text=True, check=True)
        return done.stdout.strip()
    entries = "".join(f"100644 blob {run(['hash-object', '-w', '--stdin'], text)}\t{name}\n"
                      for name, text in files.items())
    tree = run(["mktree"], entries)
    return run(["-c", "user.name=x", "-c", "user.email=x@x", "commit-tree", tree, "-p", parent, "-m", "forged"])


def test_every_publish_moves_the_anchor_to_the_log_it_pushed(fleet: fk.Fleet) -> None:
    first = _ref(fleet, ANCHOR)
    assert _ran(fk.tick(fleet.clones[0], fleet.homes[0]))
    anchor, log = _anchored(fleet), _remote_log(fleet)
    assert anchor["loop"] == fk.LOOP and anchor["state"] == _ref(fleet, STATE)
    assert int(anchor["count"]) == len(log) and anchor["head"] == line_hash(log[-1])
    # the claim and the settled state each moved it, always as a fast-forward
    chain = git(fleet.bare, "rev-list", "--first-parent", f"{first}..{ANCHOR}").split()
    assert len(chain) == 2
    assert git(fleet.bare, "rev-parse", f"{chain[0]}^2").strip() == anchor["state"]


def test_a_state_and_its_anchor_land_together_or_not_at_all(fleet: fk.Fleet) -> None:
    state, anchor = _ref(fleet, STATE), _ref(fleet, ANCHOR)
    hook = fleet.bare / "hooks" / "pre-receive"  # the remote refuses any move of the anchor ref
    hook.write_text("#!/bin/sh\nif grep -q 'refs/automaton/anchors/'; then echo 'policy: no anchors' >&2; exit 1; fi\n")
    hook.chmod(0o755)
    out = fk.tick(fleet.clones[0], fleet.homes[0])
    assert out.returncode == 1 and '"reason": "remote_refused"' in out.stdout, out.stdout + out.stderr
    assert (_ref(fleet, STATE), _ref(fleet, ANCHOR)) == (state, anchor)
    assert not (fleet.clones[0] / ".automaton" / "loops" / fk.LOOP / "runs" / "2").exists()
    hook.unlink()
    assert _ran(fk.tick(fleet.clones[0], fleet.homes[0]))


def test_a_state_ref_forced_back_under_its_anchor_stops_a_fresh_runner(fleet: fk.Fleet) -> None:
    older = _ref(fleet, STATE)
    assert _ran(fk.tick(fleet.clones[0], fleet.homes[0]))
    newer = _ref(fleet, STATE)
    git(fleet.bare, "update-ref", STATE, older)  # a force-push by someone with push rights
    out = fk.tick(fleet.clones[1], fleet.homes[1])
    assert out.returncode == 2 and '"ran": true' not in out.stdout, out.stdout + out.stderr
    assert f"the state ref {STATE} on 'origin' (commit {older[:12]}) is older than its anchor {ANCHOR}" in out.stderr
    assert "nothing was run" in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert _ref(fleet, STATE) == older
    assert not (fleet.clones[1] / ".automaton" / "loops" / fk.LOOP / "runs" / "2").exists()
    # What the line tells a human to do works from the refused clone (the anchor keeps the newer commit).
    hint = f"git push --force origin {newer}:{STATE}"
    assert hint in out.stderr
    git(fleet.clones[1], *hint.split()[1:])
    again = fk.tick(fleet.clones[1], fleet.homes[1])
    assert _ran(again), again.stderr
    assert json.loads(git(fleet.bare, "show", f"{STATE}:.state.loop"))["iteration_count"] == 3


@pytest.mark.parametrize("edit", ["count", "mac", "garbage", "extra_file", "other_loop"])
def test_an_edited_or_unkeyed_anchor_is_refused(fleet: fk.Fleet, edit: str) -> None:
    tip = _ref(fleet, ANCHOR)
    text = git(fleet.bare, "show", f"{ANCHOR}:anchor")
    anchor = _anchored(fleet)
    log = git(fleet.bare, "show", f"{STATE}:.state.log").encode()
    files = {"anchor": text}
    if edit == "count":  # an older count, the mac left as it was
        files["anchor"] = text.replace(f"count {anchor['count']}\n", "count 1\n")
    elif edit == "mac":
        files["anchor"] = text.replace(anchor["mac"], "0" * 64)
    elif edit == "garbage":
        files["anchor"] = "hello\n"
    elif edit == "extra_file":
        files["more"] = "x\n"
    else:  # another loop's anchor, made with the key: bound to its loop's name
        files["anchor"] = remote_anchor.make(KEY, "other", log, anchor["state"]).text()
    git(fleet.bare, "update-ref", ANCHOR, _forge(fleet.bare, files, tip))
    out = fk.tick(fleet.clones[0], fleet.homes[0])
    assert out.returncode == 2 and '"ran": true' not in out.stdout, out.stdout + out.stderr
    assert f"the anchor {ANCHOR} on 'origin'" in out.stderr and "does not verify" in out.stderr, out.stderr
    why = {"count": "its mac does not verify", "mac": "its mac does not verify", "other_loop": "anchor of loop 'other'"}
    assert why.get(edit, "not an anchor automaton wrote") in out.stderr
    assert not (fleet.clones[0] / ".automaton" / "loops" / fk.LOOP / "runs" / "2").exists()


def test_human_acts_through_the_remote_move_the_anchor(fleet: fk.Fleet) -> None:
    for verb in ("--pause-loop", "--resume-loop"):
        before = _ref(fleet, ANCHOR)
        done = run_cli(verb, fk.LOOP, "--state-remote", "origin", "--project", str(fleet.clones[1]))
        assert done.code == 0, done.err
        after, anchor, log = _ref(fleet, ANCHOR), _anchored(fleet), _remote_log(fleet)
        assert after != before and git(fleet.bare, "rev-parse", f"{after}^1").strip() == before
        assert anchor["state"] == _ref(fleet, STATE) and int(anchor["count"]) == len(log)
        assert anchor["head"] == line_hash(log[-1])
    assert _ran(fk.tick(fleet.clones[0], fleet.homes[0]))


def test_an_approval_through_the_remote_moves_the_anchor(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> None:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    fleet = fk.make_fleet(tmp_path, 2, max_iterations=1)
    assert _ran(fk.tick(fleet.seed, Path(os.environ["HOME"])))
    halted = fk.tick(fleet.clones[0], fleet.homes[0])  # the gate halts the loop and pushes the halt
    assert halted.returncode == 1, halted.stderr
    before = _ref(fleet, ANCHOR)
    approved = run_cli("--approve", "--loop", fk.LOOP, "--yes", "--state-remote", "origin",
                       "--project", str(fleet.clones[1]))
    assert approved.code == 0, approved.out + approved.err
    anchor, log = _anchored(fleet), _remote_log(fleet)
    assert _ref(fleet, ANCHOR) != before and anchor["state"] == _ref(fleet, STATE)
    assert int(anchor["count"]) == len(log) and " APPROVED " in log[-1]


def _second_loop(fleet: fk.Fleet, name: str) -> None:
    make_loop(fleet.seed, name, harness={"name": "command", "command": [fk.PY, "-c", fk.AGENT], "args": [],
                                         "timeout_s": 60},
              sandbox="off", brakes={"max_iterations": 1000, "max_budget_usd": 5000.0, "max_tick_usd": 1.0,
                                     "score_plateau_window": 3, "plateau_epsilon": 0.0, "target_score": 1.0},
              roles={"implement": {"prompt": "implement.md"}, "verify": {"command": [fk.PY, "-c", fk.VERIFY],
                                                                          "score": "summary"},
                     "orchestrate": {"builtin": True}})
    assert _ran(fk.tick(fleet.seed, Path(os.environ["HOME"]), name))


def test_another_loops_publish_never_costs_this_loops_claim(fleet: fk.Fleet) -> None:
    _second_loop(fleet, "other")
    # Interleaved: this loop fetched, the other loop's tick lands, then this loop's push.
    synced = remote_state.sync_in(fk.project(fleet.clones[0]), fk.LOOP, "origin")
    assert _ran(fk.tick(fleet.clones[1], fleet.homes[1], "other"))
    got = remote_state.publish(synced, "automaton: test publish", with_branch=False)
    assert got.landed and not got.lost, got.detail
    assert _anchored(fleet)["state"] == _ref(fleet, STATE) == got.commit
    # Together: each loop's runner lands its claim.
    procs = [subprocess.Popen([name if a == fk.LOOP else a for a in fk.runner_argv(clone)], env=fk.runner_env(home),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name, clone, home in ((fk.LOOP, fleet.clones[0], fleet.homes[0]),
                                       ("other", fleet.clones[1], fleet.homes[1]))]
    results = [(*p.communicate(timeout=300), p.returncode) for p in procs]
    assert all(code == 0 and '"ran": true' in out for out, _, code in results), results


def test_a_remote_from_before_anchors_is_adopted_and_its_anchor_then_required(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> None:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    fleet = fk.make_fleet(tmp_path, 2)
    # A state commit without an anchor ref: the loop folder, sealed (sealed/state-files), as a
    # human's re-seal of a state from before both publishes it.
    folder = fleet.seed / ".automaton" / "loops" / fk.LOOP
    files = remote_manifest.sealed(fk.LOOP, remote_state.durable_files(folder))
    before = git_remote.write_commit(fleet.seed, files, None, "old release")
    assert git_remote.push(fleet.seed, "origin", [git_remote.Move(STATE, before, None)]).landed
    assert _ran(fk.tick(fleet.clones[0], fleet.homes[0]))
    log = _remote_log(fleet)
    marks = [i for i, line in enumerate(log, 1) if " WARNING " in line and "reason=remote_anchored" in line]
    assert len(marks) == 1 and f"ref={ANCHOR}" in log[marks[0] - 1]
    assert int(_anchored(fleet)["count"]) == len(log)
    # The anchor deleted after that: refused, never adopted again.
    git(fleet.bare, "update-ref", "-d", ANCHOR)
    out = fk.tick(fleet.clones[1], fleet.homes[1])
    assert out.returncode == 2 and '"ran": true' not in out.stdout, out.stdout + out.stderr
    assert f"has no {ANCHOR}, although line {marks[0]} of the log says the loop was anchored there" in out.stderr
    # The bounded residual: the anchor deleted and the state moved back to before the first
    # anchored publish. A fresh runner adopts it; the runner that pushed since keeps its record.
    git(fleet.bare, "update-ref", STATE, before)
    kept = fk.tick(fleet.clones[0], fleet.homes[0])
    assert kept.returncode == 2 and "holds an older state than this machine fetched or pushed before" in kept.stderr
    assert _ran(fk.tick(fleet.clones[1], fleet.homes[1]))


def test_both_refs_moved_back_together_stop_a_runner_that_kept_its_record(fleet: fk.Fleet) -> None:
    assert _ran(fk.tick(fleet.clones[0], fleet.homes[0]))
    state, anchor = _ref(fleet, STATE), _ref(fleet, ANCHOR)
    assert _ran(fk.tick(fleet.clones[0], fleet.homes[0]))
    git(fleet.bare, "update-ref", STATE, state)
    git(fleet.bare, "update-ref", ANCHOR, anchor)
    kept = fk.tick(fleet.clones[0], fleet.homes[0])
    assert kept.returncode == 2 and '"ran": true' not in kept.stdout, kept.stdout + kept.stderr
    assert "holds an older state than this machine fetched or pushed before" in kept.stderr, kept.stderr
    assert ".remote" in kept.stderr and _ref(fleet, STATE) == state
    # The residual SECURITY.md names: a fresh runner cannot tell a consistent older pair.
    assert _ran(fk.tick(fleet.clones[1], fleet.homes[1]))


def test_a_state_ref_deleted_under_its_anchor_is_refused(fleet: fk.Fleet) -> None:
    git(fleet.bare, "update-ref", "-d", STATE)
    out = fk.tick(fleet.seed, Path(os.environ["HOME"]))  # the checkout that has the loop folder
    assert out.returncode == 2 and f"holds {ANCHOR} but no {STATE}" in out.stderr, out.stdout + out.stderr
    assert git(fleet.bare, "for-each-ref", STATE) == ""


def test_the_anchor_binds_loop_count_and_head_under_the_key() -> None:
    log = b"line one\nline two\n"
    made = remote_anchor.make(KEY, "demo", log, "c" * 40)
    assert made.count == 2 and made.head == line_hash("line two")
    assert remote_anchor.parse(made.text().encode(), KEY, "demo") == made
    assert remote_anchor.parse(made.text().encode(), bytes(32), "demo") == "its mac does not verify with the record key"
    for forged in (made.text().replace(made.mac, "é" * 64), made.text().replace("count 2", "count ²")):
        assert remote_anchor.parse(forged.encode(), KEY, "demo") == "not an anchor automaton wrote"
    assert remote_anchor.held_by(made, log) == "" and remote_anchor.held_by(made, log + b"line three\n") == ""
    assert "has 1 lines" in remote_anchor.held_by(made, b"line one\n")
    assert "line 2 of its log is not" in remote_anchor.held_by(made, b"line one\nline 2\n")
