"""A seccomp filter that keeps the sandboxed processes out of each other (Linux only).

Every process of a sandboxed run is the same user in the same Landlock domain as the agent
CLI, so without this filter a tool the agent starts may `pidfd_getfd(pidfd_open(<cli>), 1, 0)`
to take the CLI's stdout and append a result of its own, or attach with ptrace(2) or write
the CLI's memory with process_vm_writev(2) to change what it prints. The filter makes
`ptrace`, `pidfd_getfd`, `process_vm_readv` and `process_vm_writev` fail with EPERM and lets
every other call through; it is inherited across fork and exec and cannot be removed. A call
of another architecture's numbering (i386 through `int 0x80` on x86_64, where 26 is ptrace)
and, on x86_64, of the x32 ABI (numbers with bit 0x40000000) fails with EPERM whatever it is.

Protocol (seccomp(2), Documentation/userspace-api/seccomp_filter.rst): a classic BPF program
over struct seccomp_data {int nr; u32 arch; u64 instruction_pointer; u64 args[6]}, passed as
struct sock_fprog {unsigned short len; struct sock_filter *filter} to
`prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)`, which needs no_new_privs (set by
`landlock.Prepared.apply` before it, and here again). Numbers from the kernel's uapi headers:
asm/unistd_64.h (x86_64: ptrace 101, process_vm_readv 310, process_vm_writev 311,
pidfd_getfd 438, seccomp 317) and asm-generic/unistd.h (aarch64: 117, 270, 271, 438,
seccomp 277); linux/audit.h (AUDIT_ARCH_X86_64 0xC000003E, AUDIT_ARCH_AARCH64 0xC00000B7).

`Filter` is built in the parent; `install` makes two system calls with a ready program, which
is what the forked child of a threaded parent may safely do (as `landlock.Prepared.apply`).
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct
from dataclasses import dataclass

from automaton.sandbox import _libc

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_GET_ACTION_AVAIL = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
X32_SYSCALL_BIT = 0x40000000
# Classic BPF opcodes (linux/bpf_common.h): BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K,
# BPF_JMP|BPF_JSET|BPF_K, BPF_RET|BPF_K.
_LD_W_ABS, _JEQ, _JSET, _RET = 0x20, 0x15, 0x45, 0x06
_NR_OFFSET, _ARCH_OFFSET = 0, 4  # offsetof(struct seccomp_data, nr / arch)
DENIED = ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd")


@dataclass(frozen=True)
class Arch:
    """What the filter needs of one architecture: its AUDIT_ARCH value, the numbers of
    `DENIED` (in that order), whether the x32 bit must be refused, and seccomp(2)'s number."""

    audit: int
    numbers: tuple[int, int, int, int]
    x32: bool
    seccomp_nr: int


ARCHES = {
    "x86_64": Arch(0xC000003E, (101, 310, 311, 438), True, 317),
    "aarch64": Arch(0xC00000B7, (117, 270, 271, 438), False, 277),
}
ARCHES["amd64"], ARCHES["arm64"] = ARCHES["x86_64"], ARCHES["aarch64"]
LAYER = "a seccomp filter (no ptrace, pidfd_getfd or process_vm_readv/writev between sandboxed processes)"
OPEN_WITHOUT = ("a process of the agent can take the agent CLI's stdout (pidfd_getfd) or write its memory"
                " (ptrace, process_vm_writev); the cost parser alone refuses a second result")


def arch() -> Arch | None:
    """This machine's numbers, or None on an architecture not known here."""
    return ARCHES.get(platform.machine().lower())


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(target: Arch) -> bytes:
    """The classic BPF program for `target` (struct sock_filter[], native byte order): a foreign
    arch, an x32 number (where `target.x32`) and each of `DENIED` return ERRNO(EPERM), all
    else ALLOW. Every jump to the deny instruction is counted from where it stands."""
    checks = [(_JSET, X32_SYSCALL_BIT)] if target.x32 else []
    checks += [(_JEQ, nr) for nr in target.numbers]
    deny = 3 + len(checks) + 1  # index of the ERRNO return: arch load, arch test, nr load, checks, ALLOW
    ops = [_op(_LD_W_ABS, _ARCH_OFFSET), _op(_JEQ, target.audit, 0, deny - 2), _op(_LD_W_ABS, _NR_OFFSET)]
    ops += [_op(code, k, deny - (3 + i + 1), 0) for i, (code, k) in enumerate(checks)]
    ops += [_op(_RET, SECCOMP_RET_ALLOW), _op(_RET, SECCOMP_RET_ERRNO | errno.EPERM)]
    return b"".join(ops)


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class Filter:
    """The program for `target`, in memory this process keeps (and a forked child shares)."""

    def __init__(self, target: Arch) -> None:
        _libc.preload()
        code = program(target)
        self._code = ctypes.create_string_buffer(code, len(code))
        self._prog = _Fprog(len(code) // 8, ctypes.addressof(self._code))

    def install(self) -> None:
        """Filter the calling thread and every process it later starts or execs: no_new_privs,
        then the filter. OSError naming the failing call; the thread must then not go on to
        run the command."""
        _libc.prctl(_libc.PR_SET_NO_NEW_PRIVS, 1, "prctl(PR_SET_NO_NEW_PRIVS)")
        _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, "prctl(PR_SET_SECCOMP)", ctypes.addressof(self._prog))


def probe() -> tuple[bool, str]:
    """(works, one line): whether this kernel takes the filter (`seccomp(SECCOMP_GET_ACTION_AVAIL)`
    of ERRNO, Linux >= 4.14 built with seccomp filters) on an architecture known here; the line
    is `LAYER`, or why not and what then stays open."""
    target = arch()
    if target is None:
        return False, f"no seccomp filter: its call numbers are not known for {platform.machine()}: {OPEN_WITHOUT}"
    action = ctypes.c_uint32(SECCOMP_RET_ERRNO)
    try:
        _libc.syscall(target.seccomp_nr, SECCOMP_GET_ACTION_AVAIL, 0, ctypes.addressof(action), what="seccomp")
    except OSError as exc:
        return False, f"no seccomp filter: this kernel refuses it ({exc.strerror}): {OPEN_WITHOUT}"
    return True, LAYER


def prepare() -> Filter | None:
    """The filter for this machine, or None on an architecture not known here."""
    target = arch()
    return None if target is None else Filter(target)
