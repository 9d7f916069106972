"""A pytest verify command, run with automaton's plugin (runner/freeze.py says what each part rests on).

`run` is step 6 for a loop whose verify command runs pytest: the holdout tests copied into the
export, the frozen test set read (or collected at the base commit), the command run with the
plugin and its result pipe, and the verdict read from that stream alone. Every way the run can
contradict itself (JUnit XML, exit status, the stream) or leave out a frozen test ends in an
unscored verdict with a `halt` (`core.verdicts.Verdict.halt`) the tick applies.

The packaged scorer (`freeze.scorer_mode`) runs pytest itself, once, with the plugin and the
descriptor: its printed verdict (`"score": "agent"`) stands only where the stream allows it.
The frozen set is checked against the stream first; a stream whose suite did not pass caps
the score (`_capped`) at what the scorer gives a failing suite. Its flaky mode runs pytest N
times on the same pipe: each run is checked on its own, and the score is the stream's
(`_by_repeats`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from automaton.core.loopconfig import MIB, LoopConfig
from automaton.core.sandbox import Policy
from automaton.core.scores import score_text
from automaton.core.testids import (
    PASSED,
    Frozen,
    Streamed,
    counts,
    disagreement,
    read_runs,
    read_stream,
    runs_pytest,
    verdict,
)
from automaton.core.verdicts import Verdict, from_agent, json_objects
from automaton.git.errors import DriftError
from automaton.git.export import export_tree, remove_tree
from automaton.proc import run_streaming
from automaton.runner import freeze
from automaton.runner.confine import PolicyFor, scratch
from automaton.store import frozen_tests
from automaton.store.atomic import read_left

VERDICT_MISMATCH = "verdict_mismatch"


@dataclass(frozen=True)
class Base:
    """The project (`repo`), the base commit, and the protected patterns of its export."""

    repo: Path
    commit: str
    protected: list[str]


def _unscored(summary: str, halt: str | None = None) -> Verdict:
    return Verdict(None, False, False, summary, "stream", halt)


def run(cfg: LoopConfig, folder: Path, cwd: Path, tmp: Path, loop_dir: Path, policy_for: PolicyFor,
        env: dict[str, str], base: Base | None) -> Verdict:
    """The verdict of the pytest verify command run in `cwd` (see the module docstring).
    `verify.log`, `junit.xml` and, when the set is collected, `collect.log` land in `folder`;
    `base` None (no export, no base commit): no frozen set."""
    plugin = freeze.plugin_copy(folder)
    try:
        with freeze.holdout_in(cfg, loop_dir, cwd) as digest:
            frozen: Frozen | None = None
            if base is not None:
                found = freeze.frozen_set(cfg, loop_dir, base.commit, digest,
                                          lambda: _collect(cfg, folder, tmp, loop_dir, policy_for, env, base, plugin))
                if isinstance(found, str):
                    halt = found if found.startswith(frozen_tests.HOLDOUT_CHANGED) else None
                    return _unscored(f"verify not run: {found}", halt)
                frozen = found
            own = scratch(tmp, "verify")
            return _judged(cfg, folder, cwd, own, policy_for(cwd, "verify", "command", own), env, plugin, frozen,
                           loop_dir)
    except OSError as exc:
        return _unscored(f"verify not run: the holdout tests cannot be copied ({exc})")


def _run(cfg: LoopConfig, argv: list[str], log: Path, cwd: Path, own: Path, policy: Policy | None,
         env: dict[str, str], plugin: Path) -> tuple[int, bool, bytes | None]:
    """(exit code, timed out, the stream's bytes: None when it overflowed) of `argv` with the
    plugin and its pipe (a pytest command gets `-p automaton_verdicts` here; the scorer adds it
    to its own pytest runs). `own`: the run's own temp dir (`confine.scratch`), where its
    bytecode cache goes."""
    if runs_pytest(argv):
        argv = [*argv, "-p", freeze.PLUGIN]
    with freeze.pipe() as p:
        done = run_streaming(argv, out_path=log, cwd=cwd,
                             env=freeze.python_env(env, plugin, own, p.write_fd), timeout_s=cfg.harness.timeout_s,
                             sandbox=policy, max_bytes=cfg.harness.max_output_mb * MIB, pass_fds=(p.write_fd,))
        freeze.close_writer(p)
        return done.code, done.timed_out, p.raw()


def _collect(cfg: LoopConfig, folder: Path, tmp: Path, loop_dir: Path, policy_for: PolicyFor, env: dict[str, str],
             base: Base, plugin: Path) -> Streamed | None:
    """The test ids of the base commit: `--collect-only` on a clean export of it (the holdout
    tests copied in), in the verifier's sandbox. None when it cannot be exported or run."""
    dest = tmp / "freeze-tree"
    remove_tree(dest)
    try:
        export_tree(base.repo, base.commit, dest, protected=base.protected, base_commit=base.commit)
        with freeze.holdout_in(cfg, loop_dir, dest):
            argv = freeze.collect_argv(cfg, loop_dir)
            own = scratch(tmp, "collect")
            code, timed_out, data = _run(cfg, argv, folder / "collect.log", dest, own,
                                         policy_for(dest, "verify", "command", own), env, plugin)
    except (DriftError, OSError):
        return None
    finally:
        remove_tree(dest)
    # pytest's exit statuses: 0 collected, 5 no tests collected, 4 usage error, which a path the
    # base commit does not have yet (`pytest tests` before tests/ exists) also gives.
    return None if timed_out or code not in (0, 4, 5) or data is None else read_stream(data)


def _judged(cfg: LoopConfig, folder: Path, cwd: Path, own: Path, policy: Policy | None, env: dict[str, str],
            plugin: Path, frozen: Frozen | None, loop_dir: Path) -> Verdict:
    """The verdict of one verify run. pytest (run here, or by the scorer: its path in
    `freeze.ENV_JUNIT`) always writes JUnit XML to the run's own temp dir `own`: a stream that
    pytest's own JUnit file does not corroborate (missing, or other counts) is unscored."""
    argv = list(cfg.roles.verify.command or [])
    mode = freeze.scorer_mode(cfg, loop_dir)
    junit = own / "junit.xml"
    if mode is None:
        argv.append(f"--junitxml={junit}")
    else:
        env = {**env, freeze.ENV_JUNIT: str(junit)}
    repeat = freeze.repeat_of(argv) if mode == freeze.REPEAT_MODE else 1
    for path in _junits(junit, mode, repeat or 0):
        path.unlink(missing_ok=True)
    code, timed_out, data = _run(cfg, argv, folder / "verify.log", cwd, own, policy, env, plugin)
    if timed_out:
        return _unscored(f"verify timed out after {cfg.harness.timeout_s} s")
    log = (folder / "verify.log").read_text(encoding="utf-8", errors="replace")
    if code == 126 and "sandbox" in log:
        return _unscored("verify could not start in the sandbox")
    xmls = [kept_junit(path, folder, cfg.harness.max_output_mb * MIB) for path in _junits(junit, mode, repeat or 0)]
    if data is None:
        return _unscored("the verifier's result stream was too long", f"{VERDICT_MISMATCH}: result stream overflowed")
    if mode == freeze.REPEAT_MODE:
        if repeat is None:
            return _unscored("unscored: the flaky verifier's --repeat is no positive integer")
        return _by_repeats(Repeats(repeat, read_runs(data), xmls, code), log, frozen, loop_dir)
    stream, xml = read_stream(data), xmls[0]
    if mode is not None:
        return _by_scorer(mode, stream, log, frozen, loop_dir, code, xml, junit_required=True)
    why = disagreement(stream, code, xml, junit_required=True)
    if why is not None:
        return _unscored(f"unscored: {why}", f"{VERDICT_MISMATCH}: {why}")
    return _scored(stream, code, frozen, loop_dir)


def _junits(junit: Path, mode: str | None, repeat: int) -> list[Path]:
    """The JUnit files of one verify: `junit`, or in the flaky mode one per run."""
    return [freeze.run_junit(junit, i) for i in range(repeat)] if mode == freeze.REPEAT_MODE else [junit]


def kept_junit(path: Path, folder: Path, limit: int) -> str | None:
    """The text of the JUnit file `path` (its first `limit` bytes), kept in the run folder; None
    when the run left none there, or left a link or anything but a file of its own
    (`confine.read_left`: never a link followed)."""
    data = read_left(path, limit)
    if data is None:
        return None
    xml = data.decode("utf-8", errors="replace")
    (folder / path.name).write_text(xml, encoding="utf-8")
    return xml


@dataclass(frozen=True)
class Repeats:
    """The flaky mode's runs: `repeat` (from the sealed command line), the streamed runs in
    order, each run's JUnit XML (None: not written), the scorer's exit status."""

    repeat: int
    runs: list[Streamed]
    xmls: list[str | None]
    code: int


def _mismatch(why: str) -> Verdict:
    return _unscored(f"unscored: {why}", f"{VERDICT_MISMATCH}: {why}")


def _scorer_exits(output: str) -> list[int] | None:
    """The `runs` list (each pytest run's exit status, as the scorer saw it) of the scorer's
    last verdict line, or None."""
    for obj in reversed(json_objects(output)):
        if "score" in obj:
            runs = obj.get("runs")
            if isinstance(runs, list) and all(isinstance(c, int) and not isinstance(c, bool) for c in runs):
                return list(runs)
            return None
    return None


def _by_repeats(got: Repeats, output: str, frozen: Frozen | None, loop_dir: Path) -> Verdict:
    """The flaky mode's verdict, from the stream alone: each run checked like one pytest
    command (first result per id per run; its JUnit XML and its `end` record must agree, and
    JUnit XML must exist), each judging every frozen id; then the runs counted must be
    `repeat`, ending with the exit statuses the scorer saw (its `runs`). Score = runs that
    ended 0 with every result a pass / repeat; a printed score that differs halts
    `verdict_mismatch`."""
    for i, run in enumerate(got.runs):
        xml = got.xmls[i] if i < len(got.xmls) else None
        why = disagreement(run, -1 if run.end is None else run.end, xml, junit_required=True)
        if why is not None:
            return _mismatch(f"run {i + 1}: {why}")
        removed = _removed(frozen, run, loop_dir) if run.end is not None else None
        if removed is not None:
            return removed
    said = from_agent(output)
    if said.score is None:
        return said
    if got.code != 0:
        return _unscored(f"unscored: the scorer printed a score but exited {got.code}")
    ends = [run.end for run in got.runs]
    exits = _scorer_exits(output)
    if len(got.runs) != got.repeat or exits != ends:
        return _mismatch(f"{got.repeat} runs expected; the stream holds {len(got.runs)} ending {ends}, the scorer"
                         f" saw exit statuses {exits}")
    good = sum(1 for run in got.runs
               if run.end == 0 and run.results and all(o in PASSED for o in run.results.values()))
    score = good / got.repeat
    if abs(score - said.score) > 1e-6:
        return _mismatch(f"the scorer says {score_text(said.score)}, the stream {good}/{got.repeat} runs passed")
    return Verdict(score, good == got.repeat, good == got.repeat, said.summary, said.source)


def _scored(stream: Streamed, code: int, frozen: Frozen | None, loop_dir: Path) -> Verdict:
    if stream.end is None:
        return _unscored(f"no result stream from the plugin (exit {code})")
    if stream.end == 2 and not stream.results:  # pytest: interrupted, e.g. by a collection error
        return Verdict(0.0, False, False, "no test ran: collection failed (exit 2)", "stream")
    return _removed(frozen, stream, loop_dir) or verdict(stream, code)


def _removed(frozen: Frozen | None, stream: Streamed, loop_dir: Path) -> Verdict | None:
    """The unscored `tests_removed` verdict when the stream did not judge every frozen id (the
    run's ids kept as the proposal a human may accept), else None."""
    found = None if frozen is None else freeze.removed_detail(frozen, stream)
    if frozen is None or found is None:
        return None
    detail, ids = found
    frozen_tests.write_proposed(loop_dir, frozen, ids)
    return _unscored(f"unscored: {detail}", detail)


def _by_scorer(mode: str, stream: Streamed, output: str, frozen: Frozen | None, loop_dir: Path,
               code: int = 0, xml: str | None = None, junit_required: bool = False) -> Verdict:
    """The scorer's printed verdict, held to the stream of its one pytest run and to its exit
    status `code`: results written twice, lines after the end record, or (`junit_required`)
    a finished stream that the JUnit XML `xml` of that run does not corroborate (missing,
    other counts) halt `verdict_mismatch`; a frozen id left out halts
    `tests_removed`; a score with an exit other than 0 (the scorer exits 0 after a score: one
    that was killed, say by the code under test after a forged line, does not), or a stream
    without its end record (the run was cut short, or never started), is unscored; a suite the
    stream shows failing caps the score (`_capped`)."""
    if stream.conflicts or stream.after_end or stream.tampered or (stream.end is not None and junit_required):
        # The scorer does not pass pytest's exit status on: the stream's own stands in for it.
        why = disagreement(stream, -1 if stream.end is None else stream.end, xml, junit_required)
        if why is not None:
            return _unscored(f"unscored: {why}", f"{VERDICT_MISMATCH}: {why}")
    removed = _removed(frozen, stream, loop_dir) if stream.end is not None else None
    if removed is not None:
        return removed
    said = from_agent(output)
    if said.score is None:
        return said
    if code != 0:
        return _unscored(f"unscored: the scorer printed a score but exited {code}")
    if stream.end is None:
        return _unscored("unscored: no result stream from the scorer's pytest run")
    return _capped(mode, stream, said)


def _capped(mode: str, stream: Streamed, said: Verdict) -> Verdict:
    """`said` when the streamed suite passed (pytest exit 0, or 5 for no test where the scorer
    accepts that: lint, types; no failed test); else at most what the scorer gives a failing
    suite (0; dependency: half the streamed pass rate plus half for the pin), never passed."""
    passed, failed, _ = counts(stream)
    ok_exits = (0,) if mode in freeze.SUITE_MODES else (0, 5)
    if stream.end in ok_exits and failed == 0:
        return said
    ran = passed + failed
    cap = 0.5 * (passed / ran if ran else 0.0) + 0.5 if mode == "dependency" else 0.0
    score = min(said.score or 0.0, cap)
    summary = said.summary if score == said.score else f"{said.summary} (capped at {cap:g}: the suite failed)"
    return Verdict(score, False, False, summary, said.source)
