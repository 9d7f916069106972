"""`harnesses.versions`: the installed CLI's version, read from its npm package, and the range
automaton's end-to-end suite tested (kept in step with tests/e2e/clis.lock.json)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from automaton.harnesses import REGISTRY, versions
from tests.e2e.install import pinned


def test_the_tested_range_ends_at_the_pinned_versions_of_the_e2e_suite() -> None:
    lock = pinned()
    for harness, tested in versions.TESTED.items():
        assert lock[harness].package == tested.package
        assert lock[harness].version == tested.highest, (harness, "update harnesses/versions.py TESTED with the lock")
        assert versions.in_range(harness, tested.highest) is True


def test_version_from_the_npm_package_or_the_native_installers_folder(tmp_path: Path) -> None:
    pkg = tmp_path / "node_modules" / "@anthropic-ai" / "claude-code"
    (pkg / "bin").mkdir(parents=True)
    (pkg / "bin" / "claude.exe").write_text("")
    (pkg / "package.json").write_text(json.dumps({"name": "@anthropic-ai/claude-code", "version": "2.1.332"}))
    assert versions.version_of(str(pkg / "bin" / "claude.exe"), "@anthropic-ai/claude-code") == "2.1.332"
    # Another package's package.json says nothing about this CLI.
    assert versions.version_of(str(pkg / "bin" / "claude.exe"), "@openai/codex") is None
    native = tmp_path / "share" / "claude" / "versions" / "2.1.340"
    assert versions.version_of(str(native), "@anthropic-ai/claude-code") == "2.1.340"
    assert versions.version_of(str(tmp_path / "bin" / "claude"), "@anthropic-ai/claude-code") is None


def test_in_range() -> None:
    low, high = versions.TESTED["claude"].lowest, versions.TESTED["claude"].highest
    assert versions.in_range("claude", low) and versions.in_range("claude", high)
    assert versions.in_range("claude", "0.0.1") is False and versions.in_range("claude", "99.0.0") is False
    assert versions.in_range("claude", "2.1") is None and versions.in_range("aider", "1.0.0") is None


def test_a_package_json_that_is_no_regular_file_is_no_version_and_never_blocks(tmp_path: Path) -> None:
    # A tick reads the version after the agent ran: a FIFO named package.json beside a `claude`
    # found on the runner's PATH would block a plain open() for good (no writer ever comes).
    pkg = tmp_path / "pkg"
    (pkg / "bin").mkdir(parents=True)
    (pkg / "bin" / "claude").write_text("")
    os.mkfifo(pkg / "package.json")
    probe = ("import sys; from automaton.harnesses import versions;"
             " print(versions.version_of(sys.argv[1], '@anthropic-ai/claude-code'))")
    done = subprocess.run([sys.executable, "-c", probe, str(pkg / "bin" / "claude")], capture_output=True,
                          text=True, timeout=20, check=False)  # the old open() never returned: TimeoutExpired
    assert done.returncode == 0 and done.stdout.strip() == "None", done.stderr


def test_every_tested_cli_is_a_registered_harness_and_found_by_its_executable(tmp_path: Path) -> None:
    assert set(versions.TESTED) <= set(REGISTRY)
    pkg = tmp_path / "node_modules" / "@openai" / "codex"
    (pkg / "bin").mkdir(parents=True)
    exe = pkg / "bin" / "codex.js"
    exe.write_text("")
    exe.chmod(0o755)
    (pkg / "package.json").write_text(json.dumps({"name": "@openai/codex", "version": "0.171.0"}))
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "codex").symlink_to(exe)
    assert versions.installed("codex", str(tmp_path / "bin")) == "0.171.0"
    assert versions.installed("aider", str(tmp_path / "bin")) is None
