"""loop.json and .state.loop validation: unknown keys, types, unbounded brakes, fail closed."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from automaton.core.errors import BadInput, CorruptState, InvalidFields
from automaton.core.loopconfig import (
    STATE_KEYS,
    initial_state,
    loads_strict,
    parse_config,
    state_json,
    validate_state,
)

DEFAULTS: dict[str, Any] = {
    "max_iterations": 25, "max_budget_usd": 10.0, "max_tick_usd": 2.0, "score_plateau_window": 5,
    "plateau_epsilon": 0.0, "target_score": 1.0, "interval_seconds": 900, "timeout_s": 1800,
}
# The loop.json example of README.md#loopjson (the name is historical).
DESIGN_EXAMPLE: dict[str, Any] = {
    "schema_version": 1, "name": "nightly-ci", "template": "ci-triage", "description": "d", "task": None,
    "harness": {"name": "claude", "model": None, "args": [], "timeout_s": 1800},
    "roles": {"implement": {"prompt": "implement.md"},
              "verify": {"command": ["python", "-m", "pytest", "-q"], "score": "junit"},
              "orchestrate": {"builtin": True}},
    "brakes": {"max_iterations": 25, "max_budget_usd": 10.0, "max_tick_usd": 2.0,
               "score_plateau_window": 5, "plateau_epsilon": 0.0, "target_score": 1.0},
    "blast_radius": {"use_worktree": True, "file_scope": ["src/**", "tests/**"], "base_branch": None},
    "schedule": {"interval_seconds": 900},
}


def cfg(**patch: Any) -> dict[str, Any]:
    """The README's loop.json example with dotted-key patches; a value of ... deletes the key."""
    data = copy.deepcopy(DESIGN_EXAMPLE)
    for dotted, value in patch.items():
        *path, last = dotted.split("__")
        node = data
        for key in path:
            node = node[key]
        if value is ...:
            node.pop(last, None)
        else:
            node[last] = value
    return data


def test_design_example_parses_with_every_field() -> None:
    c = parse_config(cfg(), "loop.json", DEFAULTS, "ab" * 32)
    assert c.name == "nightly-ci" and c.sha256 == "ab" * 32
    assert c.harness.name == "claude" and c.harness.local is False and c.harness.timeout_s == 1800
    assert c.roles.implement.prompt == "implement.md"
    assert c.roles.verify.command == ["python", "-m", "pytest", "-q"] and c.roles.verify.score == "junit"
    assert c.roles.orchestrate.builtin is True
    assert c.brakes.max_iterations == 25 and c.brakes.max_budget_usd == 10.0
    assert c.blast_radius.file_scope == ["src/**", "tests/**"] and c.schedule.interval_seconds == 900


