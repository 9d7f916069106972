"""Which brake module is mutated against which test files (`make mutate`, tests/mutation/run.py).

Each group is one mutmut run: its `modules` are mutated, and each mutant runs only the tests of
`tests` that call the mutated function (mutmut maps tests to functions in a first clean run).
The test lists are kept small on purpose: a group finishes in minutes on two shared cores, and
a test that exercises a brake only through a real tick or a subprocess cannot kill a mutant
anyway (subprocesses import the unmutated code). Paths are relative to the repository root;
tests/mutation/test_scope.py checks that every one exists.
"""

from __future__ import annotations

from typing import NamedTuple


class Group(NamedTuple):
    """One mutmut run: `modules` (source files to mutate) against `tests` (test files).

    `only`: (module, the functions of it that are mutated ("name" or "Class.name")) pairs; a module
    not named here is mutated whole. The rest of such a module is fenced off with mutmut's
    `# pragma: no mutate start/end` in the scratch copy only."""

    name: str
    modules: tuple[str, ...]
    tests: tuple[str, ...]
    only: tuple[tuple[str, tuple[str, ...]], ...] = ()
    deselect: tuple[str, ...] = ()  # test ids left out: they run automaton in another interpreter


GROUPS: tuple[Group, ...] = (
    Group("gates",
          ("src/automaton/core/gates.py",),
          ("tests/core/test_gates.py", "tests/core/test_gates_edges.py")),
    Group("loopconfig",
          ("src/automaton/core/loopconfig.py",),
          ("tests/core/test_loopconfig.py", "tests/core/test_loopconfig_bounds.py"),
          # the bounds of the brakes, not the rest of loop.json's parsing
          (("src/automaton/core/loopconfig.py", ("_brakes", "_Reader.number", "_Reader.integer")),)),
    Group("ledger",
          ("src/automaton/runner/ledger.py", "src/automaton/store/looplog.py", "src/automaton/core/loopstate.py"),
          ("tests/store/test_loops.py", "tests/runner/test_ledger_edges.py", "tests/store/test_looplog_edges.py",
           "tests/core/test_loopstate.py", "tests/store/test_checkpoint.py"),
          # the counters and the checks on them (the fold continued from a checkpoint included), not the
          # folder listing; the typed state's money and the transitions that move its counters
          (("src/automaton/store/looplog.py", ("_number", "counters", "with_counters", "logged_counters", "_is_reseal",
                                               "log_finding", "_restored", "_fold", "_give_back", "state_below_log",
                                               "rebuilt_state", "untampered_counters")),
           ("src/automaton/core/loopstate.py", ("usd_to_micro", "micro_to_usd", "reserve", "settle", "defer", "halt",
                                                "approve", "rearm", "reseal")))),
    Group("keyed-log",
          ("src/automaton/core/chain.py", "src/automaton/store/chainlog.py", "src/automaton/core/digest.py"),
          ("tests/core/test_chain.py", "tests/core/test_chain_edges.py", "tests/core/test_chain_lines.py",
           "tests/core/test_digest.py",
           "tests/core/test_digest_hmac_keys.py", "tests/store/test_atomic.py", "tests/store/test_anchor.py",
           "tests/store/test_key.py", "tests/store/test_chainlog_edges.py", "tests/store/test_checkpoint.py",
           "tests/store/test_chainlog_replace.py", "tests/store/test_chainlog.py")),
    Group("hook-policy",
          ("src/automaton/hooks/policy.py", "src/automaton/commands/can_edit.py"),
          ("tests/hooks/test_policy.py", "tests/commands/test_can_edit.py", "tests/commands/test_can_edit_config.py",
           "tests/hooks/test_policy_two_loops.py", "tests/hooks/test_policy_wrapped.py",
           "tests/commands/test_can_edit_edges.py"),
          # a project venv's automaton imports the mutated tree without mutmut's trampoline set up
          deselect=("tests/hooks/test_policy.py::test_the_hook_denies_automatons_own_venv_in_the_project",)),
)
