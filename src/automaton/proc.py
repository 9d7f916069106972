"""The one place that starts processes (DESIGN §10): short captured calls, and harness runs."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Captured:
    """A finished short command: exit `code`, `out` and `err` text. code 127: not found."""

    code: int
    out: str
    err: str


def run_capture(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 60.0,
) -> Captured:
    """Run a short command (git, crontab, launchctl …) and capture its output.

    Never raises for the command's own failure: a missing executable gives code 127, a
    timeout code 124 (the conventions of shells and `timeout(1)`).
    """
    try:
        done = subprocess.run(
            list(argv), cwd=cwd, input=stdin, env=dict(env) if env is not None else None,
            capture_output=True, text=True, timeout=timeout_s, check=False,
        )
    except FileNotFoundError as exc:
        return Captured(127, "", f"{argv[0]}: not found ({exc.strerror})")
    except subprocess.TimeoutExpired:
        return Captured(124, "", f"{argv[0]}: timed out after {timeout_s:g} s")
    except OSError as exc:
        return Captured(126, "", f"{argv[0]}: cannot run ({exc.strerror})")
    return Captured(done.returncode, done.stdout, done.stderr)
