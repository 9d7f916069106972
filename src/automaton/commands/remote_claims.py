"""Task claims through the state remote: `automaton --claim-loop-task NAME --task T
--state-remote REMOTE` (or a loop whose sealed loop.json has `state_remote`), and the check
every remote tick makes (README.md#claiming-a-task-for-one-loop).

The claim of task T is the ref `refs/automaton/claims/<T>` on the remote (a sub-task `P/S` is
`P--S`: task names never hold `--`). It points at a root commit (automaton's identity) whose
tree is one file, `claim.json`: `{"schema_version": 1, "task", "loop", "claimed_at", "mac"}`,
`mac` the HMAC-SHA256 (hex) under the record key of `automaton task claim v1\\n<task>\\n<loop>
\\n<claimed_at>\\n` (`store.key.seal_bytes`). A claim whose mac does not verify was not written
by a holder of the key: a tick or a claim that meets one stops (CorruptState, exit 2) and a
human deletes the ref.

When a claim holds: as a local claim (`store.claims`), while its loop is running or paused,
read from the holder's state on the remote (`refs/automaton/loops/<loop>`, its log verified
whole with the record key and the state the one its log sealed). A holder whose state ref is
absent is gone; a holder whose state does not verify keeps its claim (fail closed). So a halt
written on any machine (pushed by that runner or a human act) lets the task go at once, and an
approval makes the claim hold again unless another loop claimed the task meanwhile; nothing is
pushed to release a claim, and a runner that dies after halting leaves none behind. A stale
claim (its holder halted, complete or gone) is replaced by the next claim, with its commit as
the lease.

A claim (`claim_remote`) is one `git push --atomic` (git.remote.push) of:
- the claim ref, with the lease "absent" (or the stale claim's commit): of two machines racing
  for one task exactly one push lands, the other's lease fails;
- for every other loop on the remote bound to T (loop.json `task`, the state's
  `current_task`): its state ref moved to a new commit with the same tree (parent: the one it
  replaces), with the lease of the commit read. A tick of that loop claims its tick with a
  push leased on the state it fetched, so either the task claim lands first (the tick's claim
  is lost, and its next tick reads the task claim and stops `task_claimed`), or the tick's
  claim lands first (the task claim's lease fails; fetched again, the open `TICK_START`
  refuses the claim: Busy, exit 1).
A bound loop whose last `TICK_START` is open and younger than its reservation lifetime (`ttl_of`)
ticks now: the claim is refused (Busy, exit 1), as a local claim is while a bound loop's
tick holds its lock. A lost lease fetches again and tries again after a short random wait, for
up to `git.remote.LEASE_BOUND_S` (`git.remote.until_landed`).

A remote tick (`tick_refusal`, called by `runner.cli` once the loop's state is fetched and
before the tick, so before its claim and its reservation) reads the claims of the tasks its loop
is bound to: one held by another live loop stops it `task_claimed` (exit 1, nothing charged).

What it does not do: a loop that ticks without the remote sees only `.automaton/claims/` of its
own checkout, and a remote claim is not written there. Someone with push rights can delete a
claim ref or rewrite a holder's state ref: the mac stops a forged claim, not a deleted one
(README.md#state-in-the-git-remote: the rollback of a ref is not caught).
"""

from __future__ import annotations

import calendar
import hmac
import json
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from automaton.commands import remote_state
from automaton.core import jsontext
from automaton.core.chain import ChainCheck
from automaton.core.digest import hmac_sha256
from automaton.core.errors import AutomatonError, BadInput, CorruptState, Refused
from automaton.core.loopconfig import LoopConfig
from automaton.core.names import LoopName, TaskRef
from automaton.core.outcome import Outcome
from automaton.git import remote as git_remote
from automaton.git import run_git
from automaton.git.remote import Move, NoSuchRemote, RemoteFailed
from automaton.proc import Captured
from automaton.store import chainlog
from automaton.store import key as keys
from automaton.store.chainlog import utc_now
from automaton.store.claims import LIVE
from automaton.store.layout import Project
from automaton.store.locks import Busy
from automaton.store.loops import CONFIG_FILE, LOG_FILE, STATE_FILE, Loop, parse_config_bytes, state_token

