"""A loop's state in a git remote (commands/remote_state.py, git/remote.py): human acts from
another clone, a fetched state that must verify with the key, a flag against the sealed field,
and the compare-and-swap push against a real bare repository."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from automaton.commands import remote_state as rs
from automaton.git import remote as git_remote
from tests.commands.conftest import LostLeases
from tests.helpers import git, run_cli
from tests.runner import fleetkit as fk


def _remote_state(fleet: fk.Fleet) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(git(fleet.bare, "show", f"refs/automaton/loops/{fk.LOOP}:.state.loop"))
    return loaded


def test_a_pause_from_another_clone_stops_the_next_runner_and_a_resume_lets_it_run(fleet: fk.Fleet) -> None:
    third = fleet.clones[1]
    paused = run_cli("--pause-loop", fk.LOOP, "--state-remote", "origin", "--project", str(third))
    assert paused.code == 0, paused.err
    assert _remote_state(fleet)["status"] == "paused"
    stopped = fk.tick(fleet.clones[0], fleet.homes[0])
    assert stopped.returncode == 1 and '"ran": false' in stopped.stdout, stopped.stderr
    resumed = run_cli("--resume-loop", fk.LOOP, "--state-remote", "origin", "--project", str(third))
    assert resumed.code == 0, resumed.err
    again = fk.tick(fleet.clones[0], fleet.homes[0])
    assert again.returncode == 0 and '"ran": true' in again.stdout, again.stderr
    assert _remote_state(fleet)["iteration_count"] == 2


def test_a_human_act_that_keeps_losing_its_lease_gives_up_after_the_bound_in_seconds(
        fleet: fk.Fleet, lost_leases: Callable[[], LostLeases]) -> None:
    """Fetched, applied and pushed again after each lost lease, with a wait between; exit 1 with
    one line once the bound has passed, nothing changed on the remote."""
    lost = lost_leases()
    paused = run_cli("--pause-loop", fk.LOOP, "--state-remote", "origin", "--project", str(fleet.clones[1]))
    assert paused.code == 1, paused.err
    assert re.search(r"did not take the change: another runner or human moved it first, for 1[2-3]\d s;", paused.out)
    assert _remote_state(fleet)["status"] != "paused"
    assert lost.pushes > 8 and len(lost.waits) == lost.pushes - 1


def test_an_approval_from_another_clone_clears_a_halt_the_next_runner_sees(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> None:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    fleet = fk.make_fleet(tmp_path, 2, max_iterations=2)
    for clone, home in ((fleet.seed, Path(os.environ["HOME"])), (fleet.clones[0], fleet.homes[0])):
        assert '"ran": true' in fk.tick(clone, home).stdout
    halted = fk.tick(fleet.clones[0], fleet.homes[0])  # the runner's gate halts the loop and pushes the halt
    assert halted.returncode == 1 and '"ran": false' in halted.stdout, halted.stderr
    state = _remote_state(fleet)
    assert state["status"] == "halted" and state["halt_reason"] == "iterations_exhausted"
    approved = run_cli("--approve", "--loop", fk.LOOP, "--yes", "--state-remote", "origin",
                       "--project", str(fleet.clones[1]))
    assert approved.code == 0, approved.out + approved.err
    assert _remote_state(fleet)["status"] == "running"
    again = fk.tick(fleet.clones[0], fleet.homes[0])
    assert again.returncode == 0 and '"ran": true' in again.stdout, again.stderr
    assert _remote_state(fleet)["iteration_count"] == 3


def test_a_state_remote_flag_that_disagrees_with_the_sealed_field_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> None:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    fleet = fk.make_fleet(tmp_path, 1, state_remote="origin")
    plain = [a for a in fk.runner_argv(fleet.seed) if a not in ("--state-remote", "origin")]
    first = subprocess.run(plain, env=fk.runner_env(Path(os.environ["HOME"])), capture_output=True, text=True,
                           check=False)  # no flag: the sealed field sends the tick through the remote
    assert first.returncode == 0 and '"ran": true' in first.stdout, first.stderr
    assert _remote_state(fleet)["iteration_count"] == 1
    other = [*fk.runner_argv(fleet.clones[0])[:-4], "--state-remote", str(fleet.bare), "--quiet", "--json"]
    refused = subprocess.run(other, env=fk.runner_env(fleet.homes[0]), capture_output=True, text=True, check=False)
    assert refused.returncode == 2 and "disagrees with loop.json state_remote" in refused.stderr, refused.stderr
    assert _remote_state(fleet)["iteration_count"] == 1
    bad = subprocess.run([*other[:-4], "--state-remote", "-oops", "--quiet", "--json"],
                         env=fk.runner_env(fleet.homes[0]), capture_output=True, text=True, check=False)
    assert bad.returncode == 2


def test_a_fetched_state_that_does_not_verify_with_the_key_runs_nothing(fleet: fk.Fleet, tmp_path: Path) -> None:
    # Someone with push rights rewrites the log (a cheaper spend): the key catches it.
    work = tmp_path / "forger"
    git(tmp_path, "clone", "-q", str(fleet.bare), str(work))
    git(work, "fetch", "-q", "origin", f"refs/automaton/loops/{fk.LOOP}:refs/forge")
    git(work, "checkout", "-q", "refs/forge")
    log = work / ".state.log"
    log.write_text(log.read_text().replace("spent_usd=1.0", "spent_usd=0.0"))
    git(work, "commit", "-qam", "forged")
    git(work, "push", "-q", "--force", "origin", f"HEAD:refs/automaton/loops/{fk.LOOP}")
    out = fk.tick(fleet.clones[0], fleet.homes[0])
    assert out.returncode == 2, out.stdout + out.stderr
    assert "does not verify with the record key" in out.stderr
    assert not (fleet.clones[0] / ".automaton" / "loops" / fk.LOOP / "runs" / "2").exists()


def test_a_push_with_a_stale_lease_is_lost_and_moves_nothing(fleet: fk.Fleet) -> None:
    clone = fleet.clones[0]
    fetched = git_remote.fetch(clone, "origin", fk.LOOP)
    assert fetched.state is not None and fetched.branch is not None
    first = git_remote.write_commit(clone, {"a.txt": b"one\n"}, fetched.state, "one")
    second = git_remote.write_commit(clone, {"a.txt": b"two\n"}, fetched.state, "two")
    ref = git_remote.state_ref(fk.LOOP)
    won = git_remote.push(clone, "origin", [git_remote.Move(ref, first, fetched.state)])
    lost = git_remote.push(clone, "origin", [git_remote.Move(ref, second, fetched.state)])
    assert won.landed and not won.lost
    assert lost.lost and not lost.landed
    assert git(fleet.bare, "rev-parse", ref).strip() == first
    absent = git_remote.push(clone, "origin", [git_remote.Move("refs/automaton/loops/other", first, None)])
    again = git_remote.push(clone, "origin", [git_remote.Move("refs/automaton/loops/other", second, None)])
    assert absent.landed and again.lost
    assert git_remote.read_tree(clone, first) == {"a.txt": b"one\n"}


TOKEN = "tok-0123456789abcdef"
# The agent writes the environment it was started with beside the machine's clone (5 folders
# up from its worktree), then does the fleet agent's work.
ENV_AGENT = "import json, os, pathlib\n" \
            "pathlib.Path('../../../../../agent-env.json').write_text(json.dumps(dict(os.environ)))\n" + fk.AGENT


def _fake_git(folder: Path, log: Path) -> Path:
    """`git` first on PATH: logs each call's `GIT_CONFIG_KEY_0`, `GIT_CONFIG_VALUE_0` and argv
    (tab-separated), then runs the real git."""
    real = shutil.which("git")
    assert real is not None
    folder.mkdir()
    fake = folder / "git"
    fake.write_text("#!/bin/sh\n"
                    f"{{ printf '%s\\t%s\\t' \"${{GIT_CONFIG_KEY_0:-}}\" \"${{GIT_CONFIG_VALUE_0:-}}\"; echo \"$*\"; }}"
                    f" >> '{log}'\n"
                    f"exec '{real}' \"$@\"\n")
    fake.chmod(0o755)
    return folder


def test_the_push_credential_reaches_only_the_runners_fetch_and_push(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> None:
    """`$AUTOMATON_GIT_TOKEN`: the runner's ls-remote, fetch and push carry it as an
    `http.extraHeader` in their environment; no other git call, no argv, no file under the
    clone and no agent process sees it."""
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    fleet = fk.make_fleet(tmp_path, 1, agent=ENV_AGENT)
    assert fk.tick(fleet.seed, Path(os.environ["HOME"])).returncode == 0
    log = tmp_path / "git.log"
    fake = _fake_git(tmp_path / "fakebin", log)
    clone = fleet.clones[0]
    done = subprocess.run(fk.runner_argv(clone), capture_output=True, text=True, timeout=300, check=False,
                          env=fk.runner_env(fleet.homes[0], AUTOMATON_GIT_TOKEN=TOKEN,
                                            PATH=f"{fake}{os.pathsep}{os.environ['PATH']}"))
    assert done.returncode == 0 and '"ran": true' in done.stdout, done.stderr
    header = "Authorization: Basic " + base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    calls = [line.split("\t", 2) for line in log.read_text().splitlines()]
    carried = {argv.split(" -c ")[0] + " " + _sub(argv) for key, value, argv in calls if value}
    assert {_sub(argv) for key, value, argv in calls if value} == {"ls-remote", "fetch", "push"}, carried
    assert all(key == "http.extraHeader" and value == header for key, value, _ in calls if value)
    assert not any(TOKEN in argv or header in argv for _, _, argv in calls)
    agent_env = (clone.parent / "agent-env.json").read_text()
    assert "AUTOMATON_GIT_TOKEN" not in json.loads(agent_env) and TOKEN not in agent_env
    basic = header.split()[-1].encode()
    leaked = [p for p in clone.rglob("*") if p.is_file() and not p.is_symlink()
              and (TOKEN.encode() in p.read_bytes() or basic in p.read_bytes())]
    assert leaked == []


def _sub(argv: str) -> str:
    """The git subcommand of a logged argv (the first word after the global options)."""
    words = argv.split(" ")
    i = 0
    while i < len(words):
        if words[i] in ("-c", "-C"):
            i += 2
        elif words[i].startswith("-"):
            i += 1
        else:
            return words[i]
    return ""


def test_no_credential_environment_without_a_token() -> None:
    assert git_remote.credential_env({}) == {} and git_remote.credential_env({"AUTOMATON_GIT_TOKEN": " "}) == {}


def test_doctor_fetches_the_state_on_a_fresh_clone_and_names_the_remote_kind(fleet: fk.Fleet) -> None:
    """`--doctor --loop NAME --state-remote origin` on a clone that never ticked (a CI runner):
    the loop's state is fetched and checked, the schedule is the engine's, and the remote (a
    local path here) needs no token."""
    fresh = fleet.clones[1]
    assert not (fresh / ".automaton" / "loops" / fk.LOOP / ".state.loop").exists()
    done = run_cli("--doctor", "--loop", fk.LOOP, "--state-remote", "origin", "--project", str(fresh), "--json")
    found = {f["check"]: f for f in json.loads(done.out)["findings"] if f["loop"] == fk.LOOP}
    assert found["status"]["level"] == "ok", found
    assert found["schedule"]["level"] == "note" and "engine" in found["schedule"]["message"]
    assert found["state-remote"]["level"] == "note" and "is local" in found["state-remote"]["message"]
    unflagged = run_cli("--doctor", "--state-remote", "origin", "--project", str(fresh))
    assert unflagged.code == 2 and "--doctor --loop" in unflagged.err


def test_doctor_says_whether_an_https_state_remote_has_a_push_credential(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from automaton.commands.doctor import credential_check, state_remote_checks

    repo = tmp_path / "r"
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "remote", "add", "origin", "https://u:hunter2@git.example.com/team/repo.git")
    git(repo, "remote", "add", "byssh", "git@git.example.com:team/repo.git")
    monkeypatch.delenv("AUTOMATON_GIT_TOKEN", raising=False)
    bare = credential_check(repo, "demo", "origin")
    assert bare.level == "warning" and "AUTOMATON_GIT_TOKEN" in bare.message and "hunter2" not in bare.message
    monkeypatch.setenv("AUTOMATON_GIT_TOKEN", TOKEN)
    held = credential_check(repo, "demo", "origin")
    assert held.level == "ok" and "https://git.example.com" in held.message and TOKEN not in held.message
    ssh = credential_check(repo, "demo", "byssh")
    assert ssh.level == "note" and "is ssh" in ssh.message and "not used" in ssh.message
    assert state_remote_checks(repo, "demo", None) == []


def test_a_verifier_in_the_loop_folder_runs_from_the_runners_own_copy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> None:
    """loop.json names the loop's own verifier as `{loop_dir}/check.py`: a runner in another clone,
    with the creating checkout gone, runs the copy its fetch brought, and the tick is scored."""
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    fleet = fk.make_fleet(tmp_path, 1, verify=[fk.PY, "{loop_dir}/check.py"])
    seed_loop = fleet.seed / ".automaton" / "loops" / fk.LOOP
    (seed_loop / "check.py").write_text("print('3 passed, 1 failed')\n")
    first = fk.tick(fleet.seed, Path(os.environ["HOME"]))
    assert first.returncode == 0 and '"ran": true' in first.stdout, first.stderr
    shutil.rmtree(fleet.seed)  # the machine that made the loop is gone
    ran = fk.tick(fleet.clones[0], fleet.homes[0])
    assert ran.returncode == 0, ran.stderr
    tick = json.loads(ran.stdout.strip().splitlines()[-1])
    assert tick["ran"] is True and tick["verdict"]["score"] == 0.75, tick
    assert "check.py" in git(fleet.bare, "ls-tree", "--name-only", f"refs/automaton/loops/{fk.LOOP}")


def test_a_state_remote_this_checkout_does_not_have_is_bad_input_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> None:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    fleet = fk.make_fleet(tmp_path, 1)
    argv = [a if a != "origin" else "nosuchremote" for a in fk.runner_argv(fleet.clones[0])]
    done = subprocess.run(argv, env=fk.runner_env(fleet.homes[0]), capture_output=True, text=True, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--state-remote 'nosuchremote': this checkout has no such remote" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    paused = run_cli("--pause-loop", fk.LOOP, "--state-remote", "nosuchremote", "--project", str(fleet.clones[0]))
    assert paused.code == 2 and "no such remote" in paused.err


def test_a_remote_path_that_is_no_repository_says_gits_reason_not_its_advice(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> None:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    fleet = fk.make_fleet(tmp_path, 1)
    gone = tmp_path / "nonexistent" / "repo.git"
    argv = [a if a != "origin" else str(gone) for a in fk.runner_argv(fleet.clones[0])]
    done = subprocess.run(argv, env=fk.runner_env(fleet.homes[0]), capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"cannot read the state remote {str(gone)!r}: '{gone}' does not appear to be a git repository" \
        in done.stderr, done.stderr
    assert "repository exists" not in done.stderr  # git's advice line is not the reason


def test_a_remote_that_never_answers_fails_with_one_line_when_the_timeout_passes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that accepts the connection and sends nothing (no TLS handshake): the fetch fails
    once NET_TIMEOUT_S passes (shortened here), naming it; it never hangs the tick lock."""
    import socket
    import threading

    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []

    def hold() -> None:  # accept, never answer; ends when the server is closed
        with contextlib.suppress(OSError):
            while True:
                held.append(server.accept()[0])

    threading.Thread(target=hold, daemon=True).start()
    monkeypatch.setattr(git_remote, "NET_TIMEOUT_S", 2.0)
    url = f"https://127.0.0.1:{server.getsockname()[1]}/x.git"
    try:
        with pytest.raises(git_remote.RemoteFailed) as caught:
            git_remote.fetch(repo, url, "demo")
    finally:
        server.close()
        for conn in held:
            conn.close()
    assert str(caught.value) == f"cannot read the state remote {url!r}: no answer in 2 s (git timed out)"


