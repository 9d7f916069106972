"""Shared fixtures: a HOME that fails loudly, pinned git identity, projects and fake executables."""

from __future__ import annotations

import builtins
import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import GIT_ENV, fake_exe, init_repo

REAL_HOME = Path(os.path.expanduser("~")).resolve()
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _under_real_home(path: Any) -> bool:
    try:
        resolved = Path(os.fspath(path)).resolve()
    except (TypeError, ValueError, OSError):
        return False
    return resolved == REAL_HOME or REAL_HOME in resolved.parents


@pytest.fixture(autouse=True)
def forbid_real_home(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Any in-process write under the real HOME raises; subprocesses get a temporary HOME."""
    fake_home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(fake_home))
    monkeypatch.setenv("USERPROFILE", str(fake_home))
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AUTOMATON_APPROVER", raising=False)
    monkeypatch.delenv("AUTOMATON_TASK", raising=False)
    monkeypatch.delenv("AUTOMATON_HOME", raising=False)
    for secret in ("AUTOMATON_RECORD_KEY", "AUTOMATON_RECORD_KEY_FILE", "AUTOMATON_RECORD_KEY_WITHHELD"):
        monkeypatch.delenv(secret, raising=False)
    # Tests may run inside an agent's shell (Claude Code, Gemini CLI, Codex): its marker
    # variables would make every human sign-off in the suite refuse.
    for marker in ("CLAUDECODE", "GEMINI_CLI", "CODEX_SANDBOX", "AUTOMATON_LOOP", "AUTOMATON_LOOP_DIR"):
        monkeypatch.delenv(marker, raising=False)
    real_os_open, real_open = os.open, builtins.open

    def guarded_os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & _WRITE_FLAGS and _under_real_home(path):
            raise PermissionError(f"test tried to write the real HOME: {path}")
        return real_os_open(path, flags, *args, **kwargs)

    def guarded_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, str | bytes | os.PathLike) and set(mode) & set("wax+") and _under_real_home(file):
            raise PermissionError(f"test tried to write the real HOME: {file}")
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded_os_open)
    monkeypatch.setattr(builtins, "open", guarded_open)
    monkeypatch.setattr(io, "open", guarded_open)
    yield fake_home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty git project (branch main) to run automaton in."""
    return init_repo(tmp_path / "proj")


@pytest.fixture
def approver(monkeypatch: pytest.MonkeyPatch) -> str:
    """Act as a human approver (AUTOMATON_APPROVER) for the test."""
    monkeypatch.setenv("AUTOMATON_APPROVER", "tester")
    return "tester"


@pytest.fixture
def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], Path]:
    """Factory: fake_bin(name, python_body) puts an executable first on PATH."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")

    def make(name: str, body: str) -> Path:
        return fake_exe(bin_dir, name, body)

    make.dir = bin_dir  # type: ignore[attr-defined]
    return make
