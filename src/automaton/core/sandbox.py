"""What a sandboxed process may touch: the writable set, the hidden set, its private temp dir.

Pure data: `automaton.sandbox` turns a `Policy` into kernel rules (Landlock on Linux, a
Seatbelt profile on macOS). Everything not named here is read-only to the sandboxed process.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Policy:
    """writable: absolute paths (directories: everything beneath them; files: that file) the
    process may create, write, truncate, rename and delete in; hidden: absolute paths it may
    neither read nor write (e.g. `~/.config/automaton`, where the record key lives); tmpdir:
    its private temp directory (exported as TMPDIR; must also be in `writable`); label: a
    short name for messages, e.g. "loop nightly tick 3 implement".

    masked: absolute paths of the user's credential stores (SSH keys, cloud and package-registry
    tokens, shell histories); the process sees each as an empty read-only file or folder where
    a mount namespace is in force, and cannot read it at all where only Landlock is. network:
    False puts the process in a private network namespace with no route out (the verifier:
    tests need none, and the code under test then cannot send anything anywhere). visible:
    absolute paths the process must still read where they lie beneath a folder the sandbox
    replaces with an empty private one (`/tmp`, `/run`, …): the project, the programs it runs.
    isolation: "namespaces" (the process is not started where the namespaces cannot be
    entered) or "landlock-only" (it then runs under Landlock alone; namespaces that work are
    still used)."""

    writable: tuple[Path, ...]
    hidden: tuple[Path, ...] = ()
    tmpdir: Path | None = None
    label: str = "sandbox"
    masked: tuple[Path, ...] = ()
    network: bool = True
    visible: tuple[Path, ...] = ()
    isolation: str = "namespaces"
