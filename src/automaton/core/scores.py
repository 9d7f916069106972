"""How a verifier's score reads: one formatting rule for every output (the README's: cut to at
most 4 decimals, never rounded), used by `--loop-list`, `--loop-status`, `--doctor`, the
dashboard, the tick's line and log, the prompts' tick context, the notifications and the demo.

Its own module, so that `--loop-list` (run by scripts and dashboards) formats a score without
importing `commands.loop_status` and what that reads (the schedulers, git).
"""

from __future__ import annotations

from decimal import ROUND_DOWN, Decimal, InvalidOperation


def score_text(score: float | None) -> str:
    """A 0..1 score with at most 4 decimals, rounded toward zero (never up: 0.99995 reads
    0.9999, never 1.0000) and at least 2 decimals: 0.5 -> "0.50", 0.9993 -> "0.9993",
    1.0 -> "1.00"; None -> "unscored"."""
    if score is None:
        return "unscored"
    try:
        cut = Decimal(repr(float(score))).quantize(Decimal("0.0001"), rounding=ROUND_DOWN)
    except InvalidOperation:
        return str(score)
    text = f"{cut:f}".rstrip("0")
    whole, _, frac = text.partition(".")
    return f"{whole}.{frac.ljust(2, '0')}"


def score_field(score: float | None) -> str:
    """A score as the loop log's `score=` field: exactly 4 decimals, cut like `score_text`
    (0.97949 -> "0.9794", 1.0 -> "1.0000"); None -> "null"."""
    if score is None:
        return "null"
    try:
        cut = Decimal(repr(float(score))).quantize(Decimal("0.0001"), rounding=ROUND_DOWN)
    except InvalidOperation:
        return str(score)
    return f"{cut:f}"
