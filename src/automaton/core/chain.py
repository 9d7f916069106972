"""Hash-chained, keyed log lines shared by task and loop `.state.log` files and the focus log.

One line: `<ISO-8601 UTC> <EVENT> key=value ... state=<token> prev=<sha256 of previous line>
mac=<HMAC-SHA256(key, the line up to " mac=")>`. Values that contain spaces, quotes or `=` are
JSON-quoted. `state` is the token the write left the state file in (a task's phase, or
`sha256:<hex>` of a loop's `.state.loop`), so a state file that disagrees with its log's last
line was written outside automaton. `prev` chains each line to the whole previous line as
written (mac included); `mac` binds each line to a per-user key the agent cannot read, so a
forger who recomputes the SHA-256 chain still cannot write a line that verifies. Lines
written before keys existed carry no `mac`; they may only form a prefix of a log.
"""

from __future__ import annotations

import json
import re

from automaton.core import jsontext
from automaton.core.digest import equal, hmac_sha256, sha256_hex
from automaton.core.record import field, record

TYPE_CHECKING = False  # typing/collections.abc stay off the hook path (core/record.py says why)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

GENESIS = "0" * 64
_TOKEN = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')
_BARE = re.compile(r'^[^\s"=]*$')
_EVENT = re.compile(r"^[A-Z][A-Z_]*\Z")
_KEY = re.compile(r"^\w+\Z")
_MAC = re.compile(r" mac=([0-9a-f]{64})\Z")
_MAC_LEN = len(" mac=") + 64  # a match of _MAC is exactly this long, so it starts this far from the end
_CHAIN_FIELDS = ("state", "prev", "mac")  # written by format_line itself, never taken from `fields`


def line_hash(line: str) -> str:
    """SHA-256 hex of one log line without its newline."""
    return sha256_hex(line.encode("utf-8"))


def line_mac(key: bytes, body: str) -> str:
    """HMAC-SHA256 hex of `body` (a line without its ` mac=` suffix) under `key`."""
    return hmac_sha256(key, body.encode("utf-8"))


def _quote(value: object) -> str:
    text = "null" if value is None else str(value)
    return text if text and _BARE.match(text) else json.dumps(text)


def format_line(ts: str, event: str, fields: dict[str, object], state: str, prev: str,
                key: bytes | None = None) -> str:
    """Render one log line (no newline). `event` is UPPER_SNAKE; keys are `\\w+`; fields named
    state, prev or mac are dropped. With `key` the line ends in ` mac=<hex>`; without, it is an
    unkeyed (legacy) line. ValueError for a bad event or field name."""
    if not _EVENT.match(event):
        raise ValueError(f"bad event name {event!r}")
    bad = [k for k in fields if not _KEY.match(k)]
    if bad:
        raise ValueError(f"bad field name(s) {bad!r}: keys are \\w+")
    parts = [ts, event]
    parts += [f"{k}={_quote(v)}" for k, v in fields.items() if k not in _CHAIN_FIELDS]
    parts += [f"state={_quote(state)}", f"prev={prev}"]
    body = " ".join(parts)
    return body if key is None else f"{body} mac={line_mac(key, body)}"


@record
class LogLine:
    """A parsed line: timestamp, event, fields (strings), and the chain fields (`mac` "" when unkeyed)."""

    ts: str
    event: str
    fields: dict[str, str] = field(default_factory=dict)
    state: str = ""
    prev: str = ""
    raw: str = ""
    mac: str = ""

    @property
    def body(self) -> str:
        """The line the mac covers: `raw` without its ` mac=<hex>` suffix."""
        return self.raw[: len(self.raw) - len(" mac=") - len(self.mac)] if self.mac else self.raw


