"""Whether an agent started this process: its ancestry and its session, read from the OS.

A human act (`--approve`, `--focus`) is refused when any of these holds, and also when they
cannot be read at all (fail closed: an ancestry that cannot be read is not a human's):

1. an ancestor carries an agent's marker variable in the environment it started with, or runs an
   agent program (`claude`, `codex`, `gemini`, … or a node script of one of them);
2. an ancestor's environment cannot be read and it is not init (pid 1) or a login boundary
   (`sshd`, `login`, `systemd` … owned by root or started by a root process: a process the
   agent owns can never be one), or an ancestor is invisible (another user's, under `hidepid`);
3. it was started by a scheduler (`atd`, `cron`, `anacron` among its ancestors; `systemd-run`,
   `systemd --user` or init as its direct parent) or detached from the shell that started it:
   its parent is init (pid 1, whatever its name: in a container it may be anything) or a
   subreaper, or its session's leader is gone and was neither itself nor an ancestor (a double
   fork, `nohup … &` after the shell exited); a live leader that is not an ancestor is judged
   by rule 4 with the rest of the session. Further up, an ancestor that hangs off init or a
   subreaper, leads a session of its own with no terminal (it called setsid) and is a shell, an
   interpreter, a wrapper such as `setsid`/`nohup`/`timeout`, or automaton itself, is the same
   detached start one process removed (`(setsid bash -c "automaton …" &)`): refused. Terminals,
   multiplexers, sshd and service managers also hang off init, but under their own names;
   names are the process's own to choose, so this rule is a speed bump for an agent outside
   any sandbox, not a wall (the wall is the kernel sandbox, where no approval can be written);
4. another process of its session carries a marker or runs an agent program.

Linux reads `/proc/<pid>/stat` (parent and session: proc(5) fields 4 and 6), `status` (`Uid:`),
`environ` (the environment the process was started with; readable only by its owner or root),
and `cmdline`. Other POSIX systems read `ps -E` (macOS, BSD: the environment after the
arguments) for rules 1-2 only, since `ps` gives no session id there. A system with neither (Windows)
has no readable ancestry, so human acts are refused there (run them from WSL).
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Proc:
    """One process: ids, real `uid`, `comm`, `argv`, and the names in its starting environment
    (`env`, None when it may not be read). `sid` is None where the system does not say."""

    pid: int
    ppid: int
    sid: int | None
    uid: int | None
    comm: str
    argv: tuple[str, ...]
    env: frozenset[str] | None
    tty: int | None = None  # controlling terminal (proc(5) tty_nr; 0: none), None where unknown


class Reader(Protocol):
    def proc(self, pid: int) -> Proc | None:
        """The process, or None when it is not visible (gone, or hidden from this user)."""

    def session(self, sid: int) -> list[int] | None:
        """The pids of session `sid`, or None when the system cannot list them."""


AGENT_PROGRAMS = frozenset({"claude", "codex", "gemini", "cursor-agent", "aider", "opencode", "goose", "amp",
                            "qwen", "crush", "copilot"})
_AGENT_SCRIPT = re.compile(r"claude-code|@anthropic-ai/claude|@openai/codex|gemini-cli|@google/gemini|"
                           r"cursor-agent|opencode-ai", re.IGNORECASE)
LOGIN_BOUNDARIES = frozenset({"sshd", "sshd-session", "sshd-auth", "login", "systemd", "init", "gdm-session-wor",
                              "lightdm", "sddm-helper", "agetty", "screen", "su", "containerd-shim", "runc",
                              "conmon", "launchd"})
SCHEDULERS = frozenset({"atd", "cron", "crond", "anacron", "fcron", "systemd-run"})
# What a detached start hangs off init as (see rule 3): shells, interpreters, wrappers, automaton.
_DETACHER = re.compile(r"(?:ba|da|z|k|mk|tc|c|fi|a|yash|busybox)?sh|fish|"
                       r"(?:python|pypy|node|nodejs|deno|bun|perl|ruby|php|lua|tclsh|osascript)[0-9.]*|"
                       r"setsid|nohup|timeout|env|script|stdbuf|nice|ionice|chrt|taskset|daemonize|"
                       r"start-stop-daemon|unbuffer|expect|flock|xargs|automaton(?:-loop)?")
INIT_LIKE = frozenset({"systemd", "init", "tini", "dumb-init", "docker-init", "catatonit", "s6-svscan",
                       "runit", "launchd"})


def reason(markers: Iterable[str], read: Callable[[], Reader | None]) -> str | None:
    """Why this process is an agent's or cannot be shown not to be, or None (see the module)."""
    wanted = frozenset(markers)
    reader = read()
    if reader is None:
        return "the process ancestry cannot be read on this system (no /proc, no ps)"
    me = reader.proc(os.getpid())
    if me is None:
        return "this process cannot read its own entry in the process table"
    why, chain, boundary = _walk(me, reader, wanted)
    if why:
        return why
    parent = chain[0] if chain else None
    if parent is not None and (parent.pid == 1 or parent.comm in INIT_LIKE | SCHEDULERS):
        return (f"its parent is {parent.comm} (process {parent.pid}): it was detached from the shell that"
                " started it, or started by a scheduler")
    why = _detached_above(chain)
    if why:
        return why
    # Past a login boundary the leader may be out of sight; the boundary vouches for what is above.
    # A leader that is alive but not an ancestor is judged with the rest of the session below
    # (a test runner or a job started in the background of a live shell); a leader that is gone
    # left this process behind (a double fork from a shell that then exited): nothing vouches.
    if not boundary and me.sid is not None and me.sid > 1 and me.sid != me.pid \
            and me.sid not in {p.pid for p in chain} and reader.proc(me.sid) is None:
        return (f"the leader of its session (process {me.sid}) is gone and was not among its ancestors: it was"
                " detached from the shell that started it (double fork, nohup, setsid)")
    return _session(me, reader, wanted, {p.pid for p in chain})


