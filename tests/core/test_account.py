"""The account caps' pure rules (core/account.py): the caps file, the windows, the decision."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from automaton.core.account import Caps, Entry, decide, iso, parse_caps, spend_rows, usd, uses, windows
from automaton.core.errors import BadInput


def ts(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


def entry(at: str, micro: int, charged: int | None = None, loop: str = "l", project: str = "/p") -> Entry:
    return Entry(f"{ts(at):x}{micro}", ts(at), project, loop, micro, ts(at) + 60, charged)


def test_parse_caps_exact_micro_usd() -> None:
    assert parse_caps(b'{"day_usd": 3, "week_usd": 10.5, "month_usd": 0.000001}', "c") == Caps(3_000_000, 10_500_000, 1)
    assert parse_caps(b"{}", "c") == Caps()
    assert not Caps().any() and Caps(month=0).any()
    assert parse_caps(b'{"day_usd": 0.1}', "c").day == 100_000  # no float rounding on the way


@pytest.mark.parametrize(("text", "said"), [(b"{", "not a JSON object"), (b"3", "not a JSON object"),
                                            (b'{"day": 3}', "unknown key 'day'"), (b'{"day_usd": null}', "day_usd"),
                                            (b'{"week_usd": -2}', "week_usd"), (b'{"day_usd": 1e10}', "day_usd"),
                                            (b'{"day_usd": 1.0000001}', "6 decimal places"),
                                            (b'{"day_usd": NaN}', "day_usd"), (b'{"day_usd": false}', "day_usd"),
                                            (b"[" * 60000, "nested too deeply"),
                                            (b'{"day_usd": 1, "day_usd": 100}', "duplicate key 'day_usd'")])
def test_parse_caps_refuses_with_one_line_naming_the_file(text: bytes, said: str) -> None:
    with pytest.raises(BadInput) as exc:
        parse_caps(text, "/h/.config/automaton/caps.json")
    assert said in exc.value.message and "/h/.config/automaton/caps.json" in exc.value.message
    assert "\n" not in exc.value.message


def test_windows_are_utc_day_iso_week_and_month() -> None:
    day, week, month = windows(ts("2026-12-31T23:59:59"))  # a Thursday
    assert (iso(day.start), iso(day.end)) == ("2026-12-31T00:00:00Z", "2027-01-01T00:00:00Z")
    assert (iso(week.start), iso(week.end)) == ("2026-12-28T00:00:00Z", "2027-01-04T00:00:00Z")
    assert (iso(month.start), iso(month.end)) == ("2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z")


def test_decide_counts_open_reservations_whole_and_names_the_latest_reached_window() -> None:
    now = ts("2026-12-06T12:00:00")  # a Sunday
    book = [entry("2026-12-06T01:00:00", 1_000_000, 0), entry("2026-12-06T02:00:00", 2_000_000),
            entry("2026-12-01T02:00:00", 5_000_000, 5_000_000)]
    assert decide(Caps(day=3_000_000), book, 1_000_000, now) is None  # 0 + 2 open + 1 = 3
    refused = decide(Caps(day=3_000_000, week=7_000_000), book, 1_000_001, now)
    assert refused is not None
    assert [u.window.kind for u in refused.reached] == ["day", "week"]
    assert iso(refused.until) == "2026-12-07T00:00:00Z"  # the week ends on Monday 00:00 too
    month = decide(Caps(month=8_000_000), book, 1_000_001, now)
    assert month is not None and iso(month.until) == "2027-01-01T00:00:00Z"
    assert "every loop waits until 2027-01-01T00:00:00Z" in month.line()
    assert decide(Caps(day=0), [], 1, now) is not None  # a zero cap stops every tick


def test_uses_and_left() -> None:
    now = ts("2026-12-06T12:00:00")
    day, week, _month = uses(Caps(day=3_000_000), [entry("2026-12-06T01:00:00", 4_000_000, 3_500_000)], now)
    assert (day.used, day.left, week.left) == (3_500_000, 0, None)


def test_spend_rows_by_day_project_and_loop() -> None:
    book = [entry("2026-12-05T23:00:00", 1_000_000, 250_000), entry("2026-12-06T01:00:00", 1_000_000),
            entry("2026-12-06T02:00:00", 1_000_000, 500_000), entry("2026-12-06T03:00:00", 1, 1, loop="m")]
    rows = spend_rows(book, ts("2026-12-06T00:00:00"))
    assert [(r.day, r.loop, r.micro, r.ticks, r.unsettled, r.abandoned) for r in rows] == [
        ("2026-12-06", "l", 1_500_000, 2, 1, 0), ("2026-12-06", "m", 1, 1, 0, 0)]
    later = spend_rows(book, ts("2026-12-06T00:00:00"), now=ts("2026-12-06T01:01:00"))
    assert later[0].abandoned == 1 and later[0].micro == 1_500_000  # past its expiry: still counted whole


def test_usd_text() -> None:
    assert (usd(3_000_000), usd(100), usd(1_234_567), usd(0)) == ("$3.00", "$0.0001", "$1.234567", "$0.00")
