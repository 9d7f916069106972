"""Linux namespaces around a sandboxed child: the layer beneath Landlock.

Landlock (`landlock`) mediates opening, creating and removing files, but not connecting to a
pathname UNIX socket, nor chmod/chown/utime/setxattr of a file it leaves readable. This layer
closes both, in the forked child, before Landlock is applied (a Landlock domain forbids
changing mounts afterwards), with the steps of user_namespaces(7) and mount_namespaces(7):

1. `unshare(CLONE_NEWUSER | CLONE_NEWNS [| CLONE_NEWNET])`; the caller's uid and gid mapped to
   themselves (`setgroups` denied first, as the kernel requires for an unprivileged gid_map).
   Done as root too: the process then holds capabilities only over its own namespaces.
2. `/` made recursively private (nothing propagates back to the caller's namespace).
3. Every mount remounted read-only (`MS_BIND|MS_REMOUNT|MS_RDONLY`, keeping the flags the
   kernel locks in a less privileged namespace: nosuid, nodev, noexec, the atime mode), so
   chmod, chown, utime and setxattr fail with EROFS outside the writable set.
4. Each writable path (outside the folders of step 5) bound onto itself and made read-write.
5. An empty private tmpfs over `/tmp`, `/var/tmp`, `/dev/shm`, `/run` and `$XDG_RUNTIME_DIR`
   (those that exist): the sockets of the user's other programs (tmux, ssh-agent, D-Bus,
   docker) live there. Bound back into it: read-only the visible paths beneath it (the
   project, HOME, the programs on PATH, the working directory, `/etc/resolv.conf`), read-write
   the writable ones (the temp dir among them), each from an O_PATH descriptor opened before
   the tmpfs went on. A socket inside a path bound back stays reachable. Then remounted
   read-only.
6. Each masked path covered: a file by an empty read-only file, a folder by an empty
   read-only tmpfs.
7. The working directory entered again by name (it still pointed into the old mounts).
8. With `network` False, loopback brought up (SIOCSIFFLAGS) in the new network namespace:
   nothing else is there, so no address outside the process's own can be reached.

The agent cannot undo any of this: the mounts copied into its namespace are locked by the
kernel, and its Landlock domain refuses mount, umount and pivot_root. Paths are planned in
the parent (`Plan`); the child only makes system calls with the ready strings and reads
/proc/self/mountinfo. Sources: unshare(2), mount(2), user_namespaces(7),
mount_namespaces(7), statvfs(3), netdevice(7).
"""

from __future__ import annotations

import atexit
import ctypes
import errno
import fcntl
import os
import shutil
import socket
import struct
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

from automaton.core.sandbox import Policy
from automaton.sandbox import _libc
from automaton.sandbox.plan import SYSTEM_VISIBLE, beneath, resolve

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_NOSYMFOLLOW = 256
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MS_STRICTATIME = 1 << 24
# statvfs(3) f_flag bits (ST_*), which are not all the MS_* bits of the same name.
_ST_TO_MS = ((1, MS_RDONLY), (2, MS_NOSUID), (4, MS_NODEV), (8, MS_NOEXEC), (1024, MS_NOATIME),
             (2048, MS_NODIRATIME), (4096, MS_RELATIME), (8192, MS_NOSYMFOLLOW))
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 1

TMPFS_ROOTS = ("/tmp", "/var/tmp", "/dev/shm", "/run")
_empty: str | None = None


def empty_file() -> str:
    """An empty read-only file (mode 0444) of this process, bound over each masked file; made
    once, in a private folder (mode 0700) removed when the process exits. The sandbox grants
    READ on it: Landlock looks up a mounted file's rights on the file mounted there."""
    global _empty
    if _empty is None or not os.path.exists(_empty):
        folder = tempfile.mkdtemp(prefix="automaton-mask-")
        atexit.register(shutil.rmtree, folder, True)
        path = os.path.join(folder, "empty")
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444))
        _empty = path
    return _empty


@dataclass(frozen=True)
class Rebind:
    """Bind `path` (real, absolute) back at the same place inside a private tmpfs; `writable`
    read-write, else read-only; `is_dir` whether a directory (else a file)."""

    path: str
    writable: bool
    is_dir: bool


