"""Claude Code headless: `claude -p --output-format json`.

Sources: Claude Code docs `headless.md` and `cli-reference.md` (code.claude.com/docs/en/…;
mirror github.com/ericbuess/claude-code-docs): the prompt is read from piped stdin;
`--max-budget-usd` stops the run at a client-side cost estimate; `--settings <file>` adds hooks
(project settings do not follow a worktree); the result object has `type:"result"`, `subtype`,
`is_error`, `result`, `total_cost_usd`, `usage` {input_tokens, output_tokens,
cache_creation_input_tokens, cache_read_input_tokens}. With verbose on, `--output-format json`
prints an ARRAY of all messages whose last `type=="result"` element is the result
(anthropics/claude-code #84784); stream-json prints one object per line, the result last. Both
are accepted here. Every run prints one result message: output with two holds one that another
process wrote on Claude's stdout, and its cost is unknown (`parse`).

Usage limits (`usage_limit`, see `_limits` for the reset times read): a failed result whose
text, `errors` or stderr says "Claude AI usage limit reached|<epoch>" (anthropics/claude-code
#6119), "5-hour limit reached ∙ resets 3pm" (#6392), "You've hit your limit · resets 4pm
(Area/City)" (#19673), "API Error: 429 {…"rate_limit_error"…}" (#9046), "API Error: Request
rejected (429) · <the API's message>" (Claude Code 2.1.332, recorded end to end) or "You have
reached your specified API usage limits. You will regain access on … UTC" (#38035); or
`api_error_status` 429 or `api_error_type` "rate_limit_error" (2.1.332: a failed result carries
the API's error type, and a 429 is `is_error` true with subtype "success"); or a
`rate_limit_event` whose `rate_limit_info.status` is "rejected" (its `resetsAt`,
#38673), printed with verbose or stream-json output.
"""

from __future__ import annotations

from typing import Any

from automaton.core import jsontext
from automaton.harnesses import HarnessRequest, HarnessResult, Invocation, UsageLimit
from automaton.harnesses._cli import count, has_flag, number, run_cli, sub, tail, text_of
from automaton.harnesses._limits import detect
from automaton.harnesses._unavailable import Refusal

EXECUTABLE = "claude"
TOKEN_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")

# Claude's own "cannot run here" answers. Strings per code.claude.com/docs/en/errors
# ("Authentication errors", snapshot 2026-08) and, for the nested-session guard added in
# v2.1.39, the message quoted in anthropics/claude-code issue #29543: "Error: Claude Code
# cannot be launched inside another Claude Code session. … To bypass this check, unset the
# CLAUDECODE environment variable."
REFUSALS = (
    Refusal("claude refused to start inside another Claude Code session",
            "automaton removes CLAUDECODE from the agent's environment, so something sets it again:"
            " a wrapper named claude earlier on PATH, or an env block in a Claude settings file",
            needles=("cannot be launched inside another Claude Code session",
                     "unset the CLAUDECODE environment variable")),
    Refusal("claude is not logged in for this run",
            "log in as the user the ticks run as (run claude, then /login), or give the tick's"
            " environment ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN (claude setup-token)",
            needles=("Not logged in", "Invalid API key", "Login expired", "OAuth token revoked",
                     "OAuth token has expired", "Could not resolve authentication method",
                     "apiKeyHelper script is failing", "Invalid auth token",
                     "API Error: 401", "Failed to authenticate")),
)


def invocation(req: HarnessRequest) -> Invocation:
    """argv: `claude -p --output-format json [--model M] [--max-budget-usd X] [--settings F]
    [--permission-mode acceptEdits] ARGS…`; the prompt goes on stdin.

    An unattended tick must be able to edit files: `acceptEdits` is the default unless the
    user's args choose a permission mode themselves (the hooks still deny out-of-scope edits).
    """
    argv = [EXECUTABLE, "-p", "--output-format", "json"]
    if req.model:
        argv += ["--model", req.model]
    if req.max_usd is not None:
        argv += ["--max-budget-usd", f"{max(req.max_usd, 0.0):.4f}"]
    if req.settings_path is not None:
        argv += ["--settings", str(req.settings_path)]
    if not has_flag(req.args, "--permission-mode", "--dangerously-skip-permissions"):
        argv += ["--permission-mode", "acceptEdits"]
    argv += list(req.args)
    return Invocation(argv=argv, stdin=req.prompt)


# Lines of a failed run that mean the account's usage or rate limit stopped it (case-insensitive).
LIMIT_NEEDLES = ("usage limit", "5-hour limit", "session limit", "weekly limit", "hit your limit",
                 "rate_limit_error", "rate limit", "Error: 429", "API usage limits")


def _messages(stdout: str) -> list[Any]:
    """The JSON values of `stdout`: one object, the elements of an array, or one per line."""
    text = stdout.strip()
    try:
        doc = jsontext.loads(text)
        return doc if isinstance(doc, list) else [doc]
    except ValueError:
        pass
    candidates: list[Any] = []
    for line in text.splitlines():
        try:
            candidates.append(jsontext.loads(line))
        except ValueError:
            continue
    return candidates


def _one_document(stdout: str) -> bool:
    """Whether `stdout` is one JSON document (`--output-format json`: an object, or with verbose
    on the array of messages), which nothing appended to it leaves one."""
    try:
        jsontext.loads(stdout.strip())
    except ValueError:
        return False
    return True


