"""The per-user key: made 0600 on the first write only, refused when others can read it or it
is not a key, one key when processes race to make it, and the marks of keyed logs."""

from __future__ import annotations

import multiprocessing
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from automaton.core.errors import BadInput, CorruptState
from automaton.store import chainlog, key


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    """Each test reads the key file itself, not a key an earlier test of this process cached."""
    key.forget()
    yield
    key.forget()


def test_the_key_lives_in_the_users_config_folder(forbid_real_home: Path) -> None:
    assert key.key_path() == forbid_real_home / ".config" / "automaton" / "key"


def test_reading_never_creates_the_key(tmp_path: Path) -> None:
    assert key.load_key(create=False) is None
    log = tmp_path / ".state.log"
    assert chainlog.read_chain(log).ok  # a read of a missing log
    assert not key.key_path().exists() and not key.key_path().parent.exists()


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
def test_the_first_write_creates_a_private_key(tmp_path: Path) -> None:
    chainlog.append_event(tmp_path / ".state.log", "CREATED", {}, "new")
    path = key.key_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    text = path.read_text()
    assert len(text) == 65 and text.endswith("\n") and len(bytes.fromhex(text[:64])) == key.KEY_BYTES
    assert key.load_key(create=False) == bytes.fromhex(text[:64])
    assert " mac=" in (tmp_path / ".state.log").read_text()
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".key.")] == []  # no temp left


def test_the_key_is_made_once_and_then_reused(tmp_path: Path) -> None:
    first = key.load_key(create=True)
    key.forget()
    assert key.load_key(create=True) == first
    assert first is not None and len(first) == key.KEY_BYTES


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_a_key_others_can_read_is_refused_naming_the_file_and_fix(mode: int) -> None:
    key.load_key(create=True)
    key.forget()
    key.key_path().chmod(mode)
    with pytest.raises(BadInput) as err:
        key.load_key(create=False)
    assert type(err.value) is BadInput and err.value.code == 2
    assert str(key.key_path()) in err.value.message and f"chmod 600 {key.key_path()}" in err.value.message
    with pytest.raises(BadInput):  # writers refuse it too: never seal with a key others can read
        key.load_key(create=True)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_key_path_that_is_not_a_file_is_refused_at_once(kind: str) -> None:
    """A FIFO must not hang every reader (the hook reads logs before every tool call), and a
    folder is a one-line error, not a traceback."""
    path = key.key_path()
    path.parent.mkdir(parents=True, mode=0o700)
    if kind == "fifo":
        os.mkfifo(path, 0o600)
    else:
        path.mkdir(mode=0o700)
    with pytest.raises(BadInput) as err:
        key.load_key(create=False)
    assert str(path) in err.value.message and "not a regular file" in err.value.message


@pytest.mark.parametrize("content", [b"", b"abc\n", b"0" * 63 + b"\n", b"G" * 64 + b"\n", b"0" * 66 + b"\n",
                                     bytes(32)])
def test_a_file_that_is_not_a_key_is_corrupt_state(content: bytes) -> None:
    path = key.key_path()
    path.parent.mkdir(parents=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, content)
    os.close(fd)
    with pytest.raises(CorruptState) as err:
        key.load_key(create=True)
    assert str(path) in err.value.message and "64 hex digits" in err.value.message
    assert path.read_bytes() == content  # never replaced: logs sealed with the old key would all fail


def test_a_bad_key_file_fails_reads_of_logs_closed(tmp_path: Path) -> None:
    log = tmp_path / ".state.log"
    chainlog.append_event(log, "CREATED", {}, "new")
    key.forget()
    key.key_path().write_text("not a key\n")
    with pytest.raises(CorruptState):
        chainlog.read_chain(log)


def test_a_key_folder_that_cannot_be_made_is_bad_input(forbid_real_home: Path) -> None:
    (forbid_real_home / ".config").write_text("a file where a folder belongs\n")
    with pytest.raises(BadInput) as err:
        key.load_key(create=True)
    assert str(key.key_path()) in err.value.message


