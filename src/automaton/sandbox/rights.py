"""Landlock access rights (bit masks) and the ABI that introduced each.

Values from the kernel's uapi header <linux/landlock.h> and the Landlock userspace API
documentation (docs.kernel.org/userspace-api/landlock.html): file-system rights
LANDLOCK_ACCESS_FS_*, and the scopes of ABI 6 LANDLOCK_SCOPE_*.
"""

from __future__ import annotations

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2: link or rename a file into another directory
TRUNCATE = 1 << 14  # ABI 3: truncate(2), ftruncate(2), open(O_TRUNC)
IOCTL_DEV = 1 << 15  # ABI 5: ioctl(2) on a character or block device

# ABI 6 scopes: the sandboxed process may not signal, nor connect to an abstract UNIX
# socket of, a process outside its own Landlock domain.
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

# Rights that may be granted on a regular file (the kernel rejects the others with EINVAL).
FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV

READ = EXECUTE | READ_FILE | READ_DIR
# Beneath a writable path: everything except creating device nodes and device ioctls. A
# root agent that could mknod a block device in its worktree could then write the raw disk.
WRITE = (READ | WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO
         | MAKE_SYM | REFER | TRUNCATE)
# The few device files every program expects (a shell's `> /dev/null` opens with O_TRUNC).
DEVICE_RW = READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV
DEVICE_RO = READ_FILE | IOCTL_DEV


def handled(abi: int) -> int:
    """Every file-system right the kernel of Landlock ABI `abi` knows (all are handled, so
    each is denied unless a rule grants it)."""
    mask = (1 << 13) - 1  # ABI 1: EXECUTE … MAKE_SYM
    if abi >= 2:
        mask |= REFER
    if abi >= 3:
        mask |= TRUNCATE
    if abi >= 5:
        mask |= IOCTL_DEV
    return mask


def scopes(abi: int) -> int:
    """The scopes set for ABI `abi`: signals and abstract UNIX sockets from ABI 6 on."""
    return SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET if abi >= 6 else 0
