"""Step 6 of a tick: the verifier, run on a clean export of the tick's commit.

The agent's working tree is never what gets verified: whatever it left uncommitted, whatever
it hid from git, a `conftest.py` it planted — none of that reaches the verifier. The runner
exports the tree of the commit it made itself (read from the object database, no attributes
or filters), replaces every protected path (`blast_radius.protected`) with the base commit's
version, and runs the verify command or the verify agent there, inside the sandbox with only
that export and a temp dir writable. A loop without a worktree (no commit to export) is
verified in place, read-only.

Where this process is a child subreaper (Linux), the export is kept between ticks
(`kept_export`) and brought up to date by `git.export.refresh_export`, which compares every file
in it with the commit's blob before the verifier runs (reading it, unless its sealed stat data
show it unchanged since a refresh read it: `git.export.StatRecord`): writing a repository's
files on every tick cost far more than the rest of the tick (BENCHMARKS.md, figure 4). What
that rests on (SECURITY.md, "The verifier's export"): the folder is in a private folder of
this user outside the project, where no agent process of a tick may write (the sandbox gives
the verifier that export only); the comparison happens when no process of an earlier run can
still write there: `proc.run_streaming` kills every descendant of a run when it ends, and a
run that did not end that way (the runner killed mid-verify) leaves no `.idle` mark, so the
next tick removes the folder, inode and all, and exports into a new one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from automaton import harnesses
from automaton.core.loopconfig import MIB, LoopConfig
from automaton.core.sandbox import Policy
from automaton.core.secrets import without_credentials
from automaton.core.verdicts import Verdict, from_agent, from_command
from automaton.git.export import ExportError, StatRecord, export_tree, refresh_export, remove_tree
from automaton.git.protect import effective_protected
from automaton.harnesses import HarnessRequest
from automaton.proc import run_streaming
from automaton.runner import exportcache, freeze, leftovers, pytest_verify
from automaton.sandbox import reaper
from automaton.store.key import seal_bytes
from automaton.store.layout import kept_export_marks, kept_export_of, kept_export_stats, kept_exports_dir

# Builds the policy of one process: (cwd, label, harness name) -> Policy | None.
PolicyFor = Callable[[Path, str, str], Policy | None]


@dataclass(frozen=True)
class VerifyPlace:
    """cwd: where the verifier runs (an export, or the main checkout); exported: whether it is
    a clean export (then removed after the run, unless kept); idle: the mark to write once the
    verifier's run ended and every process it started is dead, for a kept export (else None)."""

    cwd: Path
    exported: bool
    idle: Path | None = None
    # The project and the base commit of an export: a pytest verifier's test ids are frozen there.
    repo: Path | None = None
    base: str | None = None


def place(cfg: LoopConfig, repo: Path, commit: str | None, base: str | None, tmp: Path, fallback_cwd: Path,
          notes: list[str] | None = None) -> VerifyPlace:
    """Export `commit` (with protected paths from `base`) into the loop's kept export
    (`kept_export`) or, where there is none or the kept exports are over their bound
    (`runner.exportcache`: then its one line is appended to `notes`), into `tmp/verify-tree`;
    without a commit to export, the verifier runs in `fallback_cwd`. Raises DriftError when
    git fails (an ExportError: the tick then records an unscored verdict; it never verifies
    the agent's tree instead)."""
    if commit is None or base is None:
        return VerifyPlace(fallback_cwd, False)

    protected = protected_patterns(cfg, repo)
    kept = kept_export(repo, cfg.name)
    full = exportcache.over_bound(kept[0]) if kept is not None else None
    if full is not None and kept is not None:
        if notes is not None:
            notes.append(full)
        _take_mark(kept[1])
        _remove(kept[0])  # its recorded size stays: counted until the bound is raised or the loop removed
        kept = None
    if kept is None:
        dest = tmp / "verify-tree"
        export_tree(repo, commit, dest, protected=protected, base_commit=base)
        return VerifyPlace(dest, True, None, repo, base)
    folder, idle = kept
    # The stat data of the files the last refresh found right, sealed, beside the folder (where
    # no agent may write): unchanged files are not read again (git.export.StatRecord).
    stats = StatRecord(kept_export_stats(folder), seal_bytes)
    quiet = _take_mark(idle)  # from here until the mark is written again, the folder is suspect
    if not quiet:
        remove_tree(stats.path)  # the record goes with the folder it describes
        _remove(folder)  # a run that may have left a process behind: a new folder, a new inode
    try:
        done = refresh_export(repo, commit, folder, protected=protected, base_commit=base, stats=stats)
    except ExportError:
        if not quiet:
            raise
        remove_tree(stats.path)  # the record goes with the folder it describes
        _remove(folder)  # something in the kept folder could not be repaired: export afresh
        done = refresh_export(repo, commit, folder, protected=protected, base_commit=base, stats=stats)
    exportcache.record(folder, done.bytes)
    return VerifyPlace(folder, True, idle, repo, base)


