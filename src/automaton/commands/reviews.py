"""What a human sees before an approval that seals a file: the sealed copy against the file now.

An approval that re-seals loop.json or `.automaton/config.json` first returns a Review: the
CLI shows it and, when something new would be sealed, asks the human (or takes `--yes`). The
approval is then bound to what was shown: it is refused when the file (or the halt) is no
longer what the Review saw. Use cases never print or read a terminal themselves.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

NO_SEALED_COPY = "no sealed copy; showing the new file"


@dataclass(frozen=True)
class Review:
    """What a human is asked to approve.

    `subject`: the file's name for the question ("loop.json", "config.json"). `lines`: what to
    show (a status line, then `diff`; may be empty). `diff`: a unified diff of the sealed copy
    against the file now ([] when nothing new would be sealed). `ask`: whether the approval
    needs the human's yes. `seen`: the facts the approval is bound to (one opaque line).
    `unseen`: no human has approved the file yet (a loop's first approval); then `whole` holds
    every line of the file to be sealed (also shown in `lines`), else [].
    """

    subject: str
    seen: str
    ask: bool = False
    lines: list[str] = field(default_factory=list)
    diff: list[str] = field(default_factory=list)
    unseen: bool = False
    whole: list[str] = field(default_factory=list)

    @property
    def question(self) -> str:
        return f"Approve this {self.subject}? [y/N]"


def _lines(data: bytes | None) -> list[str]:
    # Split on "\n" only: a "\r" or other control character stays inside its line, where the
    # CLI shows it escaped, instead of silently starting a line of its own.
    if not data:
        return []
    text = data.decode("utf-8", "replace")
    return text.removesuffix("\n").split("\n")


def diff_lines(sealed: bytes | None, new: bytes | None, sealed_name: str, new_name: str) -> list[str]:
    """A unified diff (difflib, 3 lines of context) from `sealed` to `new`, one str per line
    without line ends. `sealed` None (no sealed copy, or one that is not the sealed file): the
    line NO_SEALED_COPY, then the whole new file as added lines. `new` None: the file was
    removed (every sealed line removed). [] when both are equal."""
    head = [NO_SEALED_COPY] if sealed is None and new is not None else []
    body = list(difflib.unified_diff(_lines(sealed), _lines(new), sealed_name if sealed is not None else "/dev/null",
                                     new_name if new is not None else "/dev/null", lineterm=""))
    return head + body if body else []
