"""Task records on disk: `.state` read fail-closed, tamper evidence, interrupted commits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from automaton.core.approvals import MISSING
from automaton.core.errors import BadInput, CorruptState, ExitCode
from automaton.core.names import TaskName, TaskRef
from automaton.store import atomic, chainlog, tasks
from automaton.store.layout import Project

REF = TaskRef(TaskName("t"))


def seed(folder: Path, *phases: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for p in phases:
        chainlog.commit(folder / ".state", folder / ".state.log", f"{p}\n".encode(), p, "SEEDED", {})


@pytest.mark.parametrize(("data", "token"), [
    (b"new\n", "new"), (b"design:approved\n", "design:approved"), (b"research\r\n", "research"),
    (b"", None), (b"\n", None), (b"new", None), (b"research:app", None), (b"bogus\n", None),
    (b"new\nnew\n", None), (b"\xff\n", None), (b"NEW\n", None), (b"implement:approved\n", None),
])
def test_phase_token(data: bytes, token: str | None) -> None:
    assert tasks.phase_token(data) == token


@pytest.mark.parametrize("data", [b"", b"desi", b"research:awaiting_appro", b"bogus\n", b"new"])
def test_corrupt_state_raises_naming_the_file_never_new(tmp_path: Path, data: bytes) -> None:
    folder = tmp_path / "t"
    seed(folder, "new")
    (folder / ".state").write_bytes(data)
    with pytest.raises(CorruptState) as err:
        tasks.load_dir(REF, folder)
    assert err.value.code == ExitCode.BAD_INPUT
    assert str(folder / ".state") in err.value.message and "--approve --task t --to" in err.value.message
    with pytest.raises(CorruptState):
        tasks.read_phase(folder / ".state")
    lenient = tasks.load_dir(REF, folder, strict=False)
    assert lenient.phase is None and lenient.tamper and not lenient.legacy


def test_state_that_is_a_directory_is_corrupt(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / ".state").mkdir()
    with pytest.raises(CorruptState):
        tasks.load_dir(REF, folder)


def test_intact_task(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    seed(folder, "new", "research")
    (folder / "SPEC.md").write_text("x")
    (folder / "notes.txt").write_text("x")
    (folder / "PARENT_SPEC.md").write_text("x")
    rec = tasks.load_dir(REF, folder)
    assert rec.phase == "research" and rec.tamper == "" and not rec.legacy
    assert rec.present == {"SPEC.md"}


def test_legacy_folder(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "SPEC.md").write_text("x")
    rec = tasks.load_dir(REF, folder)
    assert rec.phase is None and rec.legacy and rec.tamper == ""


@pytest.mark.parametrize("damage", ["hand_edit", "no_log", "deleted_state", "broken_chain", "cut_log"])
def test_tamper_kinds(tmp_path: Path, damage: str) -> None:
    folder = tmp_path / "t"
    seed(folder, "new", "research", "research:awaiting_approval")
    state, log = folder / ".state", folder / ".state.log"
    if damage == "hand_edit":
        state.write_text("research:approved\n")
    elif damage == "no_log":
        log.unlink()
    elif damage == "deleted_state":
        state.unlink()
    elif damage == "broken_chain":
        log.write_text(log.read_text().replace("state=research ", "state=design ", 1))
    else:
        log.write_text("".join(log.read_text().splitlines(keepends=True)[:-1]))
    rec = tasks.load_dir(REF, folder)
    assert rec.tamper and not rec.legacy
    assert str(folder) in rec.tamper


def test_logged_but_unpublished_commit_reads_as_the_logged_phase(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    seed(folder, "new")
    atomic.write_tmp(folder / ".state", b"research\n")
    chainlog.append_event(folder / ".state.log", "TRANSITION", {}, "research")
    rec = tasks.load_dir(REF, folder)
    assert rec.phase == "research" and rec.tamper == ""
    assert (folder / ".state").read_bytes() == b"new\n"  # reading wrote nothing
    tasks.recover(rec)
    assert (folder / ".state").read_bytes() == b"research\n"


def test_first_commit_cut_before_rename_is_not_tamper(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    atomic.write_tmp(folder / ".state", b"new\n")
    chainlog.append_event(folder / ".state.log", "CREATED", {}, "new")
    rec = tasks.load_dir(REF, folder)
    assert rec.phase == "new" and rec.tamper == ""


def test_unlogged_temp_keeps_the_old_phase(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    seed(folder, "new")
    atomic.write_tmp(folder / ".state", b"complete\n")
    rec = tasks.load_dir(REF, folder)
    assert rec.phase == "new" and rec.tamper == ""


def test_lockless_read_racing_a_commit_is_not_tamper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader that reads `.state`, then the log after a whole commit ran, retries."""
    folder = tmp_path / "t"
    seed(folder, "new")
    real_read_chain = chainlog.read_chain
    fired: list[bool] = []

    def racing(log: str | Path) -> object:  # the reader names its files by plain strings (store.tasks.load_listed)
        if not fired:
            fired.append(True)
            chainlog.commit(folder / ".state", Path(log), b"research\n", "research", "TRANSITION", {})
        return real_read_chain(log)

    monkeypatch.setattr(chainlog, "read_chain", racing)
    rec = tasks.load_dir(REF, folder)
    assert fired and rec.phase == "research" and rec.tamper == ""