@dataclass(frozen=True)
class Plan:
    """What the child does (see the module text): `roots` the folders that get a private
    tmpfs; `self_binds` the writable paths outside them; `rebinds` the paths bound back into
    them, parents first; `masks` (path, is a directory); `network` False: a private network
    namespace; `empty` the empty file bound over masked files ("" when no file is masked)."""

    roots: tuple[str, ...]
    self_binds: tuple[str, ...]
    rebinds: tuple[Rebind, ...]
    masks: tuple[tuple[str, bool], ...]
    network: bool
    empty: str = ""


def _kind(path: str) -> bool | None:
    """True for a directory, False for another existing file, None when missing."""
    try:
        return os.path.isdir(path) if os.path.exists(path) else None
    except (OSError, ValueError):
        return None


def _roots(environ_runtime: str | None) -> tuple[str, ...]:
    found = _private_folders(environ_runtime)
    # A root beneath another disappears with it: only the outer ones get a tmpfs.
    return tuple(sorted(r for r in found if not any(beneath(r, o) for o in found)))


def _private_folders(environ_runtime: str | None) -> list[str]:
    """Every folder made private and empty (real paths), nested ones too ($XDG_RUNTIME_DIR
    beneath /run): none of them, nor a folder holding one, is ever bound back."""
    found: list[str] = []
    for candidate in (*TMPFS_ROOTS, *([environ_runtime] if environ_runtime else [])):
        if not os.path.isabs(candidate):
            continue
        real = os.path.realpath(candidate)
        if real != "/" and _kind(real) is True and real not in found:
            found.append(real)
    return found


def _under(path: str, tops: Sequence[str]) -> bool:
    return any(path == t or beneath(path, t) for t in tops)


def plan(policy: Policy, runtime_dir: str | None = None) -> Plan:
    """The namespace steps enforcing `policy` (paths resolved as `plan.resolve` does, which
    raises SandboxError for an invalid policy). `runtime_dir`: $XDG_RUNTIME_DIR, if any.
    Paths missing now are left out: a missing writable path stays unwritable."""
    res = resolve(policy)
    roots = _roots(runtime_dir)
    writable = [w for w in res.writable if _kind(w) is not None]
    self_binds = tuple(w for w in writable if not _under(w, roots))
    wanted = _bound_back(policy, roots, writable, _private_folders(runtime_dir))
    rebinds = tuple(Rebind(p, wanted[p], _kind(p) is True) for p in sorted(wanted, key=lambda p: (p.count("/"), p)))
    masks = tuple((m, bool(_kind(m))) for m in (os.path.realpath(str(p)) for p in policy.masked
                                                if os.path.isabs(str(p))) if _kind(m) is not None)
    empty = empty_file() if any(not is_dir for _, is_dir in masks) else ""
    return Plan(roots, self_binds, rebinds, masks, policy.network, empty)


def _bound_back(policy: Policy, roots: Sequence[str], writable: list[str], private: Sequence[str]) -> dict[str, bool]:
    """The paths under the private roots that are bound back into the namespace: path -> writable."""
    wanted: dict[str, bool] = {}
    for w in writable:
        if _under(w, roots) and not any(_under(r, [w]) for r in private):
            wanted[w] = True
    visible = [os.path.realpath(v) for v in (*map(str, policy.visible), *SYSTEM_VISIBLE) if os.path.isabs(v)]
    for v in visible:
        # Inside a path bound back read-write it is there already, and must stay writable. A path
        # that is one of the private folders or holds one (a session started in /tmp or /run/user)
        # is never bound back: it would show every socket the private folder hides.
        if (_under(v, roots) and v not in wanted and not _under(v, writable) and _kind(v) is not None
                and not any(_under(r, [v]) for r in private)):
            wanted[v] = False
    return wanted


# ---------------------------------------------------------------- in the child, after fork


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _libc.mount(source, target, fstype, flags, data, what=f"mount {target}")


def _locked(path: str) -> int:
    """The mount flags of the mount at `path` a remount must keep (the kernel locks them in a
    namespace it copied for a less privileged user); MS_STRICTATIME when neither noatime nor
    relatime is set (the atime mode is locked too)."""
    have = os.statvfs(path).f_flag
    flags = 0
    for st, ms in _ST_TO_MS:
        if have & st and ms != MS_RDONLY:
            flags |= ms
    if not flags & (MS_NOATIME | MS_RELATIME):
        flags |= MS_STRICTATIME
    return flags


def _remount(path: str, readonly: bool) -> None:
    _mount(None, path, None, MS_BIND | MS_REMOUNT | _locked(path) | (MS_RDONLY if readonly else 0))


