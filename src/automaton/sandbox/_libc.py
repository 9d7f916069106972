"""The few raw system calls the sandbox needs, through ctypes (Linux only).

Python has no binding for `syscall(2)` or `prctl(2)`; both are called through the C library
of the running process, with every argument a C long (what the kernel reads from each
register), so a call in a forked child converts nothing. A failure raises
`OSError(errno, "<what>: <text>")`. Sources: syscall(2), prctl(2), errno(3).
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

# prctl(2) options, from <linux/prctl.h>.
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38

_fns: tuple[Any, Any] | None = None


def _load() -> tuple[Any, Any]:
    """(syscall, prctl) of this process's C library, each taking five C longs."""
    global _fns
    if _fns is None:
        lib = ctypes.CDLL(None, use_errno=True)  # an instance of our own: argtypes are set on it
        call, ctl = lib.syscall, lib.prctl
        call.restype, call.argtypes = ctypes.c_long, [ctypes.c_long] * 5
        ctl.restype, ctl.argtypes = ctypes.c_int, [ctypes.c_int] + [ctypes.c_ulong] * 4
        _fns = call, ctl
    return _fns


def _failed(what: str) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")


def syscall(number: int, a: int = 0, b: int = 0, c: int = 0, d: int = 0, *, what: str) -> int:
    """`syscall(number, a, b, c, d)` (pointers passed as their addresses); the result, or
    OSError when it is negative."""
    result: int = _load()[0](number, a, b, c, d)
    if result < 0:
        raise _failed(what)
    return result


def prctl(option: int, arg2: int, what: str, arg3: int = 0) -> None:
    """`prctl(option, arg2, arg3, 0, 0)` (a pointer passed as its address); OSError on failure."""
    if _load()[1](option, arg2, arg3, 0, 0) < 0:
        raise _failed(what)


def preload() -> None:
    """Load the C library now, so a forked child need not (dlopen after fork is not safe)."""
    _load()
    _load_ns()


_ns: tuple[Any, Any] | None = None


def _load_ns() -> tuple[Any, Any]:
    """(unshare, mount) of this process's C library."""
    global _ns
    if _ns is None:
        lib = ctypes.CDLL(None, use_errno=True)
        share, mnt = lib.unshare, lib.mount
        share.restype, share.argtypes = ctypes.c_int, [ctypes.c_int]
        mnt.restype = ctypes.c_int
        mnt.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
        _ns = share, mnt
    return _ns


def unshare(flags: int, *, what: str) -> None:
    """`unshare(flags)` (unshare(2)); OSError on failure."""
    if _load_ns()[0](flags) < 0:
        raise _failed(what)


def _c(text: str | None) -> bytes | None:
    return None if text is None else os.fsencode(text)


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None, *, what: str) -> None:
    """`mount(source, target, fstype, flags, data)` (mount(2)); OSError on failure."""
    if _load_ns()[1](_c(source), _c(target), _c(fstype), flags, _c(data)) < 0:
        raise _failed(what)
