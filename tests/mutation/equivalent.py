"""Surviving mutants that cannot change a brake's answer, each with the reason (`make mutate`).

An entry matches a survivor by its module, its function and the mutated line as mutmut shows
it (the `+` line of `mutmut show`, stripped). A survivor that changes what a brake allows,
halts or counts never belongs here: it gets a test that kills it.
"""

from __future__ import annotations

from typing import NamedTuple


class Equivalent(NamedTuple):
    """A survivor that changes no brake's answer: `module` (repo path), `function`, `mutated`
    (the mutant's line), `why` (one line)."""

    module: str
    function: str
    mutated: str
    why: str


EQUIVALENT: tuple[Equivalent, ...] = ()
