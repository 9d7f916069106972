"""The namespace layer against the real kernel: what Landlock alone leaves open is closed.

Each child runs in its own user, mount (and, with `network=False`, network) namespace, then
under Landlock. The suite runs as root on its usual machine; one test repeats the core checks
as an ordinary user.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from automaton.core.sandbox import Policy
from automaton.sandbox import available, launch, namespaces, namespaces_work, preexec
from tests.helpers import socket_in_tmp
from tests.sandbox.conftest import PRELUDE, Box, probe

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="namespaces are Linux's"),
    pytest.mark.skipif(sys.platform.startswith("linux") and not namespaces_work(),
                       reason=f"no user namespaces here: {available().isolation_detail}"),
]


def ns(box: Box, body: str, **over: object) -> dict[str, str]:
    """`probe` with the namespace layer; the box's root stays visible (it lies under /tmp)."""
    fields: dict[str, object] = {"visible": (box.root,)}
    fields.update(over)
    return probe(box.policy(**fields), body, box.work, namespaces=True)


def test_metadata_of_read_only_files_cannot_change(box: Box) -> None:
    """chmod, chown, utime and setxattr are no Landlock rights: the read-only mounts refuse them
    (under Landlock alone every one of these succeeds)."""
    out = box.outside
    before = os.stat(out)
    res = ns(box, f"""
        p = {str(out)!r}
        t("chmod", lambda: os.chmod(p, 0o777))
        t("chown", lambda: os.chown(p, 12345, 12345))
        t("utime", lambda: os.utime(p, (0, 0)))
        t("setxattr", lambda: os.setxattr(p, "user.pwned", b"1"))
        t("chmod_project", lambda: os.chmod({str(Path(__file__))!r}, 0o777))
        t("chmod_own", lambda: os.chmod("mine", 0o600) if write("mine") is None else None)
    """)
    # This test file is EROFS in a read-only mount, or ENOENT where the suite itself runs from
    # a folder under /tmp that the child does not see (its private /tmp is empty there).
    project = res.pop("chmod_project")
    assert project in (("EROFS", "ENOENT") if Path(__file__).resolve().is_relative_to("/tmp") else ("EROFS",))
    assert res == {"chmod": "EROFS", "chown": "EROFS", "utime": "EROFS", "setxattr": "EROFS", "chmod_own": "ok"}
    after = os.stat(out)
    assert (after.st_mode, after.st_uid, after.st_mtime_ns) == (before.st_mode, before.st_uid, before.st_mtime_ns)
    assert os.stat(box.work / "mine").st_mode & 0o777 == 0o600


@pytest.fixture
def unix_server() -> Iterator[Path]:
    """A UNIX socket listening in a folder outside everything the sandbox shows (as the
    user's tmux server does in /tmp/tmux-UID)."""
    with socket_in_tmp("automaton-sock-") as (path, _):
        yield path


def test_a_unix_socket_in_tmp_outside_the_sandbox_is_out_of_reach(box: Box, unix_server: Path) -> None:
    connect = f'lambda: socket.socket(socket.AF_UNIX).connect({str(unix_server)!r})'
    assert probe(box.policy(), f't("connect", {connect})', box.work) == {"connect": "ok"}  # Landlock alone
    via_parent = f'"/proc/%d/root{unix_server}" % os.getppid()'
    res = ns(box, f"""
        t("connect", {connect})
        t("listdir", lambda: os.listdir({str(unix_server.parent)!r}))
        t("tmp", lambda: print(sorted(os.listdir("/tmp")), file=sys.stderr))
        t("via_parent_root", lambda: socket.socket(socket.AF_UNIX).connect({via_parent}))
        t("via_init_root", lambda: socket.socket(socket.AF_UNIX).connect("/proc/1/root{unix_server}"))
    """)
    assert res["connect"] == res["listdir"] == "ENOENT" and res["tmp"] == "ok", res
    # The runner's (and init's) view of /tmp: Landlock refuses to let a sandboxed process
    # inspect a process outside its domain, so /proc/PID/root does not lead back.
    assert res["via_parent_root"] in ("EACCES", "EPERM") and res["via_init_root"] in ("EACCES", "EPERM"), res


