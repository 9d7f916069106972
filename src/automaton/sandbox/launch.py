"""How a command starts under a policy: the argv and preexec_fn it needs, and its environment.

Used by `proc.run_streaming`. Every way it can fail yields a one-line reason instead, and the
command must then not start at all: an agent is never run unconfined because its sandbox
could not be built.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from automaton.core.errors import one_line
from automaton.core.sandbox import Policy
from automaton.sandbox import Confinement, SandboxError, available, preexec, wrap_argv
from automaton.sandbox.agents import own_install, program_paths


@dataclass(frozen=True)
class Launch:
    """`argv` to start (prefixed by sandbox-exec on macOS) and `preexec_fn` (namespaces, where
    they work, then Landlock on Linux, to be closed once Popen returned; None on macOS)."""

    argv: list[str]
    preexec_fn: Confinement | None


def prepare(policy: Policy, argv: list[str], cwd: Path | None = None) -> Launch | str:
    """The launch of non-empty `argv` confined to `policy` (creating its temp dir, mode
    0700), or the one-line reason it cannot be: `sandbox unavailable: …` when this machine
    has no sandbox (or no namespaces, unless the policy's isolation is "landlock-only"),
    `sandbox failed: …` when this policy cannot be enforced. `cwd`: the child's working
    directory (None: this process's). That folder and the program's own (`agents.program_paths`:
    the folder of `argv[0]`, and its virtual environment) stay visible in the namespace,
    read-only unless writable, even where they lie in `/tmp`: the runner chose them, and a
    process cannot start in a folder, or from a program, it cannot see. So does automaton's
    own install (`agents.own_install`), which the agent's hooks run from."""
    policy = replace(policy, visible=(*policy.visible, *program_paths(argv, cwd), *own_install()))
    found = available()
    if not found.ok:
        return one_line(f"sandbox unavailable: {found.detail}; {argv[0]} not run")
    if not found.isolated and policy.isolation != "landlock-only":
        return one_line(f"sandbox unavailable: {found.isolation_detail}; {argv[0]} not run")
    try:
        if policy.tmpdir is not None:
            policy.tmpdir.mkdir(mode=0o700, parents=True, exist_ok=True)
        if found.mechanism == "seatbelt":
            return Launch(wrap_argv(policy, argv), None)
        return Launch(argv, preexec(policy))
    except SandboxError as exc:
        return one_line(f"sandbox failed: {exc.message}; {argv[0]} not run")
    except OSError as exc:
        return one_line(f"sandbox failed: cannot create the temp dir {policy.tmpdir} ({exc.strerror});"
                        f" {argv[0]} not run")


def child_env(env: Mapping[str, str] | None, policy: Policy | None) -> dict[str, str] | None:
    """The child's environment: `env` (None: inherit this process's), with TMPDIR, TMP and
    TEMP set to the policy's temp dir when it has one."""
    if policy is None or policy.tmpdir is None:
        return dict(env) if env is not None else None
    out = dict(os.environ if env is None else env)
    out.update(TMPDIR=str(policy.tmpdir), TMP=str(policy.tmpdir), TEMP=str(policy.tmpdir))
    return out
