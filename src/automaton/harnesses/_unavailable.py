"""Failures after which an agent did no work at all: it could not start here.

A tick whose agent could not start is not a tick: nothing was changed and (bar a refused
request) nothing was spent, and running the next one changes nothing until a human fixes the
machine. `HarnessResult.unavailable` carries one line, why and the fix; the runner decides
what to do with it. Generic cases (any harness), decided by `run_cli` from the exit code and
stderr the process layer wrote:

- exit 127: the executable was not found (the shells' and `automaton.proc`'s convention);
- exit 126 with a `sandbox unavailable: …` or `sandbox failed: …` line on stderr: the kernel
  sandbox could not confine the agent, so `automaton.proc` never started it;
- exit 126 otherwise: found but not executable.

- an agent CLI whose every run prints its own events or result on stdout (claude, codex,
  opencode: the adapters pass `silent=True`; not gemini, which prints its error object on
  stderr) that exits non-zero having printed nothing at all on stdout:
  it never got as far as its own first event or result, so it did not run the task. Codex
  0.171.0 inside a sandbox whose home folder it cannot write ends this way ("Error: failed to
  initialize in-process app-server client: Permission denied (os error 13)" on stderr,
  exit 1, stdout empty). A run killed by a signal (negative code) or one that timed out is
  not counted here.

Agent-specific answers are `Refusal`s the adapter passes to `run_cli`, matched only when the
run failed (non-zero exit or a reported error), and only against the adapter's one-line error
and the process's stderr, never the transcript, where the agent's own tool output could
mention anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from automaton.core.errors import one_line

SANDBOX_PREFIXES = ("sandbox unavailable:", "sandbox failed:")


@dataclass(frozen=True)
class Refusal:
    """One way an agent CLI says it cannot run here: any of `needles` (case-sensitive
    substrings of the failed run's error line or stderr; the line holding the first needle
    found is quoted) or an exit code in `codes`. `what` names the problem, `fix` says what a
    human does about it."""

    what: str
    fix: str
    needles: tuple[str, ...] = ()
    codes: tuple[int, ...] = ()


def _sandbox_line(stderr: str) -> str | None:
    lines = [line.strip() for line in stderr.splitlines()]
    found = [line for line in lines if line.startswith(SANDBOX_PREFIXES)]
    return found[-1] if found else None


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def detect(argv0: str, code: int, error: str | None, stderr: str, refusals: tuple[Refusal, ...] = ()) -> str | None:
    """The one-line `unavailable` reason of a finished (not timed-out) run, or None.

    argv0: the program started; code: its exit code; error: the adapter's one-line error (None
    when it reported none); stderr: what the process (and `automaton.proc`) wrote there."""
    if code == 127:
        why = _last_line(stderr)[:300] or f"{argv0}: not found"
        return one_line(f"{why}: install it, or fix the PATH the tick runs with (--install-schedule"
                        " saves the PATH it sees) or loop.json harness.command")
    if code == 126:
        sandboxed = _sandbox_line(stderr)
        if sandboxed is not None:
            return one_line(sandboxed)
        why = _last_line(stderr)[:300] or f"{argv0}: cannot run"
        return one_line(f"{why} (exit 126): make it executable (chmod +x) or fix loop.json harness.command")
    if code == 0 and error is None:
        return None
    lines = [line.strip() for line in f"{error or ''}\n{stderr}".splitlines() if line.strip()]
    for refusal in refusals:
        said = next((line for n in refusal.needles for line in lines if n in line), None)
        if said is None and code not in refusal.codes:
            continue
        detail = said or error or _last_line(stderr) or f"exit {code}"
        return one_line(f"{refusal.what} ({detail[:300]}): {refusal.fix}")
    return None


def silent_failure(argv0: str, code: int, stdout: str, stderr: str) -> str | None:
    """The one-line `unavailable` reason of an agent CLI that exited `code` > 0 with nothing
    on `stdout` (whitespace aside), quoting the last line of `stderr` that says "error" (any
    case; a Rust backtrace follows Codex's), else its last line; None otherwise."""
    if code <= 0 or stdout.strip():
        return None
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    said = [line for line in lines if "error" in line.lower()]
    why = (said[-1] if said else _last_line(stderr))[:300] or "no message"
    return one_line(f"{argv0} exited {code} before printing any output of its own ({why}): it could not start"
                    f" here; run it by hand the same way (automaton --sandbox -- {argv0} …) to see why")