def test_packaged_template_is_the_design_example() -> None:
    from automaton.store.layout import framework_home

    data = json.loads((framework_home() / "templates/loops/ci-triage/loop.json").read_text())
    data["description"] = "d"
    # The template runs pytest with the Python `--create-loop` fills in ({{python}}), and
    # protects the tests it runs; the rest is the README's example.
    assert data["roles"]["verify"]["command"] == ["{{python}}", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    assert "tests/**" in data["blast_radius"].pop("protected")
    data["roles"]["verify"]["command"] = ["python", "-m", "pytest", "-q"]
    assert data == DESIGN_EXAMPLE


@pytest.mark.parametrize(("patch", "key"), [
    ({"brakes__max_iteration": 3}, "brakes.max_iteration"),  # the misspelling README.md#loopjson names
    ({"extra": 1}, "extra"),
    ({"harness__modle": "x"}, "harness.modle"),
    ({"roles__verify__scor": "junit"}, "roles.verify.scor"),
])
def test_unknown_keys_are_errors_naming_the_key(patch: dict[str, Any], key: str) -> None:
    with pytest.raises(BadInput, match=rf"loop\.json: unknown key '{key}'"):
        parse_config(cfg(**patch), "loop.json", DEFAULTS)


@pytest.mark.parametrize(("patch", "key"), [
    ({"brakes__max_iterations": 0}, "brakes.max_iterations"),
    ({"brakes__max_iterations": True}, "brakes.max_iterations"),  # a bool is not a number
    ({"brakes__max_iterations": "5"}, "brakes.max_iterations"),  # nor is a string
    ({"brakes__max_iterations": 2.5}, "brakes.max_iterations"),
    ({"brakes__max_budget_usd": None}, "brakes.max_budget_usd"),  # null only for local harnesses
    ({"brakes__max_budget_usd": 0}, "brakes.max_budget_usd"),
    ({"brakes__max_budget_usd": -1}, "brakes.max_budget_usd"),
    ({"brakes__max_tick_usd": 0}, "brakes.max_tick_usd"),
    ({"brakes__score_plateau_window": 0}, "brakes.score_plateau_window"),
    ({"brakes__plateau_epsilon": -0.1}, "brakes.plateau_epsilon"),
    ({"brakes__target_score": 1.5}, "brakes.target_score"),
    ({"harness__local": "yes"}, "harness.local"),
    ({"harness__timeout_s": 0}, "harness.timeout_s"),
    ({"blast_radius__file_scope": []}, "blast_radius.file_scope"),
    ({"blast_radius__file_scope": "src/**"}, "blast_radius.file_scope"),
    ({"roles__verify__score": "vibes"}, "roles.verify.score"),
    ({"roles__implement__prompt": "../../etc/passwd"}, "roles.implement.prompt"),
    ({"roles__implement__prompt": "/abs.md"}, "roles.implement.prompt"),
    ({"schedule__interval_seconds": 0}, "schedule.interval_seconds"),
    ({"name": "Bad Name"}, "name"),
])
def test_wrong_values_name_the_key(patch: dict[str, Any], key: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_config(cfg(**patch), "loop.json", DEFAULTS)
    assert key in err.value.message and "loop.json" in err.value.message


def test_missing_brakes_take_finite_defaults_never_infinite() -> None:
    c = parse_config(cfg(brakes={}), "loop.json", {**DEFAULTS, "max_iterations": 7}, "")
    assert c.brakes.max_iterations == 7 and c.brakes.max_budget_usd == 10.0 and c.brakes.max_tick_usd == 2.0


def test_local_harness_may_have_a_null_budget_but_nothing_else_unbounded() -> None:
    c = parse_config(cfg(harness__local=True, brakes__max_budget_usd=None), "loop.json", DEFAULTS)
    assert c.harness.local and c.brakes.max_budget_usd is None
    with pytest.raises(BadInput, match="max_iterations"):
        parse_config(cfg(harness__local=True, brakes__max_iterations=None), "loop.json", DEFAULTS)


def test_verify_needs_a_command_or_prompt() -> None:
    with pytest.raises(BadInput, match=r"roles\.verify"):
        parse_config(cfg(roles__verify={}), "loop.json", DEFAULTS)


def test_verify_holdout_is_a_folder_inside_the_loop_folder() -> None:
    assert parse_config(cfg(), "loop.json", DEFAULTS).roles.verify.holdout is None
    c = parse_config(cfg(roles__verify__holdout="holdout/unit"), "loop.json", DEFAULTS)
    assert c.roles.verify.holdout == "holdout/unit"
    for bad in ("../tests", "/abs", "", "a/../b", "runs", ".state", "worktree/x", "c:/x", 3):
        with pytest.raises(BadInput, match=r"roles\.verify\.holdout"):
            parse_config(cfg(roles__verify__holdout=bad), "loop.json", DEFAULTS)


def test_newer_schema_version_is_refused() -> None:
    with pytest.raises(BadInput, match="newer"):
        parse_config(cfg(schema_version=2), "loop.json", DEFAULTS)


@pytest.mark.parametrize("text", ['{"a": 1, "a": 2}', '{"x": NaN}', '{"x": Infinity}', "{", ""])
def test_loads_strict_refuses_duplicates_nonfinite_and_garbage(text: str) -> None:
    with pytest.raises(BadInput, match=r"f\.json"):
        loads_strict(text, "f.json")


def test_initial_state_has_every_r2_and_design_field() -> None:
    state = state_json(initial_state("demo", None, "ab" * 32, "2026-01-01T00:00:00Z"))
    r2 = {"schema_version", "name", "status", "halt_reason", "iteration_count", "resumed_count", "last_tick_at",
          "last_verdict", "score_history", "current_task", "worktree_branch", "worktree_path"}
    design = {"started_at", "spent_usd", "iterations_at_approval", "spent_usd_at_approval", "accepted_drift",
              "base_commit", "config_sha256"}
    assert r2 | design <= set(state) and list(state) == list(STATE_KEYS)
    assert state_json(validate_state(state, "s")) == state


@pytest.mark.parametrize(("patch", "word"), [
    ({"status": "dead"}, "status"),
    ({"status": "halted"}, "halt_reason"),  # halted without a reason
    ({"halt_reason": "verifier_failed"}, "halt_reason"),  # a reason while running
    ({"iteration_count": -1}, "iteration_count"),
    ({"iteration_count": "3"}, "iteration_count"),
    ({"spent_usd": True}, "spent_usd"),
    ({"iterations_at_approval": 5}, "iterations_at_approval"),  # more than iteration_count
    ({"score_history": ["x"]}, "score_history"),
    ({"base_commit": "HEAD"}, "base_commit"),
    ({"surprise": 1}, "surprise"),
    ({"schema_version": 2}, "newer"),
])
def test_state_validation_fails_closed(patch: dict[str, Any], word: str) -> None:
    state = {**state_json(initial_state("demo", None, "ab" * 32, "t")), **patch}
    with pytest.raises(CorruptState, match=word):
        validate_state(state, "/x/.state.loop")


def test_state_missing_key_and_non_object_fail() -> None:
    state = state_json(initial_state("demo", None, "ab" * 32, "t"))
    del state["spent_usd"]
    with pytest.raises(CorruptState, match="spent_usd"):
        validate_state(state, "s")
    with pytest.raises(CorruptState, match="JSON object"):
        validate_state([], "s")
    with pytest.raises(CorruptState, match="missing key"):
        validate_state({}, "s")


@pytest.mark.parametrize(("patch", "needle"), [
    ({"brakes__max_iterations": 10**30}, "brakes.max_iterations must be an integer >= 1 and <= 100000"),
    ({"brakes__max_iterations": 100_001}, "brakes.max_iterations must be an integer >= 1 and <= 100000"),
    ({"brakes__max_budget_usd": 1e308}, "brakes.max_budget_usd must be a finite number > 0 and <= 100000"),
    ({"brakes__max_tick_usd": 100_000.5, "brakes__max_budget_usd": 100_000},
     "brakes.max_tick_usd must be a finite number > 0 and <= 100000"),
    ({"brakes__max_tick_usd": 20.0}, "brakes.max_tick_usd must be <= brakes.max_budget_usd (10), got 20"),
    ({"harness__timeout_s": 86_401}, "harness.timeout_s must be an integer >= 1 and <= 86400"),
    ({"brakes__score_plateau_window": 1001}, "brakes.score_plateau_window must be an integer >= 1 and <= 1000"),
])
def test_absurd_but_finite_brakes_are_refused(patch: dict[str, Any], needle: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_config(cfg(**patch), "loop.json", DEFAULTS)
    assert err.value.message.startswith("loop.json: ") and needle in err.value.message
    assert "\n" not in err.value.message


def test_brakes_at_their_upper_bounds_are_accepted() -> None:
    c = parse_config(cfg(brakes__max_iterations=100_000, brakes__max_budget_usd=100_000, brakes__max_tick_usd=100_000,
                         brakes__score_plateau_window=1000, harness__timeout_s=86_400), "loop.json", DEFAULTS)
    assert (c.brakes.max_iterations, c.brakes.max_budget_usd, c.brakes.max_tick_usd) == (100_000, 1e5, 1e5)
    assert c.brakes.score_plateau_window == 1000 and c.harness.timeout_s == 86_400


def test_a_left_out_tick_cap_never_exceeds_the_budget() -> None:
    c = parse_config(cfg(brakes__max_budget_usd=1.0, brakes__max_tick_usd=...), "loop.json", DEFAULTS)
    assert c.brakes.max_tick_usd == 1.0  # the default 2.0, capped at the budget
    local = parse_config(cfg(harness__local=True, brakes__max_budget_usd=None), "loop.json", DEFAULTS)
    assert local.brakes.max_tick_usd == 2.0


@pytest.mark.parametrize("patterns", [["../**"], ["src/**", "a/../b"], ["..\\x"]])
def test_scope_patterns_may_not_leave_the_worktree(patterns: list[str]) -> None:
    with pytest.raises(BadInput, match=r"file_scope must be gitignore patterns inside the worktree \(no '\.\.'\)"):
        parse_config(cfg(blast_radius__file_scope=patterns), "loop.json", DEFAULTS)
    with pytest.raises(BadInput, match=r"blast_radius\.protected"):
        parse_config(cfg(blast_radius__protected=patterns), "loop.json", DEFAULTS)


def test_isolation_defaults_to_namespaces_and_takes_landlock_only() -> None:
    assert parse_config(cfg(), "loop.json", DEFAULTS).isolation == "namespaces"
    assert parse_config(cfg(isolation="landlock-only"), "loop.json", DEFAULTS).isolation == "landlock-only"
    with pytest.raises(BadInput, match=re.escape('isolation must be "namespaces" | "landlock-only", got "off"')):
        parse_config(cfg(isolation="off"), "loop.json", DEFAULTS)
    for bad in ("none", "off", True, None):
        with pytest.raises(BadInput) as caught:
            parse_config(cfg(isolation=bad), "loop.json", DEFAULTS)
        assert caught.value.message.startswith("loop.json: isolation must be ") and "\n" not in caught.value.message


@pytest.mark.parametrize("value", [None, 1, True, ["namespaces"], {"a": 1}, "none"])
def test_isolation_and_sandbox_name_the_words_they_may_be(value: object) -> None:
    for key, words in (("isolation", '"namespaces" | "landlock-only"'), ("sandbox", '"on" | "off"')):
        with pytest.raises(BadInput, match=re.escape(f"loop.json: {key} must be {words}, got")):
            parse_config(cfg(**{key: value}), "loop.json", DEFAULTS)


def test_every_invalid_field_is_reported_in_one_error_one_line_each() -> None:
    data = cfg(harness__timeout_s=-1, brakes__max_budget_usd="ten", brakes__max_iteration=3, sandbox="maybe",
               blast_radius__file_scope=[])
    with pytest.raises(InvalidFields) as err:
        parse_config(data, "loop.json", DEFAULTS)
    lines = err.value.lines
    assert err.value.message == "\n".join(lines) and err.value.code == 2
    assert [re.match(r"loop\.json: (?:unknown key ')?([a-z_.]+)", line).group(1) for line in lines] == [  # type: ignore[union-attr]
        "harness.timeout_s", "brakes.max_iteration", "brakes.max_budget_usd", "blast_radius.file_scope", "sandbox"]


def test_one_invalid_field_is_one_bad_input_as_before() -> None:
    with pytest.raises(BadInput) as err:
        parse_config(cfg(brakes__max_tick_usd=20.0), "loop.json", DEFAULTS)
    assert not isinstance(err.value, InvalidFields)
    assert err.value.message == "loop.json: brakes.max_tick_usd must be <= brakes.max_budget_usd (10), got 20"


@pytest.mark.parametrize(("remote", "ok"), [
    ("origin", True), ("https://github.com/o/r.git", True), ("ssh://git@host/r.git", True),
    ("git@github.com:o/r.git", True), ("https://ghp_S3CRET@github.com/o/r.git", False),
    ("https://x-access-token:ghp_S3CRET@github.com/o/r", False), ("ssh://user:ghp_S3CRET@host/r", False),
])
def test_a_state_remote_with_a_credential_in_its_url_is_refused(remote: str, ok: bool) -> None:
    doc = json.loads(json.dumps(DESIGN_EXAMPLE))
    doc["state_remote"] = remote
    if ok:
        assert parse_config(doc, "loop.json", DEFAULTS).state_remote == remote
        return
    with pytest.raises(BadInput, match="state_remote") as caught:
        parse_config(doc, "loop.json", DEFAULTS)
    assert "ghp_S3CRET" not in caught.value.message
