"""Names vulture reports as unused that are used, each with the reason (`make lint` runs
`vulture` with the settings in pyproject.toml [tool.vulture]; this file is one of its paths).

Only false positives belong here: code that is truly dead is deleted instead."""

# Parameters a protocol fixes: argparse.Action.__call__(parser, namespace, values, option_string),
# a signal handler (signum, frame), a context manager's __exit__(exc_type, exc, tb).
option_string  # src/automaton/cli/parser.py
frame  # src/automaton/dashboard/server.py, src/automaton/hooks/__init__.py
tb  # src/automaton/sandbox/pipes.py

# Reached by name through the verb tables: cli/parser.py VERBS ("module:function") and the
# best-effort calls of commands/lifecycle.py and commands/loops.py ("enable_best_effort").
accept_rollback  # src/automaton/cli/verbs_approve.py
dashboard  # src/automaton/cli/verbs_dashboard.py
enable_best_effort  # src/automaton/commands/schedule.py

# Public API the docs name: status_data (README: for scripts and dashboards, commands/loop_status.py);
# read_phase (docs/architecture.md: the strict reader of a task's `.state`, store/tasks.py; the
# CLI's paths read `.state` through load_dir, tests/store/test_tasks.py calls it).
status_data
read_phase

# Fields of typed records: parsed from a file or returned to callers, read by tests and users.
schema_version  # core/loopconfig.py LoopConfig: loop.json "schema_version"
description  # core/loopconfig.py LoopConfig: loop.json "description"
cleared_lock  # git/commit.py: the stale index.lock a commit removed (tests/git/test_commit.py)
truncated_bytes  # proc.py: output dropped from a long run (tests/test_proc.py)

# Attributes set for the standard library or the kernel, read there, not in Python.
_.__delattr__  # core/record.py: a frozen record refuses `del obj.field`
_.__match_args__  # core/record.py: `match` on a record's fields
_.whitespace  # hooks/shellparse.py: shlex.shlex configuration
_.whitespace_split  # hooks/shellparse.py: shlex.shlex configuration
_.commenters  # hooks/shellparse.py: shlex.shlex configuration
_.allowed_access  # sandbox/landlock.py: struct landlock_path_beneath_attr, read by the kernel
_.parent_fd  # sandbox/landlock.py: struct landlock_path_beneath_attr, read by the kernel

# Named constants of a fixed table, kept whole so each value has its name: git's tree modes
# (git/tree.py), the Landlock access rights (sandbox/rights.py; tests/sandbox/test_plan.py
# checks WRITE grants neither), and the files a task folder holds besides its artifacts
# (core/phases.py; tests/core/test_phases.py checks every file is classified).
REGULAR
MAKE_CHAR
MAKE_BLOCK
NON_ARTIFACTS

ROLLBACK_ACCEPTED  # core/loopstate.py Event: a log's event, read by value (Event(line.event)) and written by commands/rollback.py
# resources/pytest_plugin/automaton_verdicts.py: pytest calls its hooks by name
pytest_configure
pytest_deselected
pytest_collection_finish
pytest_runtest_logreport
pytest_sessionfinish
install_schedule_on  # commands/schedule_remote.py: called by name by cli/verbs_loops.py (`_call`)
publish_caps  # cli/verbs_loops.py (VERBS) and commands/remote_account.py (called by name by `_call`)
claim_remote  # commands/remote_claims.py: called by name by cli/verbs_loops.py (`_call`)
_.ignore_aliases  # schedulers/remote.py: a PyYAML Dumper hook, called by the library
