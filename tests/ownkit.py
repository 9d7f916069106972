"""A project whose own `.venv` runs automaton: the common set-up the sandbox and the hooks must
never let an agent rewrite. `project_venv` makes a real virtual environment (PEP 405, no pip)
inside the project whose interpreter imports this checkout's automaton and its dependencies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def project_venv(project: Path) -> Path:
    """`<project>/.venv` with `bin/automaton` (a stub file) and a `.pth` naming this test run's
    import path; returns its interpreter. Skips on Windows (the layout differs)."""
    if os.name == "nt":
        pytest.skip("a POSIX virtual environment layout")
    venv = project / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = venv / "lib" / version / "site-packages"
    site.mkdir(parents=True, exist_ok=True)
    (site / "automaton_under_test.pth").write_text("".join(f"{p}\n" for p in sys.path if p and os.path.isdir(p)))
    (venv / "bin" / "automaton").write_text("#!/bin/sh\nexec \"$(dirname \"$0\")/python\" -m automaton \"$@\"\n")
    (venv / "bin" / "automaton").chmod(0o755)
    return venv / "bin" / "python"


def run_in(python: Path, *args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`python -m automaton ARGS` with the project's own interpreter."""
    return subprocess.run([str(python), "-m", "automaton", *args], cwd=cwd, input=stdin, capture_output=True,
                          text=True, timeout=120, check=False)


def write_payload(project: Path, path: Path) -> str:
    """A Claude Code PreToolUse payload writing `path`."""
    return json.dumps({"cwd": str(project), "hook_event_name": "PreToolUse", "tool_name": "Write",
                       "tool_input": {"file_path": str(path), "content": "import os\n"}})
