"""`automaton claude …` (and codex, gemini, opencode, aider) is `automaton --sandbox -- claude …`;
any other bare first word stays a usage error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from automaton.cli.verbs_sandbox import AGENT_WORDS, short_form
from automaton.sandbox import available
from automaton.store import key
from tests.helpers import run_cli, run_exe

# A fake agent CLI: prints its argv, AUTOMATON_SANDBOX, and whether it could read the record key
# (the kernel sandbox hides the key's folder). It writes nothing: inside the sandbox it could not.
FAKE_AGENT = """#!{python}
import json, os, sys
path = os.path.expanduser("~/.config/automaton/key")
try:
    open(path, "rb").close()
    key = "readable"
except PermissionError:
    key = "hidden"
except FileNotFoundError:
    key = "missing"
print(json.dumps({{"argv": sys.argv[1:], "sandbox": os.environ.get("AUTOMATON_SANDBOX"), "key": key}}))
"""


def fake_agent(tmp_path: Path, name: str) -> dict[str, str]:
    """An environment with a fake `name` first on PATH (in a folder the sandbox leaves readable)."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / name
    exe.write_text(FAKE_AGENT.format(python=sys.executable))
    exe.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


def test_short_form_spells_out_the_sandbox_wrapper() -> None:
    assert short_form(["claude", "-p", "hi"]) == ["--sandbox", "--", "claude", "-p", "hi"]
    for agent in ("codex", "gemini", "opencode", "aider"):
        assert agent in AGENT_WORDS
        assert short_form([agent]) == ["--sandbox", "--", agent]
    assert short_form(["--status"]) == ["--status"]
    assert short_form(["claudex"]) == ["claudex"]
    assert short_form([]) == []


def test_another_bare_word_is_still_a_usage_error(project: Path) -> None:
    done = run_cli("bash", "-c", "true", cwd=project)
    assert done.code == 2
    assert "unrecognized arguments" in done.err


@pytest.mark.skipif(not (available().ok and available().isolated), reason="needs the kernel sandbox with namespaces")
@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_automaton_agent_runs_it_in_the_sandbox(project: Path, tmp_path: Path, agent: str) -> None:
    key.load_key(create=True)  # the key exists: outside the sandbox the fake can read it
    env = fake_agent(tmp_path, agent)
    bare = subprocess.run([agent, "--print", "x y"], cwd=project, env=env, capture_output=True, text=True,
                          timeout=60, check=True)  # not through automaton
    assert json.loads(bare.stdout) == {"argv": ["--print", "x y"], "sandbox": None, "key": "readable"}
    done = run_exe("automaton", agent, "--print", "x y", cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"argv": ["--print", "x y"], "sandbox": "1", "key": "hidden"}
    assert "automaton --sandbox: session" in done.stderr