def parse_line(raw: str) -> LogLine | None:
    """Parse a line; None when it is not a well-formed chained line (a `mac` anywhere but as a
    last ` mac=<64 hex>` token is malformed)."""
    # Searched from the one place a match can start, not from the line's first character.
    found = _MAC.search(raw, max(len(raw) - _MAC_LEN, 0))
    mac = found.group(1) if found else ""
    body = raw[: found.start()] if found else raw
    head = body.split(" ", 2)
    if len(head) < 3 or not _EVENT.match(head[1]):
        return None
    rest = head[2]
    fields: dict[str, str]
    if '"' not in rest:  # no value can be quoted: the pairs are the fields as they stand
        fields = dict(_TOKEN.findall(rest))
    else:
        fields = {}
        for key, val in _TOKEN.findall(rest):
            if val.startswith('"'):
                try:
                    val = jsontext.loads(val)
                except json.JSONDecodeError:
                    return None
            fields[key] = val
    if "state" not in fields or "prev" not in fields or "mac" in fields:
        return None
    state, prev = fields.pop("state"), fields.pop("prev")
    return LogLine(head[0], head[1], fields, state, prev, raw, mac)


class _Prefix:
    """Rows of a log already verified elsewhere (a keyed checkpoint: `store.chainlog`), parsed
    one by one as they are read. Shared by every `Lines` grown from the same check."""

    __slots__ = ("parsed", "rows", "text")

    def __init__(self, text: str, count: int) -> None:
        self.text = text
        self.rows: list[str] | None = None
        self.parsed: list[LogLine | None] = [None] * count

    def line(self, i: int) -> LogLine:
        found = self.parsed[i]
        if found is None:
            if self.rows is None:
                self.rows = self.text.split("\n")[:-1]
            found = parse_line(self.rows[i])
            if found is None:  # the prefix was verified byte for byte: this cannot happen
                raise ValueError(f"line {i + 1} of a verified log prefix does not parse")
            self.parsed[i] = found
        return found


class Lines(list[LogLine]):
    """A log's parsed lines (a `list`), whose first lines were verified by a keyed checkpoint and
    are parsed only when read: `len`, indexing, short slices, `reversed` and the lines after the
    prefix cost nothing for the prefix; anything else (iteration, long slices, mutation) parses
    the whole prefix once and behaves as a plain list from then on. `mark`: what the store attached
    (the checkpoint the prefix came from), None on a plain result."""

    __slots__ = ("_prefix", "_tail", "mark")

    def __init__(self, prefix: _Prefix, tail: list[LogLine], mark: object = None) -> None:
        super().__init__()
        self._prefix: _Prefix | None = prefix
        self._tail = tail
        self.mark = mark

    @classmethod
    def from_prefix(cls, text: str, count: int, mark: object = None) -> Lines:
        """The `count` lines of `text` (whole lines, verified by the caller), none parsed yet."""
        return cls(_Prefix(text, count), [], mark)

    def push(self, line: LogLine) -> None:
        """Append `line` without parsing the prefix."""
        if self._prefix is not None:
            self._tail.append(line)
        else:
            list.append(self, line)

    @property
    def done(self) -> int:
        """How many lines the unparsed prefix holds (0 once loaded)."""
        return len(self._prefix.parsed) if self._prefix is not None else 0

    @classmethod
    def of(cls, items: list[LogLine], mark: object = None) -> Lines:
        """A `Lines` holding `items` (parsed already)."""
        out = cls(_Prefix("", 0), [], mark)
        out._prefix = None
        list.extend(out, items)
        return out

    def lazy_copy(self) -> Lines:
        """A copy that shares the unparsed prefix (`list.copy` would parse it)."""
        if self._prefix is None:
            return Lines.of(list(list.__iter__(self)), self.mark)
        return Lines(self._prefix, list(self._tail), self.mark)

    def shares_start(self, other: Lines) -> bool:
        """`other` begins with the very line objects of this list (without parsing either)."""
        if self._prefix is not None and other._prefix is self._prefix and len(self._tail) <= len(other._tail):
            return all(a is b for a, b in zip(self._tail, other._tail[:len(self._tail)], strict=True))
        return len(self) <= len(other) and all(a is b for a, b in zip(self, other[:len(self)], strict=True))

    def _load(self) -> None:
        prefix = self._prefix
        if prefix is not None:
            self._prefix = None
            list.extend(self, [prefix.line(i) for i in range(len(prefix.parsed))])
            list.extend(self, self._tail)
            self._tail = []

    def _at(self, i: int) -> LogLine:
        prefix = self._prefix
        assert prefix is not None
        done = len(prefix.parsed)
        return prefix.line(i) if i < done else self._tail[i - done]

    def __len__(self) -> int:
        return len(self._prefix.parsed) + len(self._tail) if self._prefix is not None else list.__len__(self)

    def __bool__(self) -> bool:
        return len(self) > 0

    def __getitem__(self, index: Any) -> Any:
        if self._prefix is not None:
            if isinstance(index, slice):
                picked = range(*index.indices(len(self)))
                if len(picked) <= _SHORT:
                    return [self._at(i) for i in picked]
            else:
                i = index.__index__()
                i = i + len(self) if i < 0 else i
                if not 0 <= i < len(self):
                    raise IndexError("list index out of range")
                return self._at(i)
            self._load()
        return list.__getitem__(self, index)

    def __reversed__(self) -> Iterator[LogLine]:
        if self._prefix is None:
            return list.__reversed__(self)
        return (self._at(i) for i in range(len(self) - 1, -1, -1))

    def __iter__(self) -> Iterator[LogLine]:
        self._load()
        return list.__iter__(self)

    def __contains__(self, item: object) -> bool:
        self._load()
        return list.__contains__(self, item)

    def __eq__(self, other: object) -> bool:
        self._load()
        if isinstance(other, Lines):
            other._load()
        return list.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None

    def __repr__(self) -> str:
        self._load()
        return list.__repr__(self)

    def __reduce__(self) -> tuple[type[list[LogLine]], tuple[list[LogLine]]]:
        return list, (list(self),)