def test_a_socket_inside_a_visible_folder_stays_reachable(box: Box, unix_server: Path) -> None:
    """Documented limit: what is bound back is bound back whole, sockets included."""
    res = ns(box, f't("connect", lambda: socket.socket(socket.AF_UNIX).connect({str(unix_server)!r}))',
             visible=(box.root, unix_server.parent))
    assert res == {"connect": "ok"}


def test_a_private_folder_itself_is_never_bound_back(box: Box, unix_server: Path) -> None:
    """A session started in /tmp (its working directory made visible) or a visible folder that
    holds $XDG_RUNTIME_DIR: binding it back would show every socket the private folder hides."""
    res = ns(box, f't("connect", lambda: socket.socket(socket.AF_UNIX).connect({str(unix_server)!r}))',
             visible=(box.root, Path("/tmp"), Path("/run")))
    assert res == {"connect": "ENOENT"}
    runtime = box.root / "run-user"  # an XDG_RUNTIME_DIR inside a folder the policy shows
    runtime.mkdir()
    steps = namespaces.plan(box.policy(visible=(box.root, Path("/tmp"))), str(runtime))
    bound = {r.path for r in steps.rebinds}
    assert os.path.realpath(box.root) not in bound and "/tmp" not in bound
    assert os.path.realpath(box.work) in bound  # the writable folder inside is still bound back


def test_abstract_sockets_stay_out_of_reach(box: Box) -> None:
    name = f"\0automaton-ns-test-{os.getpid()}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(name)
    server.listen(1)
    try:
        res = ns(box, f't("abstract", lambda: socket.socket(socket.AF_UNIX).connect({name!r}))')
        res_net = ns(box, f't("abstract", lambda: socket.socket(socket.AF_UNIX).connect({name!r}))', network=False)
    finally:
        server.close()
    # Landlock ABI >= 6 scopes abstract sockets (EPERM); a network namespace has its own (ECONNREFUSED).
    assert res["abstract"] in ({"EPERM"} if available().abi >= 6 else {"ok"})
    assert res_net == {"abstract": "ECONNREFUSED"}


def test_writes_inside_the_writable_set_and_the_temp_dir_work(box: Box) -> None:
    res = ns(box, f"""
        t("write", lambda: write({str(box.work / 'a.txt')!r}))
        t("mkdir", lambda: os.makedirs("d/e"))
        t("rename", lambda: os.rename("a.txt", "d/b.txt"))
        t("tmpdir", lambda: print(os.environ.get("TMPDIR"), __import__("tempfile").mkdtemp(), file=sys.stderr))
        t("tmpfile", lambda: __import__("tempfile").NamedTemporaryFile().close())
        t("cwd", lambda: os.getcwd() == {str(box.work)!r} or (_ for _ in ()).throw(OSError(1, "cwd")))
        t("git", lambda: subprocess.run(["git", "--version"], check=True, capture_output=True))
        t("read_outside", lambda: read({str(box.outside)!r}))
        t("write_outside", lambda: write({str(box.outside)!r}))
        t("write_tmp", lambda: write("/tmp/dropped"))
    """)
    assert res == {"write": "ok", "mkdir": "ok", "rename": "ok", "tmpdir": "ok", "tmpfile": "ok", "cwd": "ok",
                   "git": "ok", "read_outside": "ok", "write_outside": "EROFS", "write_tmp": "EROFS"}
    assert (box.work / "d" / "b.txt").read_text() == "pwned"
    assert box.outside.read_text() == "original"


def test_a_private_temp_dir_beneath_tmp_is_bound_back_writable(box: Box, tmp_path: Path) -> None:
    private = Path(tempfile.mkdtemp(prefix="automaton-nstest-"))
    try:
        res = ns(box, f"""
            import tempfile
            t("mkstemp", lambda: os.close(tempfile.mkstemp(dir={str(private)!r})[0]))
            t("chmod", lambda: os.chmod({str(private)!r}, 0o700))
        """, writable=(box.work, private), tmpdir=private)
    finally:
        left = os.listdir(private)
        shutil.rmtree(private, ignore_errors=True)
    assert res == {"mkstemp": "ok", "chmod": "ok"}
    assert len(left) == 1