def _walk(me: Proc, reader: Reader, wanted: frozenset[str]) -> tuple[str | None, list[Proc], bool]:
    """Walk up from `me`'s parent: (why an ancestor is an agent's or cannot be ruled out, or
    None; the ancestors seen, nearest first; whether the walk stopped at a login boundary
    below init)."""
    chain: list[Proc] = []
    seen = {me.pid}
    pid = me.ppid
    while pid >= 1 and pid not in seen:
        seen.add(pid)
        proc = reader.proc(pid)
        if proc is None:
            return f"ancestor process {pid} cannot be seen, so an agent above it cannot be ruled out", chain, False
        chain.append(proc)
        if proc.env is None:
            named = _agent_sign(proc, wanted)
            if named:
                return named, chain, False
            if _boundary(proc, reader):
                return None, chain, proc.pid != 1  # init is the top: nothing above it was hidden
            return (f"the environment of ancestor process {pid} ({proc.comm}) cannot be read, so an agent"
                    " above it cannot be ruled out"), chain, False
        why = _agent_sign(proc, wanted) or _scheduler(proc)
        if why:
            return why, chain, False
        pid = proc.ppid
    return None, chain, False


def _detached_above(chain: list[Proc]) -> str | None:
    """Rule 3 one or more processes up: an ancestor that a setsid and a double fork left hanging
    off init or a subreaper, as a shell, interpreter, wrapper or automaton (see the module)."""
    for proc, parent in itertools.pairwise(chain):
        if not (parent.pid == 1 or parent.comm in INIT_LIKE):
            continue
        names = {proc.comm, os.path.basename(proc.argv[0]) if proc.argv else ""}
        if proc.sid == proc.pid and not proc.tty and any(_DETACHER.fullmatch(n) for n in names if n):
            return (f"ancestor process {proc.pid} ({proc.comm}) leads a session with no terminal and hangs off"
                    f" {parent.comm} (process {parent.pid}): it was detached from the shell that started it")
    return None


def _agent_sign(proc: Proc, wanted: frozenset[str]) -> str | None:
    found = sorted(wanted & (proc.env or frozenset()))
    if found:
        return f"{found[0]} in the environment of process {proc.pid}"
    program = os.path.basename(proc.argv[0]) if proc.argv else ""
    if proc.comm in AGENT_PROGRAMS or program in AGENT_PROGRAMS or _AGENT_SCRIPT.search(" ".join(proc.argv[:3])):
        return f"process {proc.pid} ({program or proc.comm}) is an agent"
    return None


def _scheduler(proc: Proc) -> str | None:
    if proc.comm in SCHEDULERS - {"systemd-run"}:
        return f"it was started by the scheduler {proc.comm} (process {proc.pid})"
    return None


def _boundary(proc: Proc, reader: Reader) -> bool:
    """A login or system process: root-owned, or started by a root-owned one (the sshd session
    process runs as the user but its parent is root), and named as one."""
    if proc.pid == 1:
        return True  # init (the host's, or a container's run by another user)
    if proc.comm not in LOGIN_BOUNDARIES:
        return False
    if proc.uid == 0:
        return True
    parent = reader.proc(proc.ppid) if proc.ppid >= 1 else None
    return parent is not None and parent.uid == 0