def _forge(fleet: fk.Fleet, change: dict[str, bytes | None]) -> None:
    """A clone without the record key pushes a state commit on top of the remote's, with the
    files of `change` replaced (bytes) or removed (None): what someone with push rights can do."""
    attacker = fleet.clones[1]
    ref = f"refs/automaton/loops/{fk.LOOP}"
    git(attacker, "fetch", "-q", "origin", f"+{ref}:refs/forge/state")
    head = git(attacker, "rev-parse", "refs/forge/state").strip()
    rows = [r for r in git(attacker, "ls-tree", "-r", head).splitlines() if r.split("\t")[1] not in change]
    for rel, data in change.items():
        if data is not None:
            blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=attacker, input=data,
                                  capture_output=True, check=True).stdout.decode().strip()
            rows.append(f"100644 blob {blob}\t{rel}")
    index = {**os.environ, "GIT_INDEX_FILE": str(attacker.parent / "forge.index")}
    subprocess.run(["git", "update-index", "--add", "--index-info"], cwd=attacker, env=index, check=True,
                   input="".join(f"{r}\n" for r in rows).encode())
    tree = subprocess.run(["git", "write-tree"], cwd=attacker, env=index, capture_output=True, text=True,
                          check=True).stdout.strip()
    commit = git(attacker, "commit-tree", tree, "-p", head, "-m", "forged").strip()
    git(attacker, "push", "-q", "-f", "origin", f"{commit}:{ref}")