def test_masked_paths_read_empty(box: Box) -> None:
    creds = box.root / "home" / ".aws"
    creds.mkdir()
    (creds / "credentials").write_text("aws_secret_access_key = SECRET")
    history = box.root / "home" / ".bash_history"
    history.write_text("export TOKEN=SECRET")
    res = ns(box, f"""
        t("file", lambda: read({str(history)!r}) == b"" or (_ for _ in ()).throw(OSError(1, "not empty")))
        t("folder", lambda: os.listdir({str(creds)!r}) == [] or (_ for _ in ()).throw(OSError(1, "not empty")))
        t("inside", lambda: read({str(creds / 'credentials')!r}))
        t("write_file", lambda: write({str(history)!r}))
    """, masked=(history, creds))
    assert res == {"file": "ok", "folder": "ok", "inside": "ENOENT", "write_file": "EROFS"}
    assert history.read_text() == "export TOKEN=SECRET"


def test_without_network_nothing_outside_is_reached_but_loopback_works(box: Box) -> None:
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(1)
    port = tcp.getsockname()[1]
    try:
        res = ns(box, f"""
            t("runner_port", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=5).close())
            t("outside", lambda: socket.create_connection(("192.0.2.1", 80), timeout=5).close())
            srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
            t("own_loopback", lambda: socket.create_connection(srv.getsockname(), timeout=5).close())
        """, network=False)
    finally:
        tcp.close()
    assert res == {"runner_port": "ECONNREFUSED", "outside": "ENETUNREACH", "own_loopback": "ok"}


def test_the_agent_cannot_unmount_or_remount(box: Box) -> None:
    res = ns(box, """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        def call(fn, *args):
            if fn(*args) != 0:
                raise OSError(ctypes.get_errno(), "")
        t("umount_tmp", lambda: call(libc.umount2, b"/tmp", 2))
        t("remount_rw", lambda: call(libc.mount, None, b"/", None, 32 | 4096, None))
        t("mount_tmpfs", lambda: call(libc.mount, b"tmpfs", b"/tmp", b"tmpfs", 0, None))
        t("unshare_again", lambda: call(libc.unshare, 0x10000000 | 0x00020000))
    """)
    assert res["umount_tmp"] == res["remount_rw"] == res["mount_tmpfs"] == "EPERM"
    assert res["unshare_again"] in ("ok", "EPERM", "EUSERS", "ENOSPC")  # a nested namespace gains nothing


def test_a_working_directory_that_is_not_visible_stops_the_child(box: Box, tmp_path: Path) -> None:
    elsewhere = Path(tempfile.mkdtemp(prefix="automaton-nstest-cwd-"))
    try:
        done = subprocess.run([sys.executable, "-c", "print('ran')"], cwd=elsewhere, capture_output=True,
                              text=True, preexec_fn=preexec(box.policy(), use_namespaces=True), check=False)
    except subprocess.SubprocessError:
        done = None
    finally:
        shutil.rmtree(elsewhere, ignore_errors=True)
    assert done is None  # the preexec_fn raised: the child never ran


