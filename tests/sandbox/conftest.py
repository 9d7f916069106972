"""Shared set-up of the kernel sandbox tests: a writable folder, files beside it, a hidden key,
and a probe that runs Python attempts in a sandboxed child and reports each outcome."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from automaton.core.record import replace
from automaton.core.sandbox import Policy
from automaton.sandbox import preexec
from automaton.sandbox.agents import own_install, program_paths

PRELUDE = textwrap.dedent("""\
    import errno, json, os, signal, socket, subprocess, sys
    def t(name, fn):
        try:
            fn()
            out = "ok"
        except OSError as exc:
            out = errno.errorcode.get(exc.errno, str(exc.errno))
        print(json.dumps({name: out}), flush=True)
    def write(path, text="pwned", mode="w"):
        with open(path, mode) as fh:
            fh.write(text)
    def read(path):
        with open(path, "rb") as fh:
            return fh.read()
    """)


@dataclass(frozen=True)
class Box:
    """root/work (writable, the temp dir too), root/outside.txt and root/home/.config/
    {automaton/key (hidden), other.conf}."""

    root: Path
    work: Path
    outside: Path
    key: Path
    sibling: Path

    def policy(self, **over: object) -> Policy:
        fields: dict[str, object] = {"writable": (self.work,), "hidden": (self.key.parent,),
                                     "tmpdir": self.work, "label": "test box"}
        fields.update(over)
        return Policy(**fields)  # type: ignore[arg-type]


@pytest.fixture
def box(tmp_path: Path) -> Box:
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("original")
    key = tmp_path / "home" / ".config" / "automaton" / "key"
    key.parent.mkdir(parents=True)
    key.write_text("secret")
    sibling = key.parent.parent / "other.conf"
    sibling.write_text("visible")
    return Box(tmp_path, work, outside, key, sibling)


def probe(policy: Policy, body: str, cwd: Path, *, namespaces: bool = False) -> dict[str, str]:
    """Run PRELUDE + `body` (calls of `t(name, fn)`) in a child confined to `policy`;
    name -> "ok" or the errno name. Fails the test when the child itself fails.
    `namespaces`: the namespace layer too (default: Landlock alone, the layer under test)."""
    argv = [sys.executable, "-c", PRELUDE + textwrap.dedent(body)]
    if namespaces:  # the interpreter and its venv stay visible, as `launch.prepare` keeps them
        policy = replace(policy, visible=(*policy.visible, *program_paths(argv, cwd), *own_install()))
    done = subprocess.run(argv, cwd=cwd,
                          preexec_fn=preexec(policy, use_namespaces=namespaces), capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    results: dict[str, str] = {}
    for line in done.stdout.splitlines():
        results.update(json.loads(line))
    return results
