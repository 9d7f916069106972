"""docs/adding-a-harness.md, followed to the letter: the adapter module is taken from the page,
registered as the page says, and one real tick runs with it (real git, the kernel sandbox
where this machine has one, a real process for the agent)."""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from pathlib import Path

import pytest

from automaton import harnesses
from tests.helpers import run_cli

DOC = Path(__file__).resolve().parents[2] / "docs" / "adding-a-harness.md"
MODULE = "acme_harness_from_doc"  # the page's src/automaton/harnesses/acme.py, under a test-only name
COST = 0.0425


def page() -> str:
    return DOC.read_text(encoding="utf-8")


def adapter_source() -> str:
    """The one python block of the page that defines the adapter (`def run(`)."""
    blocks = re.findall(r"```python\n(.*?)```", page(), flags=re.DOTALL)
    found = [b for b in blocks if "def invocation(" in b and "def run(" in b]
    assert len(found) == 1, "the page must hold exactly one adapter module"
    return found[0]


def registry_entry() -> tuple[str, str]:
    """The `"name": "module"` line the page adds to REGISTRY."""
    found = re.search(r'```python\n\s*"([a-z0-9][a-z0-9_-]*)": "([\w.]+)",\n```', page())
    assert found, "the page must show the REGISTRY line"
    return found.group(1), found.group(2)


def harness_block() -> dict[str, object]:
    """The `"harness": {…}` fragment of loop.json the page shows."""
    found = re.search(r'```json\n"harness": (\{.*?\})\n```', page(), flags=re.DOTALL)
    assert found, "the page must show the loop.json harness block"
    block: dict[str, object] = json.loads(found.group(1))
    return block


def fake_acme(bin_dir: Path) -> None:
    """`acme` as the page describes it: prompt on stdin, works in its cwd, JSON lines out.
    It does the agent's job (the verify command below reads src/score.txt) and writes only
    in its working directory, as an agent in the sandbox may."""
    bin_dir.mkdir()
    exe = bin_dir / "acme"
    exe.write_text(f"#!{sys.executable}\n" + textwrap.dedent(f"""\
        import json, pathlib, sys
        prompt = sys.stdin.read()
        assert sys.argv[1:3] == ["run", "--json"], sys.argv
        pathlib.Path("src").mkdir(exist_ok=True)
        pathlib.Path("src/score.txt").write_text("1 passed\\n")
        print("acme 1.0 starting")  # a banner: not JSON, skipped
        print(json.dumps({{"type": "step", "text": "editing"}}))
        print(json.dumps({{"type": "result", "text": "fixed: " + str(len(prompt)) + " chars read",
                           "cost_usd": {COST}}}))
        """))
    exe.chmod(0o755)


def test_the_harness_page_is_enough_to_run_a_tick(project: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from automaton.sandbox import available

    # Step 1: the module, exactly as the page prints it.
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / f"{MODULE}.py").write_text(adapter_source(), encoding="utf-8")
    # Step 2: registered the way the page says a test does it.
    name, module = registry_entry()
    assert (name, module) == ("acme", "automaton.harnesses.acme")
    monkeypatch.syspath_prepend(str(pkg))
    monkeypatch.setitem(harnesses.REGISTRY, name, MODULE)
    # The CLI the adapter runs, on PATH.
    fake_acme(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")

    # Step 3: a loop whose loop.json uses the page's harness block.
    harness = {**harness_block(), "timeout_s": 60}
    assert harness["name"] == name
    tpl = project / ".automaton" / "templates" / "loops" / "acme-fix"
    tpl.mkdir(parents=True)
    (tpl / "implement.md").write_text("Make the tests pass.\n")
    (tpl / "loop.json").write_text(json.dumps({
        "schema_version": 1, "name": "x", "template": "acme-fix", "description": "doc walkthrough", "task": None,
        "harness": harness,
        "roles": {"implement": {"prompt": "implement.md"},
                  "verify": {"command": [sys.executable, "-c", "print(open('src/score.txt').read())"],
                             "score": "summary"},
                  "orchestrate": {"builtin": True}},
        "brakes": {"max_iterations": 3, "max_budget_usd": 5.0, "max_tick_usd": 1.0,
                   "score_plateau_window": 3, "plateau_epsilon": 0.0, "target_score": 1.0},
        "blast_radius": {"use_worktree": True, "file_scope": ["src/**"], "base_branch": None},
        "schedule": {"interval_seconds": 900},
        "sandbox": "on" if available().ok else "off",
    }))
    root = str(project)
    made = run_cli("--create-loop", "fix", "--from-template", "acme-fix", "--project", root)
    assert made.code == 0, made.err
    # A loop from a project template starts halted until a human approves the whole loop.json.
    monkeypatch.setenv("AUTOMATON_APPROVER", "alice")
    first = run_cli("--approve", "--loop", "fix", "--yes", "--project", root)
    assert first.code == 0, first.err

    # The dry run shows the argv `invocation` builds and runs nothing.
    dry = run_cli("--mode", "dry-run", "--loop", "fix", "--project", root, "--json", entry="automaton-loop")
    assert dry.code == 0, dry.err
    assert dry.json["implement_argv"] == ["acme", "run", "--json"]
    assert not (project / ".automaton" / "loops" / "fix" / "runs").exists()

    # --doctor finds EXECUTABLE on PATH.
    doctor = run_cli("--doctor", "--loop", "fix", "--project", root)
    assert f"harness acme: {tmp_path / 'bin' / 'acme'}" in doctor.out, doctor.out

    # One real tick.
    res = run_cli("--mode", "tick", "--loop", "fix", "--project", root, "--json", "--quiet", entry="automaton-loop")
    assert res.code == 0, res.err
    data = res.json
    assert data["ran"] is True and data["implement"]["error"] is None, data
    assert data["cost_usd"] == pytest.approx(COST) and data["cost_known"] is True
    assert data["verdict"]["score"] == 1.0 and data["status"] == "complete"
    assert data["commit"], "the runner committed the agent's work"
    run_dir = Path(data["run_dir"])
    transcript = (run_dir / "implement.log").read_text()
    assert '"type": "result"' in transcript and "acme 1.0 starting" in transcript
    worktree = Path(data["worktree"])
    assert (worktree / "src" / "score.txt").read_text() == "1 passed\n"


def test_an_unknown_cost_is_none_never_zero() -> None:
    """The page's rule, held by its own `parse`: no readable cost is None."""
    namespace: dict[str, object] = {}
    exec(compile(adapter_source(), str(DOC), "exec"), namespace)  # the page's module, as written
    parse = namespace["parse"]
    assert callable(parse)
    res = parse('{"type": "result", "text": "done"}\n', "", 0)
    assert res.cost_usd is None and res.final_text == "done" and res.error is None
    res = parse('{"type": "result", "text": "x", "cost_usd": "0.5"}\n', "boom", 3)
    assert res.cost_usd is None and res.error is not None and "boom" in res.error
