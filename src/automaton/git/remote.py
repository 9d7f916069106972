"""A loop's state kept in a git remote: the plumbing (fetch, a tree of files, a commit, and
the compare-and-swap push). The loop folder's meaning lives in `commands.remote_state`.

Protocol (README.md#state-in-the-git-remote):

- `refs/automaton/loops/<name>` on the remote holds a commit whose tree is the loop folder's
  durable files (paths relative to the loop folder; every blob mode 100644). Each new state
  commit has the commit it replaces as its one parent.
- `refs/heads/loop/<name>` is the loop's branch, the tick's commits.
- A fetch copies both into this repository as `refs/automaton/fetched/loops/<name>` and
  `refs/automaton/fetched/branch/<name>` (forced: the remote is the source of truth).
- The dashboard (`--dashboard --state-remote`) lists every state ref with `git ls-remote` and
  copies them all, in one fetch, to a namespace of its own, `refs/automaton/dashboard/<id>/<name>`
  (forced and pruned), which no tick or act reads.
- A publish is one `git push --atomic --porcelain` with `--force-with-lease=REF:EXPECTED` for
  each ref it moves (an empty EXPECTED: the ref must be absent), so it lands whole only when
  every ref is where the fetch saw it, else nothing moves (git-push(1): "--force-with-lease",
  "--atomic"; the server applies the ref updates of an atomic push in one transaction).

Every call goes through `automaton.git.run_git` (hooks, fsmonitor, filters, replace refs off;
no inherited `GIT_*`): git's `protocol.allow=never` is lifted only for the `file`, `https`
and `ssh` transports, never `ext::` (which runs a program). The repository's own config is
read (its remote URL): the kernel sandbox keeps the main checkout's `.git` read-only for every
agent. `user_config=True` (a human act, never a tick) reads the user's global config too (a
credential helper).

A push credential for an HTTPS remote (a CI runner's token): `$AUTOMATON_GIT_TOKEN` in the
runner's environment. It reaches only the network calls here (ls-remote, fetch, push), as
`http.extraHeader` set through `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_0`/`GIT_CONFIG_VALUE_0`
in the environment of that one git process (git-config(1) "ENVIRONMENT"): never on a command
line (which any process of the user can read in /proc), never in a config file on disk. The
header is HTTP Basic with the user `x-access-token` (what GitHub's tokens take; GitLab and
Gitea accept any user name with a token). Every agent process and the verifier's get the
environment without it (`core.secrets.CREDENTIAL_ENV`).
"""

from __future__ import annotations

import base64
import os
import random
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, TypeVar

from automaton.git import run_git
from automaton.proc import Captured

STATE_PREFIX = "refs/automaton/loops/"
BRANCH_PREFIX = "refs/heads/loop/"
FETCHED_STATE = "refs/automaton/fetched/loops/"
FETCHED_BRANCH = "refs/automaton/fetched/branch/"
# Seconds one ls-remote, fetch or push may take while the loop's tick lock is held: a state
# fetch moves a few small files, a push the tick's commits.
NET_TIMEOUT_S = 120.0
# The transports a state remote may use; `protocol.allow=never` (git.harden) stays for every other.
TRANSPORTS = ("-c", "protocol.file.allow=always", "-c", "protocol.https.allow=always",
              "-c", "protocol.ssh.allow=always",
              # An https transfer that stalls under 1 KB/s for 60 s fails then (git-config(1)
              # http.lowSpeedLimit), not only at NET_TIMEOUT_S. It does not cover a server that
              # accepts the connection and never completes the TLS handshake: NET_TIMEOUT_S does.
              "-c", "http.lowSpeedLimit=1000", "-c", "http.lowSpeedTime=60")
# A commit of automaton's own: the identity git needs, never the user's config.
IDENTITY = {"GIT_AUTHOR_NAME": "automaton", "GIT_AUTHOR_EMAIL": "automaton@localhost",
            "GIT_COMMITTER_NAME": "automaton", "GIT_COMMITTER_EMAIL": "automaton@localhost"}


