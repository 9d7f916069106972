"""`make mutate`'s scoping names modules, functions and test files that exist (fast: no mutmut run)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.mutation.equivalent import EQUIVALENT
from tests.mutation.run import ROOT, _functions, fence, main
from tests.mutation.scope import GROUPS

BRAKES = {"src/automaton/core/gates.py", "src/automaton/core/loopconfig.py", "src/automaton/runner/ledger.py",
          "src/automaton/store/looplog.py", "src/automaton/core/chain.py", "src/automaton/store/chainlog.py",
          "src/automaton/core/digest.py", "src/automaton/hooks/policy.py", "src/automaton/commands/can_edit.py"}


def test_every_brake_module_is_mutated_once() -> None:
    modules = [m for g in GROUPS for m in g.modules]
    assert sorted(modules) == sorted(BRAKES)
    assert len({g.name for g in GROUPS}) == len(GROUPS)


@pytest.mark.parametrize("group", GROUPS, ids=[g.name for g in GROUPS])
def test_a_group_names_files_that_exist_and_tests_that_pytest_collects(group: object) -> None:
    modules, tests, only = group.modules, group.tests, group.only  # type: ignore[attr-defined]
    for path in (*modules, *tests):
        assert (ROOT / path).is_file(), path
    for test in tests:
        assert re.fullmatch(r"tests/(\w+/)*test_\w+\.py", test), test
        assert any(isinstance(n, ast.FunctionDef) and n.name.startswith("test_")
                   for n in ast.parse((ROOT / test).read_text()).body), f"{test} holds no test"
    for test_id in group.deselect:  # type: ignore[attr-defined]
        path, _, name = test_id.partition("::")
        assert path in tests and f"def {name}(" in (ROOT / path).read_text(), test_id
    for module, keep in only:
        assert module in modules
        names = {name for name, _ in _functions(ast.parse((ROOT / module).read_text()))}
        assert set(keep) <= names, (module, set(keep) - names)


def test_fence_keeps_the_named_functions_and_parses() -> None:
    source = ("def a():\n    return 1\n\n\nclass C:\n    def m(self):\n        return 2\n\n"
              "    def n(\n        self,\n    ):  # a comment\n        # another\n        return 3\n")
    fenced = fence(source, ("C.m",))
    ast.parse(fenced)
    lines = fenced.splitlines()
    assert lines[0] == "def a():  # pragma: no mutate block"
    assert "    def m(self):" in lines  # C.m is mutated
    assert "    ):  # a comment  # pragma: no mutate block" in lines  # C.n is not
    with pytest.raises(ValueError, match="no function 'gone'"):
        fence(source, ("gone",))


def test_every_equivalent_mutant_names_a_function_of_a_mutated_module() -> None:
    for entry in EQUIVALENT:
        assert entry.module in BRAKES, entry
        names = {name for name, _ in _functions(ast.parse((ROOT / entry.module).read_text()))}
        assert entry.function in names, entry
        assert entry.mutated and entry.why and "\n" not in entry.why, entry


def test_bad_arguments_exit_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no-such-group"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown group 'no-such-group'" in err
    assert main(["gates", "ledger", "--tests", "tests/core/test_gates.py"]) == 2
    assert main(["gates", "--tests", "tests/core/test_no_such_file.py"]) == 2
    assert "tests/core/test_no_such_file.py (group gates) does not exist" in capsys.readouterr().err


def test_the_makefile_runs_it_outside_make_test() -> None:
    make = (ROOT / "Makefile").read_text()
    assert re.search(r"^mutate:.*\n\t\$\(BIN\)/python -m tests\.mutation\.run", make, re.M)
    test_rule = re.search(r"^test:.*$", make, re.M)
    assert test_rule is not None and "mutate" not in test_rule.group(0)
    assert Path(ROOT / "tests/mutation/run.py").is_file()