def _loop_files(clone: Path) -> dict[str, bytes]:
    folder = clone / ".automaton" / "loops" / fk.LOOP
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and "worktree" not in p.relative_to(folder).parts}


@pytest.mark.parametrize("change", [
    {".state.log": b"hello\n"},
    {"runs": b"a file where the runner keeps a folder\n"},
    {".state.loop": None},
])
def test_a_bad_state_commit_is_refused_before_the_loop_folder_is_touched(
        fleet: fk.Fleet, change: dict[str, bytes | None]) -> None:
    """Pushed by someone without the record key: refused (the state commit's manifest, then the
    log, the paths and what the folder holds are checked) before a file of the folder changes."""
    seed, home = fleet.seed, Path(os.environ["HOME"])
    before = _loop_files(seed)
    _forge(fleet, change)
    done = fk.tick(seed, home)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "does not verify with the record key" in done.stderr or "not a loop's state" in done.stderr, done.stderr
    assert _loop_files(seed) == before  # nothing written, nothing left behind (no *.tmp)
    status = run_cli("--loop-status", fk.LOOP, "--project", str(seed))
    assert status.code == 0 and "tamper" not in status.out.lower(), status.out + status.err


def test_a_state_that_disagrees_with_its_log_puts_the_loop_folder_back(
        fleet: fk.Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the manifest (a holder of the key sealed it), a state whose counters disagree with its
    log is refused after it was written: this machine's loop folder is put back as it was."""
    seed = fk.project(fleet.seed)
    folder = seed.loop_dir(rs.LoopName.of(fk.LOOP))
    before = _loop_files(fleet.seed)
    fetched = rs.git_remote.fetch(seed.root, "origin", fk.LOOP)
    assert fetched.state is not None
    files = rs.remote_manifest.checked(rs.LoopName.of(fk.LOOP), "origin", fetched.state,
                                       rs.git_remote.read_tree(seed.root, fetched.state))
    state = json.loads(files[".state.loop"])
    files[".state.loop"] = (json.dumps({**state, "iteration_count": 0}) + "\n").encode()
    monkeypatch.setattr(rs.remote_manifest, "checked", lambda *_: files)
    with pytest.raises(rs.CorruptState, match="tampered"):
        rs.sync_in(seed, fk.LOOP, "origin")
    assert _loop_files(fleet.seed) == before
    assert not any(p.name.endswith(".tmp") for p in folder.rglob("*"))
    status = run_cli("--loop-status", fk.LOOP, "--project", str(fleet.seed))
    assert status.code == 0 and "tamper" not in status.out.lower(), status.out + status.err


def test_a_deleted_state_ref_is_not_refilled_from_a_stale_checkout(fleet: fk.Fleet) -> None:
    """`git push --mirror` from a plain clone deletes the state ref: a checkout that saw the loop's
    state there refuses to publish its own (ticks behind) as new, until a human says so."""
    seed, home = fleet.seed, Path(os.environ["HOME"])
    assert '"ran": true' in fk.tick(fleet.clones[0], fleet.homes[0]).stdout  # the remote moves on
    git(fleet.clones[1], "push", "-q", "--mirror", "origin")  # a plain clone's mirror: every other ref deleted
    assert git(fleet.bare, "for-each-ref", "refs/automaton/", "refs/heads/loop/") == ""
    stale = fk.tick(seed, home)
    assert stale.returncode == 2, stale.stdout + stale.stderr
    assert f"has no refs/automaton/loops/{fk.LOOP}, but this checkout saw its state there" in stale.stderr
    assert git(fleet.bare, "for-each-ref", "refs/automaton/", "refs/heads/loop/") == ""  # nothing published
    (seed / ".automaton" / "loops" / fk.LOOP / ".remote.seen").unlink()  # the human's deliberate choice,
    for seen in git(seed, "for-each-ref", "--format=%(refname)", "refs/automaton/seen/").split():
        git(seed, "update-ref", "-d", seen)  # and the account ledger's, lost with the mirror too
    again = fk.tick(seed, home)
    assert again.returncode == 0 and '"ran": true' in again.stdout, again.stderr
    assert _remote_state(fleet)["iteration_count"] == 2


@pytest.mark.parametrize("kind", ["blob", "tree"])
def test_a_state_ref_that_names_no_commit_is_corrupt_state_not_no_state_yet(fleet: fk.Fleet, kind: str) -> None:
    """A state ref pushed at a blob or a tree: a checkout that has the loop folder must not take
    it for "no state yet" and skip as lost claims forever; every runner says what it is, exit 2."""
    attacker = fleet.clones[1]
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=attacker, input=b"hi\n", capture_output=True,
                          check=True).stdout.decode().strip()
    oid = blob if kind == "blob" else subprocess.run(
        ["git", "mktree"], cwd=attacker, input=f"100644 blob {blob}\tx\n".encode(), capture_output=True,
        check=True).stdout.decode().strip()
    git(attacker, "push", "-q", "-f", "origin", f"{oid}:refs/automaton/loops/{fk.LOOP}")
    for clone, home in ((fleet.seed, Path(os.environ["HOME"])), (fleet.clones[0], fleet.homes[0])):
        done = fk.tick(clone, home)
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"refs/automaton/loops/{fk.LOOP} on 'origin' is a {kind}, not a commit automaton wrote" in done.stderr
    assert git(fleet.bare, "cat-file", "-t", f"refs/automaton/loops/{fk.LOOP}").strip() == kind  # nothing pushed


