"""Shared plumbing of the process-backed adapters: environment, streaming run, output reading."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from automaton.core import jsontext
from automaton.harnesses import HarnessRequest, HarnessResult, Invocation, _env
from automaton.harnesses._unavailable import Refusal, detect, silent_failure
from automaton.proc import run_streaming

# Parse (stdout text, stderr text, exit code) into a result; timing fields are added after.
Parser = Callable[[str, str, int], HarnessResult]
TAIL_CHARS = 2000


def environment(req: HarnessRequest, inv: Invocation) -> dict[str, str]:
    """The child's environment: this process's without the parent sessions' markers
    (`_env.STRIPPED`), then the request's variables, the invocation's, AUTOMATON_ROLE, and
    PWD = `req.cwd` (absolute), as a shell sets it on `cd`: opencode 1.18.33 takes its project
    folder from $PWD, not from its working directory, so an inherited PWD sent its edits to
    wherever the runner was started (recorded in tests/e2e)."""
    return _env.environment(None, req.env, inv.env, {"AUTOMATON_ROLE": req.role,
                                                     "PWD": os.path.abspath(req.cwd)})


def read_text(path: os.PathLike[str] | str) -> str:
    """A transcript as text (undecodable bytes replaced); empty when missing."""
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def tail(text: str, limit: int = TAIL_CHARS) -> str:
    """The last `limit` characters of `text`, stripped."""
    return text[-limit:].strip()


def run_cli(req: HarnessRequest, inv: Invocation, parse: Parser, refusals: tuple[Refusal, ...] = (), *,
            silent: bool = False, sealed: bool = True) -> HarnessResult:
    """Run `inv` in `req.cwd`, confined to `req.sandbox` when set, with stdout streamed to
    `req.transcript` (stderr beside it as `<role>.stderr.log`), then `parse` what it wrote.

    A timeout is reported, not raised. `unavailable` is set when the agent could not start
    here: not found (127), not executable or not confinable (126), or one of the adapter's
    `refusals` (its own "not logged in"-style answers; see `_unavailable`) or, with `silent`
    (an agent CLI whose every run prints its own events or result on stdout), a non-zero exit
    with nothing on stdout (`_unavailable.silent_failure`). `usage_limit` is
    what `parse` found (see `_limits`) and `cost_usd` what it read, both kept only for a run
    that ended by itself (`ended_by_itself`: `cost_usd` is otherwise None, so the tick counts
    `max_tick_usd`, and no limit is read). With `sealed` (every agent CLI) its stdout and
    stderr are sealed (`proc.run_streaming(sealed=True)`): no process of the agent can reopen
    them to add a result of its own. Each output file keeps its last `req.max_output_bytes` bytes."""
    req.run_dir.mkdir(parents=True, exist_ok=True)
    err_path = req.run_dir / f"{req.role}.stderr.log"
    done = run_streaming(inv.argv, out_path=req.transcript, err_path=err_path, cwd=req.cwd,
                         stdin=inv.stdin, env=environment(req, inv), timeout_s=req.timeout_s,
                         sandbox=req.sandbox, max_bytes=req.max_output_bytes, sealed=sealed)
    out, err = read_text(req.transcript), read_text(err_path)
    parsed = parse(out, err, done.code)
    error, unavailable, limit = parsed.error, None, None
    # A run stopped by a signal (the timeout's, or one from the agent's own processes) did not
    # end by itself: what it printed is at most a part of its spend. Its cost is unknown and a
    # limit it "reported" is not read.
    ended = ended_by_itself(done.code, done.timed_out)
    if done.timed_out:
        error = f"timed out after {req.timeout_s:g} s; process group stopped"
    elif parsed.usage_limit is not None and ended:
        limit = parsed.usage_limit  # the agent started and was refused by its provider: not "cannot run here"
    else:
        if done.code in (126, 127) and error is None:
            error = tail(err, 300) or f"{inv.argv[0]}: cannot run (exit {done.code})"
        unavailable = detect(inv.argv[0], done.code, error, tail(err, TAIL_CHARS), refusals)
        if unavailable is None and silent:
            unavailable = silent_failure(inv.argv[0], done.code, out, tail(err, TAIL_CHARS))
    return HarnessResult(
        exit_status=done.code, final_text=parsed.final_text, cost_usd=parsed.cost_usd if ended else None,
        tokens=parsed.tokens, error=error, timed_out=done.timed_out, duration_s=done.duration_s,
        unavailable=unavailable, usage_limit=limit,
    )


# Exit statuses 128 + N (N = 1..31) are how a CLI that caught signal N, or a shell or launcher
# whose child died of it, reports that death (bash(1), "EXIT STATUS"); no agent CLI automaton
# runs uses them for an outcome of its own (gemini's own codes are 41..55).
SIGNAL_STATUSES = range(129, 160)


def ended_by_itself(code: int, timed_out: bool) -> bool:
    """Whether a CLI's run ended on its own: not stopped at its timeout, not killed by a signal
    (Popen's -N), and not exiting 128 + N after catching one (`SIGNAL_STATUSES`). Only such a
    run's cost and usage limit are read."""
    return not timed_out and code >= 0 and code not in SIGNAL_STATUSES


def number(value: object) -> float | None:
    """`value` as a float when it is a real, non-negative JSON number (never a bool), else None.
    No CLI reports a negative cost or time: one is another process's line, written to lower a
    sum of costs."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        return None
    return float(value)


def count(value: object) -> int:
    """A token count: a non-negative int (not bool), else 0 (a negative count would lower a sum
    of tokens, and so a price)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def has_flag(args: tuple[str, ...], *flags: str) -> bool:
    """Whether the user's `args` already pass one of `flags` (bare or `--flag=value`)."""
    return any(a == f or a.startswith(f + "=") for a in args for f in flags)


def json_lines(stdout: str) -> list[dict[str, Any]]:
    """The JSON objects of `stdout`, one per line; banners and other lines are skipped."""
    found = []
    for line in stdout.splitlines():
        try:
            obj = jsontext.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            found.append(obj)
    return found


def sub(obj: dict[str, Any], key: str) -> dict[str, Any]:
    """`obj[key]` when it is a JSON object, else an empty dict (tolerate missing/odd fields)."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def text_of(obj: dict[str, Any], key: str) -> str:
    """`obj[key]` when it is a string, else ""."""
    value = obj.get(key)
    return value if isinstance(value, str) else ""
