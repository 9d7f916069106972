"""Step 6 of a tick: the verifier, run on a clean export of the tick's commit.

The agent's working tree is never what gets verified: whatever it left uncommitted, whatever
it hid from git, a `conftest.py` it planted — none of that reaches the verifier. The runner
exports the tree of the commit it made itself (`git archive`), replaces every protected path
(`blast_radius.protected`) with the base commit's version, and runs the verify command or the
verify agent there, inside the sandbox with only that export and a temp dir writable. A loop
without a worktree (no commit to export) is verified in place, read-only.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from automaton import harnesses
from automaton.core.loopconfig import MIB, LoopConfig
from automaton.core.sandbox import Policy
from automaton.core.verdicts import Verdict, from_agent, from_command
from automaton.harnesses import HarnessRequest
from automaton.proc import run_streaming
from automaton.runner import leftovers

# Builds the policy of one process: (cwd, label, harness name) -> Policy | None.
PolicyFor = Callable[[Path, str, str], Policy | None]


@dataclass(frozen=True)
class VerifyPlace:
    """cwd: where the verifier runs (an export, or the main checkout); exported: whether it is
    a clean export (then removed after the run)."""

    cwd: Path
    exported: bool


def place(cfg: LoopConfig, repo: Path, commit: str | None, base: str | None, tmp: Path, fallback_cwd: Path) -> \
        VerifyPlace:
    """Export `commit` (with protected paths from `base`) into `tmp/verify-tree`; without a
    commit to export, the verifier runs in `fallback_cwd`. Raises DriftError when git fails
    (an ExportError: the tick then records an unscored verdict; it never verifies the agent's
    tree instead)."""
    if commit is None or base is None:
        return VerifyPlace(fallback_cwd, False)
    from automaton.git.export import export_tree

    dest = tmp / "verify-tree"
    export_tree(repo, commit, dest, protected=protected_patterns(cfg, repo), base_commit=base)
    return VerifyPlace(dest, True)


def protected_patterns(cfg: LoopConfig, repo: Path) -> list[str]:
    """`blast_radius.protected`, or the defaults derived from the verify command's paths in `repo`."""
    if cfg.blast_radius.protected is not None:
        return list(cfg.blast_radius.protected)
    from automaton.git.protect import default_protected

    return default_protected(list(cfg.roles.verify.command or []), repo)


def run_verify(cfg: LoopConfig, adapter: harnesses.Harness, request: Callable[..., HarnessRequest], folder: Path,
               where: VerifyPlace, tmp: Path, loop_dir: Path, policy_for: PolicyFor, prompt: Callable[[], str],
               costs: dict[str, float | None]) -> Verdict:
    """The verify command (JUnit XML or summary line, or agent JSON with score "agent") or the
    verify prompt run by the harness; `verify.log` and `junit.xml` land in `folder` (`runs/<n>/`,
    outside the sandbox), the log keeping its last `harness.max_output_mb` MiB. costs["verify"]
    is set for an agent verifier."""
    role = cfg.roles.verify
    try:
        if role.command:
            return _command(cfg, folder, where.cwd, tmp, loop_dir, policy_for(where.cwd, "verify", "command"))
        req = request("verify", prompt(), cwd=where.cwd, sandbox=policy_for(where.cwd, "verify", cfg.harness.name))
        res = adapter.run(req)
        costs["verify"] = res.cost_usd
        if res.timed_out:
            return Verdict(None, False, False, "verify agent timed out", "agent")
        return from_agent(res.final_text)
    finally:
        if where.exported:
            shutil.rmtree(where.cwd, ignore_errors=True)


def _command(cfg: LoopConfig, folder: Path, cwd: Path, tmp: Path, loop_dir: Path, policy: Policy | None) -> Verdict:
    role = cfg.roles.verify
    argv = list(role.command or [])
    junit = tmp / "junit.xml"
    junit.unlink(missing_ok=True)
    if role.score == "junit":
        argv.append(f"--junitxml={junit}")
    env = dict(os.environ, AUTOMATON_ROLE="verify", PYTHONDONTWRITEBYTECODE="1", **leftovers.marker(loop_dir))
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