def kept_export(repo: Path, loop: str) -> tuple[Path, Path] | None:
    """(the kept export folder of loop `loop` of the project at `repo`, its idle mark), or None
    where none may be kept: not Linux (no child subreaper, so a verifier's daemon could outlive
    its run), or the folder of kept exports (`store/layout.py` `kept_exports_dir`) is not a
    real folder of this user alone (made 0700).

    Outside the project on purpose: a verifier run inside it would find the project's own
    `conftest.py`, `pyproject.toml` or `.git` above the export. In the user's cache folder, not
    the temp dir: it outlives reboots' temp cleaning without surprise, `--remove-loop` deletes
    it (`kept_export_of`), and no agent sandbox may write there."""
    if not reaper.become_subreaper() or not hasattr(os, "getuid"):
        return None

    uid = os.getuid()
    top = kept_exports_dir()
    real_repo = os.path.realpath(repo)
    if os.path.commonpath([os.path.realpath(top), real_repo]) == real_repo:
        return None  # a cache folder inside the project (XDG_CACHE_HOME there): the project would be above it
    try:
        top.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        st = os.lstat(top)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or stat.S_IMODE(st.st_mode) & 0o077:
        return None
    if stat.S_IMODE(st.st_mode) != 0o700:  # Landlock does not cover chmod: an agent's `chmod 000` here
        try:                                # made every later tick's verify fail; ours, so ours to restore
            os.chmod(top, 0o700)
        except OSError:
            return None
    folder = kept_export_of(repo, loop)
    return folder, kept_export_marks(folder)[0]


def _take_mark(idle: Path) -> bool:
    """Remove the idle mark; whether it was there."""
    try:
        os.unlink(idle)
    except FileNotFoundError:
        return False
    return True


def _remove(folder: Path) -> None:
    """Remove `folder` and everything in it without following a symlink (a symlink or file in
    its place is removed itself); missing is fine."""
    remove_tree(folder)


def protected_patterns(cfg: LoopConfig, repo: Path) -> list[str]:
    """`blast_radius.protected` plus the bytecode patterns (`git.protect.BYTECODE`), or the
    defaults derived from the verify command's paths in `repo`."""

    blast = cfg.blast_radius.protected
    return effective_protected(None if blast is None else list(blast), list(cfg.roles.verify.command or []), repo)


def run_verify(cfg: LoopConfig, adapter: harnesses.Harness, request: Callable[..., HarnessRequest], folder: Path,
               where: VerifyPlace, tmp: Path, loop_dir: Path, policy_for: PolicyFor, prompt: Callable[[], str],
               costs: dict[str, float | None]) -> Verdict:
    """The verify command (JUnit XML or summary line, or agent JSON with score "agent") or the
    verify prompt run by the harness; `verify.log` and `junit.xml` land in `folder` (`runs/<n>/`,
    outside the sandbox), the log keeping its last `harness.max_output_mb` MiB. costs["verify"]
    is set for an agent verifier."""
    role = cfg.roles.verify
    before = set(reaper.descendants()) if where.idle is not None else set()
    try:
        if role.command and freeze.applies(cfg, loop_dir):
            base = None
            if where.repo is not None and where.base is not None:
                base = pytest_verify.Base(where.repo, where.base, protected_patterns(cfg, where.repo))
            return pytest_verify.run(cfg, folder, where.cwd, tmp, loop_dir, policy_for, command_env(loop_dir), base)
        if role.command:
            return _command(cfg, folder, where.cwd, tmp, loop_dir, policy_for(where.cwd, "verify", "command"))
        req = request("verify", prompt(), cwd=where.cwd, sandbox=policy_for(where.cwd, "verify", cfg.harness.name))
        res = adapter.run(req)
        costs["verify"] = res.cost_usd
        if res.timed_out:
            return Verdict(None, False, False, "verify agent timed out", "agent")
        return from_agent(res.final_text)
    except BaseException:
        # no idle mark: the next tick starts afresh
        where = VerifyPlace(where.cwd, where.exported, None, where.repo, where.base)
        raise
    finally:
        if where.idle is not None and reaper.survivors(before) == []:
            # The run ended and nothing it started is alive (proc.run_streaming killed what it
            # left; one stuck past that, or a /proc that cannot be read, means no mark, so the
            # next tick exports into a new folder). The verifier may have made the folder
            # unwritable (Landlock does not cover chmod): no mark then, never a crash.
            with contextlib.suppress(OSError):
                where.idle.touch()
        elif where.exported and where.idle is None:
            shutil.rmtree(where.cwd, ignore_errors=True)


def command_env(loop_dir: Path) -> dict[str, str]:
    """The verify command's environment: the user's credentials stay out of what the code under
    test sees (core.secrets)."""
    return dict(without_credentials(os.environ, "command"), AUTOMATON_ROLE="verify", PYTHONDONTWRITEBYTECODE="1",
                **leftovers.marker(loop_dir))


def _command(cfg: LoopConfig, folder: Path, cwd: Path, tmp: Path, loop_dir: Path, policy: Policy | None) -> Verdict:
    role = cfg.roles.verify
    argv = list(role.command or [])
    junit = tmp / "junit.xml"
    junit.unlink(missing_ok=True)
    if role.score == "junit":
        argv.append(f"--junitxml={junit}")
    env = command_env(loop_dir)
    log = folder / "verify.log"
    done = run_streaming(argv, out_path=log, cwd=cwd, env=env, timeout_s=cfg.harness.timeout_s, sandbox=policy,
                         max_bytes=cfg.harness.max_output_mb * MIB)
    output = log.read_text(encoding="utf-8", errors="replace")
    if done.timed_out:
        return Verdict(None, False, False, f"verify timed out after {cfg.harness.timeout_s} s", "none")
    if done.code == 126 and "sandbox" in output:
        return Verdict(None, False, False, "verify could not start in the sandbox", "none")
    if role.score == "agent":
        return from_agent(output)
    xml = None
    if junit.is_file():
        xml = junit.read_text(encoding="utf-8", errors="replace")
        (folder / "junit.xml").write_text(xml, encoding="utf-8")
    return from_command(done.code, output, xml)