CLAIMS_PREFIX = "refs/automaton/claims/"
FETCHED_CLAIMS = "refs/automaton/fetched/claims/"
FETCHED_LOOPS = "refs/automaton/fetched/others/"  # other loops' state refs, read for a claim
CLAIM_FILE = "claim.json"
SCHEMA = 1
DOMAIN = "automaton task claim v1\n"  # never the start of a log line, which begins with its time


@dataclass(frozen=True)
class RemoteClaim:
    """A claim read from the remote, its mac verified: loop `loop` claimed task `task` (TaskRef
    text) at `claimed_at` (UTC ISO 8601); `commit` is the claim ref's commit (the lease)."""

    task: str
    loop: str
    claimed_at: str
    commit: str


@dataclass(frozen=True)
class RemoteLoop:
    """A loop's state as the remote holds it. `verified`: its log verifies whole with the
    record key and its state is the one the log sealed (else `status` is "unverified" and the
    rest is empty). `tasks`: the tasks it is bound to; `open_tick`: (n, timestamp) of a last
    `TICK_START` nothing closed; `ttl_s`: its reservation lifetime in seconds (None: loop.json
    cannot be read, every open tick counts as live)."""

    name: str
    commit: str
    verified: bool
    status: str
    tasks: tuple[str, ...] = ()
    open_tick: tuple[int, str] | None = None
    ttl_s: int | None = None


def claim_ref(task: str) -> str:
    """`refs/automaton/claims/<task>` (`P/S` as `P--S`); BadInput for an invalid task name."""
    return CLAIMS_PREFIX + str(TaskRef.parse(task)).replace("/", "--")


def _message(task: str, loop: str, claimed_at: str) -> bytes:
    return f"{DOMAIN}{task}\n{loop}\n{claimed_at}\n".encode()


def claim_body(task: str, loop: str, claimed_at: str) -> bytes:
    """The `claim.json` bytes of a claim, sealed with the record key (created when absent, as
    every writer does; BadInput/CorruptState exit 2 for a bad key)."""
    mac = keys.seal_bytes(_message(task, loop, claimed_at))
    body = {"schema_version": SCHEMA, "task": task, "loop": loop, "claimed_at": claimed_at, "mac": mac}
    return (json.dumps(body) + "\n").encode("utf-8")


def _forged(ref: str, why: str) -> CorruptState:
    return CorruptState(f"the task claim {ref} on the state remote {why}: it was not written by automaton with"
                        " this record key; nothing was run. Check AUTOMATON_RECORD_KEY, or a human deletes the"
                        f" ref: git push REMOTE :{ref}")


def parse_claim(task: str, data: bytes | None, commit: str) -> RemoteClaim:
    """The claim of `task` from its `claim.json` bytes (None: the commit has no such file).
    CorruptState (exit 2) for anything but a claim of `task` whose mac verifies with the
    record key (a machine without the key cannot verify one, and refuses it the same way)."""
    ref = claim_ref(task)
    try:
        found = jsontext.loads(data.decode("utf-8")) if data is not None else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        found = None
    fields = ("task", "loop", "claimed_at", "mac")
    if (not isinstance(found, dict) or found.get("schema_version") != SCHEMA
            or not all(isinstance(found.get(f), str) for f in fields) or found["task"] != str(TaskRef.parse(task))):
        raise _forged(ref, f"is not a claim of task {task}")
    key = keys.load_key(create=False)
    if key is None:
        raise _forged(ref, "cannot be verified here (no record key)")
    if not _same(hmac_sha256(key, _message(found["task"], found["loop"], found["claimed_at"])), found["mac"]):
        raise _forged(ref, f"(loop {found['loop']!r}) does not verify with the record key")
    return RemoteClaim(found["task"], found["loop"], found["claimed_at"], commit)


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())  # a constant-time comparison of the two macs


# ---- plumbing on the remote (the protocol's own refs; git.remote does the state's) ----

def _net(root: Path, args: Sequence[str], user_config: bool) -> Captured:
    return run_git(root, [*git_remote.TRANSPORTS, *args], env=git_remote.credential_env(),
                   timeout_s=git_remote.NET_TIMEOUT_S, user_config=user_config)


def _last(out: str, err: str, code: int) -> str:
    lines = [ln.strip() for ln in (err + "\n" + out).splitlines() if ln.strip()]
    return lines[-1] if lines else f"exit {code}"


