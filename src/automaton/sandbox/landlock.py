"""Landlock through raw system calls: probe the ABI, prepare rules, restrict a thread.

Protocol (docs.kernel.org/userspace-api/landlock.html, landlock(7)): syscalls
landlock_create_ruleset = 444, landlock_add_rule = 445, landlock_restrict_self = 446 (the
same numbers on x86_64 and aarch64); `landlock_create_ruleset(NULL, 0,
LANDLOCK_CREATE_RULESET_VERSION)` returns the ABI; struct landlock_ruleset_attr is three
u64 (handled_access_fs, handled_access_net from ABI 4, scoped from ABI 6) and is passed
with the size the running ABI knows; struct landlock_path_beneath_attr is a packed u64 +
s32; PR_SET_NO_NEW_PRIVS must be set before landlock_restrict_self without CAP_SYS_ADMIN
(it is always set here: no setuid program can regain what the sandbox took).

`Prepared` opens every rule's path (O_PATH, close-on-exec) and builds the ruleset in the
parent (landlock_create_ruleset, one landlock_add_rule per path; the paths are closed again:
a rule holds its inode, not the descriptor), where a failure is reported plainly; `apply`
then makes two system calls with ready numbers (no_new_privs, landlock_restrict_self of that
ruleset), which is what a forked child of a threaded parent may safely do. The child of a
`preexec_fn` runs Python in a copy of the runner: the less it does there, the less of that
copy it touches (BENCHMARKS.md, figure 6).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import stat
from collections.abc import Sequence

from automaton.sandbox import _libc, rights
from automaton.sandbox.plan import Rule

SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
ARCHES = frozenset({"x86_64", "amd64", "aarch64", "arm64"})
# A path missing (or unreachable) when the rules are made gets no rule: less access, never more.
_MISSING = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.ELOOP})


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi() -> int:
    """The Landlock ABI of the running kernel (>= 1). OSError: ENOSYS (not built in),
    EOPNOTSUPP (built in, disabled at boot), EPERM (blocked, e.g. by a container's seccomp);
    OSError(ENOSYS) too on an architecture whose syscall numbers are not known here."""
    if platform.machine().lower() not in ARCHES:
        raise OSError(errno.ENOSYS, f"Landlock system call numbers are not known for {platform.machine()}")
    return _libc.syscall(SYS_CREATE_RULESET, 0, 0, CREATE_RULESET_VERSION, what="landlock_create_ruleset")


class Prepared:
    """`rules` made into a Landlock ruleset for a kernel of ABI `level`: each existing path
    opened, its rights cut to what that ABI handles (and to what a file may take when it is not
    a directory; a symlink gets none), added to the ruleset, closed again. Holds the ruleset's
    file descriptor (close-on-exec) until `close`. OSError naming the path when one cannot be
    opened for another reason than being missing, or the kernel refuses a rule."""

    def __init__(self, rules: Sequence[Rule], level: int) -> None:
        _libc.preload()
        self.handled = rights.handled(level)
        attr = _RulesetAttr(self.handled, 0, rights.scopes(level))
        size = 8 if level < 4 else 16 if level < 6 else 24
        self.ruleset = -1
        fds: list[int] = []
        try:
            opened: list[tuple[str, int, int]] = []
            for rule in rules:
                found = self._open(rule)
                if found is not None:
                    fds.append(found[0])
                    opened.append((rule.path, *found))
            self.ruleset = _libc.syscall(SYS_CREATE_RULESET, ctypes.addressof(attr), size, 0,
                                         what="landlock_create_ruleset")
            beneath = _PathBeneathAttr()
            for path, fd, access in opened:
                beneath.allowed_access, beneath.parent_fd = access, fd
                try:
                    _libc.syscall(SYS_ADD_RULE, self.ruleset, RULE_PATH_BENEATH, ctypes.addressof(beneath), 0,
                                  what="landlock_add_rule")
                except OSError as exc:
                    raise OSError(exc.errno, f"{exc.strerror} ({path})") from None
        except BaseException:
            self.close()
            raise
        finally:
            for fd in fds:
                os.close(fd)

    def _open(self, rule: Rule) -> tuple[int, int] | None:
        flags = os.O_PATH | os.O_CLOEXEC | (0 if rule.follow else os.O_NOFOLLOW)
        try:
            fd = os.open(rule.path, flags)
        except OSError as exc:
            if exc.errno in _MISSING:
                return None
            raise OSError(exc.errno, f"open {rule.path}: {exc.strerror}") from None
        mode = os.fstat(fd).st_mode
        access = 0 if stat.S_ISLNK(mode) else rule.access & self.handled
        if not stat.S_ISDIR(mode):
            access &= rights.FILE_ONLY
        if not access:
            os.close(fd)
            return None
        return fd, access

    def apply(self) -> None:
        """Restrict the calling thread (and every process it later starts) to the ruleset:
        no_new_privs, then landlock_restrict_self (the ruleset handles every right the ABI
        knows, from ABI 6 also scoping signals and abstract UNIX sockets; the network is not
        restricted). OSError naming the failing call; the thread may then be partly restricted
        and must not go on to run the command."""
        _libc.prctl(_libc.PR_SET_NO_NEW_PRIVS, 1, "prctl(PR_SET_NO_NEW_PRIVS)")
        _libc.syscall(SYS_RESTRICT_SELF, self.ruleset, 0, what="landlock_restrict_self")

    def close(self) -> None:
        """Close the ruleset (in this process; a child's copy closes at exec)."""
        ruleset, self.ruleset = self.ruleset, -1
        if ruleset >= 0:
            os.close(ruleset)
