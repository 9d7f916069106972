"""The seccomp filter: its program, read instruction by instruction, and against the real kernel
a sandboxed process that tries to reach another one of the sandbox (pidfd_getfd, ptrace,
process_vm_readv/writev) gets EPERM, while ordinary programs still run; without the filter the
same attempts succeed, which is what the filter is for."""

from __future__ import annotations

import errno
import platform
import struct
import sys

import pytest

from automaton.sandbox import available, layers, seccomp
from tests.sandbox.conftest import Box, probe

LINUX = sys.platform.startswith("linux")


def run_bpf(code: bytes, nr: int, arch: int) -> int:
    """What the classic BPF program `code` returns for a call `nr` of `arch` (only the
    instructions `seccomp.program` uses; anything else fails the test)."""
    ops = [struct.unpack("=HBBI", code[i:i + 8]) for i in range(0, len(code), 8)]
    data = struct.pack("=iI", nr, arch)
    pc, acc = 0, 0
    while True:
        op, jt, jf, k = ops[pc]
        if op == 0x20:
            acc = struct.unpack_from("=I", data, k)[0]
            pc += 1
        elif op in (0x15, 0x45):
            hit = acc == k if op == 0x15 else bool(acc & k)
            pc += 1 + (jt if hit else jf)
        else:
            assert op == 0x06, op
            return int(k)


EPERM = seccomp.SECCOMP_RET_ERRNO | errno.EPERM


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_program_denies_the_four_calls_a_foreign_arch_and_x32(machine: str) -> None:
    target = seccomp.ARCHES[machine]
    code = seccomp.program(target)
    for nr in target.numbers:
        assert run_bpf(code, nr, target.audit) == EPERM
    for nr in (0, 1, 39, 59, 57, 172, 221, 434, 437, 439):  # read, write, getpid, execve, fork, ...
        if nr not in target.numbers:
            assert run_bpf(code, nr, target.audit) == seccomp.SECCOMP_RET_ALLOW
    other = seccomp.ARCHES["aarch64" if machine == "x86_64" else "x86_64"].audit
    for foreign in (0x40000003, other):  # AUDIT_ARCH_I386, the other 64-bit arch
        for nr in (0, 39, 26, 20):
            assert run_bpf(code, nr, foreign) == EPERM
    x32_getpid = seccomp.X32_SYSCALL_BIT | 39
    assert run_bpf(code, x32_getpid, target.audit) == (EPERM if target.x32 else seccomp.SECCOMP_RET_ALLOW)


def test_the_numbers_are_the_kernels() -> None:
    # asm/unistd_64.h and asm-generic/unistd.h, in the order of seccomp.DENIED.
    assert seccomp.DENIED == ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd")
    assert seccomp.ARCHES["x86_64"].numbers == (101, 310, 311, 438)
    assert seccomp.ARCHES["aarch64"].numbers == (117, 270, 271, 438)
    assert seccomp.ARCHES["x86_64"].audit == 62 | 0xC0000000
    assert seccomp.ARCHES["aarch64"].audit == 183 | 0xC0000000


def test_an_unknown_arch_has_no_filter_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    assert seccomp.prepare() is None
    works, line = seccomp.probe()
    assert not works and "riscv64" in line and "pidfd_getfd" in line and "\n" not in line