class _Loading(str):
    """The name of a list method that reads or writes a list's storage directly; as an attribute
    of `Lines` (a descriptor) it is that list method, bound after the prefix is parsed
    (`Lines.append` on the class: `list.append`). A `str`, so that nothing of it is built by code
    run at import time, where `make mutate` cannot switch a mutant on: its one method runs at
    each use."""

    __slots__ = ()

    def __get__(self, obj: Lines | None, owner: type | None = None) -> Any:
        if obj is not None:
            obj._load()
        return getattr(list, self).__get__(obj, owner)


# Everything else a list does reads or writes its storage directly: the prefix is parsed first.
for _name in ("__add__", "__iadd__", "__mul__", "__imul__", "__rmul__", "__setitem__", "__delitem__", "__lt__",
              "__le__", "__gt__", "__ge__", "append", "extend", "insert", "pop", "remove", "clear", "index",
              "count", "copy", "sort", "reverse"):
    setattr(Lines, _name, _Loading(_name))
del _name
_SHORT = 64  # a slice this short is read line by line (an anchor's tail, a caller's last lines)


@record
class ChainCheck:
    """The verdict on a whole log: `ok`, the lines read up to the first fault, and that `error`.

    `needs_key`: the fault is a keyed line read without a key (not a proven forgery, but it
    cannot be trusted either). `unverified`: keyed lines were taken on their SHA-256 chain
    alone (`verify_text(check_macs=False)`). `rolled_back`: the lines verify but are older
    than the log's anchor, or its anchor is missing or unreadable (`store.anchor`; set by
    `store.chainlog.read_chain`, never by `verify_text`). `anchor`: the anchor's line count,
    -1 when the log has none (or it was not looked at).
    """

    ok: bool
    lines: list[LogLine]
    error: str = ""
    needs_key: bool = False
    unverified: bool = False
    rolled_back: bool = False
    anchor: int = -1

    @property
    def legacy(self) -> bool:
        """Lines, none keyed: written before keys existed (or wholly replaced by a forger)."""
        return bool(self.lines) and not self.lines[-1].mac

    @property
    def last_state(self) -> str | None:
        return self.lines[-1].state if self.lines else None

    @property
    def last_hash(self) -> str:
        return line_hash(self.lines[-1].raw) if self.lines else GENESIS