def test_bound_reads_approvals_later_wins(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    state, log = folder / ".state", folder / ".state.log"
    chainlog.commit(state, log, b"research:approved\n", "research:approved", "APPROVED", {"bind": "SPEC.md:aaa"})
    chainlog.commit(state, log, b"design:approved\n", "design:approved", "APPROVED", {"bind": "DESIGN.md:bbb"})
    chainlog.commit(state, log, b"design:approved\n", "design:approved", "RESEALED", {"bind": "SPEC.md:ccc"})
    chainlog.commit(state, log, b"design:approved\n", "design:approved", "TRANSITION", {"bind": "SPEC.md:zzz"})
    assert tasks.load_dir(REF, folder).bound() == {"SPEC.md": "ccc", "DESIGN.md": "bbb"}


def test_sha256_file(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"abc")
    assert tasks.sha256_file(tmp_path / "a") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert tasks.sha256_file(tmp_path / "missing") == MISSING
    (tmp_path / "d").mkdir()
    assert tasks.sha256_file(tmp_path / "d") == tasks.UNREADABLE


def test_load_unknown_task_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput) as err:
        tasks.load(Project(tmp_path), REF)
    assert "unknown task" in err.value.message and err.value.code == ExitCode.BAD_INPUT


def test_iter_tasks_and_strays(tmp_path: Path) -> None:
    root = tmp_path / "tasks"
    seed(root / "alpha", "new")
    seed(root / "alpha" / "sub-one", "new")
    (root / "alpha" / "notes").mkdir()  # not a sub-task: no .state
    seed(root / "complete" / "done", "complete")
    seed(root / "complete" / "done" / "child", "complete")
    (root / "legacy").mkdir()
    (root / "Bad_Name").mkdir()
    (root / ".hidden").mkdir()
    (root / "file.md").write_text("x")
    found = [(str(ref), path.relative_to(root).as_posix()) for ref, path in tasks.iter_tasks(Project(tmp_path))]
    assert found == [
        ("alpha", "alpha"), ("alpha/sub-one", "alpha/sub-one"),
        ("done", "complete/done"), ("done/child", "complete/done/child"),
        ("legacy", "legacy"),
    ]
    assert [p.name for p in tasks.stray_folders(Project(tmp_path))] == ["Bad_Name"]
    assert list(tasks.iter_tasks(Project(tmp_path / "nothing"))) == []