def _listed(root: Path, remote: str, patterns: Sequence[str], user_config: bool) -> dict[str, str]:
    """ref -> oid of the remote's refs matching `patterns` (git ls-remote). BadInput (exit 2)
    for a name this checkout has no remote of; Refused (exit 1, git's reason) when git cannot
    reach the remote."""
    done = _net(root, ["ls-remote", "--", remote, *patterns], user_config)
    if done.code != 0:
        try:
            git_remote.unreadable(root, remote, done)
        except NoSuchRemote as exc:
            raise BadInput(f"{exc}; nothing was run") from None
        except RemoteFailed as exc:
            raise Refused(f"{exc}; nothing was run") from None
    out = done.out
    refs = {}
    for line in out.splitlines():
        oid, _, ref = line.partition("\t")
        if ref and oid:
            refs[ref] = oid
    return refs


def _fetch(root: Path, remote: str, pairs: dict[str, str], user_config: bool) -> None:
    """Fetch remote ref -> local ref (forced: the remote is the source of truth). Refused
    (exit 1) when git cannot."""
    if not pairs:
        return
    done = _net(root, ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules",
                       "--", remote, *(f"+{ref}:{local}" for ref, local in pairs.items())], user_config)
    if done.code != 0:
        raise Refused(f"cannot fetch from the state remote {remote!r}: {git_remote.reason(done)}; nothing was run")


def _blobs(root: Path, commit: str, paths: Sequence[str]) -> dict[str, bytes | None]:
    """The bytes of `paths` in `commit`'s tree (None: absent). CorruptState when git cannot
    read the commit it just fetched."""
    batch = run_git(root, ["cat-file", "--batch"], stdin="".join(f"{commit}:{p}\n" for p in paths))
    if batch.code != 0:
        raise CorruptState(f"cannot read the commit {commit[:12]} fetched from the state remote: exit {batch.code}")
    raw = batch.out.encode("utf-8", "surrogateescape")
    found: dict[str, bytes | None] = {}
    at = 0
    for path in paths:
        end = raw.index(b"\n", at)
        head = raw[at:end].split(b" ")
        if len(head) != 3 or head[1] != b"blob":  # "<name> missing", or a tree
            found[path] = None
            at = end + 1
            continue
        size = int(head[2])
        found[path] = raw[end + 1:end + 1 + size]
        at = end + 1 + size + 1
    return found


def read_claims(project: Project, remote: str, tasks: Sequence[str], *,
                user_config: bool = False) -> dict[str, RemoteClaim]:
    """The claims of `tasks` on `remote` (task -> claim; a task without one is left out), each
    verified (`parse_claim`: CorruptState, exit 2). Refused (exit 1) for an unreachable remote."""
    root = project.root
    refs = {claim_ref(t): t for t in tasks}
    for ref in refs:
        run_git(root, ["update-ref", "-d", FETCHED_CLAIMS + ref.removeprefix(CLAIMS_PREFIX)])
    present = _listed(root, remote, list(refs), user_config) if refs else {}
    wanted = {ref: FETCHED_CLAIMS + ref.removeprefix(CLAIMS_PREFIX) for ref in refs if ref in present}
    _fetch(root, remote, wanted, user_config)
    out = {}
    for ref, local in wanted.items():
        commit = _rev(root, local)  # what the fetch brought, which may be newer than the listing
        data = _blobs(root, commit, [CLAIM_FILE])[CLAIM_FILE] if commit else None
        out[str(TaskRef.parse(refs[ref]))] = parse_claim(refs[ref], data, commit or present[ref])
    return out