def _race(home: str, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    os.environ["HOME"] = home
    key.forget()
    out.put(key.load_key(create=True))


def test_processes_racing_to_create_the_key_end_with_one_key(forbid_real_home: Path) -> None:
    ctx = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    out: multiprocessing.Queue = ctx.Queue()  # type: ignore[type-arg]
    procs = [ctx.Process(target=_race, args=(str(forbid_real_home), out)) for _ in range(8)]
    for proc in procs:
        proc.start()
    keys = {out.get(timeout=30) for _ in procs}
    for proc in procs:
        proc.join(timeout=30)
        assert proc.exitcode == 0
    assert keys == {key.load_key(create=False)}
    assert len(keys) == 1 and None not in keys


def test_marks_name_the_logs_automaton_keyed(tmp_path: Path) -> None:
    log = tmp_path / "sub" / ".state.log"
    assert not key.was_keyed(log)
    key.load_key(create=True)
    key.mark_keyed(log)
    key.mark_keyed(log)  # idempotent
    assert key.was_keyed(log) and key.was_keyed(tmp_path / "sub" / ".." / "sub" / ".state.log")
    assert not key.was_keyed(tmp_path / "other" / ".state.log")


# ---- a key hidden from this process (an agent's sandbox) -------------------------------------

def _hide(monkeypatch: pytest.MonkeyPatch) -> None:
    def hidden(path: Path) -> bytes:
        raise key.KeyHidden(f"{path}: hidden")

    key.forget()
    monkeypatch.setattr(key, "_read", hidden)


def test_where_the_key_is_hidden_readers_take_keyed_lines_on_their_chain(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from automaton.core.chain import format_line, line_hash

    log = tmp_path / ".state.log"
    chainlog.append_event(log, "CREATED", {}, "new")
    chainlog.append_event(log, "TRANSITION", {}, "research")
    _hide(monkeypatch)
    check = chainlog.read_chain(log)
    assert check.ok and check.unverified and check.last_state == "research"
    # the chain and the keyed-prefix rule still hold: an unkeyed line after a keyed one is refused
    text = log.read_text()
    log.write_text(text + format_line("2026-01-01T00:00:00Z", "X", {}, "complete", line_hash(text.split("\n")[-2]))
                   + "\n")
    assert "no mac after keyed line 1" in chainlog.read_chain(log).error
    with pytest.raises(key.KeyHidden):  # and nothing is written there
        chainlog.append_event(log, "TRANSITION", {}, "design")


def _sandbox_ok() -> bool:
    try:
        from automaton.sandbox import available
    except ImportError:
        return False
    return available().ok and os.name != "nt"


@pytest.mark.skipif(not _sandbox_ok(), reason="needs a kernel sandbox (Landlock or Seatbelt)")
def test_a_sandboxed_agent_may_not_read_the_key_and_its_hook_still_judges(tmp_path: Path) -> None:
    """Inside an agent's sandbox the key's folder is hidden: reading it fails, and `--can-edit`
    (what the hooks run) still answers from the SHA-256 chain instead of denying everything."""
    import subprocess
    import sys

    from automaton.core.sandbox import Policy
    from automaton.sandbox import preexec, wrap_argv
    from tests.helpers import seed_task

    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    seed_task(root, "t", "implement")
    work = tmp_path / "work"
    work.mkdir()
    from automaton.sandbox.agents import own_install, program_paths

    # As `launch.prepare` does: the interpreter, automaton's install and the working directory
    # stay visible where they lie under /tmp.
    policy = Policy(writable=(work,), hidden=(key.key_path().parent,), tmpdir=work, label="test",
                    visible=(tmp_path, Path.home(), *program_paths([sys.executable]), *own_install()))
    exe = str(Path(sys.executable).parent / "automaton")
    runs = {
        "read_key": [sys.executable, "-c", f"open({str(key.key_path())!r}).read()"],
        "can_edit": [exe, "--can-edit", "--task", "t", "--file", "src/x.py", "--project", str(root)],
        "outside": [exe, "--can-edit", "--task", "t", "--file", "tasks/t/.state", "--project", str(root)],
    }
    codes = {}
    for name, argv in runs.items():
        if sys.platform == "darwin":
            done = subprocess.run(wrap_argv(policy, argv), capture_output=True, text=True, check=False)
        else:
            done = subprocess.run(argv, preexec_fn=preexec(policy), capture_output=True, text=True, check=False)
        codes[name] = (done.returncode, done.stderr)
    assert codes["read_key"][0] != 0 and "Permission" in codes["read_key"][1]
    assert codes["can_edit"][0] == 0, codes["can_edit"]
    assert codes["outside"][0] == 1, codes["outside"]


@pytest.mark.parametrize(("mode", "hidden"), [(0o600, True), (0o000, False), (0o200, False)])
def test_only_a_sandbox_denial_relaxes_the_mac_check(monkeypatch: pytest.MonkeyPatch, mode: int,
                                                      hidden: bool) -> None:
    """A non-root user's key that its own permission bits make unreadable (an agent's `chmod 000`
    outside any sandbox) is a bad key file (exit 2), never `KeyHidden`, which would let readers
    take keyed lines on their SHA-256 chain alone. Only an EACCES the permission bits do not
    explain (the kernel sandbox) is KeyHidden."""
    key.load_key(create=True)
    path = key.key_path()
    key.forget()
    os.chmod(path, mode)
    me = os.stat(path).st_uid
    monkeypatch.setattr(os, "geteuid", lambda: me if me else 1000)
    if me == 0:  # running as root: pretend to be the file's non-root owner
        monkeypatch.setattr(os, "stat", _as_owner(os.stat, 1000))
    real_open = os.open

    def denied(file: object, flags: int, *args: object, **kwargs: object) -> int:
        if os.fspath(file) == os.fspath(path):  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied")
        return real_open(file, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(BadInput) as caught:
        key.load_key(create=False)
    assert isinstance(caught.value, key.KeyHidden) is hidden
    if not hidden:
        assert "chmod 600" in caught.value.message


def _as_owner(real_stat: object, uid: int) -> object:
    """os.stat whose results name `uid` as the owner (a non-root user, on a root test machine)."""

    def fake(path: object, *args: object, **kwargs: object) -> os.stat_result:
        st = real_stat(path, *args, **kwargs)  # type: ignore[operator]
        fields = list(st)
        fields[stat.ST_UID] = uid
        return os.stat_result(fields)

    return fake
