"""core.scope: the plain forms answer exactly as pathspec does, and need no pathspec import."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys

import pathspec
import pytest

from automaton.core.scope import Scope, plain_form

NAMES = ["a", "b", "src", "A", "a.b", ".x", "conftest.py", "é", "a-b_c", "x y", "build", "tests"]
PLAIN = ["**", "a", "/a", "src", "**/conftest.py", "conftest.py", "src/**", "/src/**", "a/b", "/a/b", "a/b/**",
         "tests/**", "a.b", ".x", "**/a", "é", "a-b_c", "/build/**", "src/a/b"]
NOT_PLAIN = ["*.py", "x y", "src/*.py", "a/", "!a", "#a", "\\#a", "a ", " a", "a/**/b", "**/a/b", "/**", "**/", "**/**",
             "a?", "[ab]", "", "a//b", "./a", "a/../b", "a\\b", "src/**/", "\ta"]
PATHS = (["/".join(p) for n in (1, 2, 3) for p in itertools.product(NAMES[:9], repeat=n)]
         + ["", "/a", "a/", "a//b", "./a", "a/./b", "a/../b", "a\\b", " a", "a ", "src/", "/src/a", ".", "..",
            "A/SRC", "x y/a", "tests/x y", "a\tb"])


def pathspec_says(patterns: list[str], path: str) -> bool:
    return bool(pathspec.GitIgnoreSpec.from_lines(patterns).match_file(path))


def test_the_forms_are_told_apart() -> None:
    assert all(plain_form(p) is not None for p in PLAIN)
    assert [p for p in NOT_PLAIN if plain_form(p) is not None] == []


@pytest.mark.parametrize("pattern", PLAIN + NOT_PLAIN)
def test_one_pattern_answers_as_pathspec_for_every_path(pattern: str) -> None:
    scope = Scope([pattern])
    assert [p for p in PATHS if scope.match_file(p) != pathspec_says([pattern], p)] == []


def test_pattern_sets_answer_as_pathspec() -> None:
    """Pairs and triples of plain patterns, and plain sets mixed with a negation or a wildcard
    (those go to pathspec whole)."""
    rng = random.Random(7)
    sets = [list(s) for s in itertools.combinations(PLAIN, 2)]
    sets += [rng.sample(PLAIN, 3) for _ in range(60)]
    sets += [[*rng.sample(PLAIN, 2), rng.choice(["!a/b", "!src/a", "*.py", "!conftest.py"])] for _ in range(60)]
    paths = rng.sample(PATHS, 250)
    wrong = [(s, p) for s in sets for p in paths if Scope(s).match_file(p) != pathspec_says(s, p)]
    assert wrong == []


def test_a_plain_set_never_imports_pathspec() -> None:
    code = ("import sys; from automaton.core.scope import Scope; s = Scope(['src/**', 'tests/**', 'conftest.py']);"
            " assert s.match_file('src/a.py') and not s.match_file('docs/x.md') and s.match_file('a/conftest.py');"
            " print('pathspec' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_set_pathspec_cannot_read_raises_when_compiled() -> None:
    with pytest.raises((ValueError, TypeError)):
        Scope(["a", "!"]).match_file("a")
    assert Scope(["src/**"]).spec.match_file("src/a")  # the spec of a plain set, on demand


def test_patterns_must_be_a_list_of_strings() -> None:
    """A bare string would be an iterable of one-character patterns (`*` matching everything)."""
    from automaton.git.errors import DriftError
    from automaton.git.protect import protected_spec, split_protected

    for bad in ("src/**", b"src/**", ["src/**", 1]):
        with pytest.raises(TypeError):
            Scope(bad)  # type: ignore[arg-type]
    with pytest.raises(DriftError):
        protected_spec([1])  # type: ignore[list-item]
    with pytest.raises(DriftError):
        split_protected(["src/**", 1])  # type: ignore[list-item]
