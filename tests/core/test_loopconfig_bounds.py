"""loop.json brakes at their bounds: the value on a bound, one step inside, one step outside.

A brake's bound shifted by one (`>` for `>=`, a limit off by one) lets a loop.json through that
brakes nothing, or refuses one the README allows; each case here fails on such a shift.
USD steps are one micro-dollar (spent_usd is kept to 6 places).
"""

from __future__ import annotations

from typing import Any

import pytest

from automaton.core.errors import BadInput
from automaton.core.loopconfig import (
    MAX_ITERATIONS,
    MAX_PLATEAU_WINDOW,
    MAX_UNSCORED,
    MAX_USD,
    Brakes,
    parse_config,
)
from tests.core.test_loopconfig import DEFAULTS, cfg

MICRO = 0.000001  # one micro-dollar


def brakes(**patch: Any) -> Brakes:
    return parse_config(cfg(**{f"brakes__{k}": v for k, v in patch.items()}), "loop.json", DEFAULTS).brakes


def refused(match: str, **patch: Any) -> str:
    with pytest.raises(BadInput, match=match) as err:
        brakes(**patch)
    text = str(err.value)
    assert text.startswith("loop.json: ") and "\n" not in text  # one line naming the file
    return text


# --- max_tick_usd <= max_budget_usd: one tick may spend the whole budget, never more

def test_a_tick_cap_equal_to_the_budget_is_allowed() -> None:
    got = brakes(max_budget_usd=5.0, max_tick_usd=5.0)
    assert (got.max_budget_usd, got.max_tick_usd) == (5.0, 5.0)


def test_a_tick_cap_one_micro_dollar_over_the_budget_is_refused() -> None:
    text = refused(r"max_tick_usd must be <= brakes\.max_budget_usd", max_budget_usd=5.0, max_tick_usd=5.0 + MICRO)
    assert text.startswith("loop.json: brakes.max_tick_usd must be <= brakes.max_budget_usd (5), got ")
    assert brakes(max_budget_usd=5.0, max_tick_usd=5.0 - MICRO).max_tick_usd == 5.0 - MICRO


def test_a_left_out_tick_cap_is_the_default_capped_at_the_budget() -> None:
    assert brakes(max_budget_usd=0.5, max_tick_usd=...).max_tick_usd == 0.5  # default 2.0 > budget
    assert brakes(max_budget_usd=2.0, max_tick_usd=...).max_tick_usd == 2.0  # default == budget
    assert brakes(max_budget_usd=8.0, max_tick_usd=...).max_tick_usd == DEFAULTS["max_tick_usd"]


def test_a_local_harness_may_leave_the_budget_null_and_keeps_its_tick_cap() -> None:
    local = parse_config(cfg(harness__local=True, brakes__max_budget_usd=None, brakes__max_tick_usd=3.0),
                         "loop.json", DEFAULTS).brakes
    assert (local.max_budget_usd, local.max_tick_usd) == (None, 3.0)
    with pytest.raises(BadInput, match="max_budget_usd"):
        brakes(max_budget_usd=None)  # not for a harness that costs USD
    bare = parse_config(cfg(harness__local=True, brakes__max_budget_usd=None, brakes__max_tick_usd=...),
                        "loop.json", DEFAULTS).brakes
    assert (bare.max_budget_usd, bare.max_tick_usd) == (None, DEFAULTS["max_tick_usd"])  # no budget to cap it


# --- USD amounts: > 0 and <= MAX_USD

@pytest.mark.parametrize("key", ["max_budget_usd", "max_tick_usd"])
def test_usd_brakes_are_strictly_positive_and_at_most_max_usd(key: str) -> None:
    other = "max_budget_usd" if key == "max_tick_usd" else "max_tick_usd"
    base = {"max_budget_usd": MAX_USD, "max_tick_usd": MICRO}
    assert getattr(brakes(**{**base, key: MICRO}), key) == MICRO
    assert getattr(brakes(**{**base, key: MAX_USD, other: MAX_USD}), key) == MAX_USD
    refused(key, **{**base, key: 0})
    refused(key, **{**base, key: -MICRO})
    text = refused(key, **{**base, key: MAX_USD + 0.01, other: MAX_USD})
    assert f"> 0 and <= {MAX_USD:g}" in text


