"""The human acts of the dashboard, each through the CLI's own use case (`commands/`).

Each takes the Human the server established at start (`commands.human.Human`, logged
`by=<OS user> via=dashboard`) and returns the use case's Outcome; a refusal is the use case's
Refused / BadInput, and then nothing changed. The caller has checked the session and the CSRF
token first.
"""

from __future__ import annotations

from automaton.commands import lifecycle
from automaton.commands import loops as loop_cases
from automaton.commands import tasks as task_cases
from automaton.commands.human import Human
from automaton.commands.reviews import Review
from automaton.core.outcome import Outcome
from automaton.store.layout import Project


def review(project: Project, loop: str, human: Human | None) -> Review:
    """What approving `loop` would seal: `review_loop` for a human (between ticks, with the
    loop's locks), `preview_loop` for a read-only viewer (no lock, nothing written)."""
    if human is None:
        return loop_cases.preview_loop(project, loop)
    return loop_cases.review_loop(project, loop, human=human)


def approve_loop(project: Project, loop: str, human: Human, seen: str) -> Outcome:
    """Approve `loop`, bound to the review whose `seen` line the human was shown: refused
    (exit 1, nothing changed) when its loop.json or its halt is no longer what was shown."""
    return loop_cases.approve_loop(project, loop, reviewed=Review("loop.json", seen), human=human)


def pause_loop(project: Project, loop: str, human: Human) -> Outcome:
    return loop_cases.pause_loop(project, loop, human=human)


def resume_loop(project: Project, loop: str, human: Human) -> Outcome:
    return loop_cases.resume_loop(project, loop, human=human)


def rearm_loop(project: Project, loop: str, human: Human) -> Outcome:
    """`--rearm-loop`: a complete loop runs again with a fresh allowance (refused otherwise)."""
    return lifecycle.rearm_loop(project, loop, human=human)


def sign_off(project: Project, task: str, human: Human, phase: str, sha256: str) -> Outcome:
    """`--approve --task`, bound to the phase and artifact sha256 the human was shown."""
    return task_cases.approve(project, task, human=human, seen=(phase, sha256))
