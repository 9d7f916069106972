"""Task and loop names: kebab-case, at most 64 characters, `complete` reserved."""

from __future__ import annotations

import pytest

from automaton.core.errors import BadInput, ExitCode
from automaton.core.names import LoopName, TaskName, TaskRef

GOOD = ["a", "fix-login", "x1", "2026-plan", "a" * 64, "a-b-c-d"]
BAD = ["", "A", "Fix", "fix_login", "fix login", "-fix", "fix-", "fix--login", "a" * 65, "../x", "x/y",
       ".hidden", "fix\n", "fix\r", "\nfix", "ﬁx", "fix\u00e9", "fix;rm", "$(x)", "complete", "x.md", "١٢"]


@pytest.mark.parametrize("value", GOOD)
def test_good_names(value: str) -> None:
    assert TaskName.of(value) == value
    assert LoopName.of(value) == value


@pytest.mark.parametrize("value", BAD)
def test_bad_names_raise_bad_input_naming_the_kind(value: str) -> None:
    for kind, cls in (("task", TaskName), ("loop", LoopName)):
        with pytest.raises(BadInput) as err:
            cls.of(value)  # type: ignore[attr-defined]
        assert err.value.code == ExitCode.BAD_INPUT
        assert kind in err.value.message
        assert "\n" not in err.value.message


def test_task_ref_parses_name_and_sub_task() -> None:
    assert TaskRef.parse("fix") == TaskRef(TaskName("fix"))
    ref = TaskRef.parse("parent/sub")
    assert ref.parent == "parent" and ref.name == "sub"
    assert str(ref) == "parent/sub" and str(TaskRef.parse("fix")) == "fix"


@pytest.mark.parametrize("value", ["", "a/b/c", "/a", "a/", "../a", "a/..", "a\\b", "a//b", "A/b"])
def test_task_ref_rejects(value: str) -> None:
    with pytest.raises(BadInput):
        TaskRef.parse(value)