# --- counts: 1 ..= MAX

@pytest.mark.parametrize(("key", "high"), [
    ("max_iterations", MAX_ITERATIONS),
    ("score_plateau_window", MAX_PLATEAU_WINDOW),
    ("max_unscored", MAX_UNSCORED),
])
def test_count_brakes_run_from_one_to_their_maximum(key: str, high: int) -> None:
    assert getattr(brakes(**{key: 1}), key) == 1
    assert getattr(brakes(**{key: high}), key) == high
    refused(key, **{key: 0})
    refused(key, **{key: high + 1})
    refused(key, **{key: True})  # a boolean is never a number


def test_max_unscored_defaults_to_three_or_the_users_default() -> None:
    assert brakes().max_unscored == 3
    mine = parse_config(cfg(brakes__max_unscored=...), "loop.json", {**DEFAULTS, "max_unscored": 7})
    assert mine.brakes.max_unscored == 7


# --- scores: epsilon >= 0; 0 <= target_score <= 1

def test_plateau_epsilon_may_be_zero_but_not_negative() -> None:
    assert brakes(plateau_epsilon=0).plateau_epsilon == 0.0
    refused("plateau_epsilon", plateau_epsilon=-MICRO)


@pytest.mark.parametrize("value", [0, 0.5, 1])
def test_target_score_within_zero_and_one_is_kept(value: float) -> None:
    assert brakes(target_score=value).target_score == float(value)


@pytest.mark.parametrize("value", [-MICRO, 1 + MICRO, float("inf"), float("nan"), "1"])
def test_target_score_outside_zero_and_one_is_refused(value: object) -> None:
    refused("target_score", target_score=value)


# --- the one line a human reads: the key, the bound, what was given

@pytest.mark.parametrize(("patch", "message"), [
    ({"max_iterations": 0}, "brakes.max_iterations must be an integer >= 1 and <= 100000, got 0"),
    ({"max_unscored": 1001}, "brakes.max_unscored must be an integer >= 1 and <= 1000, got 1001"),
    ({"max_budget_usd": 0}, "brakes.max_budget_usd must be a finite number > 0 and <= 100000, got 0"),
    ({"plateau_epsilon": -1}, "brakes.plateau_epsilon must be a finite number >= 0, got -1"),
    ({"target_score": 2}, "brakes.target_score must be a finite number >= 0 and <= 1, got 2"),
    ({"target_score": None}, "brakes.target_score must be a finite number >= 0 and <= 1, got null"),
    ({"max_tick_usd": None}, "brakes.max_tick_usd must be a finite number > 0 and <= 100000, got null"),
])
def test_a_refused_brake_says_its_bound(patch: dict[str, Any], message: str) -> None:
    assert refused(next(iter(patch)), **patch) == f"loop.json: {message}"


def test_a_local_harness_budget_may_be_null_and_says_so() -> None:
    with pytest.raises(BadInput) as err:
        parse_config(cfg(harness__local=True, brakes__max_budget_usd=-1), "loop.json", DEFAULTS)
    assert str(err.value) == ("loop.json: brakes.max_budget_usd must be a finite number > 0 and <= 100000 or null,"
                              " got -1")


def test_an_integer_without_an_upper_bound_says_so() -> None:
    with pytest.raises(BadInput) as err:
        parse_config(cfg(schema_version=0), "loop.json", DEFAULTS)
    assert str(err.value) == "loop.json: schema_version must be an integer >= 1, got 0"


def test_a_given_tick_cap_is_kept_even_below_the_default() -> None:
    assert brakes(max_budget_usd=8.0, max_tick_usd=0.5).max_tick_usd == 0.5
    assert brakes(max_budget_usd=1.0, max_tick_usd=1.0).max_tick_usd == 1.0
