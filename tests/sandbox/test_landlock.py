"""Landlock against the real kernel: a confined child writes only its writable folder, cannot
read the hidden key, cannot signal its parent, and still runs programs and reaches the network.

The suite runs as root on its usual machine: root passes every permission check of the file
system, so each denial below comes from Landlock alone.
"""

from __future__ import annotations

import os
import socket
import stat
import sys
import threading
from pathlib import Path

import pytest

from automaton.sandbox import available, landlock
from automaton.sandbox.plan import DEVICES_RO, DEVICES_RW
from tests.sandbox.conftest import Box, probe

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Landlock is Linux's")


def test_the_kernel_offers_landlock() -> None:
    found = available()
    assert found.ok and found.mechanism == "landlock", found.detail
    assert found.abi == landlock.abi() >= 1


def test_everything_inside_the_writable_folder_works(box: Box) -> None:
    w = box.work
    res = probe(box.policy(), f"""
        t("create", lambda: write({str(w / 'a.txt')!r}))
        t("append", lambda: write({str(w / 'a.txt')!r}, "more", "a"))
        t("mkdir", lambda: os.makedirs({str(w / 'd' / 'e')!r}))
        t("rename", lambda: os.rename({str(w / 'a.txt')!r}, {str(w / 'd' / 'b.txt')!r}))
        t("truncate", lambda: os.truncate({str(w / 'd' / 'b.txt')!r}, 2))
        t("symlink", lambda: os.symlink("b.txt", {str(w / 'd' / 'l')!r}))
        t("link", lambda: os.link({str(w / 'd' / 'b.txt')!r}, {str(w / 'c.txt')!r}))
        t("unlink", lambda: os.unlink({str(w / 'c.txt')!r}))
        t("rmtree", lambda: subprocess.run(["rm", "-r", {str(w / 'd')!r}], check=True))
        t("tmpfile", lambda: __import__("tempfile").TemporaryFile().close())
    """, cwd=w)
    assert res == dict.fromkeys(["create", "append", "mkdir", "rename", "truncate", "symlink", "link", "unlink",
                                 "rmtree", "tmpfile"], "ok")
    assert list(w.iterdir()) == []


def test_no_write_of_any_kind_reaches_outside(box: Box) -> None:
    w, out = box.work, box.outside
    fd_trick = f"os.open({str(out)!r}, os.O_RDONLY)"
    res = probe(box.policy(), f"""
        os.symlink({str(out)!r}, {str(w / 'link')!r})
        t("beside", lambda: write({str(box.root / 'beside.txt')!r}))
        t("overwrite", lambda: write({str(out)!r}))
        t("append", lambda: write({str(out)!r}, "x", "a"))
        t("truncate", lambda: os.truncate({str(out)!r}, 0))
        t("unlink", lambda: os.unlink({str(out)!r}))
        t("rename_out_in", lambda: os.rename({str(out)!r}, {str(w / 'moved')!r}))
        t("mkdir", lambda: os.mkdir({str(box.root / 'newdir')!r}))
        t("via_symlink", lambda: write({str(w / 'link')!r}))
        t("hardlink", lambda: os.link({str(out)!r}, {str(w / 'hard')!r}))
        t("after_hardlink", lambda: write({str(w / 'hard')!r}))
        t("cwd_dotdot", lambda: write("/proc/self/cwd/../outside.txt"))
        t("dev_fd", lambda: write("/dev/fd/%d" % {fd_trick}))
        t("proc_fd", lambda: write("/proc/self/fd/%d" % {fd_trick}))
        t("mknod", lambda: os.mknod({str(w / 'disk')!r}, 0o600 | 0o020000, os.makedev(1, 3)))
        write({str(w / 'mine')!r})
        t("rename_in_out", lambda: os.rename({str(w / 'mine')!r}, {str(box.root / 'stolen')!r}))
    """, cwd=w)
    denied = {k: v for k, v in res.items() if k != "after_hardlink"}
    assert all(v in ("EACCES", "EXDEV", "EPERM") for v in denied.values()), res
    assert res["after_hardlink"] == "ok"  # the link failed, so this made a new file of the agent's own
    assert out.read_text() == "original"
    assert sorted(p.name for p in box.root.iterdir()) == ["home", "outside.txt", "work"]
    assert sorted(p.name for p in w.iterdir()) == ["hard", "link", "mine"]
    assert (w / "hard").read_text() == "pwned" and os.stat(w / "hard").st_ino != os.stat(out).st_ino


def test_the_hidden_key_cannot_be_read_but_its_neighbours_can(box: Box) -> None:
    os.symlink(box.key, box.work / "key-link")
    res = probe(box.policy(), f"""
        t("key", lambda: read({str(box.key)!r}))
        t("via_symlink", lambda: read("key-link"))
        t("via_proc_root", lambda: read("/proc/self/root" + {str(box.key)!r}))
        t("write_key", lambda: write({str(box.key)!r}))
        t("sibling", lambda: read({str(box.sibling)!r}))
        t("outside", lambda: read({str(box.outside)!r}))
        t("list_parent", lambda: os.listdir({str(box.sibling.parent)!r}))
        t("system_file", lambda: read("/etc/hostname" if os.path.exists("/etc/hostname") else "/etc/passwd"))
    """, cwd=box.work)
    assert {k: res[k] for k in ("key", "via_symlink", "via_proc_root", "write_key")} == dict.fromkeys(
        ["key", "via_symlink", "via_proc_root", "write_key"], "EACCES")
    assert res["sibling"] == res["outside"] == res["list_parent"] == res["system_file"] == "ok"
    assert box.key.read_text() == "secret"


