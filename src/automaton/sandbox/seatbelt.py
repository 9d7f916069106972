"""macOS: a `Policy` as a Seatbelt profile (SBPL), and the argv that runs a command under it.

SBPL is a Scheme dialect read by `sandbox-exec -p PROFILE CMD…` (sandbox-exec(1)). When
several rules match an operation the LAST one wins, so the profile goes from broad to
narrow: allow everything, deny every write (`file-write*` covers the metadata writes too:
file-write-mode, -owner, -times, -xattr, named once more for the reader), allow writes beneath
the writable paths and to a few devices; deny connecting to any UNIX socket (`network-outbound`
with `(remote unix-socket)`: the tmux server, ssh-agent, docker) except beneath the writable
paths and the system's resolver and log sockets; without network, deny IP connections except
to localhost; finally deny reading or writing the hidden and masked paths. These are what the
Linux namespaces do (`namespaces`). Paths are real paths (Seatbelt matches `/private/tmp/x`,
never the `/tmp/x` symlink). Not run on a Mac here: the profile is tested as text only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from automaton.core.errors import one_line
from automaton.core.sandbox import Policy
from automaton.sandbox.plan import SandboxError, resolve

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
DEVICE_LITERALS = ("/dev/null", "/dev/zero", "/dev/tty", "/dev/ptmx", "/dev/dtracehelper")
DEVICE_REGEXES = (r"^/dev/ttys[0-9]+$", r"^/dev/fd/[0-9]+$")
# The UNIX sockets every program may still reach: name resolution and the system log.
SYSTEM_SOCKETS = ("/private/var/run/mDNSResponder", "/private/var/run/syslog")
METADATA_WRITES = "file-write-mode file-write-owner file-write-times file-write-xattr"


def quote(path: str) -> str:
    """`path` as an SBPL string literal: backslash and double quote escaped. SandboxError for
    a control character (a newline could end the rule early) or bytes that are not UTF-8."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        raise SandboxError(one_line(f"sandbox: cannot express the path {path!r} in a Seatbelt profile"))
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise SandboxError(one_line(f"sandbox: the path {path!r} is not UTF-8")) from None
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _filter(path: str) -> str:
    """`(literal P)` for an existing non-directory, else `(subpath P)` (all beneath)."""
    kind = "literal" if os.path.exists(path) and not os.path.isdir(path) else "subpath"
    return f"({kind} {quote(path)})"


def seatbelt_profile(policy: Policy) -> str:
    """The SBPL text enforcing `policy` (one rule per line; see the module text for the
    order). SandboxError when the policy is invalid (`plan.resolve`) or a path cannot be
    written as an SBPL string."""
    res = resolve(policy)
    allowed = [_filter(w) for w in res.writable]
    allowed += [f"(literal {quote(d)})" for d in DEVICE_LITERALS]
    allowed += [f'(regex #"{r}")' for r in DEVICE_REGEXES]
    lines = ["(version 1)", "(allow default)", "(deny file-write*)", f"(deny {METADATA_WRITES})",
             "(allow file-write* " + " ".join(allowed) + ")", "(deny network-outbound (remote unix-socket))"]
    sockets = [f"(path-literal {quote(s)})" for s in SYSTEM_SOCKETS]
    sockets += [f"({'path-literal' if f.startswith('(literal') else 'subpath'} {quote(w)})"
                for f, w in zip(allowed, res.writable, strict=False)]
    lines.append("(allow network-outbound (remote unix-socket " + " ".join(sockets) + "))")
    if not policy.network:
        lines += ['(deny network-outbound (remote ip "*:*"))', '(allow network-outbound (remote ip "localhost:*"))']
    closed = [*res.hidden, *(os.path.realpath(str(m)) for m in policy.masked if os.path.isabs(str(m)))]
    if closed:
        hidden = " ".join(f"(subpath {quote(h)})" for h in dict.fromkeys(closed))
        lines.append(f"(deny file-read* file-write* {hidden})")
    return "\n".join(lines) + "\n"


def wrap_argv(policy: Policy, argv: Sequence[str]) -> list[str]:
    """`argv` run under `policy`: [sandbox-exec, -p, profile, *argv]. SandboxError as
    `seatbelt_profile`."""
    return [SANDBOX_EXEC, "-p", seatbelt_profile(policy), *argv]
