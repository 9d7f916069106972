"""`--dashboard --state-remote REMOTE`: the loops whose state lives in a git remote, shown and acted on.

The remote's loops are the state refs `refs/automaton/loops/<name>` (`git.remote`, the protocol
in README.md#state-in-the-git-remote). A refresh (`RemoteView.refresh`) lists them with one
`git ls-remote`; when the list (names and commit oids) differs from the last one, one `git
fetch` copies every state ref into this dashboard's own namespace of the checkout,
`refs/automaton/dashboard/<sha256(remote)[:16]>/<name>`, never the `refs/automaton/fetched/`
refs a tick or a `--state-remote` act of this checkout reads. Both run through `git.remote`'s
hardened git (`protocol.allow` lifted for file, https and ssh only; `$AUTOMATON_GIT_TOKEN` as
an environment-only header) with the user's config (a human's credential helper), as a human
act through the remote does.

Where the fetched states live: not in the checkout's loop folders. `remote_state.sync_in`
replaces a loop folder whole, which would clobber a loop of this checkout that is mid-tick
(it holds only the tick lock, which a listing does not take). Each refresh that sees a change
writes every state into a new private folder, `<the key's folder>/dashboard-remote/<pid>-…/
g<N>/<label>/.automaton/loops/<name>/` (the key's folder is hidden from every agent sandbox,
so no agent can edit a state between its check and its display), a project of its own that
`views` reads as it reads a local one. The view then points at the new folder; the previous
one is kept for a page that is still reading it, older ones are removed, and `close()`
removes them all when the dashboard stops.

Verified before shown: a state is written to its folder and kept only when its log verifies
whole with the record key (every line keyed, `store.chainlog.read_chain`) and its state agrees
with it (`Loop.inspect`, no tamper finding): the checks `remote_state.sync_in` makes before a
tick. A loop that fails is not written (so no page reads its files); its row says
`tampered` with the reason, and every page and act of it is refused (`Unverified`, 409).

Acts (approve, pause, resume, rearm) go through `remote_state.remote_act` on the checkout:
fetch, apply the CLI's use case to the materialised loop folder, compare-and-swap push,
retried on a lost lease. That is the `--state-remote` CLI act, which replaces the checkout's
folder of that loop with the remote's state: refused here while a tick of that loop holds
its tick lock in this checkout. An approval stays bound to the review the human was shown
(`Review.seen` of the fetched state): refused when the remote's state moved since.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from automaton.commands import lifecycle
from automaton.commands import loops as loop_cases
from automaton.commands.human import Human
from automaton.commands.remote_manifest import checked
from automaton.commands.remote_state import check_remote, remote_act, safe_rel
from automaton.commands.reviews import Review
from automaton.core.errors import AutomatonError, BadInput, Refused
from automaton.core.names import LoopName
from automaton.core.outcome import Outcome
from automaton.git import remote as git_remote
from automaton.git.remote import RemoteFailed
from automaton.store import chainlog, key
from automaton.store.layout import Project
from automaton.store.locks import Busy, locked
from automaton.store.loops import CONFIG_FILE, LOG_FILE, STATE_FILE, TICK_LOCK, Loop

REFRESH_S = 10.0  # at most one `git ls-remote` per this many seconds (the page polls every 2 s)
REFS = "refs/automaton/dashboard/"
_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9._@:+-]+")


class Unverified(Refused):
    """A loop of the remote whose state does not verify with the record key (409: not shown,
    not acted on; its row says why)."""


@dataclass(frozen=True)
class RemoteLoop:
    """One state ref of the remote: `name`, its state `commit`, and `problem` (why it does not
    verify; "" when it does and its folder holds it)."""

    name: str
    commit: str
    problem: str = ""


def _utc(now: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))


def require_key() -> None:
    """BadInput (exit 2) when the record key cannot be loaded here: without it no state of the
    remote can be verified, and an unverified state is never shown."""
    try:
        found = key.load_key(create=False)
    except BadInput as exc:
        raise BadInput(f"--dashboard --state-remote verifies every loop state with the record key: {exc.message}")\
            from None
    if found is None:
        raise BadInput(f"--dashboard --state-remote verifies every loop state with the record key, and there is"
                       f" none here ({key.key_path()} is missing and AUTOMATON_RECORD_KEY is not set): use the"
                       " key the loops' runners use")


def _write(folder: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _problem(project: Project, name: LoopName) -> str:
    """Why the state materialised in `project` does not verify ("" when it does): the checks of
    `remote_state.sync_in` (the log whole and keyed on every line, the state the one it sealed)."""
    chain = chainlog.read_chain(project.loop_dir(name) / LOG_FILE)
    unkeyed = next((i for i, line in enumerate(chain.lines, 1) if not line.mac), None)
    if not chain.ok or unkeyed is not None or not chain.lines:
        why = chain.error or (f"line {unkeyed} is not keyed" if unkeyed else "an empty log")
        return f"its log does not verify with the record key ({why})"
    rec = Loop.resolve(project, name).inspect()
    return f"its state is tampered ({rec.tamper})" if rec.tamper else ""


@dataclass
class RemoteView:
    """The loops of state remote `remote`, read through the checkout `checkout` (its git
    repository, its remote names, and the project every act goes through). `project` is the
    private project the verified states are written into (None before the first refresh),
    `loops` what the last fetch found, `error` the banner of the last failed refresh ("" after
    one that worked). `clock`: seconds, monotonic (tests move it)."""

    checkout: Project
    remote: str
    base: Path
    clock: Callable[[], float] = time.monotonic
    every_s: float = REFRESH_S
    project: Project | None = None
    loops: dict[str, RemoteLoop] = field(default_factory=dict)
    error: str = ""
    listed: dict[str, str] | None = None
    checked_at: float | None = None
    generation: int = 0
    stale: bool = False
    fetched_at: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def refs(self) -> str:
        return f"{REFS}{hashlib.sha256(self.remote.encode()).hexdigest()[:16]}/"

    @property
    def label(self) -> str:
        """The project name the pages show for the remote's loops."""
        return f"{_LABEL_UNSAFE.sub('_', self.remote)[-80:]} (state remote)"

    def refresh(self, *, strict: bool = False) -> None:
        """Re-read the remote unless it was read less than `every_s` seconds ago (or an act
        made it `stale`). A failure keeps the states shown before and sets `error`; with
        `strict` (the start) it raises BadInput (exit 2, one line) instead. While another
        request refreshes (a slow remote), this one shows what is there without waiting."""
        if not self._lock.acquire(blocking=strict):
            return
        try:
            self._refresh(strict)
        finally:
            self._lock.release()

    def _refresh(self, strict: bool) -> None:
        now = self.clock()
        if not self.stale and self.checked_at is not None and now - self.checked_at < self.every_s:
            return
        self.checked_at, self.stale = now, False
        try:
            listed = git_remote.list_states(self.checkout.root, self.remote, user_config=True)
            if listed != self.listed or self.project is None:
                fetched = git_remote.fetch_states(self.checkout.root, self.remote, self.refs, user_config=True)
                self._build(fetched)
                self.listed = listed
                self.fetched_at = _utc(time.time())
        except (RemoteFailed, OSError) as exc:
            if strict:
                raise BadInput(f"--state-remote {self.remote!r}: {exc}: pass a remote of this checkout"
                               " (git remote -v) or its URL") from None
            shown = f"the states fetched at {self.fetched_at}" if self.fetched_at else "no state"
            self.error = f"refresh failed at {_utc(time.time())}: {exc}; showing {shown}"
            return
        self.error = ""

    def _build(self, fetched: dict[str, str]) -> None:
        """Write every fetched state that verifies into a new generation folder, then show it."""
        self.generation += 1
        gen = self.base / f"g{self.generation}"
        project = Project(gen / self.label)
        project.loops_dir.mkdir(parents=True)
        found: dict[str, RemoteLoop] = {}
        for name, commit in sorted(fetched.items()):
            found[name] = RemoteLoop(name, commit, self._materialise(project, name, commit))
        self.project, self.loops = project, found
        for old in self.base.glob("g*"):
            if old.name not in (gen.name, f"g{self.generation - 1}"):
                shutil.rmtree(old, ignore_errors=True)

    def _materialise(self, project: Project, name: str, commit: str) -> str:
        """Write state `commit` of loop `name` into `project` and verify it: "" when it holds,
        else why not (and nothing of it is left there)."""
        try:
            loop = LoopName.of(name)
        except AutomatonError:
            return f"the state ref {git_remote.STATE_PREFIX}{name} does not name a loop"
        try:
            files = git_remote.read_tree(self.checkout.root, commit)
        except RemoteFailed as exc:
            return str(exc)
        bad = next((rel for rel in files if not safe_rel(rel)), None)
        missing = [f for f in (STATE_FILE, LOG_FILE, CONFIG_FILE) if f not in files]
        if bad is not None or missing:
            what = f"the path {bad!r}" if bad is not None else f"no {', '.join(missing)}"
            return f"the state commit {commit[:12]} is not a loop's state ({what}): it was not written by automaton"
        folder = project.loop_dir(loop)
        try:
            files = checked(loop, self.remote, commit, files)  # every file as its keyed manifest seals it
        except AutomatonError as exc:
            return exc.message
        try:
            _write(folder, files)
            problem = _problem(project, loop)
        except (AutomatonError, OSError) as exc:
            problem = f"its state cannot be read ({getattr(exc, 'message', None) or exc})"
        if problem:
            shutil.rmtree(folder, ignore_errors=True)
            return f"the state commit {commit[:12]} does not verify: {problem}; a human restores the state ref"
        return ""

    def verified(self, name: str) -> LoopName:
        """The loop `name` of the remote when its state verified; Unverified (409) when it did
        not, BadInput (the dashboard's 404) when the remote has no such loop."""
        found = self.loops.get(name)
        if found is None:
            raise BadInput(f"the state remote {self.remote!r} has no loop {name!r} (as of {self.fetched_at})")
        if found.problem:
            raise Unverified(f"loop {name} on the state remote {self.remote!r}: {found.problem}; the dashboard"
                             " neither shows nor acts on it")
        return LoopName.of(name)

    def act(self, name: str, what: str, human: Human, seen: str = "") -> Outcome:
        """Human act `what` ("approve", "pause", "resume" or "rearm") on loop `name` through `remote_state.remote_act`;
        `seen`: for approve, the review the human was shown. Unverified for a loop that does
        not verify, Refused while a tick of it runs in this checkout; the act's own refusal
        as the use case raises it. The next refresh reads the remote again."""
        loop = self.verified(name)
        _no_tick_here(self.checkout, loop)
        checkout = self.checkout
        cases: dict[str, Callable[[], Outcome]] = {
            "approve": lambda: loop_cases.approve_loop(checkout, loop, reviewed=Review("loop.json", seen),
                                                       human=human),
            "pause": lambda: loop_cases.pause_loop(checkout, loop, human=human),
            "resume": lambda: loop_cases.resume_loop(checkout, loop, human=human),
            "rearm": lambda: lifecycle.rearm_loop(checkout, loop, human=human),
        }
        try:
            return remote_act(checkout, loop, self.remote, cases[what])
        finally:
            self.stale = True

    def tampered_rows(self, i: int, error_row: Callable[..., dict[str, Any]]) -> list[dict[str, Any]]:
        """A row for each loop whose state does not verify (status `tampered`), never hidden."""
        assert self.project is not None
        return [{**error_row(i, self.project, found.name, found.problem), "status": "tampered",
                 "halt_reason": "state_tampered"} for found in self.loops.values() if found.problem]

    def close(self) -> None:
        """Remove every folder this view wrote (the dashboard stops)."""
        shutil.rmtree(self.base, ignore_errors=True)