def test_lock_path_is_outside_the_task_folder_and_shared_with_complete(tmp_path: Path) -> None:
    project = Project(tmp_path)
    assert tasks.lock_path(project, REF) == tmp_path / "tasks" / ".state.lock-t"
    assert tasks.lock_path(project, TaskRef.parse("p/s")) == tmp_path / "tasks" / ".state.lock-p.s"
    assert tasks.lock_path(project, TaskRef.parse("p-s")) != tasks.lock_path(project, TaskRef.parse("p/s"))


def test_state_in_the_wrong_shape_says_so_and_names_the_task(tmp_path: Path) -> None:
    from automaton.core.errors import CorruptState
    from automaton.store.tasks import read_phase

    sub = tmp_path / "tasks" / "parent" / "child"
    sub.mkdir(parents=True)
    (sub / ".state").write_bytes(b"research")
    with pytest.raises(CorruptState) as err:
        read_phase(sub / ".state")
    assert "not in the exact form automaton writes" in err.value.message
    assert "--approve --task parent/child --to PHASE" in err.value.message


# ---- keyed logs ------------------------------------------------------------------------------

def _unkeyed_log(folder: Path, *phases: str) -> None:
    """A log as automaton wrote it before keys existed (no mac), and `.state` at its last phase."""
    from automaton.core.chain import GENESIS, format_line, line_hash

    folder.mkdir(parents=True, exist_ok=True)
    prev, text = GENESIS, ""
    for p in phases:
        line = format_line("2026-01-01T00:00:00Z", "TRANSITION", {"task": "t"}, p, prev)
        text, prev = text + line + "\n", line_hash(line)
    (folder / ".state.log").write_text(text)
    (folder / ".state").write_text(f"{phases[-1]}\n")


def test_a_forged_line_with_the_sha_chain_recomputed_but_no_key_is_tamper(tmp_path: Path) -> None:
    from automaton.core.chain import format_line, line_hash

    folder = tmp_path / "t"
    seed(folder, "new", "implement")
    log = folder / ".state.log"
    last = log.read_text().splitlines()[-1]
    log.write_text(log.read_text() + format_line("2026-01-01T00:00:00Z", "TRANSITION", {"task": "t"}, "complete",
                                                 line_hash(last)) + "\n")
    (folder / ".state").write_text("complete\n")
    rec = tasks.load_dir(REF, folder)
    assert "line 3 has no mac after keyed line 1" in rec.tamper and str(log) in rec.tamper


