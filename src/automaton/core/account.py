"""Account-wide spending caps across every loop and project of this user on this machine: pure.

A human sets caps per UTC day, ISO week (Monday 00:00 UTC) and calendar month (the 1st, 00:00
UTC) in the caps file (`parse_caps`; the store keeps it beside the record key, which every
agent sandbox hides: `store.account`). Every tick reserves against the account ledger before
any agent runs and settles after with its real charge. The ledger is a list of `Entry`: a
reservation made at `at` (UTC epoch seconds) for `reserved` micro-USD, and once settled the
`charged` micro-USD. An entry counts at its charge once settled, else at its reservation: a
tick killed before it settled (`kill -9`) never spends less than it reserved, and one past
`expires` (its tick's timeout) is shown as abandoned but still counts at its reservation, as
the loop's own ledger charges a killed tick its `max_tick_usd`. Each entry belongs to the
window its reservation was made in.

`decide` admits a reservation when, for every cap, what the cap's current window has used plus
the reservation stays at or below the cap; else it refuses, naming the start of the window in
which every reached cap has room again (`Refusal.until`). Money is integer micro-USD
throughout; USD appears only in the caps file and in what is shown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation

from automaton.core import jsontext
from automaton.core.errors import BadInput

MICRO = 1_000_000  # micro-USD in one USD
KINDS = ("day", "week", "month")  # the caps file's keys are these with `_usd`
MAX_CAP_USD = Decimal(10) ** 9  # a cap above a billion dollars is a typo, not a cap
REASON = "account_cap"  # the tick's refusal: `deferred: account_cap`


@dataclass(frozen=True)
class Caps:
    """The caps in micro-USD per window kind; None: no cap of that kind."""

    day: int | None = None
    week: int | None = None
    month: int | None = None

    def of(self, kind: str) -> int | None:
        """The cap of window `kind` ("day", "week", "month")."""
        found: int | None = getattr(self, kind)
        return found

    def any(self) -> bool:
        """Whether any cap is set."""
        return any(self.of(k) is not None for k in KINDS)


@dataclass(frozen=True)
class Entry:
    """One reservation in the ledger: `rid` (hex), made at `at` (UTC epoch seconds) by loop
    `loop` of project `project` (its root, a path), `reserved` micro-USD, expiring (its tick's
    timeout) at `expires`; `charged`: micro-USD once settled, None while open."""

    rid: str
    at: int
    project: str
    loop: str
    reserved: int
    expires: int
    charged: int | None = None

    @property
    def counted(self) -> int:
        """Micro-USD this entry counts against the caps: its charge, else its reservation."""
        return self.reserved if self.charged is None else self.charged

    def state(self, now: int) -> str:
        """"settled", "open" (its tick may still run) or "abandoned" (past `expires`, unsettled)."""
        if self.charged is not None:
            return "settled"
        return "open" if now < self.expires else "abandoned"


@dataclass(frozen=True)
class Window:
    """One cap window: `kind`, [`start`, `end`) in UTC epoch seconds."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Use:
    """A window, its cap (micro-USD, None: uncapped) and what it has used (micro-USD)."""

    window: Window
    cap: int | None
    used: int

    @property
    def left(self) -> int | None:
        """Micro-USD left under the cap (never below 0), None when uncapped."""
        return None if self.cap is None else max(0, self.cap - self.used)


@dataclass(frozen=True)
class Refusal:
    """A reservation refused: the reached windows' uses and when every one has room again."""

    reached: tuple[Use, ...]
    reserve: int

    @property
    def until(self) -> int:
        """UTC epoch seconds: the start of the window after the latest-ending reached one."""
        return max(u.window.end for u in self.reached)

    def line(self) -> str:
        """One line: which caps are reached and until when."""
        said = ", ".join(f"{u.window.kind} cap {usd(u.cap or 0)} (used {usd(u.used)})" for u in self.reached)
        return (f"{REASON}: the account's {said} leaves no room for this tick's reservation of {usd(self.reserve)};"
                f" every loop waits until {iso(self.until)}")


def usd(micro: int) -> str:
    """Micro-USD as `$1.234567` trimmed to at least cents: `$3.00`, `$0.0001`."""
    text = f"{micro / MICRO:.6f}".rstrip("0")
    whole, _, frac = text.partition(".")
    return f"${whole}.{frac.ljust(2, '0')}"


def iso(epoch: int) -> str:
    """UTC epoch seconds as ISO-8601 UTC to the second: 2026-12-07T00:00:00Z."""
    # isoformat, not strftime: glibc's %Y does not pad, and `--since 0001-01-01` read "1-01-01".
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def day_of(epoch: int) -> str:
    """The UTC day of `epoch` as YYYY-MM-DD (four-digit year, as `iso`)."""
    return datetime.fromtimestamp(epoch, UTC).date().isoformat()