def test_without_namespaces_launch_refuses_unless_landlock_only(box: Box, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOMATON_NAMESPACES_UNAVAILABLE", "1")
    found = available()
    assert found.ok and not found.isolated
    assert "UNIX sockets in /tmp and /run" in found.isolation_detail and "landlock-only" in found.isolation_detail
    refused = launch.prepare(box.policy(), ["true"])
    assert isinstance(refused, str) and refused.startswith("sandbox unavailable: ")
    accepted = launch.prepare(box.policy(isolation="landlock-only"), ["true"])
    assert isinstance(accepted, launch.Launch) and accepted.preexec_fn is not None
    accepted.preexec_fn.close()


def test_the_probe_plan_touches_every_tmpfs_root_that_exists() -> None:
    plan = namespaces.plan(Policy(()), None)
    assert "/tmp" in plan.roots and all(os.path.isdir(r) for r in plan.roots)
    assert plan.self_binds == () and plan.masks == ()


NON_ROOT = "tester"


def _tester() -> pwd.struct_passwd | None:
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(NON_ROOT)
    except KeyError:
        if shutil.which("useradd") is None:
            return None
        subprocess.run(["useradd", "-m", NON_ROOT], capture_output=True, check=False)
    try:
        return pwd.getpwnam(NON_ROOT)
    except KeyError:
        return None


def _open_to_all(path: str) -> bool:
    """Whether every user may run `path` (it and each folder above it are world-executable)."""
    real = os.path.realpath(path)
    return all(os.stat(p).st_mode & 0o001 for p in [real, *map(str, Path(real).parents)])


def _python_for_anyone() -> str | None:
    """A Python every user can run (the PRELUDE needs only the standard library)."""
    for candidate in (sys.executable, shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")):
        if candidate and os.path.exists(candidate) and _open_to_all(candidate):
            return candidate
    return None


def test_an_ordinary_user_gets_the_same_namespaces() -> None:
    user = _tester()
    if user is None:
        pytest.skip(f"needs root to run a child as the user {NON_ROOT!r} (and useradd to create it)")
    python = _python_for_anyone()
    if python is None:
        pytest.skip("no Python here that an ordinary user may run")
    top = Path(tempfile.mkdtemp(prefix="automaton-nstest-user-"))
    try:
        os.chmod(top, 0o755)
        work = top / "work"
        work.mkdir()
        (top / "outside.txt").write_text("original")
        for p in (top, work, top / "outside.txt"):
            os.chown(p, user.pw_uid, user.pw_gid)
        policy = Policy((work,), (), work, "tester box", visible=(top,))
        body = textwrap.dedent(f"""
            t("uid", lambda: os.getuid() == {user.pw_uid} or (_ for _ in ()).throw(OSError(1, "")))
            t("write", lambda: write("in.txt"))
            t("chmod_outside", lambda: os.chmod({str(top / 'outside.txt')!r}, 0o777))
            t("tmp", lambda: os.listdir("/tmp") == [{top.name!r}] or (_ for _ in ()).throw(OSError(1, "")))
        """)
        done = subprocess.run([python, "-c", PRELUDE + body], cwd=work, user=user.pw_uid, group=user.pw_gid,
                              extra_groups=[], preexec_fn=preexec(policy, use_namespaces=True), capture_output=True,
                              text=True, timeout=60, check=False, env={"PATH": os.environ.get("PATH", ""),
                                                                        "HOME": str(top)})
        assert done.returncode == 0, done.stderr
        res: dict[str, str] = {}
        for line in done.stdout.splitlines():
            res.update(json.loads(line))
        assert res == {"uid": "ok", "write": "ok", "chmod_outside": "EROFS", "tmp": "ok"}
        assert (top / "outside.txt").stat().st_mode & 0o777 != 0o777
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_a_masked_path_that_is_not_in_view_is_left_alone(box: Box) -> None:
    """Masked beneath /tmp but not bound back: it is not there at all, and the child runs."""
    history = box.root / "home" / ".bash_history"
    history.write_text("secret")
    res = ns(box, f't("read", lambda: read({str(history)!r}))', visible=(), masked=(history,))
    assert res == {"read": "ENOENT"}


def test_root_inside_holds_no_capability_over_the_machine(box: Box) -> None:
    """The child's uid is mapped to itself in a user namespace of its own: as root it keeps
    no capability over the initial namespaces (the host name stays as it is either way)."""
    res = ns(box, """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        name = socket.gethostname().encode()
        def call(fn, *args):
            if fn(*args) != 0:
                raise OSError(ctypes.get_errno(), "")
        t("sethostname", lambda: call(libc.sethostname, name, len(name)))
        t("raw_socket", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW).close())
        t("chown_away", lambda: os.chown("mine", 12345, 12345) if write("mine") is None else None)
    """)
    assert res["sethostname"] == "EPERM" and res["raw_socket"] == "EPERM", res
    assert res["chown_away"] == "EINVAL", res  # 12345 has no mapping in the child's namespace