def _rev(root: Path, ref: str) -> str | None:
    done = run_git(root, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"])
    return done.out.strip() if done.code == 0 and done.out.strip() else None


def read_loops(project: Project, remote: str, names: Sequence[str] | None,
               ttl_of: Callable[[LoopConfig], int] | None = None, *,
               user_config: bool = False) -> dict[str, RemoteLoop]:
    """The states on `remote` of loops `names` (None: every loop there), name -> RemoteLoop; a
    loop with no state ref is left out (gone). `ttl_of(config)`: a loop's reservation lifetime
    in seconds (None: not needed, `ttl_s` stays None). Refused (exit 1) for an unreachable remote."""
    root = project.root
    patterns = [git_remote.STATE_PREFIX + "*"] if names is None else [git_remote.state_ref(n) for n in names]
    present = {ref.removeprefix(git_remote.STATE_PREFIX): oid
               for ref, oid in _listed(root, remote, patterns, user_config).items()
               if ref.startswith(git_remote.STATE_PREFIX)}  # ls-remote matches a pattern's tail
    names_there = [name for name in present if _valid_loop(name)]
    _fetch(root, remote, {git_remote.state_ref(n): FETCHED_LOOPS + n for n in names_there}, user_config)
    out = {}
    for name in names_there:
        commit = _rev(root, FETCHED_LOOPS + name)  # what the fetch brought: the lease of a fence
        out[name] = _remote_loop(root, name, commit, ttl_of) if commit else RemoteLoop(name, "", False, "unverified")
    return out


def _valid_loop(name: str) -> bool:
    try:
        LoopName.of(name)
    except BadInput:
        return False
    return True


def _remote_loop(root: Path, name: str, commit: str, ttl_of: Callable[[LoopConfig], int] | None) -> RemoteLoop:
    files = _blobs(root, commit, [STATE_FILE, LOG_FILE, CONFIG_FILE])
    state, log, config = files[STATE_FILE], files[LOG_FILE], files[CONFIG_FILE]
    if state is None or log is None:
        return RemoteLoop(name, commit, False, "unverified")
    chain = _verified_chain(log)
    if chain is None or chain.last_state != state_token(state):
        return RemoteLoop(name, commit, False, "unverified")
    try:
        data = jsontext.loads(state.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return RemoteLoop(name, commit, False, "unverified")
    if not isinstance(data, dict) or not isinstance(data.get("status"), str):
        return RemoteLoop(name, commit, False, "unverified")
    cfg = _config(config, name)
    if cfg is not None and data.get("config_sha256") != cfg.sha256:  # not the loop.json its state sealed
        cfg = None
    current = data.get("current_task")
    tasks = tuple(dict.fromkeys(ref for t in (cfg.task if cfg else None, current) if (ref := _task(t))))
    return RemoteLoop(name, commit, True, data["status"], tasks, remote_state.open_tick(chain.lines),
                      ttl_of(cfg) if cfg is not None and ttl_of is not None else None)


def _task(value: object) -> str | None:
    """The TaskRef text of a bound task's name, None for anything else (the gates report that)."""
    if not isinstance(value, str):
        return None
    try:
        return str(TaskRef.parse(value))
    except BadInput:
        return None


def _verified_chain(log: bytes) -> ChainCheck | None:
    """The chain of a log's bytes when it verifies whole with the record key, every line keyed;
    None otherwise. Read from a private temporary copy: this machine has no anchor of it."""
    with tempfile.TemporaryDirectory(prefix="automaton-claim-") as tmp:
        path = Path(tmp, LOG_FILE)
        path.write_bytes(log)
        try:
            chain = chainlog.read_chain(path)
        except AutomatonError:
            return None
    if not chain.ok or not chain.lines or any(not line.mac for line in chain.lines):
        return None
    return chain


def _config(data: bytes | None, name: str) -> LoopConfig | None:
    if data is None:
        return None
    try:
        cfg = parse_config_bytes(data, f"{name}/{CONFIG_FILE}")
    except BadInput:
        return None
    return cfg if cfg.name == name else None


def _holds(project: Project, remote: str, claim: RemoteClaim, user_config: bool) -> bool:
    """Whether `claim` holds: its loop's state on the remote is running or paused, or does not
    verify (fail closed). A loop with no state ref there is gone."""
    found = read_loops(project, remote, [claim.loop], user_config=user_config).get(claim.loop)
    return found is not None and (not found.verified or found.status in LIVE)


def tick_refusal(project: Project, name: str, remote: str) -> str | None:
    """Why a remote tick of loop `name` may not run (one line), None when it may: another live
    loop's claim on `remote` holds a task the loop is bound to (read from the loop folder, which
    `remote_state.sync_in` has just materialised and verified). CorruptState (exit 2) for a
    claim whose mac does not verify; Refused (exit 1) when the remote cannot be read."""
    loop = Loop.resolve(project, name)
    tasks = []
    for task in loop.bound_tasks(loop.read_state()):
        try:
            tasks.append(str(TaskRef.parse(task)))
        except BadInput:  # not a task name: the gates report that
            continue
    if not tasks:
        return None
    for task, claim in read_claims(project, remote, tasks).items():
        if claim.loop != str(loop.name) and _holds(project, remote, claim, False):
            return f"task {task} is claimed by loop {claim.loop} (--claim-loop-task, since {claim.claimed_at}, in the" \
                   f" state remote {remote!r})"
    return None


# ---- the claim ----

def _fence(root: Path, other: RemoteLoop, task: str, loop: str) -> Move:
    """A new state commit of `other` with the tree it has (parent: the commit read), leased on
    that commit: the claim lands only while no tick of `other` has claimed since the read."""
    made = run_git(root, ["commit-tree", f"{other.commit}^{{tree}}", "-p", other.commit,
                          "-m", f"automaton: task {task} claimed by loop {loop}"], env=git_remote.IDENTITY)
    if made.code != 0:
        raise Refused(f"cannot write a commit in {root}: {_last(made.out, made.err, made.code)}; nothing was claimed")
    return Move(git_remote.state_ref(other.name), made.out.strip(), other.commit)


def _claim_commit(root: Path, task: str, loop: str, claimed_at: str) -> str:
    try:
        return git_remote.write_commit(root, {CLAIM_FILE: claim_body(task, loop, claimed_at)}, None,
                                       f"automaton: loop {loop} claims task {task}")
    except RemoteFailed as exc:
        raise Refused(f"{exc}; nothing was claimed") from None


@dataclass(frozen=True)
class _Try:
    """One attempt: `made` the claim once it landed (or was there), `stale` the claim it
    replaced, `lost` when a lease failed; `me` the claiming loop as the remote holds it."""

    me: RemoteLoop
    made: RemoteClaim | None
    stale: RemoteClaim | None = None
    lost: bool = False


def _age_s(ts: str) -> float:
    try:
        return remote_state.clock() - calendar.timegm(time.strptime(ts, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return float("inf")


def _claimer(loops: dict[str, RemoteLoop], loop: str, remote: str) -> RemoteLoop:
    """The claiming loop's state on the remote: held, verified and not complete."""
    me = loops.get(loop)
    if me is None:
        raise BadInput(f"loop {loop}: the state remote {remote!r} holds no {git_remote.state_ref(loop)}: run one tick"
                       f" with --state-remote {remote} where the loop was created, then claim")
    if not me.verified:
        raise CorruptState(f"loop {loop}: its state commit {me.commit[:12]} on {remote!r} does not verify with the"
                           " record key; nothing was claimed. Check AUTOMATON_RECORD_KEY, or a human restores the ref")
    if me.status == "complete":
        raise Refused(f"loop {loop} is complete (terminal): it works no task; --rearm-loop {loop} first")
    return me


def _free(loops: dict[str, RemoteLoop], found: RemoteClaim | None, task: str, loop: str,
          remote: str) -> list[RemoteLoop]:
    """The other loops bound to `task` (to fence) when `loop` may claim it; Busy (exit 1) while
    another live loop's claim holds it or a bound loop's tick runs now."""
    holder = loops.get(found.loop) if found is not None else None
    if found is not None and holder is not None and (not holder.verified or holder.status in LIVE):
        raise Busy(f"task {task} is claimed by loop {found.loop} since {found.claimed_at} (state remote {remote!r}):"
                   f" it is released when {found.loop} completes, halts or is removed")
    bound = [other for other in loops.values() if other.name != loop and other.verified and task in other.tasks]
    for other in bound:
        if other.open_tick is not None and (other.ttl_s is None or _age_s(other.open_tick[1]) < other.ttl_s):
            raise Busy(f"tick {other.open_tick[0]} of loop {other.name}, which is bound to task {task}, runs now"
                       f" (claimed at {other.open_tick[1]}): claim it when the tick has ended")
    return bound


def _attempt(project: Project, remote: str, task: str, loop: str, ttl_of: Callable[[LoopConfig], int]) -> _Try:
    root = project.root
    loops = read_loops(project, remote, None, ttl_of, user_config=True)
    me = _claimer(loops, loop, remote)
    found = read_claims(project, remote, [task], user_config=True).get(task)
    if found is not None and found.loop == loop:
        return _Try(me, found)
    bound = _free(loops, found, task, loop, remote)
    claimed_at = utc_now()
    moves = [Move(claim_ref(task), _claim_commit(root, task, loop, claimed_at), found.commit if found else None),
             *(_fence(root, other, task, loop) for other in bound)]
    try:
        pushed = git_remote.push(root, remote, moves, user_config=True)
    except RemoteFailed as exc:
        raise Refused(f"{exc}; nothing was claimed") from None
    if pushed.lost:
        return _Try(me, None, lost=True)
    if not pushed.landed:
        raise Refused(f"the state remote {remote!r} refused the claim of task {task}: {pushed.detail}; nothing was"
                      " claimed")
    return _Try(me, RemoteClaim(task, loop, claimed_at, moves[0].new), found)


def claim_remote(project: Project, name: str, task: str, remote: str, ttl_of: Callable[[LoopConfig], int]) -> Outcome:
    """Loop `name` claims `task` in `remote` (module docstring); `ttl_of(config)`: a loop's
    reservation lifetime in seconds. Nothing of the loop folder here is read or written: the
    loop's state is read from the remote. data: {ok, loop, task, claimed_at, replaced (the
    stale holder's loop name or None), bound, remote}. Errors: BadInput (exit 2) for a bad
    remote spelling, an unknown task, a loop the remote does not hold, a flag that disagrees
    with this checkout's loop.json `state_remote`; CorruptState (exit 2) for a state or claim
    that does not verify with the record key; Refused (exit 1) for a complete loop, an
    unreachable or refusing remote; Busy (exit 1) when another live loop's claim holds the
    task, a bound loop's tick runs now, or the leases were lost for `git.remote.LEASE_BOUND_S`."""
    remote_state.check_remote(remote, "--state-remote")
    loop_name = str(LoopName.of(name))
    ref = TaskRef.parse(task)
    if not project.task_dir(ref).is_dir():
        raise BadInput(f"unknown task {ref}: no folder {project.task_dir(ref)}; create it with automaton --create-task")
    try:
        sealed = Loop.resolve(project, loop_name).read_config().state_remote
    except AutomatonError:  # not in this checkout (a fresh clone): the remote's state is the loop
        sealed = None
    if sealed is not None and sealed != remote:
        raise BadInput(f"loop {name}: --state-remote {remote!r} disagrees with loop.json state_remote {sealed!r};"
                       " pass the sealed one")
    return _claimed(git_remote.until_landed(lambda: _landed(_attempt(project, remote, str(ref), loop_name, ttl_of)),
                                            lambda spent: _crowded(ref, remote, spent)), remote)


def _landed(got: _Try) -> _Try | None:
    return None if got.lost else got


def _crowded(ref: TaskRef, remote: str, spent: float) -> NoReturn:
    raise Busy(f"task {ref}: other claims or ticks moved the state remote {remote!r} first, again and again for"
               f" {spent:.0f} s; nothing was claimed, run it again")


def _claimed(got: _Try, remote: str) -> Outcome:
    made, me = got.made, got.me
    assert made is not None  # _claimed is called with a landed claim
    bound = made.task in me.tasks
    out = Outcome()
    out.lines.append(f"loop {me.name} claims task {made.task} (since {made.claimed_at}) in the state remote"
                     f" {remote!r}: no other loop's tick works it, on any machine, until {me.name} completes,"
                     " halts or is removed")
    if got.stale is not None:
        out.lines.append(f"  replaced the claim of loop {got.stale.loop}, which no longer holds (halted, complete"
                         " or gone)")
    if me.status not in LIVE:
        out.warnings.append(f"loop {me.name} is {me.status}: the claim holds once a human approves it, unless"
                            " another loop claims the task first")
    if not bound:
        out.warnings.append(f"loop {me.name} is not bound to task {made.task} (loop.json task, current_task): its"
                            " ticks do not work on it; the claim only keeps other loops off it")
    out.data = {"ok": True, "loop": me.name, "task": made.task, "claimed_at": made.claimed_at,
                "replaced": got.stale.loop if got.stale else None, "bound": bound, "remote": remote}
    return out
