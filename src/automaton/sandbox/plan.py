"""From a `Policy` to checked real paths, and to the Landlock rules that enforce it.

Landlock only ever adds access (an allow-list bound to inodes, inherited by everything
beneath a directory), so "read everything except the hidden paths" is built from the
outside in: the root gets READ_DIR (names stay listable everywhere), and every entry of
every directory on the way from `/` to a hidden path gets READ, except the entries on that
way and the hidden paths themselves. The entries are listed here, when the rules are made:
a file created later in such a directory (in `~`, for instance) is not readable by the
sandboxed process. `/dev` is sealed the same way, with only a handful of devices granted: a
process running as root could otherwise read the raw disk, hidden files included.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from automaton.core.errors import Refused, one_line
from automaton.core.sandbox import Policy
from automaton.sandbox import rights

DEVICES_RW = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts")
DEVICES_RO = ("/dev/random", "/dev/urandom")
SEALED = ("/dev",)
# Read by every program that resolves a host name; on many systems a symlink into /run.
SYSTEM_VISIBLE = ("/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf")


class SandboxError(Refused):
    """The sandbox cannot be set up as asked (a contradictory policy, a kernel refusal):
    automaton refuses to run the agent rather than run it unconfined (exit 1)."""


@dataclass(frozen=True)
class Resolved:
    """A checked policy: `writable` and `hidden` as real absolute paths (symlinks resolved,
    the way the kernel sees them); `tmpdir` likewise or None."""

    writable: tuple[str, ...]
    hidden: tuple[str, ...]
    tmpdir: str | None


@dataclass(frozen=True)
class Rule:
    """Grant `access` (Landlock rights, see `rights`) beneath `path`. `follow`: False for an
    entry found by listing a directory (a symlink there gets no rule: its target is covered
    where it really lives)."""

    path: str
    access: int
    follow: bool = True


def _real(path: object, label: str) -> str:
    if not isinstance(path, os.PathLike | str) or not os.path.isabs(path):
        raise SandboxError(one_line(f"sandbox policy {label}: {path!s} is not an absolute path"))
    try:
        return os.path.realpath(path)
    except (ValueError, OSError) as exc:  # an embedded NUL byte, a symlink loop
        raise SandboxError(one_line(f"sandbox policy {label}: cannot resolve {path!s} ({exc})")) from None


def beneath(path: str, top: str) -> bool:
    """Whether `path` lies strictly beneath directory `top` (both real and absolute)."""
    return path != top and path.startswith(top.rstrip("/") + "/")


def resolve(policy: Policy) -> Resolved:
    """Check `policy` and resolve its paths (a hidden path beneath another hidden one is
    dropped: it is hidden with it). SandboxError (one line) when a path is relative
    or unresolvable, a hidden path is `/`, a writable path and a hidden path contain each
    other (the kernel cannot carve a hole in a grant), or the temp dir is not writable."""
    label = policy.label
    writable = tuple(dict.fromkeys(_real(p, label) for p in policy.writable))
    hidden = tuple(dict.fromkeys(_real(p, label) for p in policy.hidden))
    # A hidden path beneath another is hidden already; kept, the way down to it would open the
    # rest of the outer one (`landlock_rules` grants READ to every entry beside that way).
    hidden = tuple(h for h in hidden if not any(beneath(h, o) for o in hidden))
    for h in hidden:
        if h == "/":
            raise SandboxError(one_line(f"sandbox policy {label}: cannot hide the root directory"))
        for w in writable:
            if w == h or beneath(h, w):
                raise SandboxError(one_line(f"sandbox policy {label}: the hidden {h} lies inside the writable {w}"))
            if beneath(w, h):
                raise SandboxError(one_line(f"sandbox policy {label}: the writable {w} lies inside the hidden {h}"))
    tmpdir = None if policy.tmpdir is None else _real(policy.tmpdir, label)
    if tmpdir is not None and not any(tmpdir == w or beneath(tmpdir, w) for w in writable):
        raise SandboxError(one_line(f"sandbox policy {label}: the temp dir {tmpdir} is not among the writable paths"))
    return Resolved(writable, hidden, tmpdir)


def _ancestors(path: str) -> list[str]:
    """The proper ancestors of absolute `path`, from `/` down."""
    out = ["/"]
    parts = [p for p in path.split("/") if p]
    for i in range(1, len(parts)):
        out.append("/" + "/".join(parts[:i]))
    return out


def landlock_rules(policy: Policy) -> list[Rule]:
    """The rules enforcing `policy` (see the module text), in the order they are added.

    Lists the directories on the way to each hidden path now; an unlistable one grants
    nothing beneath it (less access, never more). Paths missing when the rules are applied
    get no rule: a missing writable path stays unwritable. SandboxError as `resolve`."""
    res = resolve(policy)
    sealed = set(res.hidden) | set(SEALED)
    ways = {a for s in sealed for a in _ancestors(s)}
    rules = [Rule("/", rights.READ_DIR)]
    for parent in sorted(ways):
        try:
            names = sorted(os.listdir(parent))
        except OSError:
            continue
        for name in names:
            entry = os.path.join(parent, name)
            if entry not in ways and entry not in sealed:
                rules.append(Rule(entry, rights.READ, follow=False))
    rules += [Rule(d, rights.DEVICE_RW) for d in DEVICES_RW]
    rules += [Rule(d, rights.DEVICE_RO) for d in DEVICES_RO]
    rules += [Rule(v, rights.READ) for v in _visible(policy, res)]
    rules += [Rule(w, rights.WRITE) for w in res.writable]
    return rules


def _visible(policy: Policy, res: Resolved) -> list[str]:
    """The visible paths that may be granted READ as a whole: neither hidden, beneath a hidden
    path, nor holding one. Where a mount namespace binds them back into a private tmpfs,
    Landlock no longer finds the grants of their former parents (it walks up the mounts the
    process sees), so each needs its own; beneath a hidden path they stay hidden."""
    out: list[str] = []
    closed = (*res.hidden, *SEALED)
    for raw in (*map(str, policy.visible), *SYSTEM_VISIBLE):
        try:
            v = os.path.realpath(raw)
        except (ValueError, OSError):
            continue
        if os.path.isabs(v) and not any(v == h or beneath(v, h) or beneath(h, v) for h in closed):
            out.append(v)
    return out
