"""Usage and rate limits as the agent CLIs report them, and when they say the limit resets.

An adapter looks for its CLI's limit lines only where the CLI itself reports a failure (its
error result or event, and stderr), never in the transcript of the agent's work, where a tool
output or the agent's own text could say anything. `detect` returns a `UsageLimit`; its
`reset_epoch` is read from the first of these that the text carries (UTC epoch seconds):

- an epoch after a `|` or in a `resets_at` / `resetsAt` field: Claude Code's
  "Claude AI usage limit reached|1755615600" (anthropics/claude-code issues #6119, #9046),
  its stream-json `rate_limit_event` {rate_limit_info: {resetsAt}} (#38673), and Codex's
  upstream `{"type": "usage_limit_reached", "resets_at": 1777936568, "resets_in_seconds":
  13872}` (quoted in earendil-works/pi issue #4172);
- a date and time in UTC: the Anthropic API's "You will regain access on 2026-04-01 at 00:00
  UTC" (anthropics/claude-code #38035);
- a duration: Codex's "try again in 5 days 22 hours 11 minutes" (openai/codex #3899, #3124),
  Gemini CLI's "Your quota will reset after 2h52m39s" and "Please retry in 38.5s" /
  "Suggested retry after 34s" (google-gemini/gemini-cli
  `packages/core/src/utils/googleQuotaErrors.ts`), OpenCode 1.18.33's "Go usage limit reached.
  It will reset in 2 hours 5 minutes." (its GoUsageLimitError text, read in the binary),
  `resets_in_seconds`;
- a wall-clock time, with an optional date and IANA zone (the machine's zone otherwise):
  Claude Code's "5-hour limit reached ∙ resets 3pm" (#6392), "You've hit your limit · resets
  4pm (Asia/Kuala_Lumpur)" (#19673), "resets Apr 23 at 4pm (America/Recife)" (#51981), "Your
  limit will reset at 5pm (Europe/Warsaw)" (#6119); Codex's "try again at 12:16 PM."
  (link-assistant/hive-mind #719) and "try again at Jul 5th, 2026 8:19 PM." (openai/codex
  #26668).

Anything else (a bare 429, "Quota exceeded", a zone this machine does not know) gives
`reset_epoch` None: the runner backs off instead (fail closed, never "no limit").
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from automaton.core.errors import one_line
from automaton.harnesses import UsageLimit

MAX_MESSAGE = 300  # characters of the agent's line kept in UsageLimit.message

_EPOCH = re.compile(r"(?:limit reached\||resets_?at\"?\s*[:=]\s*)(\d{9,11})\b", re.I)
_IN_SECONDS = re.compile(r"resets_in_seconds\"?\s*[:=]\s*(\d{1,9})\b", re.I)
_UTC = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:\s+at\s+|T|\s+)(\d{1,2}):(\d{2})(?::(\d{2}))?\s*(?:UTC|Z)\b")
_DURATION = re.compile(r"(?:try again in|reset after|resets? in|retry in|retry after)\s+"
                       r"([0-9][0-9a-z ,]*(?:\.[0-9][0-9a-z ,]*)?)", re.I)
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)(?![a-z])", re.I)
_UNIT_S = {"ms": 0.001, "s": 1.0, "sec": 1.0, "second": 1.0, "m": 60.0, "min": 60.0, "minute": 60.0,
           "h": 3600.0, "hr": 3600.0, "hour": 3600.0, "d": 86400.0, "day": 86400.0}
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_CLOCK = re.compile(
    r"(?:resets|reset at|try again at)\s+"
    r"(?:(?P<mon>[A-Za-z]{3})[a-z]*\.?\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?:(?P<year>\d{4}),?\s+)?(?:at\s+)?)?"
    r"(?P<hour>\d{1,2})(?::(?P<min>\d{2}))?\s*(?P<ampm>[ap]\.?m\.?)?"
    r"(?:\s*\((?P<zone>[A-Za-z][A-Za-z0-9_+\-/]*)\))?", re.I)


def detect(texts: Iterable[str], needles: tuple[str, ...], *, now: float | None = None,
           forced: str | None = None) -> UsageLimit | None:
    """A `UsageLimit` when a line of `texts` holds one of `needles` (case-insensitive), or when
    `forced` (a line the caller already knows is a limit, e.g. "API Error: 429") is given;
    None otherwise. The reset time is read from the matched line first, then from all of
    `texts`; `now`: the epoch relative times count from (default: the clock)."""
    texts = [t for t in texts if t]
    lowered = tuple(n.lower() for n in needles)
    line = next((ln.strip() for t in texts for ln in t.splitlines()
                 if any(n in ln.lower() for n in lowered)), None) or forced
    if line is None:
        return None
    at = time.time() if now is None else now
    reset = reset_epoch(line, at)
    if reset is None:
        reset = reset_epoch("\n".join(texts), at)
    return UsageLimit(one_line(line)[:MAX_MESSAGE], reset)


def reset_epoch(text: str, now: float) -> float | None:
    """When `text` says the limit resets (UTC epoch seconds), or None (see the module docstring
    for the forms read, in order of preference)."""
    found = _EPOCH.search(text)
    if found:
        return float(found.group(1))
    found = _UTC.search(text)
    if found:
        y, mo, d, h, mi = (int(found.group(i)) for i in range(1, 6))
        try:
            return datetime(y, mo, d, h, mi, int(found.group(6) or 0), tzinfo=UTC).timestamp()
        except ValueError:
            return None
    found = _IN_SECONDS.search(text)
    if found:
        return now + float(found.group(1))
    found = _DURATION.search(text)
    if found:
        seconds = duration_s(found.group(1))
        if seconds is not None:
            return now + seconds
    return _clock(text, now)


def duration_s(text: str) -> float | None:
    """Seconds in "5 days 22 hours 11 minutes", "2h52m39s", "38.5s", "900ms"; None when none."""
    parts = _PART.findall(text)
    if not parts:
        return None
    total = 0.0
    for value, unit in parts:
        key = unit.lower()
        key = key if key in _UNIT_S else key.rstrip("s")
        total += float(value) * _UNIT_S[key]
    return total


def _zone(name: str | None) -> tzinfo | None:
    if name is None:
        return datetime.now().astimezone().tzinfo  # the CLI printed this machine's local time
    if name.upper() in ("UTC", "GMT", "Z"):
        return UTC

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None  # a zone this machine does not know: no time rather than a wrong one


def _clock(text: str, now: float) -> float | None:
    """The next moment after `now` matching "resets 3pm", "resets 12:50am (Area/City)",
    "resets Apr 23 at 4pm (Area/City)", "try again at Jul 5th, 2026 8:19 PM"; None when there
    is none (a bare hour without am/pm or minutes is not read: "resets 3" could be anything)."""
    for found in _CLOCK.finditer(text):
        hour, minute, ampm = int(found.group("hour")), int(found.group("min") or 0), found.group("ampm")
        if ampm is None and found.group("min") is None:
            continue
        if ampm is not None:
            if not 1 <= hour <= 12:
                continue
            hour = hour % 12 + (12 if ampm.lower().startswith("p") else 0)
        zone = _zone(found.group("zone"))
        if zone is None or hour > 23 or minute > 59:
            return None
        here = datetime.fromtimestamp(now, zone)
        try:
            if found.group("mon"):
                month = _MONTHS.index(found.group("mon").lower()) + 1
                year = int(found.group("year") or here.year)
                at = datetime(year, month, int(found.group("day")), hour, minute, tzinfo=zone)
                if found.group("year") is None and at.timestamp() < now - 86400:
                    at = at.replace(year=year + 1)  # "Jan 2" said on Dec 30
            else:
                at = here.replace(hour=hour, minute=minute, second=0, microsecond=0)
                if at.timestamp() <= now:
                    at += timedelta(days=1)
        except ValueError:
            return None
        return at.timestamp()
    return None