# Run inside the sandbox: a sibling (`sleep`, started by the confined program in the same sandbox)
# is the target, never the test process: a ptrace attach that got through would stop pytest.
ATTEMPTS = """
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    def sc(*args):
        if libc.syscall(*[ctypes.c_long(a) for a in args]) < 0:
            raise OSError(ctypes.get_errno(), "syscall")
    NR = {"x86_64": (101, 310, 311, 438), "aarch64": (117, 270, 271, 438)}[os.uname().machine]
    buf = ctypes.create_string_buffer(b"original", 8)
    iov = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 8)  # the same address in a forked copy
    sib = os.fork()
    if sib == 0:
        import time
        time.sleep(30)
        os._exit(0)
    pidfd = os.pidfd_open(sib)
    t("pidfd_getfd", lambda: sc(NR[3], pidfd, 1, 0))
    t("process_vm_readv", lambda: sc(NR[1], sib, ctypes.addressof(iov), 1, ctypes.addressof(iov), 1, 0))
    t("process_vm_writev", lambda: sc(NR[2], sib, ctypes.addressof(iov), 1, ctypes.addressof(iov), 1, 0))
    t("ptrace_attach", lambda: sc(NR[0], 16, sib, 0, 0))  # PTRACE_ATTACH
    t("ptrace_traceme", lambda: sc(NR[0], 0, 0, 0, 0))  # PTRACE_TRACEME
    t("proc_mem", lambda: open(f"/proc/{sib}/mem", "r+b").close())  # the file-system way: Landlock's
    os.kill(sib, signal.SIGKILL)
    os.waitpid(sib, 0)
    t("run_a_program", lambda: subprocess.run(["true"], check=True))
    t("pidfd_open", lambda: os.close(os.pidfd_open(os.getpid())))
"""


@pytest.mark.skipif(not LINUX, reason="seccomp is Linux's")
@pytest.mark.parametrize("namespaces", [False, True])
def test_a_sandboxed_process_cannot_reach_another(box: Box, namespaces: bool) -> None:
    if not available().filtered:
        pytest.skip(available().filter_detail)
    if namespaces and not available().isolated:
        pytest.skip(available().isolation_detail)
    res = probe(box.policy(), ATTEMPTS, box.work, namespaces=namespaces)
    mem = res.pop("proc_mem")
    assert res == {"pidfd_getfd": "EPERM", "process_vm_readv": "EPERM", "process_vm_writev": "EPERM",
                   "ptrace_attach": "EPERM", "ptrace_traceme": "EPERM", "run_a_program": "ok", "pidfd_open": "ok"}
    assert mem in ("EACCES", "EROFS")  # /proc is read-only to the sandbox


@pytest.mark.skipif(not LINUX, reason="seccomp is Linux's")
def test_without_the_filter_the_same_attempts_succeed(box: Box, monkeypatch: pytest.MonkeyPatch) -> None:
    """The denials above are the filter's: Landlock and the namespaces let every one through."""
    monkeypatch.setattr(seccomp, "prepare", lambda: None)
    res = probe(box.policy(), ATTEMPTS.replace('t("ptrace_traceme"', '# t("ptrace_traceme"'), box.work,
                namespaces=available().isolated)
    assert res["pidfd_getfd"] == res["process_vm_readv"] == res["process_vm_writev"] == "ok", res
    assert res["ptrace_attach"] == "ok", res
    assert res["proc_mem"] in ("EACCES", "EROFS")  # not the filter's: Landlock and the read-only mounts


@pytest.mark.skipif(not LINUX or platform.machine() != "x86_64", reason="the i386 and x32 entries are x86_64's")
def test_i386_and_x32_calls_are_refused(box: Box) -> None:
    if not available().filtered:
        pytest.skip(available().filter_detail)
    res = probe(box.policy(), """
        import ctypes, mmap
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        def x32_getpid():
            if libc.syscall(ctypes.c_long(0x40000000 | 39)) < 0:
                raise OSError(ctypes.get_errno(), "x32")
        # mov eax, 20 (i386 getpid); int 0x80; ret
        code = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        code.write(bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3]))
        addr = ctypes.addressof(ctypes.c_char.from_buffer(code))
        i386 = ctypes.CFUNCTYPE(ctypes.c_int)(addr)
        def i386_getpid():
            got = i386()
            if got < 0:
                raise OSError(-got, "i386")
        t("x32_getpid", x32_getpid)
        t("i386_getpid", i386_getpid)
    """, box.work)
    assert res["x32_getpid"] == "EPERM", res
    assert res["i386_getpid"] in ("EPERM", "ENOSYS"), res  # ENOSYS: a kernel without IA32 emulation


def test_the_layer_line_names_the_filter_or_says_what_stays_open() -> None:
    found = available()
    if not found.ok or found.mechanism != "landlock":
        pytest.skip(found.detail)
    line = layers(found)
    assert ("a seccomp filter (no ptrace, pidfd_getfd" in line) == found.filtered
    if not found.filtered:
        assert "no seccomp filter" in line and "parser" in line
