"""A reader that stops reading (`automaton … | head -1`) ends the output, never the work.

Python ignores SIGPIPE, so a write to a closed pipe raises BrokenPipeError (EPIPE); left alone
it turns a finished command into a traceback and exit 1, and the interpreter's own flush at
exit prints "Exception ignored" and exits 120. Both edges (`automaton`, `automaton-loop`)
print only after their work is done, so a closed pipe there changes nothing but the output.
The same holds for any other failed write of output (EIO of a closed terminal, a full disk under
`> file`): the output is lost, the work and its exit status stand. Imported only where a write
failed: the hook path never loads it.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO


def silence(*only: TextIO) -> None:
    """Point `only` (default: stdout and stderr) at the null device, so that nothing printed
    later (and the interpreter's flush at exit) fails again. A stream with no file descriptor
    (a test's StringIO) is left as it is."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for stream in only or (sys.stdout, sys.stderr):
            try:
                os.dup2(devnull, stream.fileno())
            except (OSError, ValueError, AttributeError):
                continue
    finally:
        os.close(devnull)