def _unescape(field: bytes) -> str:
    """A mountinfo path: `\\ooo` octal escapes for space, tab, newline, backslash."""
    out, i = bytearray(), 0
    while i < len(field):
        if field[i] == 0x5C and i + 3 < len(field) and field[i + 1:i + 4].isdigit():
            out.append(int(field[i + 1:i + 4], 8))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return out.decode("utf-8", "surrogateescape")


def _mount_points() -> list[str]:
    fd = os.open("/proc/self/mountinfo", os.O_RDONLY | os.O_CLOEXEC)
    chunks: list[bytes] = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return [_unescape(line.split(b" ")[4]) for line in b"".join(chunks).splitlines() if line.count(b" ") > 4]


# A mount point the walk cannot reach (covered by a later mount, gone) or one that the kernel
# never lets a namespace remount (EINVAL: not a mount point by that path any more).
_UNREACHABLE = frozenset({errno.ENOENT, errno.EACCES, errno.EINVAL, errno.ENOTDIR})


def _all_read_only() -> None:
    for point in _mount_points():
        try:
            _remount(point, True)
        except OSError as exc:
            if exc.errno not in _UNREACHABLE:
                raise


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _enter(network: bool) -> None:
    uid, gid = os.geteuid(), os.getegid()
    # A child whose uid was just changed (Popen's user=) is not dumpable, so its /proc/self
    # files belong to root and it could not write its own uid_map.
    _libc.prctl(_libc.PR_SET_DUMPABLE, 1, "prctl(PR_SET_DUMPABLE)")
    flags = CLONE_NEWUSER | CLONE_NEWNS | (0 if network else CLONE_NEWNET)
    _libc.unshare(flags, what="unshare")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
    _write("/proc/self/gid_map", f"{gid} {gid} 1\n")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)


def _make_point(path: str, is_dir: bool) -> None:
    if os.path.lexists(path):
        return
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    if is_dir:
        os.mkdir(path, 0o755)
    else:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o444))


def _bind(source: str, target: str, readonly: bool) -> None:
    _mount(source, target, None, MS_BIND | MS_REC)
    _remount(target, readonly)


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sh", b"lo", 0)
        got = struct.unpack("16sh", fcntl.ioctl(s, SIOCGIFFLAGS, req + b"\0" * 22)[:18])[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sh", b"lo", got | IFF_UP) + b"\0" * 22)


def _tmpfs(path: str, readonly: bool = False) -> None:
    _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | (MS_RDONLY if readonly else 0), "mode=0755,size=16m")


def _private_roots(p: Plan, held: list[tuple[Rebind, int]]) -> None:
    """Step 5: the tmpfs roots (mount points made, then read-only) and what is bound back
    from the descriptors `held`."""
    for root in p.roots:
        _tmpfs(root)
    for r, _ in held:
        _make_point(r.path, r.is_dir)
    for root in p.roots:
        _remount(root, True)
    for r, fd in held:
        _bind(f"/proc/self/fd/{fd}", r.path, not r.writable)


def enter(p: Plan) -> None:
    """Steps 1 to 8 of the module text, in the calling (single-threaded, forked) process.
    OSError naming the failing call; the process must then not run the command."""
    cwd = os.getcwd()
    _enter(p.network)
    _all_read_only()
    for w in p.self_binds:
        _bind(w, w, False)
    held = [(r, os.open(r.path, os.O_PATH | os.O_CLOEXEC)) for r in p.rebinds]
    empty = os.open(p.empty, os.O_PATH | os.O_CLOEXEC) if p.empty else -1
    try:
        _private_roots(p, held)
        for path, is_dir in p.masks:
            if not os.path.lexists(path):
                continue  # beneath a private tmpfs and not bound back: not there to read at all
            if is_dir:
                _tmpfs(path, readonly=True)
            else:
                _bind(f"/proc/self/fd/{empty}", path, True)
    finally:
        for fd in (*(fd for _, fd in held), empty):
            if fd >= 0:
                os.close(fd)
    try:
        os.chdir(cwd)
    except OSError as exc:
        raise OSError(exc.errno, f"the working directory {cwd} is not visible in the sandbox"
                                 f" ({exc.strerror})") from None
    if not p.network:
        _loopback_up()


def preload() -> None:
    """Resolve the C functions and modules the child uses, now (never import after fork)."""
    _libc.preload()
    ctypes.get_errno()