TOKEN_ENV = "AUTOMATON_GIT_TOKEN"

# How long a write that keeps losing its lease (`until_landed`) goes on reading and pushing
# before it gives up (exit 1). A ref takes one write per read-and-push round trip (a fraction of
# a second to a remote on the same machine or network, about a second to a hosted one), so the
# runners cron starts in the same minute land one after another: two dozen on a hosted remote
# within about half a minute. 120 s is several times that, and a tick's reservation and its
# settlement (one bound each) still fit in the 600 s the reservation lifetime keeps for the
# runner's own steps (runner.account.TTL_MARGIN_S), far under the 15 minutes between a
# template's ticks.
LEASE_BOUND_S = 120.0
# The wait after the n-th lost lease in a row: uniform in [0, min(CAP, BASE * 2**n)] ("full
# jitter"), so runners that lost together do not read and push together again.
LEASE_WAIT_BASE_S = 0.05
LEASE_WAIT_CAP_S = 2.0


def credential_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment that gives one git network call the push credential of `environ`
    (default: this process's) `$AUTOMATON_GIT_TOKEN`: {} without one, else `GIT_CONFIG_COUNT=1`
    and `http.extraHeader: Authorization: Basic base64("x-access-token:" + token)`."""
    token = (os.environ if environ is None else environ).get(TOKEN_ENV, "").strip()
    if not token:
        return {}
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode("ascii")
    return {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader",
            "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}"}


_LOST = ("stale info", "fetch first", "(non-fast-forward)", "cannot lock ref", "incorrect old value")


class RemoteFailed(Exception):
    """git could not reach or read the remote, or a local plumbing call failed: `str()` is the
    one line to show (git's last line of stderr included)."""


class NotACommit(RemoteFailed):
    """The remote's state ref or loop branch exists but names a tree or a blob: corrupt state
    (exit 2), never "no state yet"."""


class NoSuchRemote(RemoteFailed):
    """The state remote is a plain name that this checkout has no remote of, and not a path or
    URL: bad input (exit 2), not a remote that is down."""


@dataclass(frozen=True)
class Fetched:
    """What the remote holds for a loop: `state` (the state commit's oid, None when the remote
    has no state ref) and `branch` (the tip of `loop/<name>`, None when absent)."""

    state: str | None
    branch: str | None


@dataclass(frozen=True)
class Pushed:
    """The outcome of one atomic push. `landed`: every ref moved. `lost`: a lease failed (the
    remote moved since the fetch; nothing moved). Neither: the remote refused the push
    (`detail` is its reason, e.g. a pre-receive hook's line)."""

    landed: bool
    lost: bool
    detail: str


def state_ref(loop: str) -> str:
    return STATE_PREFIX + loop


def branch_ref(loop: str) -> str:
    return BRANCH_PREFIX + loop


def _last(done: Captured) -> str:
    lines = [ln for ln in (done.err + "\n" + done.out).strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else f"exit {done.code}"


def reason(done: Captured) -> str:
    """git's own reason for a failed network call: its first `fatal:` or `error:` line (the
    lines after it are advice, e.g. "Please make sure you have the correct access rights"),
    else its last line."""
    if done.code == 124:
        return f"no answer in {NET_TIMEOUT_S:g} s (git timed out)"
    for line in (done.err + "\n" + done.out).splitlines():
        if line.startswith(("fatal: ", "error: ")):
            return line.split(": ", 1)[1].strip()
    return _last(done)


def _configured(repo: Path, remote: str) -> bool:
    """Whether `remote` names a remote of this checkout, or is a path or URL (git takes it as one)."""
    if "/" in remote or ":" in remote or remote.startswith("."):
        return True
    listed = _git(repo, ["remote"])
    return listed.code != 0 or remote in listed.out.split()


def _git(repo: Path, args: Sequence[str], *, stdin: str = "", env: dict[str, str] | None = None,
         timeout_s: float = 60.0, user_config: bool = False) -> Captured:
    return run_git(repo, args, stdin=stdin, env=env, timeout_s=timeout_s, user_config=user_config)


def _oid(repo: Path, ref: str) -> str | None:
    done = _git(repo, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"])
    return done.out.strip() if done.code == 0 and done.out.strip() else None


def fetch(repo: Path, remote: str, loop: str, *, user_config: bool = False) -> Fetched:
    """Fetch the loop's state ref and branch from `remote` into `refs/automaton/fetched/…`
    (stale local copies removed first, so an absent remote ref reads as absent). RemoteFailed
    when git cannot reach the remote."""
    for local in (FETCHED_STATE + loop, FETCHED_BRANCH + loop):
        _git(repo, ["update-ref", "-d", local])
    auth = credential_env()
    listed = _git(repo, [*TRANSPORTS, "ls-remote", "--", remote, state_ref(loop), branch_ref(loop)],
                  env=auth, timeout_s=NET_TIMEOUT_S, user_config=user_config)
    if listed.code != 0:
        unreadable(repo, remote, listed)
    present = {line.split("\t", 1)[1] for line in listed.out.splitlines() if "\t" in line}
    specs = [f"+{ref}:{local}" for ref, local in ((state_ref(loop), FETCHED_STATE + loop),
                                                  (branch_ref(loop), FETCHED_BRANCH + loop)) if ref in present]
    if specs:
        done = _git(repo, [*TRANSPORTS, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                           "--no-recurse-submodules", "--", remote, *specs],
                    env=auth, timeout_s=NET_TIMEOUT_S, user_config=user_config)
        if done.code != 0:
            raise RemoteFailed(f"cannot fetch the state of loop {loop} from {remote!r}: {reason(done)}")
    fetched = Fetched(_oid(repo, FETCHED_STATE + loop), _oid(repo, FETCHED_BRANCH + loop))
    for ref, local, got in ((state_ref(loop), FETCHED_STATE + loop, fetched.state),
                            (branch_ref(loop), FETCHED_BRANCH + loop, fetched.branch)):
        if ref in present and got is None:  # a tree or a blob there is no state yet: never published over
            _not_a_commit(repo, remote, ref, local)
    return fetched


def fetch_ref(repo: Path, remote: str, ref: str, local: str, *, user_config: bool = False) -> str | None:
    """Fetch one ref of `remote` (e.g. `refs/automaton/account`) into this repository's `local`
    (forced; a stale local copy removed first); its oid, None when the remote has no such ref.
    NoSuchRemote for a name this checkout has no remote of; NotACommit when the ref names a
    tree or a blob; RemoteFailed when git cannot reach the remote or the fetch fails."""
    _git(repo, ["update-ref", "-d", local])
    auth = credential_env()
    listed = _git(repo, [*TRANSPORTS, "ls-remote", "--", remote, ref], env=auth, timeout_s=NET_TIMEOUT_S,
                  user_config=user_config)
    if listed.code != 0:
        unreadable(repo, remote, listed)
    if ref not in {line.split("\t", 1)[1] for line in listed.out.splitlines() if "\t" in line}:
        return None
    done = _git(repo, [*TRANSPORTS, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                       "--no-recurse-submodules", "--", remote, f"+{ref}:{local}"],
                env=auth, timeout_s=NET_TIMEOUT_S, user_config=user_config)
    if done.code != 0:
        raise RemoteFailed(f"cannot fetch {ref} from {remote!r}: {reason(done)}")
    got = _oid(repo, local)
    if got is None:
        _not_a_commit(repo, remote, ref, local)
    return got


def unreadable(repo: Path, remote: str, listed: Captured) -> NoReturn:
    """Raise for a failed `ls-remote` of `remote`: NoSuchRemote or RemoteFailed (git's reason)."""
    if not _configured(repo, remote):
        raise NoSuchRemote(f"--state-remote {remote!r}: this checkout has no such remote and it is not a path or"
                           " URL (git remote -v lists the remotes)")
    raise RemoteFailed(f"cannot read the state remote {remote!r}: {reason(listed)}")


def _not_a_commit(repo: Path, remote: str, ref: str, local: str) -> NoReturn:
    """Raise NotACommit for a fetched `ref` that names a tree or a blob: never "no state yet"."""
    kind = _git(repo, ["cat-file", "-t", local]).out.strip() or "not a commit"
    raise NotACommit(f"{ref} on {remote!r} is a {kind}, not a commit automaton wrote; nothing was run:"
                     " a human restores it (git push --force <remote> <commit>:<ref>)")


def ref_oid(repo: Path, ref: str) -> str | None:
    """The commit this repository's `ref` points at, None when there is none."""
    return _oid(repo, ref)


def drop_ref(repo: Path, ref: str) -> None:
    """Delete this repository's `ref` (nothing when absent)."""
    _git(repo, ["update-ref", "-d", ref])


def is_ancestor(repo: Path, older: str, newer: str) -> bool:
    """Whether commit `older` is `newer` or one of its ancestors (`git merge-base --is-ancestor`)."""
    return _git(repo, ["merge-base", "--is-ancestor", older, newer]).code == 0


def advance_ref(repo: Path, ref: str, oid: str) -> bool:
    """Move this repository's `ref` to `oid` only forward: when it is absent or an ancestor of
    `oid` (never back to an older commit another process of this clone read before it moved on)."""
    now = _oid(repo, ref)
    if now is not None and not is_ancestor(repo, now, oid):
        return False
    return _git(repo, ["update-ref", ref, oid, *([now] if now else [])]).code == 0


def read_tree(repo: Path, commit: str) -> dict[str, bytes]:
    """The regular files of `commit`'s tree: relative path -> bytes (RemoteFailed for a tree
    that holds anything but plain files and folders, or a git failure)."""
    listed = _git(repo, ["ls-tree", "-r", "-z", "--full-tree", commit])
    if listed.code != 0:
        raise RemoteFailed(f"cannot list the state commit {commit}: {_last(listed)}")
    entries: list[tuple[str, str]] = []
    for item in filter(None, listed.out.split("\0")):
        meta, _, path = item.partition("\t")
        mode, kind, oid = meta.split(" ")
        if kind != "blob" or mode != "100644":
            raise RemoteFailed(f"the state commit {commit} holds {path!r} as {kind} {mode}: not automaton's")
        entries.append((path, oid))
    if not entries:
        return {}
    batch = _git(repo, ["cat-file", "--batch"], stdin="".join(f"{oid}\n" for _, oid in entries))
    if batch.code != 0:
        raise RemoteFailed(f"cannot read the state commit {commit}: {_last(batch)}")
    raw = batch.out.encode("utf-8", "surrogateescape")
    files: dict[str, bytes] = {}
    at = 0
    for path, oid in entries:
        end = raw.index(b"\n", at)
        head = raw[at:end].split(b" ")
        if len(head) != 3 or head[0].decode() != oid:
            raise RemoteFailed(f"cannot read {path!r} of the state commit {commit}")
        size = int(head[2])
        files[path] = raw[end + 1:end + 1 + size]
        at = end + 1 + size + 1
    return files


def write_commit(repo: Path, files: dict[str, bytes], parent: str | None, message: str) -> str:
    """A commit (not on any branch) whose tree holds `files` (relative path -> bytes, mode
    100644), with `parent` as its one parent (None: a root commit); returns its oid. Built in a
    private index (`GIT_INDEX_FILE`), so the checkout's own index is never touched."""
    with tempfile.TemporaryDirectory(prefix="automaton-state-") as tmp:
        paths = sorted(files)
        for i, rel in enumerate(paths):
            Path(tmp, str(i)).write_bytes(files[rel])
        blobs = _git(repo, ["hash-object", "-w", "--no-filters", "--stdin-paths"],
                     stdin="".join(f"{os.path.join(tmp, str(i))}\n" for i in range(len(paths))))
        oids = blobs.out.split()
        if blobs.code != 0 or len(oids) != len(paths):
            raise RemoteFailed(f"cannot store the loop's files in {repo}: {_last(blobs)}")
        index = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        filled = _git(repo, ["update-index", "--add", "-z", "--index-info"], env=index,
                      stdin="".join(f"100644 {oid}\t{rel}\0" for rel, oid in zip(paths, oids, strict=True)))
        tree = _git(repo, ["write-tree"], env=index) if filled.code == 0 else filled
    if tree.code != 0:
        raise RemoteFailed(f"cannot write the state tree in {repo}: {_last(tree)}")
    args = ["commit-tree", tree.out.strip(), "-m", message, *(["-p", parent] if parent else [])]
    made = _git(repo, args, env=IDENTITY)
    if made.code != 0:
        raise RemoteFailed(f"cannot write the state commit in {repo}: {_last(made)}")
    return made.out.strip()


@dataclass(frozen=True)
class Move:
    """One ref a publish moves on the remote: `ref` to `new` (an oid), landing only while the
    remote's ref is `expected` (None: absent)."""

    ref: str
    new: str
    expected: str | None


def push(repo: Path, remote: str, moves: Sequence[Move], *, user_config: bool = False) -> Pushed:
    """One `git push --atomic --porcelain` of `moves`, each with its lease. Never raises for
    the remote's answer: a failed lease is `lost`, any other refusal `detail`. RemoteFailed
    when git cannot reach the remote at all."""
    leases = [f"--force-with-lease={m.ref}:{m.expected or ''}" for m in moves]
    done = _git(repo, [*TRANSPORTS, "push", "--atomic", "--porcelain", "--no-verify", "--no-recurse-submodules",
                       *leases, "--", remote, *(f"{m.new}:{m.ref}" for m in moves)],
                env=credential_env(), timeout_s=NET_TIMEOUT_S, user_config=user_config)
    if done.code == 0:
        return Pushed(True, False, "")
    status = [ln for ln in done.out.splitlines() if ln[:1] in ("!", "*", " ", "+", "-", "=") and "\t" in ln]
    text = done.out + done.err
    # A failed lease ("stale info"), or the remote's own compare-and-swap lost to a push that
    # moved the ref meanwhile ("cannot lock ref": the ref is locked or not at its old value).
    if any(sign in text for sign in _LOST):
        return Pushed(False, True, "the remote moved since the fetch")
    if not status:
        raise RemoteFailed(f"cannot push to the state remote {remote!r}: {reason(done)}")
    return Pushed(False, False, _refusal(done, status))


T = TypeVar("T")


@dataclass(frozen=True)
class Pacing:
    """The clock of `until_landed`: `sleep(s)`, `clock()` (seconds, monotonic), `uniform(a, b)`
    (a random wait), and `bound_s`. Tests hand in their own; a runner uses PACING."""

    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    uniform: Callable[[float, float], float] = random.SystemRandom().uniform  # never a seed shared across a fork
    bound_s: float = LEASE_BOUND_S


PACING = Pacing()


def until_landed(attempt: Callable[[], T | None], gave_up: Callable[[float], T], pacing: Pacing | None = None) -> T:
    """Run `attempt` (one read, decision and compare-and-swap push; None when its lease was
    lost, so the next attempt reads and decides again) until it returns something, and return
    that. Between lost leases it waits a random, growing time (LEASE_WAIT_*); once `bound_s`
    seconds have passed since the first attempt began, `gave_up(seconds)` instead."""
    pace = pacing or PACING
    start = pace.clock()
    lost = 0
    while (got := attempt()) is None:
        spent = pace.clock() - start
        if spent >= pace.bound_s:
            return gave_up(spent)
        ceiling = min(LEASE_WAIT_CAP_S, LEASE_WAIT_BASE_S * 2 ** min(lost, 16))
        pace.sleep(min(pace.uniform(0.0, ceiling), pace.bound_s - spent))
        lost += 1
    return got


def _refusal(done: Captured, status: list[str]) -> str:
    """The remote's reason for refusing an atomic push: the first refused ref's own reason (not
    the "atomic push failed" of the others) and the last line a server hook printed."""
    refused = [ln.split("\t")[-1] for ln in status if ln.startswith("!")]
    reason = next((r for r in refused if r and "atomic push failed" not in r), refused[0] if refused else "")
    hook = [ln.removeprefix("remote: ").strip() for ln in done.err.splitlines() if ln.startswith("remote: ")]
    return "; ".join(filter(None, [reason, *hook[-1:]])) or _last(done)


def local_branch(repo: Path, loop: str) -> str | None:
    """The tip of this repository's `loop/<name>`, None when there is none."""
    return _oid(repo, branch_ref(loop))


def set_branch(repo: Path, loop: str, oid: str, worktree: Path) -> str | None:
    """Point this repository's `loop/<name>` at `oid` (the remote's tip). A worktree of the loop
    on an older tip is removed first (the tick adds it again from the branch): the remote's
    branch is the loop's. Returns None, or the line saying why it could not be done."""
    if local_branch(repo, loop) == oid:
        return None
    if os.path.lexists(worktree):
        gone = _git(repo, ["worktree", "remove", "--force", str(worktree)])
        if gone.code != 0 and os.path.lexists(worktree):
            return f"cannot replace the loop's worktree {worktree} with the remote's branch: {_last(gone)}"
    moved = _git(repo, ["update-ref", branch_ref(loop), oid])
    if moved.code != 0:
        return f"cannot set {branch_ref(loop)} to the remote's {oid[:12]}: {_last(moved)}"
    return None


def list_states(repo: Path, remote: str, *, user_config: bool = False) -> dict[str, str]:
    """Every state ref of `remote` (`git ls-remote`): loop name (the ref's tail after
    STATE_PREFIX, not yet validated) -> its state commit's oid. RemoteFailed when git cannot
    reach or read the remote (an unknown remote name included)."""
    listed = _git(repo, [*TRANSPORTS, "ls-remote", "--refs", "--", remote, STATE_PREFIX + "*"],
                  env=credential_env(), timeout_s=NET_TIMEOUT_S, user_config=user_config)
    if listed.code != 0:
        raise RemoteFailed(f"cannot read the state remote {remote!r}: {_last(listed)}")
    found: dict[str, str] = {}
    for line in listed.out.splitlines():
        oid, _, ref = line.partition("\t")
        if ref.startswith(STATE_PREFIX):  # ls-remote's patterns match a ref's tail: keep only these
            found[ref.removeprefix(STATE_PREFIX)] = oid.strip()
    return found


def fetch_states(repo: Path, remote: str, into: str, *, user_config: bool = False) -> dict[str, str]:
    """Copy every state ref of `remote` to `<into><name>` in `repo` in one fetch (forced: the
    remote is the source of truth; a ref gone from the remote is pruned here), never touching
    `refs/automaton/fetched/` (a tick's or a human act's) nor any loop folder. Returns loop name
    -> the copied commit's oid. `into` ends with "/". RemoteFailed when git cannot fetch."""
    done = _git(repo, [*TRANSPORTS, "fetch", "--quiet", "--prune", "--no-tags", "--no-write-fetch-head",
                       "--no-recurse-submodules", "--", remote, f"+{STATE_PREFIX}*:{into}*"],
                env=credential_env(), timeout_s=NET_TIMEOUT_S, user_config=user_config)
    if done.code != 0:
        raise RemoteFailed(f"cannot fetch the loop states of {remote!r}: {_last(done)}")
    refs = _git(repo, ["for-each-ref", "--format=%(objectname) %(refname)", "--", into])
    if refs.code != 0:
        raise RemoteFailed(f"cannot list the fetched loop states in {repo}: {_last(refs)}")
    return {ref.removeprefix(into): oid for oid, _, ref in (ln.partition(" ") for ln in refs.out.splitlines())
            if ref.startswith(into)}
