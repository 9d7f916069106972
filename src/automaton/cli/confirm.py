"""Show a Review (what an approval would seal) and ask the human at the terminal.

The use cases return the Review and take it back, bound, in the approval (commands/reviews.py);
this module is the only place that prints it and reads the answer.
"""

from __future__ import annotations

import sys
from typing import TextIO

from automaton.cli.render import shown
from automaton.commands.reviews import Review
from automaton.core import streams
from automaton.core.errors import Refused

YES = frozenset({"y", "yes"})


def _terminal() -> bool:
    """Whether stdin is a terminal (the same test `commands.human.require_human` makes)."""
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False


def _show(lines: list[str], out: TextIO) -> bool:
    """Print `lines` on `out`; False when `out` is closed (`automaton --approve … | head -1`),
    which then points at the null device. With `--yes` the human decided without the review, so
    a closed pipe changes nothing; without it, nobody saw what the question is about."""
    try:
        for line in lines:
            print(shown(line), file=out)
        out.flush()
    except BrokenPipeError:
        streams.silence(out)  # the other stream keeps its messages
        return False
    return True


def confirm(review: Review, *, yes: bool, as_json: bool) -> None:
    """Print `review.lines` (on stderr under --json, whose stdout is one JSON object), then,
    when `review.ask`: return on `--yes` (`yes`); at a terminal ask `review.question` and return
    on y/yes (any case); otherwise Refused (exit 1, nothing approved): another answer, end of
    input, or no terminal without `--yes` (the one-line message names `--yes`)."""
    out: TextIO = sys.stderr if as_json else sys.stdout
    if not _show(review.lines, out) and review.ask and not yes:
        raise Refused(f"not approved: the review of {review.subject} could not be shown (its output was closed);"
                      " send it to a terminal or a file, or run the command again with --yes")
    if not review.ask or yes:
        return
    if not _terminal():
        what, shown_as = ("a never-approved", "the whole file") if review.unseen else ("a changed", "the diff")
        raise Refused(f"not approved: this approval seals {what} {review.subject} and there is no terminal to ask"
                      f" \"{review.question}\"; review {shown_as} above and run the command again with --yes")
    print(review.question, end=" ", file=out, flush=True)
    answer = sys.stdin.readline()
    if not answer.endswith("\n"):  # end of input: the refusal starts a line of its own
        print(file=out)
    if answer.strip().lower() not in YES:
        raise Refused(f"not approved: {review.subject} was not sealed and nothing was changed")


def confirm_act(lines: list[str], question: str, *, act: str, yes: bool, as_json: bool) -> None:
    """A human act that changes files (`--upgrade-loops`, `--gc-worktrees`): print `lines`
    (stderr under --json), then return on `--yes` or a y/yes typed at the terminal; otherwise
    Refused (exit 1, nothing changed), naming `--yes` when there is no terminal to ask."""
    out: TextIO = sys.stderr if as_json else sys.stdout
    if not _show(lines, out) and not yes:
        raise Refused(f"not done: the lines {act} shows could not be printed (their output was closed);"
                      " send them to a terminal or a file, or run the command again with --yes")
    if yes:
        return
    if not _terminal():
        raise Refused(f"not done: {act} asks \"{question}\" and there is no terminal to ask; review the lines"
                      " above and run the command again with --yes")
    print(question, end=" ", file=out, flush=True)
    answer = sys.stdin.readline()
    if not answer.endswith("\n"):
        print(file=out)
    if answer.strip().lower() not in YES:
        raise Refused(f"not done: {act} was not confirmed and nothing was changed")
