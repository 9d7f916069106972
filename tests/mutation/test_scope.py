"""`make mutate`'s scoping names modules, functions and test files that exist (fast: no mutmut run)."""

from __future__ import annotations

import ast
import difflib
import re
from pathlib import Path

import pytest

from tests.mutation.equivalent import EQUIVALENT
from tests.mutation.run import ROOT, _equivalent, _functions, fence, main
from tests.mutation.scope import GROUPS

BRAKES = {"src/automaton/core/gates.py", "src/automaton/core/loopconfig.py", "src/automaton/runner/ledger.py",
          "src/automaton/store/looplog.py", "src/automaton/core/chain.py", "src/automaton/store/chainlog.py",
          "src/automaton/core/digest.py", "src/automaton/hooks/policy.py", "src/automaton/commands/can_edit.py",
          "src/automaton/core/loopstate.py"}


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


def _mutants(module: str) -> dict[str, list[str]]:
    """{function: the diffs of its mutants} that mutmut makes of `module` (scoped as its group
    scopes it), without running a test: mutmut's own mutation and `mutmut show`'s diff."""
    import libcst as cst
    from mutmut.mutation.diff_apply import read_mutant_function, read_original_function
    from mutmut.mutation.file_mutation import mutate_file_contents

    source = (ROOT / module).read_text("utf-8")
    for group in GROUPS:
        for path, keep in group.only:
            source = fence(source, keep) if path == module else source
    mutated = mutate_file_contents(module, source)
    tree = cst.parse_module(mutated.code)
    dotted = module.removeprefix("src/").removesuffix(".py").replace("/", ".")
    out: dict[str, list[str]] = {}
    for name in mutated.mutant_names:
        func = re.sub(r"__mutmut_\d+$", "", name.removeprefix("x_").removeprefix("xǁ")).replace("ǁ", ".")
        pair = [cst.Module([f]).code.strip().split("\n")
                for f in (read_original_function(tree, name), read_mutant_function(tree, name))]
        diff = "\n".join(difflib.unified_diff(*pair, fromfile=module, tofile=module, lineterm=""))
        out.setdefault(func, []).append(f"{dotted}.{name}\n{diff}")
    return out


def test_every_equivalent_entry_matches_a_mutant_mutmut_makes() -> None:
    """An entry names a mutant that exists (module, function and mutated line, as run.py matches
    a survivor): a stale entry, left after the code moved or the test killed it, fails here."""
    by_module: dict[str, dict[str, list[str]]] = {}
    stale = []
    for entry in EQUIVALENT:
        if entry.module not in by_module:
            by_module[entry.module] = _mutants(entry.module)
        named = by_module[entry.module].get(entry.function, [])
        if not any(_equivalent(entry.module, *m.split("\n", 1)) is entry for m in named):
            stale.append(f"{entry.module} {entry.function}: {entry.mutated}")
    assert not stale, "no mutant reads so:\n" + "\n".join(stale)
