"""Harness adapters: one module per agent CLI, a registry name -> module, and their shapes.

A harness turns a `HarnessRequest` (role, prompt, cwd, timeout, sandbox …) into an
`Invocation` (argv, extra env, stdin) and the tool's real output into a `HarnessResult`.
Each adapter module defines `invocation(req)` and `run(req)`; the module itself satisfies
the `Harness` protocol. Adapters import `core` and `proc` only: no store, no runner.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, cast

from automaton.core.errors import BadInput
from automaton.core.sandbox import Policy

# Bytes of each output stream a transcript keeps (`automaton.proc.MAX_BYTES`, not imported: the
# scripted replay process imports this package and starts no processes of its own).
DEFAULT_MAX_OUTPUT_BYTES = 50 * 1024 * 1024


@dataclass(frozen=True)
class HarnessRequest:
    """One role invocation.

    role: "implement" | "verify" | "orchestrate"; prompt: the rendered role prompt;
    cwd: where the agent works (the loop worktree); timeout_s: seconds before the process
    group is stopped; run_dir: the tick folder `runs/<n>/` (transcripts go there as
    `<role>.log`); model/args: from loop.json `harness`; max_usd: the USD cap a harness that
    can stop itself is given (Claude `--max-budget-usd`), None for none; settings_path: the
    agent settings file carrying the automaton hooks (Claude `--settings`), None for none;
    command: loop.json `harness.command` (the `command` harness); loop_dir: the loop folder
    (relative script paths of the `scripted` harness); iteration: the tick number (1-based);
    env: automaton's own variables for the agent (AUTOMATON_LOOP, AUTOMATON_ITERATION, the
    leftovers marker …), set on top of the inherited environment that `_env.environment`
    cleans; sandbox: the kernel sandbox policy the agent process (and everything it starts)
    is confined to, None to run it unconfined; max_output_bytes: bytes of stdout (and of
    stderr) kept in the transcript files, the last ones (loop.json `harness.max_output_mb`).
    """

    role: str
    prompt: str
    cwd: Path
    timeout_s: float
    run_dir: Path
    model: str | None = None
    args: tuple[str, ...] = ()
    max_usd: float | None = None
    settings_path: Path | None = None
    command: tuple[str, ...] | None = None
    loop_dir: Path | None = None
    iteration: int = 1
    env: Mapping[str, str] = field(default_factory=dict)
    sandbox: Policy | None = None
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES

    @property
    def transcript(self) -> Path:
        """The file the harness's stdout is streamed to: `run_dir/<role>.log`."""
        return self.run_dir / f"{self.role}.log"


@dataclass(frozen=True)
class Invocation:
    """What would run: `argv`, extra `env` on top of the runner's, `stdin` text (or None)."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    stdin: str | None = None


@dataclass(frozen=True)
class UsageLimit:
    """The agent's account hit a usage or rate limit: the provider refused the work, so the
    tick is put off rather than judged (see `automaton.runner.deferral`).

    message: the agent's own line saying so (one line, at most 300 characters); reset_epoch:
    when the agent said the limit resets, as UTC epoch seconds, or None when it gave no time
    that could be read (the runner then backs off; an unreadable time is never "no limit").
    Each adapter's parser sets it from its CLI's documented or reported shapes (`_limits`).
    """

    message: str
    reset_epoch: float | None = None


@dataclass(frozen=True)
class HarnessResult:
    """What a role run produced.

    exit_status: the process exit code (-N: killed by signal N); final_text: the agent's
    last message; cost_usd: USD, None when the tool does not say (the tick then counts
    max_tick_usd, never $0); tokens: counts by kind (input, output, …); error: one line when
    the tool reported a failure (even with exit 0), else None; timed_out: the process group
    was stopped at the timeout; duration_s: seconds; unavailable: one line (why, and the fix)
    when the agent could not start here at all (not found, not executable, refused by the
    sandbox, not logged in, nested in another session), else None. An unavailable run did
    no work: the runner halts the loop for a human instead of charging a tick. usage_limit:
    the account's usage or rate limit stopped the run (`UsageLimit`), else None.
    """

    exit_status: int
    final_text: str
    cost_usd: float | None
    tokens: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    unavailable: str | None = None
    usage_limit: UsageLimit | None = None


class Harness(Protocol):
    """An adapter module: `invocation` (for dry-run and for `run`) and `run`."""

    def invocation(self, req: HarnessRequest) -> Invocation: ...

    def run(self, req: HarnessRequest) -> HarnessResult: ...


REGISTRY: dict[str, str] = {
    "claude": "automaton.harnesses.claude",
    "codex": "automaton.harnesses.codex",
    "gemini": "automaton.harnesses.gemini",
    "aider": "automaton.harnesses.aider",
    "opencode": "automaton.harnesses.opencode",
    "command": "automaton.harnesses.command",
    "scripted": "automaton.harnesses.scripted",
}


# Harnesses whose agent runs no automaton hook in the mode a tick uses. Codex: project hooks
# load only from a `.codex/` layer the user trusted, and a loop worktree is a new, untrusted
# path (Codex hooks docs, "trust gate"). The others have no hook protocol automaton installs.
# Claude gets the hook through `--settings`, and its subagents' tool calls fire it too
# (Claude Code hooks reference), so it is not listed. Here, beside the registry, because both
# a tick (`runner.confine.warnings`) and `--doctor` say it.
HOOKLESS: dict[str, str] = {
    "codex": "codex exec does not run project hooks from an untrusted .codex/ (a loop worktree is one)",
    "gemini": "gemini -p gets no automaton hook in a loop tick",
    "aider": "aider has no pre-edit hook",
    "opencode": "opencode run in a loop worktree gets automaton's plugin only where the project commits it",
    "command": "a command harness runs no hook",
}


def hook_notes(harness: str) -> str | None:
    """One line for --doctor and the tick's record: why the hooks do not hold for `harness`."""
    why = HOOKLESS.get(harness)
    return f"{why}; the kernel sandbox is what holds" if why else None


def get(name: str) -> Harness:
    """The adapter named `name`; BadInput (exit 2) naming the known ones otherwise."""
    module = REGISTRY.get(name)
    if module is None:
        known = ", ".join(sorted(REGISTRY))
        raise BadInput(f"unknown harness {name!r} in loop.json harness.name: use one of {known}")
    return cast(Harness, importlib.import_module(module))