def test_a_state_commit_that_plants_a_git_repository_is_refused(fleet: fk.Fleet) -> None:
    """`.git` anywhere in a state commit (a planted repository whose config runs `core.fsmonitor`
    for the next human who runs git in the loop folder): refused, nothing written."""
    seed, attacker, ref = fleet.seed, fleet.clones[1], f"refs/automaton/loops/{fk.LOOP}"
    before = _loop_files(seed)

    def mktree(rows: str) -> str:  # git's own index refuses a `.git` path; mktree writes it
        return subprocess.run(["git", "mktree"], cwd=attacker, input=rows.encode(), capture_output=True,
                              check=True).stdout.decode().strip()

    def blob(data: bytes) -> str:
        return subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=attacker, input=data,
                              capture_output=True, check=True).stdout.decode().strip()

    git(attacker, "fetch", "-q", "origin", f"+{ref}:refs/forge/state")
    head = git(attacker, "rev-parse", "refs/forge/state").strip()
    planted = mktree(f"100644 blob {blob(b'gitdir: ../g2')}\t.git\n")
    config = mktree(f"100644 blob {blob(b'[core]' + bytes([10, 9]) + b'fsmonitor = touch PWNED')}\tconfig\n")
    tree = mktree(git(attacker, "ls-tree", head) + f"040000 tree {planted}\tg\n040000 tree {config}\tg2\n")
    git(attacker, "push", "-q", "-f", "origin", git(attacker, "commit-tree", tree, "-p", head, "-m", "f").strip() + ":"
        + ref)
    done = fk.tick(seed, Path(os.environ["HOME"]))
    assert done.returncode == 2 and "is not a loop's state" in done.stderr, done.stdout + done.stderr
    assert _loop_files(seed) == before


