"""The give-up path of a tick: another tick of the loop holds its lock.

Shared by `runner.tick.tick` and by `runner.cli`, which takes the tick lock before it imports
the runner (harnesses, gates, git, the sandbox) and holds it through the tick: when twenty
ticks of one loop start at once, nineteen give up, and each of them should cost an
interpreter start and a log line, not the runner's imports (bench/bench_race.py).
"""

from __future__ import annotations

from contextlib import ExitStack, contextmanager

from automaton.core.errors import ExitCode
from automaton.core.loopstate import Event, LogEvent
from automaton.core.outcome import Outcome
from automaton.runner.progress import Progress
from automaton.store import loops as store
from automaton.store.layout import Project
from automaton.store.locks import Busy, locked

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


def skipped(project: Project, name: str, progress: Progress) -> Outcome:
    """Log `SKIPPED reason=busy` and say so: exit 0, data {ran: false, skipped: "busy"}."""
    store.log_event(project, name, LogEvent(Event.SKIPPED, {"reason": "busy"}))
    progress.note(f"loop {name}: another tick is running; skipped")
    return Outcome(ExitCode.OK, [f"tick skipped: another tick of loop {name} is running"],
                   {"ran": False, "skipped": "busy"})


@contextmanager
def tick_lock(project: Project, name: str, progress: Progress) -> Iterator[Outcome | None]:
    """Hold loop `name`'s tick lock for the block, which gets None; when another tick holds it,
    the block gets the give-up Outcome (`skipped`) instead. BadInput for an unknown or
    untracked loop."""
    store.require_tracked(project, name)
    with ExitStack() as stack:
        try:
            stack.enter_context(locked(store.tick_lock_path(project, name), timeout_s=0))
        except Busy:
            yield skipped(project, name, progress)
            return
        yield None