def _resumed(after: ChainCheck | None) -> tuple[list[LogLine], str, int]:
    """(the lines, the hash the next line links to, the number of the first keyed line or 0)
    that `verify_text` starts from: nothing, or the ok check `after` of the text before."""
    if after is None:
        return [], GENESIS, 0
    # a checkpoint's lazily parsed prefix stays unparsed (`Lines.lazy_copy`)
    lines: list[LogLine] = after.lines.lazy_copy() if isinstance(after.lines, Lines) else list(after.lines)
    # by index, not by iteration: a `Lines` then parses the prefix only up to its first keyed line
    first_keyed = next((n for n in range(1, len(lines) + 1) if lines[n - 1].mac), 0) if lines and lines[-1].mac else 0
    return lines, after.last_hash, first_keyed


def _mac_refusal(raw: str, mac: str, n: int, key: bytes | None) -> str | None:
    """Why keyed line `n` (`raw`, carrying `mac`) fails its check (no key: cannot be verified);
    None when `key` verifies it."""
    if key is None:
        return f"line {n} is sealed with a key (mac=) but there is no key to verify it"
    # `parsed.body`: a keyed line ends in exactly the _MAC_LEN characters of its mac
    if not equal(mac, line_mac(key, raw[:-_MAC_LEN])):
        return (f"line {n} has a mac the key does not verify: it was forged, or this tick runs with another"
                " HOME/key than the one that wrote it; check HOME")
    return None


def verify_text(text: str, key: bytes | None = None, *, check_macs: bool = True,
                after: ChainCheck | None = None) -> ChainCheck:
    """Check every line parses, links to the one before and, from the first keyed line on,
    carries a mac that `key` verifies. Unkeyed lines may only come before the first keyed one.

    Without `key` a keyed line cannot be verified: the check fails (`needs_key`). With
    `check_macs=False` (a reader that may not have the key and cannot write the log either)
    keyed lines are taken on their SHA-256 chain alone (`unverified`). A partial last line is
    an error. Never raises.

    `after`: an ok check of the text that comes before `text` (verified with the same `key`
    and `check_macs`): the result is exactly `verify_text(that text + text)`, at the cost of
    `text` alone (a log read again after lines were appended to it).
    """
    if text and not text.endswith("\n"):
        return ChainCheck(False, [], "the last line is partial (no newline): the log was cut")
    lines, prev, first_keyed = _resumed(after)
    # Split on "\n" only: str.splitlines() also splits on \r, \x1c, \u2028 ..., which a
    # line may legitimately hold, and would then mis-hash it.
    rows = text.split("\n")[:-1] if text else []
    for n, raw in enumerate(rows, start=len(lines) + 1):
        parsed = parse_line(raw)
        if parsed is None:
            return ChainCheck(False, lines, f"line {n} is not a valid log line")
        if parsed.prev != prev:
            return ChainCheck(False, lines, f"line {n} does not link to line {n - 1} (hash chain broken)")
        if parsed.mac and check_macs:
            refused = _mac_refusal(raw, parsed.mac, n, key)
            if refused is not None:
                return ChainCheck(False, lines, refused, needs_key=key is None)
        if parsed.mac:
            first_keyed = first_keyed or n
        elif first_keyed:
            return ChainCheck(False, lines, f"line {n} has no mac after keyed line {first_keyed}:"
                              " it was not written by automaton")
        if isinstance(lines, Lines):
            lines.push(parsed)
        else:
            lines.append(parsed)
        prev = line_hash(raw)
    return ChainCheck(True, lines, unverified=bool(first_keyed) and not check_macs)