def windows(now: int) -> tuple[Window, ...]:
    """The current day, ISO week (from Monday) and month windows at `now`, all in UTC."""
    t = datetime.fromtimestamp(now, UTC)
    day = t.replace(hour=0, minute=0, second=0, microsecond=0)
    week = day - timedelta(days=day.weekday())
    month = day.replace(day=1)
    month_end = (month + timedelta(days=32)).replace(day=1)
    spans = ((day, day + timedelta(days=1)), (week, week + timedelta(days=7)), (month, month_end))
    return tuple(Window(kind, int(a.timestamp()), int(b.timestamp()))
                 for kind, (a, b) in zip(KINDS, spans, strict=True))


def uses(caps: Caps, entries: list[Entry], now: int) -> tuple[Use, ...]:
    """Each current window with its cap and what the entries made in it count."""
    return tuple(Use(w, caps.of(w.kind), sum(e.counted for e in entries if w.start <= e.at < w.end))
                 for w in windows(now))


def decide(caps: Caps, entries: list[Entry], reserve: int, now: int) -> Refusal | None:
    """None when a reservation of `reserve` micro-USD at `now` fits under every cap, else the
    Refusal naming each cap it would pass."""
    reached = tuple(u for u in uses(caps, entries, now) if u.cap is not None and u.used + reserve > u.cap)
    return Refusal(reached, reserve) if reached else None


def parse_caps(data: bytes, where: str) -> Caps:
    """The caps file's bytes as Caps. The file is one JSON object whose keys are among
    `day_usd`, `week_usd`, `month_usd`, each a number of USD (at most 6 decimal places, 0 to
    1e9; 0 stops every tick); `{}` sets no cap. BadInput (exit 2) naming `where`, the key
    and the fix for anything else."""
    fix = f"fix {where} (e.g. {{\"day_usd\": 3, \"week_usd\": 15, \"month_usd\": 50}})"
    try:
        doc = jsontext.loads(data.decode("utf-8"), unique=True, parse_float=Decimal, parse_int=Decimal)
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadInput(f"{where}: not a JSON object of caps ({_short(exc)}); {fix}") from None
    if not isinstance(doc, dict):
        raise BadInput(f"{where}: not a JSON object of caps; {fix}")
    unknown = sorted(set(doc) - {f"{k}_usd" for k in KINDS})
    if unknown:
        raise BadInput(f"{where}: unknown key {unknown[0]!r} (the keys are day_usd, week_usd, month_usd); {fix}")
    found: dict[str, int] = {}
    for key, value in doc.items():
        found[key.removesuffix("_usd")] = _micro(value, where, key, fix)
    return Caps(**found)


def _micro(value: object, where: str, key: str, fix: str) -> int:
    """A cap's USD value (a Decimal from the JSON parse) as exact micro-USD; BadInput else."""
    if not isinstance(value, Decimal) or not value.is_finite() or value < 0 or value > MAX_CAP_USD:
        raise BadInput(f"{where}: {key} = {json.dumps(value, default=str)} is not a number of USD from 0 to"
                       f" 1000000000; {fix}")
    try:
        micro = value * MICRO
        if micro != micro.to_integral_value():
            raise InvalidOperation
    except InvalidOperation:
        raise BadInput(f"{where}: {key} = {value} has more than 6 decimal places; {fix}") from None
    return int(micro)


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__


@dataclass(frozen=True)
class SpendRow:
    """Spend of one loop on one UTC day: `day` (YYYY-MM-DD), project root, loop, micro-USD
    counted, ticks (entries), how many of them are unsettled (counted at their reservation),
    and how many of those are abandoned (past their tick's timeout: the tick died)."""

    day: str
    project: str
    loop: str
    micro: int
    ticks: int
    unsettled: int
    abandoned: int = 0


def spend_rows(entries: list[Entry], since: int, now: int | None = None) -> list[SpendRow]:
    """The entries made at or after `since` (UTC epoch seconds), summed by day, project and
    loop; sorted by day, then project, then loop. `now` (UTC epoch seconds) tells abandoned
    reservations from open ones (None: none is abandoned)."""
    sums: dict[tuple[str, str, str], tuple[int, int, int, int]] = {}
    for e in entries:
        if e.at < since:
            continue
        k = (day_of(e.at), e.project, e.loop)
        micro, ticks, unsettled, abandoned = sums.get(k, (0, 0, 0, 0))
        gone = now is not None and e.state(now) == "abandoned"
        sums[k] = (micro + e.counted, ticks + 1, unsettled + (e.charged is None), abandoned + gone)
    return [SpendRow(*k, *v) for k, v in sorted(sums.items())]
