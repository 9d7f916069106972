"""Hash-chained log lines shared by task and loop `.state.log` files (DESIGN §4, §5; seed 000 R10).

One line: `<ISO-8601 UTC> <EVENT> key=value ... state=<token> prev=<sha256 of previous line>`.
Values that contain spaces, quotes or `=` are JSON-quoted. `state` is the token the write
left the state file in (a task's phase, or `sha256:<hex>` of a loop's `.state.loop`), so a
state file that disagrees with its log's last line was written outside automaton.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

GENESIS = "0" * 64
_TOKEN = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')
_BARE = re.compile(r'^[^\s"=]*$')
_EVENT = re.compile(r"^[A-Z][A-Z_]*\Z")
_KEY = re.compile(r"^\w+\Z")


def line_hash(line: str) -> str:
    """SHA-256 hex of one log line without its newline."""
    return hashlib.sha256(line.encode("utf-8")).hexdigest()


def _quote(value: object) -> str:
    text = "null" if value is None else str(value)
    return text if text and _BARE.match(text) else json.dumps(text)


def format_line(ts: str, event: str, fields: dict[str, object], state: str, prev: str) -> str:
    """Render one log line (no newline). `event` is UPPER_SNAKE; keys are `\\w+`."""
    if not _EVENT.match(event):
        raise ValueError(f"bad event name {event!r}")
    bad = [k for k in fields if not _KEY.match(k)]
    if bad:
        raise ValueError(f"bad field name(s) {bad!r}: keys are \\w+")
    parts = [ts, event]
    parts += [f"{k}={_quote(v)}" for k, v in fields.items() if k not in ("state", "prev")]
    parts += [f"state={_quote(state)}", f"prev={prev}"]
    return " ".join(parts)


@dataclass
class LogLine:
    """A parsed line: timestamp, event, fields (strings), and the chain fields."""

    ts: str
    event: str
    fields: dict[str, str] = field(default_factory=dict)
    state: str = ""
    prev: str = ""
    raw: str = ""


def parse_line(raw: str) -> LogLine | None:
    """Parse a line; None when it is not a well-formed chained line."""
    head = raw.split(" ", 2)
    if len(head) < 3 or not _EVENT.match(head[1]):
        return None
    fields: dict[str, str] = {}
    for key, val in _TOKEN.findall(head[2]):
        if val.startswith('"'):
            try:
                val = json.loads(val)
            except json.JSONDecodeError:
                return None
        fields[key] = val
    if "state" not in fields or "prev" not in fields:
        return None
    state, prev = fields.pop("state"), fields.pop("prev")
    return LogLine(head[0], head[1], fields, state, prev, raw)


@dataclass
class ChainCheck:
    """The verdict on a whole log: `ok`, the last line's `state`, and the first `error`."""

    ok: bool
    lines: list[LogLine]
    error: str = ""

    @property
    def last_state(self) -> str | None:
        return self.lines[-1].state if self.lines else None

    @property
    def last_hash(self) -> str:
        return line_hash(self.lines[-1].raw) if self.lines else GENESIS


def verify_text(text: str) -> ChainCheck:
    """Check every line parses and links to the one before; a partial last line is an error."""
    if text and not text.endswith("\n"):
        return ChainCheck(False, [], "the last line is partial (no newline): the log was cut")
    lines: list[LogLine] = []
    prev = GENESIS
    # Split on "\n" only: str.splitlines() also splits on \r, \x1c, \u2028 ..., which a
    # line may legitimately hold, and would then mis-hash it.
    for n, raw in enumerate(text.split("\n")[:-1] if text else [], start=1):
        parsed = parse_line(raw)
        if parsed is None:
            return ChainCheck(False, lines, f"line {n} is not a valid log line")
        if parsed.prev != prev:
            return ChainCheck(False, lines, f"line {n} does not link to line {n - 1} (hash chain broken)")
        lines.append(parsed)
        prev = line_hash(raw)
    return ChainCheck(True, lines)
