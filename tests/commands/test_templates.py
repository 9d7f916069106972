"""Loop templates: `--list-templates`, the name a template is found by, `{{placeholders}}` and `--var`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from automaton.commands import templates as tpl
from automaton.commands.loops import create_loop
from automaton.core.errors import BadInput
from automaton.store import loops as store
from automaton.store.layout import Project, framework_home
from tests.helpers import run_cli

PACKAGED = ("ci-triage", "coverage-raise", "dependency-upgrade", "flaky-test", "lint-fix", "type-errors")


def test_every_packaged_template_is_listed_with_its_description(project: Path) -> None:
    out = tpl.list_templates(Project(project))
    names = [row["name"] for row in out.data["templates"]]
    assert names == list(PACKAGED)
    assert all(row["source"] == "packaged" and row["description"] for row in out.data["templates"])
    assert out.lines[0].split()[:2] == ["ci-triage", "packaged"]


def test_a_project_template_shadowing_a_packaged_one_is_marked_both_ways(project: Path) -> None:
    copy = project / ".automaton" / "templates" / "loops" / "lint-fix"
    shutil.copytree(framework_home() / "templates" / "loops" / "lint-fix", copy)
    doc = json.loads((copy / "loop.json").read_text())
    doc["description"] = "our own lint loop"
    (copy / "loop.json").write_text(json.dumps(doc))
    (project / ".automaton" / "templates" / "loops" / "nightly-x").mkdir()
    shutil.copy(copy / "loop.json", project / ".automaton" / "templates" / "loops" / "nightly-x" / "loop.json")
    rows = {(r["name"], r["source"]): r for r in tpl.list_templates(Project(project)).data["templates"]}
    assert rows[("lint-fix", "project")]["shadows"] is True
    assert rows[("lint-fix", "packaged")]["shadowed_by_project"] is True
    assert rows[("nightly-x", "project")]["shadows"] is False
    lines = tpl.list_templates(Project(project)).lines
    assert any(line.startswith("lint-fix") and "our own lint loop (shadows the packaged one)" in line for line in lines)
    assert any(line.startswith("lint-fix") and "(shadowed by the project's copy)" in line for line in lines)


def test_list_templates_cli_and_json(project: Path) -> None:
    res = run_cli("--list-templates", "--project", str(project))
    assert res.code == 0 and "flaky-test" in res.out
    res = run_cli("--list-templates", "--json", "--project", str(project))
    assert res.code == 0
    data = json.loads(res.out.strip().splitlines()[-1])
    assert [r["name"] for r in data["templates"]] == list(PACKAGED)


def test_an_unknown_template_names_the_close_ones(project: Path, approver: str) -> None:
    res = run_cli("--create-loop", "x", "--from-template", "lint-fx", "--project", str(project))
    assert res.code == 2
    assert "no loop template 'lint-fx'; did you mean lint-fix?" in res.err
    assert len(res.err.strip().splitlines()) == 1
    assert not (project / ".automaton" / "loops" / "x").exists()


def test_placeholders_are_filled_and_the_scorer_copied(project: Path) -> None:
    venv_python = project / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.write_text("")
    out = create_loop(Project(project), "lint", "lint-fix", variables=["target=lib"])
    assert out.ok, out.lines
    folder = Path(out.data["path"])
    doc = json.loads((folder / "loop.json").read_text())
    # loop.json names the scorer by the loop folder's token, never this machine's path ...
    assert doc["roles"]["verify"]["command"] == [str(venv_python), "{loop_dir}/scorer.py", "lint", "--target", "lib",
                                                 "--suite"]
    # ... which the loop's reader puts back as the folder where this machine keeps the loop
    cfg = store.Loop.resolve(Project(project), "lint").read_config()
    assert cfg.roles.verify.command == [str(venv_python), str(folder / "scorer.py"), "lint", "--target", "lib",
                                        "--suite"]
    assert doc["blast_radius"]["file_scope"] == ["lib/**"]
    assert (folder / "scorer.py").read_bytes() == (framework_home().parent / "resources" / "scorer.py").read_bytes()
    prompt = (folder / "implement.md").read_text()
    assert "{{" not in prompt and f"{venv_python} -m ruff check lib" in prompt
    state = store.read_state(Project(project), "lint")
    assert state.status == "running", state  # packaged: no first approval


def test_python_defaults_to_python3_on_path_as_an_absolute_path(project: Path) -> None:
    out = create_loop(Project(project), "ci", "ci-triage")
    command = json.loads((Path(out.data["path"]) / "loop.json").read_text())["roles"]["verify"]["command"]
    assert Path(command[0]).is_absolute() and Path(command[0]).name.startswith("python")
    assert not (Path(out.data["path"]) / "scorer.py").exists()  # ci-triage runs pytest itself


@pytest.mark.parametrize(("template", "variables", "message"), [
    ("dependency-upgrade", [], "template dependency-upgrade needs --var dependency=VALUE (the distribution"),
    ("lint-fix", ["dependency=x"], "--var dependency: template lint-fix has no such placeholder"),
    ("lint-fix", ["Target=src"], "--var 'Target=src': expected NAME=VALUE"),
    ("lint-fix", ["target"], "--var 'target': expected NAME=VALUE"),
])
def test_a_missing_or_stray_var_is_bad_input_and_creates_nothing(project: Path, template: str,
                                                                 variables: list[str], message: str) -> None:
    with pytest.raises(BadInput, match="^" + message.replace("(", r"\(").replace("[", r"\[")):
        create_loop(Project(project), "x", template, variables=variables)
    assert not (project / ".automaton" / "loops" / "x").exists()


def test_a_value_cannot_break_out_of_its_json_string(project: Path) -> None:
    # A project copy of the template whose var declares no kind: only the rules every value
    # follows apply, and the quote still cannot leave its JSON string.
    copy = project / ".automaton" / "templates" / "loops" / "dependency-upgrade"
    shutil.copytree(framework_home() / "templates" / "loops" / "dependency-upgrade", copy)
    meta = json.loads((copy / "template.json").read_text())
    del meta["vars"]["dependency"]["kind"]
    (copy / "template.json").write_text(json.dumps(meta))
    out = create_loop(Project(project), "dep", "dependency-upgrade", variables=['dependency=x", "evil": "1'])
    doc = json.loads((Path(out.data["path"]) / "loop.json").read_text())
    assert doc["roles"]["verify"]["command"][-1] == 'x", "evil": "1'
    assert "evil" not in doc


def test_var_goes_only_with_create_loop(project: Path) -> None:
    res = run_cli("--list-templates", "--var", "a=b", "--project", str(project))
    assert res.code == 2 and "--var does not go with --list-templates" in res.err


@pytest.mark.parametrize("name", PACKAGED)
def test_each_packaged_template_protects_its_verifier_and_declares_its_placeholders(name: str) -> None:
    folder = framework_home() / "templates" / "loops" / name
    doc = json.loads((folder / "loop.json").read_text())
    assert doc["blast_radius"]["protected"], "a template's verifier inputs must be protected"
    assert doc["roles"]["verify"]["command"][0] == "{{python}}"
    texts = [json.dumps(doc), *(p.read_text() for p in folder.glob("*.md"))]
    used = tpl.used_names(texts) - {"python", "scorer"}
    declared = set(json.loads((folder / "template.json").read_text())["vars"]) if used else set()
    assert used == declared


@pytest.mark.parametrize(("target", "halted"), [("lib/core", False), ("*", True)])
def test_a_filled_file_scope_is_compared_with_the_packaged_one(project: Path, target: str, halted: bool) -> None:
    out = create_loop(Project(project), "lint", "lint-fix", variables=[f"target={target}"])
    state = store.read_state(Project(project), "lint")
    assert (state.status == "halted") is halted, out.lines
    if halted:
        assert "blast_radius.file_scope adds" in str(state.halt_detail)


def test_a_target_out_of_the_project_is_bad_input(project: Path) -> None:
    with pytest.raises(BadInput, match="file_scope"):
        create_loop(Project(project), "lint", "lint-fix", variables=["target=src/../.."])
    assert not (project / ".automaton" / "loops" / "lint").exists()


@pytest.mark.parametrize(("template", "variables", "message"), [
    ("flaky-test", ["test=tests/test_x.py::test_y", "repeat=abc"], "--var repeat='abc': expected a whole number"),
    ("flaky-test", ["test=tests/test_x.py::test_y", "repeat=0"], "--var repeat='0': expected a whole number"),
    ("flaky-test", ["test=tests/test_x.py::test_y", "repeat=-5"], "--var repeat='-5': a value may not start"),
    ("flaky-test", ["test=tests/test_x.py::test_y", "repeat=99999999999"], "--var repeat='99999999999': expected"),
    ("flaky-test", ["test="], "--var test= is empty"),
    ("flaky-test", ["test=--co"], "--var test='--co': a value may not start with '-'"),
    ("flaky-test", ["test=tests/x"], "--var test='tests/x': expected a pytest node id"),
    ("lint-fix", ["target=src\nother"], "--var target='src\\nother': a control character"),
    ("lint-fix", ["target={{python}}"], "--var target='{{python}}': '{{' is placeholder syntax"),
    ("lint-fix", ["target=/"], "--var target='/': must be a relative path inside the project"),
    ("lint-fix", ["target=."], "--var target='.': must be a relative path inside the project"),
    ("coverage-raise", ["target="], "--var target= is empty"),
    ("dependency-upgrade", ["dependency=requests; rm -rf /"], "--var dependency='requests; rm -rf /': expected a"
                                                              " distribution name"),
    ("lint-fix", ["target=src", "target=lib"], "--var target is given twice ('src' and 'lib')"),
    ("lint-fix", ["python=surely-no-such-python"], "--var python='surely-no-such-python': no executable file"),
], ids=["int-word", "int-zero", "int-negative", "int-huge", "empty", "option", "not-a-node-id", "newline",
        "placeholder", "root", "dot", "empty-target", "package", "twice", "no-python"])
def test_a_bad_var_value_is_bad_input_and_creates_nothing(project: Path, template: str, variables: list[str],
                                                          message: str) -> None:
    with pytest.raises(BadInput) as err:
        create_loop(Project(project), "x", template, variables=variables)
    assert str(err.value).startswith(message), str(err.value)
    assert "\n" not in str(err.value)
    assert not (project / ".automaton" / "loops" / "x").exists()


def test_a_relative_python_is_written_absolute(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = project / "bin" / "py"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.chdir(project)
    out = create_loop(Project(project), "lint", "lint-fix", variables=["python=bin/py"])
    command = json.loads((Path(out.data["path"]) / "loop.json").read_text())["roles"]["verify"]["command"]
    assert command[0] == str(exe)