def test_a_loop_seen_on_its_state_remote_never_ticks_or_is_removed_past_it(fleet: fk.Fleet) -> None:
    """A plain tick of a loop this checkout saw on its remote would be thrown away by the next
    remote tick's fetch (and the tick run twice); removing the local copy stops no runner."""
    seed, home = fleet.seed, Path(os.environ["HOME"])
    for mode in ("tick", "run"):
        plain = [a for a in fk.runner_argv(seed) if a not in ("--state-remote", "origin")]
        plain[plain.index("tick")] = mode
        done = subprocess.run(plain, env=fk.runner_env(home), capture_output=True, text=True, check=False)
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"loop {fk.LOOP} lives in a state remote" in done.stderr and "--state-remote" in done.stderr
    removed = run_cli("--remove-loop", fk.LOOP, "--project", str(seed))
    assert removed.code == 1 and "lives in a state remote" in removed.err, removed.out + removed.err
    assert (seed / ".automaton" / "loops" / fk.LOOP / ".state.loop").is_file()
    assert _remote_state(fleet)["iteration_count"] == 1


def test_a_loop_with_holdout_tests_is_never_published(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> None:
    """Holdout tests in a state ref are readable by whoever reads the remote, the agent included."""
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    fleet = fk.make_fleet(tmp_path, 1, holdout="holdout")
    done = fk.tick(fleet.seed, Path(os.environ["HOME"]))
    assert done.returncode == 2 and "holdout tests (holdout) would be published" in done.stderr, done.stderr
    assert git(fleet.bare, "for-each-ref", "refs/automaton/") == ""


def test_mode_run_refuses_a_loop_whose_sealed_state_remote_it_would_bypass(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> None:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    fleet = fk.make_fleet(tmp_path, 1, state_remote="origin")
    argv = [a for a in fk.runner_argv(fleet.seed) if a not in ("--state-remote", "origin")]
    argv[argv.index("tick")] = "run"
    done = subprocess.run(argv, env=fk.runner_env(Path(os.environ["HOME"])), capture_output=True, text=True,
                          check=False)
    assert done.returncode == 2 and "--mode run would tick here without a claim" in done.stderr, done.stderr
    assert git(fleet.bare, "for-each-ref", "refs/automaton/") == ""  # nothing ran, nothing published


def test_a_refused_loop_branch_still_lands_the_ticks_record_and_halts_the_loop(fleet: fk.Fleet) -> None:
    """The agent's commit can make the remote refuse `loop/NAME` (a file over the host's size
    limit, a workflow file the token may not push): the tick's record (and any halt in it) lands
    alone, and the loop halts for a human, so no halt is erased by a failed push."""
    hook = fleet.bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nwhile read old new ref; do\n  case \"$ref\" in refs/heads/loop/*)"
                    " echo 'file too large' >&2; exit 1;; esac\ndone\n")
    hook.chmod(0o755)
    done = fk.tick(fleet.clones[0], fleet.homes[0])
    assert done.returncode == 1, done.stdout + done.stderr
    data = json.loads(done.stdout.strip().splitlines()[-1])
    assert data["pushed"] == "state_only" and data["halt"].startswith("human_intervention: branch_refused"), data
    state = _remote_state(fleet)
    assert state["status"] == "halted" and state["halt_reason"] == "human_intervention", state
    assert "branch_refused" in str(state["halt_detail"])
    log = git(fleet.bare, "show", f"refs/automaton/loops/{fk.LOOP}:.state.log")
    assert " TICK " in log and "n=2" in log.split(" TICK ")[-1]  # the tick's settling record is there


@pytest.mark.parametrize("url", ["https://ghp_SECRET1234@github.com/o/r.git", "https://x-access-token:ghp_SECRET1234@h/r",
                                 "ssh://git:ghp_SECRET1234@h/r.git"])
def test_a_state_remote_url_with_a_credential_is_refused_without_echoing_it(fleet: fk.Fleet, url: str) -> None:
    """A token in the URL would sit in the runner's command line (readable by every process of
    the user, the agent's too) and in git's messages: refused, exit 2, the token never printed."""
    argv = [a if a != "origin" else url for a in fk.runner_argv(fleet.clones[0])]
    done = subprocess.run(argv, env=fk.runner_env(fleet.homes[0]), capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "the URL carries a credential" in done.stderr, done.stderr
    assert "ghp_SECRET1234" not in done.stdout + done.stderr
    paused = run_cli("--pause-loop", fk.LOOP, "--state-remote", url, "--project", str(fleet.clones[0]))
    assert paused.code == 2 and "ghp_SECRET1234" not in paused.out + paused.err
    spend = run_cli("--spend", "--state-remote", url, "--project", str(fleet.clones[0]))
    assert spend.code == 2 and "ghp_SECRET1234" not in spend.out + spend.err


def test_a_loop_json_edited_here_is_never_thrown_away_by_the_remotes_state(fleet: fk.Fleet) -> None:
    """A human's edit of loop.json in a checkout: a remote tick or act would replace it with the
    remote's without a word; it stops instead, naming the edit and how to go on."""
    folder = fleet.seed / ".automaton" / "loops" / fk.LOOP
    sealed = (folder / "sealed" / "loop.json").read_bytes()
    edited = json.loads(sealed)
    edited["description"] = "EDITED"
    (folder / "loop.json").write_text(json.dumps(edited))
    done = fk.tick(fleet.seed, Path(os.environ["HOME"]))
    assert done.returncode == 2 and "was edited here" in done.stderr, done.stdout + done.stderr
    assert "EDITED" in (folder / "loop.json").read_text()  # the edit is still there
    paused = run_cli("--pause-loop", fk.LOOP, "--state-remote", "origin", "--project", str(fleet.seed))
    assert paused.code == 2 and "was edited here" in paused.err
    (folder / "loop.json").write_bytes(sealed)  # the human puts the sealed one back
    assert '"ran": true' in fk.tick(fleet.seed, Path(os.environ["HOME"])).stdout
