"""Gemini CLI headless: `gemini -p PROMPT -o json`.

Sources: github.com/google-gemini/gemini-cli `docs/cli/headless.md`,
`docs/cli/cli-reference.md`, `packages/core/src/output/types.ts`: the JSON
output is one object `{session_id?, response, stats, error?}`; `stats.models[<model>].tokens`
has `input`, `prompt`, `candidates`, `total`, `cached`, `thoughts`, `tool`. No cost field, so
cost is None (the tick counts max_tick_usd). Exit codes (`packages/core/src/utils/errors.ts`):
0 ok, 1 general/API error, 41 authentication error, 42 input error, 53 turn limit exceeded.

Usage limits (`usage_limit`, reset times read by `_limits`): a failed run whose JSON `error`
(code 429, or its message) or stderr says RESOURCE_EXHAUSTED / "Quota exceeded for quota metric
…" (google-gemini/gemini-cli issues #10925, #1848), "You have exhausted your capacity on this
model. Your quota will reset after 2h52m39s." or "Please retry in 38.5s" (TerminalQuotaError /
RetryableQuotaError, `packages/core/src/utils/googleQuotaErrors.ts`).
"""

from __future__ import annotations

from typing import Any

from automaton.core import jsontext
from automaton.harnesses import HarnessRequest, HarnessResult, Invocation
from automaton.harnesses._cli import count, has_flag, run_cli, sub, tail, text_of
from automaton.harnesses._limits import detect
from automaton.harnesses._unavailable import Refusal

EXECUTABLE = "gemini"
EXIT_MEANING = {1: "general or API error", 41: "authentication error", 42: "input error",
                53: "turn limit exceeded", 55: "folder not trusted"}

# Gemini's "no auth": `packages/cli/src/validateNonInterActiveAuth.ts` exits 41
# (FatalAuthenticationError) with "Please set an Auth method in your … settings.json or
# specify one of the following environment variables before running: GEMINI_API_KEY, …".
REFUSALS = (
    Refusal("gemini has no usable authentication for this run",
            "give the tick's environment GEMINI_API_KEY (or GOOGLE_GENAI_USE_VERTEXAI / GOOGLE_GENAI_USE_GCA"
            " with their credentials), or choose an auth method in ~/.gemini/settings.json as that user",
            needles=("Please set an Auth method",), codes=(41,)),
    # gemini-cli 0.61.0 run headless in a folder it does not trust (a loop worktree always is
    # new): exit 55, "Gemini CLI is not running in a trusted directory. To proceed, either use
    # `--skip-trust`, set the `GEMINI_CLI_TRUST_WORKSPACE=true` environment variable, …".
    # gemini-cli 0.61.0 that cannot write its home folder (a sandbox granting only ~/.gemini/tmp)
    # dies at start: "An unexpected critical error occurred:Error: EROFS: read-only file system,
    # open '…/.gemini/projects.json.<uuid>.tmp'" (recorded in tests/e2e).
    Refusal("gemini crashed before it could run the task",
            "run gemini by hand the same way to see why; it must create files in its home folder"
            " (~/.gemini, or $GEMINI_CLI_HOME/.gemini), which automaton --sandbox gives it as a private copy",
            needles=("An unexpected critical error occurred",)),
    Refusal("gemini refused to run in a folder it does not trust",
            "automaton passes --skip-trust: check that loop.json harness.command/args run a gemini that takes it"
            " (0.61.0 or later), or set GEMINI_CLI_TRUST_WORKSPACE=true for the ticks",
            needles=("not running in a trusted directory",), codes=(55,)),
)


# Lines of a failed run's error or stderr that mean a usage or rate limit (case-insensitive).
LIMIT_NEEDLES = ("RESOURCE_EXHAUSTED", "Quota exceeded", "exceeded your current quota", "exhausted your capacity",
                 "exhausted your daily quota", "Resource has been exhausted", "Resource exhausted",
                 "rateLimitExceeded", "TerminalQuotaError", "RetryableQuotaError", "429 Too Many Requests",
                 "status 429", '"code": 429', '"code":429')


