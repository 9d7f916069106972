"""`--doctor` on a verifier that cannot score: its exit status and last output lines, and the
Python the template's verifier runs under cron checked for the modules it needs."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.store.layout import Project
from tests.commands.test_doctor import checks, healthy
from tests.helpers import approve_first, git, run_cli


@pytest.fixture
def agent(fake_bin: Callable[[str, str], Path]) -> Path:
    return fake_bin("my-agent", "print('ok')\n")


def test_a_failing_verifier_shows_its_exit_status_and_cause(project: Path, agent: Path) -> None:
    verify = {"command": [sys.executable, "-c", "import no_such_module_xyz"], "score": "summary"}
    p = healthy(project, roles={"implement": {"prompt": "implement.md"}, "verify": verify,
                                "orchestrate": {"builtin": True}})
    [found] = checks(p)["verify"]
    assert found["level"] == "problem"
    assert "exited 1 with no score" in found["message"]
    assert "No module named 'no_such_module_xyz'" in found["message"]
    assert found["fix"].startswith(f"install no_such_module_xyz for the Python that runs it ({sys.executable} -m pip")
    assert "roles.verify.score" not in found["fix"]


def test_a_verifier_that_fails_for_another_reason_is_told_to_fix_it(project: Path, agent: Path) -> None:
    verify = {"command": [sys.executable, "-c", "import sys; sys.exit('config file broken')"], "score": "summary"}
    p = healthy(project, roles={"implement": {"prompt": "implement.md"}, "verify": verify,
                                "orchestrate": {"builtin": True}})
    [found] = checks(p)["verify"]
    assert "exited 1" in found["message"] and "config file broken" in found["message"]
    assert "fix what it says" in found["fix"]


def _from_template(project: Path, python: Path | str) -> tuple[Project, Any]:
    (project / "tests").mkdir(exist_ok=True)
    (project / "tests" / "test_a.py").write_text("def test_a():\n    assert True\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "t")
    made = run_cli("--create-loop", "ci", "--from-template", "ci-triage", "--var", f"python={python}",
                   "--project", str(project))
    assert made.code == 0, made.err
    approve_first(project, "ci")
    return Project(project.resolve()), made


def test_create_loop_says_which_python_runs_the_verifier(project: Path) -> None:
    _, made = _from_template(project, sys.executable)
    assert f"verifier: every tick (under cron too) runs {sys.executable}, which must import pytest" in made.out


def test_doctor_checks_the_verifiers_python_has_its_modules(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p, _ = _from_template(project, sys.executable)
    loop_json = json.loads((p.loop_dir("ci") / "loop.json").read_text())  # type: ignore[arg-type]
    assert loop_json["template"] == "ci-triage"
    [found] = checks(p, "--loop", "ci")["python"]
    assert found["level"] == "ok" and f"{sys.executable}" in found["message"] and "imports pytest" in found["message"]


def test_doctor_names_the_modules_the_verifiers_python_lacks(project: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bin" / "python3-bare"  # a Python with no modules: every probed one is missing
    bare.parent.mkdir()
    bare.write_text(f"#!{sys.executable}\nimport sys\nprint(' '.join(sys.argv[3:]))\n")
    bare.chmod(0o755)
    p, _ = _from_template(project, bare)
    [found] = checks(p, "--loop", "ci")["python"]
    assert found["level"] == "problem" and "cannot import pytest" in found["message"]
    assert found["fix"].startswith(f"{bare} -m pip install pytest")