def _result_in(candidates: list[Any]) -> dict[str, Any] | None:
    """The result message among `stdout`'s messages (`_messages`): the last `type=="result"`
    one (`parse` refuses output with more than one), of one object, an array or JSON lines.
    None when there is none."""
    results = [c for c in candidates if isinstance(c, dict) and c.get("type") == "result"]
    if results:
        return results[-1]
    # An old or trimmed single object without `type` still carries `result`.
    singles = [c for c in candidates if isinstance(c, dict) and "result" in c]
    return singles[-1] if singles else None


def _not_its_own(messages: list[Any], obj: dict[str, Any], stdout: str) -> str | None:
    """Why `stdout` may hold another process's result rather than Claude's (one line), or None.
    A real run prints one result message, last (`--output-format json`: the object, or the
    array's last element; stream-json: the last line); a second one, or lines after it, were
    written by another process that got hold of Claude's stdout."""
    results = sum(1 for m in messages if isinstance(m, dict) and m.get("type") == "result")
    if results > 1:
        return f"claude's output holds {results} result messages, a real run prints one: its cost is unknown"
    if not _one_document(stdout) and messages[-1] is not obj:
        return "claude's output does not end with its result message"
    return None


def worked(messages: list[Any], obj: dict[str, Any] | None) -> bool:
    """Whether Claude's own output shows model work: an `assistant` message (verbose and
    stream-json output), output tokens in the result's `usage`, or more than one turn. A run
    refused before any of it (a 429 or usage limit on its first request) shows none."""
    if any(isinstance(m, dict) and m.get("type") == "assistant" for m in messages):
        return True
    if obj is None:
        return False
    turns = obj.get("num_turns")
    return count(sub(obj, "usage").get("output_tokens")) > 0 or (isinstance(turns, int) and turns > 1)


def parse(stdout: str, stderr: str, code: int) -> HarnessResult:
    """Read the result message: final text, cost (None when `total_cost_usd` is missing),
    tokens from `usage`, and an error when `is_error` is true, the subtype is an error, or
    no result was printed. Output in JSON lines (stream-json) must END with the result: lines
    after it are not Claude's, and neither is a second result message (`_not_its_own`: cost
    None, counted at max_tick_usd, no limit read). A usage limit whose output shows no model work
    (`worked`) costs what Claude reported, $0 when it reported nothing: the provider refused."""
    messages = _messages(stdout)
    obj = _result_in(messages)
    if obj is None:
        return _no_result(messages, stdout, stderr, code)
    forged = _not_its_own(messages, obj, stdout)
    if forged is not None:
        return HarnessResult(code, "", None, {}, forged)
    text = text_of(obj, "result")
    usage = sub(obj, "usage")
    tokens = {k: count(usage.get(k)) for k in TOKEN_KEYS if k in usage}
    subtype = text_of(obj, "subtype")
    error: str | None = None
    if obj.get("is_error") is True or subtype.startswith("error"):
        detail = obj.get("errors") or text or obj.get("api_error_status") or ""
        error = f"claude reported an error ({subtype or 'is_error'}): {detail}".strip().rstrip(":")
    elif code != 0:
        error = f"claude exited {code}"
    limit = usage_limit(obj, stdout, stderr) if error is not None else None
    cost = number(obj.get("total_cost_usd"))
    if cost is None and limit is not None and not worked(messages, obj):
        cost = 0.0
    return HarnessResult(code, str(text), cost, tokens, error, usage_limit=limit)


def _no_result(messages: list[Any], stdout: str, stderr: str, code: int) -> HarnessResult:
    """`parse` of output without a result message: the error is the last line Claude printed."""
    why = tail(stderr, 300) or tail(stdout, 300) or f"claude printed no result (exit {code})"
    # No result object: plain text on stdout is the CLI's own message; JSON messages (verbose,
    # stream-json) are the agent's work and never read for a limit.
    limit = detect([tail(stderr), "" if messages else tail(stdout)], LIMIT_NEEDLES)
    refused = limit is not None and not worked(messages, None)
    return HarnessResult(code, "", 0.0 if refused else None, {}, why.splitlines()[-1], usage_limit=limit)


def usage_limit(obj: dict[str, Any], stdout: str, stderr: str) -> UsageLimit | None:
    """The usage limit a FAILED result reports (see the module docstring), or None. Read from
    the result's own text and `errors`, stderr, `api_error_status` and rejected
    `rate_limit_event` messages: never from the assistant's or the tools' messages."""
    errors = obj.get("errors")
    texts = [text_of(obj, "result"), *(str(e) for e in errors if isinstance(e, str | dict))] \
        if isinstance(errors, list) else [text_of(obj, "result")]
    texts.append(tail(stderr))
    for msg in _messages(stdout):
        info = msg.get("rate_limit_info") if isinstance(msg, dict) and msg.get("type") == "rate_limit_event" else None
        reset = number(info.get("resetsAt")) if isinstance(info, dict) and info.get("status") == "rejected" else None
        if reset is not None:
            texts.append(f"rate limit rejected ({info.get('rateLimitType')}), resetsAt: {int(reset)}")  # type: ignore[union-attr]
    forced = ("API Error: 429 (api_error_status)" if obj.get("api_error_status") == 429 else
              "API Error: rate_limit_error (api_error_type)" if obj.get("api_error_type") == "rate_limit_error"
              else None)
    return detect(texts, LIMIT_NEEDLES, forced=forced)


def run(req: HarnessRequest) -> HarnessResult:
    """Run Claude in `req.cwd`; transcript `runs/<n>/<role>.log` is the raw JSON."""
    return run_cli(req, invocation(req), parse, REFUSALS, silent=True)
