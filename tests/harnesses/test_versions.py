"""`harnesses.versions`: the installed CLI's version, read from its npm package, and the range
automaton's end-to-end suite tested (kept in step with tests/e2e/clis.lock.json)."""

from __future__ import annotations

import json
from pathlib import Path

from automaton.harnesses import versions
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