def _no_tick_here(project: Project, loop: LoopName) -> None:
    """Refused (exit 1) while a tick of `loop` holds its tick lock in this checkout: the act's
    fetch would replace the folder under it."""
    folder = project.loop_dir(loop)
    if not folder.is_dir():
        return
    try:
        with locked(folder / TICK_LOCK, timeout_s=0):
            pass
    except Busy:
        raise Refused(f"a tick of loop {loop} runs in this checkout ({project.root}): acting on its state in the"
                      " remote would replace its folder under the tick; act again once it has finished") from None


def open_view(checkout: Project, remote: str, *, clock: Callable[[], float] = time.monotonic) -> RemoteView:
    """A RemoteView of `remote` read once (BadInput, exit 2, one line: a bad spelling, no
    record key, a remote git cannot reach), its folders under the key's folder."""
    check_remote(remote, "--state-remote")
    require_key()
    parent = key.key_path().parent / "dashboard-remote"
    try:
        parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        base = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=parent))
    except OSError as exc:
        raise BadInput(f"--state-remote: cannot make a private folder in {parent} ({exc.strerror or exc}):"
                       " fix its permissions") from None
    view = RemoteView(checkout, remote, base, clock)
    try:
        view.refresh(strict=True)
    except BaseException:
        with contextlib.suppress(OSError):
            view.close()
        raise
    return view