def test_a_hidden_path_behind_a_symlink_is_hidden_where_it_really_is(box: Box) -> None:
    alias = box.root / "alias"
    alias.symlink_to(box.key.parent.parent)  # alias -> home/.config
    res = probe(box.policy(hidden=(alias / "automaton",)), f"""
        t("real", lambda: read({str(box.key)!r}))
        t("alias", lambda: read({str(alias / 'automaton' / 'key')!r}))
        t("sibling", lambda: read({str(box.sibling)!r}))
    """, cwd=box.work)
    assert res == {"real": "EACCES", "alias": "EACCES", "sibling": "ok"}


def _other_device() -> str:
    """A device file root can open for reading that is not among the few granted."""
    granted = set(DEVICES_RW) | set(DEVICES_RO)
    for name in sorted(os.listdir("/dev")):
        path = f"/dev/{name}"
        mode = os.lstat(path).st_mode
        if path in granted or not (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)):
            continue
        try:
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
        except OSError:
            continue
        return path
    raise AssertionError("no readable device in /dev to test with")


def test_devices_only_the_usual_few(box: Box) -> None:
    other = _other_device()
    res = probe(box.policy(), f"""
        t("null", lambda: write("/dev/null"))
        t("shell_redirect", lambda: subprocess.run("echo hi > /dev/null", shell=True, check=True))
        t("urandom", lambda: os.read(os.open("/dev/urandom", os.O_RDONLY), 8))
        t("other_device", lambda: os.open({other!r}, os.O_RDONLY | os.O_NONBLOCK))
    """, cwd=box.work)
    assert res == {"null": "ok", "shell_redirect": "ok", "urandom": "ok", "other_device": "EACCES"}, other


def test_programs_run_with_no_new_privileges(box: Box) -> None:
    res = probe(box.policy(), """
        t("sh", lambda: subprocess.run(["sh", "-c", "echo hi > out.txt"], check=True))
        t("nnp", lambda: None if "NoNewPrivs:\\t1" in open("/proc/self/status").read() else os.strerror(1) + 1)
    """, cwd=box.work)
    assert res == {"sh": "ok", "nnp": "ok"}
    assert (box.work / "out.txt").read_text() == "hi\n"


def test_the_child_cannot_signal_its_parent_but_can_signal_its_own_children(box: Box) -> None:
    if available().abi < 6:
        pytest.fail(f"signal scoping needs Landlock ABI 6; this kernel has {available().abi}")
    # Signal 0 goes through the same permission check as SIGKILL without killing the test run.
    res = probe(box.policy(), """
        t("parent", lambda: os.kill(os.getppid(), 0))
        kid = subprocess.Popen(["sleep", "30"])
        t("own_child", lambda: kid.kill())
        kid.wait()
    """, cwd=box.work)
    assert res == {"parent": "EPERM", "own_child": "ok"}


def test_abstract_sockets_outside_are_out_of_reach_the_network_is_not(box: Box) -> None:
    name = f"\0automaton-test-{os.getpid()}"
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(name)
    abstract.listen(1)
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(1)
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(tcp.accept()[0]), daemon=True).start()
    try:
        res = probe(box.policy(), f"""
            t("abstract", lambda: socket.socket(socket.AF_UNIX).connect({name!r}))
            t("tcp", lambda: socket.create_connection(("127.0.0.1", {tcp.getsockname()[1]}), timeout=5).close())
        """, cwd=box.work)
    finally:
        abstract.close()
        tcp.close()
    assert res == {"abstract": "EPERM", "tcp": "ok"}


def test_confine_self_confines_this_process_and_what_it_execs(box: Box) -> None:
    import subprocess

    script = f"""
import subprocess, sys
from pathlib import Path
from automaton.core.sandbox import Policy
from automaton.sandbox import confine_self
confine_self(Policy((Path({str(box.work)!r}),), (Path({str(box.key.parent)!r}),), None, "self"))
sys.exit(subprocess.run(["sh", "-c", "echo in > in.txt; cat {box.key} || echo x > {box.outside}"]).returncode)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=box.work, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode != 0
    # Landlock denies the key (EACCES); with namespaces its folder under /tmp is not even there
    assert ("Permission denied" in done.stderr or "No such file" in done.stderr) and "secret" not in done.stdout
    assert (box.work / "in.txt").read_text() == "in\n"
    assert box.outside.read_text() == "original"


def test_rules_bind_to_what_exists(box: Box, tmp_path: Path) -> None:
    """A writable path missing when the child starts grants nothing (it stays uncreatable)."""
    missing = tmp_path / "later"
    res = probe(box.policy(writable=(box.work, missing)), f"""
        t("create_missing", lambda: os.mkdir({str(missing)!r}))
        t("work", lambda: write("ok.txt"))
    """, cwd=box.work)
    assert res == {"create_missing": "EACCES", "work": "ok"}


def test_a_hidden_folder_stays_hidden_whole_when_a_path_beneath_it_is_hidden_too(box: Box) -> None:
    # A project's sandbox.hide may name ~/.config, which holds the record key's folder (always
    # hidden): the way down to the key must not open the rest of the folder.
    config = box.key.parent.parent
    res = probe(box.policy(hidden=(box.key.parent, config)), f"""
        t("sibling", lambda: read({str(box.sibling)!r}))
        t("key", lambda: read({str(box.key)!r}))
    """, box.work)
    assert res == {"sibling": "EACCES", "key": "EACCES"}