def test_a_wrong_mac_is_tamper(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    seed(folder, "new", "research")
    log = folder / ".state.log"
    text = log.read_text()
    log.write_text(text[:text.rindex(" mac=") + 5] + "0" * 64 + "\n")
    assert "line 2 has a mac the key does not verify" in tasks.load_dir(REF, folder).tamper


def test_a_legacy_log_reads_and_the_next_write_keys_it(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    _unkeyed_log(folder, "new", "research")
    rec = tasks.load_dir(REF, folder)
    assert rec.tamper == "" and rec.phase == "research" and rec.chain.legacy
    seed(folder, "research:awaiting_approval")  # any write by automaton appends a keyed line
    rec = tasks.load_dir(REF, folder)
    assert rec.tamper == "" and rec.phase == "research:awaiting_approval" and not rec.chain.legacy
    assert [bool(line.mac) for line in rec.chain.lines] == [False, False, True]


def test_a_keyed_log_replaced_by_an_unkeyed_one_is_tamper(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    seed(folder, "new", "research")
    _unkeyed_log(folder, "new", "research", "implement")  # recomputed from line 1, no key
    rec = tasks.load_dir(REF, folder)
    assert "the whole log was replaced" in rec.tamper


def test_keyed_lines_without_the_key_are_tamper_and_reading_makes_no_key(tmp_path: Path) -> None:
    from automaton.store import key

    folder = tmp_path / "t"
    seed(folder, "new", "research")
    key.key_path().unlink()
    key.forget()
    rec = tasks.load_dir(REF, folder)
    assert "no key to verify it" in rec.tamper and str(key.key_path()) in rec.tamper
    assert not key.key_path().exists()


def test_a_log_copied_from_another_task_is_tamper(tmp_path: Path) -> None:
    other = tmp_path / "other"
    seed(other, "new")
    chainlog.commit(other / ".state", other / ".state.log", b"complete\n", "complete", "TRANSITION",
                    {"task": "other"})
    folder = tmp_path / "t"
    folder.mkdir()
    for name in (".state", ".state.log"):
        (folder / name).write_bytes((other / name).read_bytes())
    rec = tasks.load_dir(REF, folder)
    assert "line 2 is task 'other''s, not 't''s" in rec.tamper


def test_a_temp_file_that_cannot_be_read_is_corrupt_state_even_when_state_and_log_agree(tmp_path: Path) -> None:
    # The reader skips the `.state` temp file only when the listing shows none: one that is
    # there but unreadable (here a symlink loop; for a non-root user mode 000 too) fails every
    # writer, so the reader fails closed on it as well.
    folder = tmp_path / "t"
    seed(folder, "new")
    (folder / ".state.tmp").symlink_to(".state.tmp")
    with pytest.raises(CorruptState, match=r"\.state\.tmp: cannot read"):
        tasks.load_dir(REF, folder)


def test_sha256_file_never_reads_a_fifo_or_a_device(tmp_path: Path) -> None:
    fifo, zero, folder = tmp_path / "fifo", tmp_path / "zero", tmp_path / "folder"
    os.mkfifo(fifo)
    zero.symlink_to("/dev/zero")
    folder.mkdir()
    assert [tasks.sha256_file(p) for p in (fifo, zero, folder)] == [tasks.UNREADABLE] * 3
    assert tasks.sha256_file(tmp_path / "none") == tasks.MISSING


@pytest.mark.parametrize("name", [".state", ".state.log", ".state.tmp"])
def test_a_fifo_for_a_task_file_is_corrupt_state_and_never_waited_on(tmp_path: Path, name: str) -> None:
    """An agent under `automaton --sandbox` may make a FIFO in its task's folder: every reader
    (the hook before each edit, `--audit`, a transition) would wait on it forever, and a hook
    that does not answer lets the tool call through."""
    import threading

    folder = tmp_path / "t"
    seed(folder, "research")
    if name != ".state.tmp":
        (folder / name).unlink()
    os.mkfifo(folder / name)
    found: list[object] = []

    def read() -> None:
        try:
            found.append(tasks.load_dir(REF, folder))
        except CorruptState as exc:
            found.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    assert len(found) == 1, "the read hung on the FIFO"
    assert isinstance(found[0], CorruptState) or found[0].tamper  # type: ignore[attr-defined]


def test_a_fifo_at_the_temp_name_never_hangs_a_writer(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / ".state.tmp")
    atomic.atomic_write(tmp_path / ".state", b"new\n")
    assert (tmp_path / ".state").read_bytes() == b"new\n"
    os.mkfifo(tmp_path / "log")
    with pytest.raises(OSError):  # no reader: ENXIO; with one: "not a regular file"; never a hang
        atomic.append_line(tmp_path / "log", "a line")


def test_an_artifact_over_the_cap_is_unreadable_not_hashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A huge (or sparse) artifact would be hashed for minutes before every edit."""
    big = tmp_path / "SPEC.md"
    with big.open("wb") as fh:
        fh.truncate(tasks.MAX_ARTIFACT_BYTES + 1)  # sparse: no disk used
    assert tasks.sha256_file(big) == tasks.UNREADABLE
    monkeypatch.setattr(tasks, "MAX_ARTIFACT_BYTES", 8)
    (tmp_path / "ok.md").write_bytes(b"12345678")
    assert tasks.sha256_file(tmp_path / "ok.md") != tasks.UNREADABLE