def invocation(req: HarnessRequest) -> Invocation:
    """argv: `gemini -o json --skip-trust [--approval-mode auto_edit] [-m M] ARGS… -p PROMPT`.

    Headless edits need an approval mode; `auto_edit` is the default unless the user's args
    choose one. `--skip-trust`: gemini-cli 0.61.0 refuses to run headless in a folder it does
    not trust (exit 55), and a loop worktree is always a new folder (recorded in tests/e2e).
    With 0.61.0 it trusts the folder only after the settings are read, so the worktree's
    `.gemini/settings.json` hooks stay unloaded in a tick (`harnesses.HOOKLESS`).
    """
    argv = [EXECUTABLE, "-o", "json", "--skip-trust"]
    if not has_flag(req.args, "--approval-mode", "-y", "--yolo"):
        argv += ["--approval-mode", "auto_edit"]
    if req.model:
        argv += ["-m", req.model]
    argv += [*req.args, "-p", req.prompt]
    return Invocation(argv=argv)


def stderr_error(stderr: str) -> str | None:
    """`error.message` of the JSON object gemini-cli 0.61.0 prints last on stderr when a run
    fails (stdout empty; recorded in tests/e2e), or None. It names the quota that ran out, where
    the error dump before it (longer than the stderr tail read for a limit) quotes the API's
    generic message."""
    start = stderr.rstrip().rfind("\n{")
    try:
        doc = jsontext.loads(stderr[start + 1:] if start >= 0 else stderr)
    except ValueError:
        return None
    err = doc.get("error") if isinstance(doc, dict) else None
    msg = err.get("message") if isinstance(err, dict) else None
    return msg if isinstance(msg, str) and msg else None


def parse(stdout: str, stderr: str, code: int) -> HarnessResult:
    """Read `response`, sum `stats.models[*].tokens`, and report `error` or a known exit code."""
    try:
        obj = jsontext.loads(stdout.strip() or "null")
    except ValueError:
        obj = None
    error = None
    if code in EXIT_MEANING:
        error = f"gemini exited {code} ({EXIT_MEANING[code]})"
    elif code != 0:
        error = f"gemini exited {code}"
    if not isinstance(obj, dict):
        said = [m for m in (stderr_error(stderr),) if m]
        limit = detect([*said, tail(stderr)], LIMIT_NEEDLES) if code != 0 else None
        return HarnessResult(code, "", None, {}, error or f"gemini printed no JSON: {tail(stderr, 200)}",
                             usage_limit=limit)
    tokens = _tokens(obj)
    said, forced = [tail(stderr)], None
    if isinstance(obj.get("error"), dict | str) and obj.get("error"):
        err = obj["error"]
        msg = err.get("message", err) if isinstance(err, dict) else err
        error = f"gemini error: {msg}" + (f" ({error})" if error else "")
        said.insert(0, str(msg))
        if isinstance(err, dict) and str(err.get("code")) == "429":
            forced = f"gemini error 429: {msg}"
    text = text_of(obj, "response")
    limit = detect(said, LIMIT_NEEDLES, forced=forced) if error is not None else None
    return HarnessResult(code, str(text), None, tokens, error, usage_limit=limit)


def _tokens(obj: dict[str, Any]) -> dict[str, int]:
    """Token counts summed over `stats.models[*].tokens` (name -> count)."""
    tokens: dict[str, int] = {}
    for entry in sub(sub(obj, "stats"), "models").values():
        if isinstance(entry, dict) and isinstance(entry.get("tokens"), dict):
            for key, value in entry["tokens"].items():
                tokens[key] = tokens.get(key, 0) + count(value)
    return tokens


def run(req: HarnessRequest) -> HarnessResult:
    """Run Gemini in `req.cwd`; transcript is the JSON object."""
    # Not `silent`: gemini 0.61.0 writes its JSON error object to stderr, stdout empty, also
    # after it ran (a quota or API error mid-run): an empty stdout is no sign it never started.
    return run_cli(req, invocation(req), parse, REFUSALS)