def _session(me: Proc, reader: Reader, wanted: frozenset[str], skip: set[int]) -> str | None:
    if me.sid is None or me.sid <= 1:
        return None
    members = reader.session(me.sid)
    if members is None:
        return None
    for pid in members:
        if pid == me.pid or pid in skip:
            continue
        proc = reader.proc(pid)
        if proc is None:
            continue  # gone meanwhile
        if proc.env is None and not _boundary(proc, reader):
            return (f"the environment of process {pid} ({proc.comm}) in its session cannot be read, so an"
                    " agent in the session cannot be ruled out")
        why = _agent_sign(proc, wanted)
        if why:
            return f"{why}, in the same session"
    return None


class ProcFS:
    """Linux /proc."""

    def __init__(self, root: str = "/proc") -> None:
        self.root = root

    def proc(self, pid: int) -> Proc | None:
        base = f"{self.root}/{pid}"
        try:
            with open(f"{base}/stat", "rb") as fh:
                stat = fh.read().decode("utf-8", "replace")
            with open(f"{base}/status", "rb") as fh:
                status = fh.read().decode("utf-8", "replace")
            with open(f"{base}/cmdline", "rb") as fh:
                argv = tuple(a.decode("utf-8", "replace") for a in fh.read().split(b"\0") if a)
        except OSError:
            return None
        comm = stat[stat.find("(") + 1:stat.rfind(")")]
        fields = stat[stat.rfind(")") + 1:].split()
        uid = re.search(r"^Uid:\s+([0-9]+)", status, re.MULTILINE)
        env = self._environ(base)
        if env is None and fields[:1] not in (["Z"], ["X"], ["x"]):
            # A process caught while it exits or execs answers EACCES/ESRCH for a moment: look
            # again once. A process that keeps its environment from us (non-dumpable, another
            # user's) stays unreadable, and the rules fail closed on it.
            time.sleep(0.02)
            env = self._environ(base)
            fields = self._fields(base) or ["X"]
        if fields[:1] in (["Z"], ["X"], ["x"]) or (env is None and not os.path.exists(f"{base}/stat")):
            return None  # a zombie or dead process runs nothing, and one that exited is gone: not unreadable
        try:
            return Proc(pid, int(fields[1]), int(fields[3]), int(uid.group(1)) if uid else None, comm, argv, env,
                        int(fields[4]))
        except (IndexError, ValueError):
            return None

    @staticmethod
    def _environ(base: str) -> frozenset[str] | None:
        """The variable names of `<base>/environ`, None when it cannot be read."""
        try:
            with open(f"{base}/environ", "rb") as fh:
                items = fh.read().split(b"\0")
        except OSError:
            return None
        return frozenset(item.split(b"=", 1)[0].decode("utf-8", "replace") for item in items if b"=" in item)

    @staticmethod
    def _fields(base: str) -> list[str] | None:
        """The fields of `<base>/stat` after the command name, None when the process is gone."""
        try:
            with open(f"{base}/stat", "rb") as fh:
                stat = fh.read().decode("utf-8", "replace")
        except OSError:
            return None
        return stat[stat.rfind(")") + 1:].split()

    def session(self, sid: int) -> list[int] | None:
        try:
            names = os.listdir(self.root)
        except OSError:
            return None
        found: list[int] = []
        for name in names:
            if not name.isdigit():
                continue
            try:
                with open(f"{self.root}/{name}/stat", "rb") as fh:
                    stat = fh.read().decode("utf-8", "replace")
                if int(stat[stat.rfind(")") + 1:].split()[3]) == sid:
                    found.append(int(name))
            except (OSError, IndexError, ValueError):
                continue
        return found


class PS:
    """`ps -E` (macOS, BSD): parent, uid, command line and starting environment; no session id."""

    def proc(self, pid: int) -> Proc | None:
        try:
            done = subprocess.run(["ps", "-E", "-ww", "-o", "ppid=,uid=,command=", "-p", str(pid)],
                                  capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        parts = done.stdout.strip().split(None, 2)
        if done.returncode != 0 or len(parts) < 3:
            return None
        words = tuple(parts[2].split())
        env = frozenset(m.group(1) for m in re.finditer(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=", parts[2]))
        return Proc(pid, int(parts[0]), None, int(parts[1]), os.path.basename(words[0]) if words else "", words, env)

    def session(self, sid: int) -> list[int] | None:
        return None


def system_reader() -> Reader | None:
    """ProcFS on Linux, PS where `ps` exists, else None."""
    if os.path.exists("/proc/self/stat"):
        return ProcFS()
    if os.name != "nt" and shutil.which("ps"):
        return PS()
    return None
