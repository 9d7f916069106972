"""Every `automaton …` command line in the shipped prompts parses with the real parser."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from automaton.cli import parser as p
from automaton.commands.prompts import PROMPTS
from automaton.core.phases import SIGNOFF_PHASES, WORK_PHASES

RESOURCES = Path(__file__).resolve().parents[1] / "src/automaton/resources"
PLACEHOLDERS = {"{task}": "demo-task", "{file}": "src/app.py", "{sub}": "part-a", "{phase}": "design",
                "{name}": "demo", "{loop}": "nightly", "{loop_name}": "nightly"}
_INLINE = re.compile(r"`(automaton(?:-loop)? [^`]*)`")


def prompt_files() -> list[Path]:
    files = sorted((RESOURCES / "prompts").glob("*.md"))
    files += sorted((RESOURCES / "templates" / "loops").glob("**/*.md"))  # ci-triage role prompts, once shipped
    return files


def command_lines(text: str) -> list[str]:
    """Inline `automaton …` spans and `automaton …` lines inside fenced code blocks."""
    found = _INLINE.findall(text)
    fenced = re.findall(r"```[^\n]*\n(.*?)```", text, re.DOTALL)
    for block in fenced:
        found += [line.strip() for line in block.splitlines() if line.strip().startswith("automaton ")]
    return found


def test_every_prompt_is_shipped() -> None:
    names = {f.stem for f in (RESOURCES / "prompts").glob("*.md")}
    assert names == set(PROMPTS)
    assert set(SIGNOFF_PHASES) | set(WORK_PHASES) <= names


@pytest.mark.parametrize("path", prompt_files(), ids=lambda f: f.name)
def test_command_lines_parse(path: Path) -> None:
    lines = command_lines(path.read_text(encoding="utf-8"))
    if path.parent.name == "prompts":
        assert lines, f"{path.name} names no automaton command"
    for line in lines:
        for key, value in PLACEHOLDERS.items():
            line = line.replace(key, value)
        assert not re.search(r"\{\w+\}", line), f"unknown placeholder in {line!r}"
        argv = shlex.split(line)
        if argv[0] == "automaton-loop":
            continue  # the runner's own parser is checked with the runner
        known = set(p.build()._option_string_actions)
        for arg in argv[1:]:
            if arg.startswith("--"):  # exact spelling: no argparse abbreviations in a shipped prompt
                assert arg.split("=", 1)[0] in known, f"{path.name}: unknown flag {arg!r} in {line!r}"
        if path.parent.name == "prompts":  # our own prompts: whole command lines, values included
            ns = p.build().parse_args(argv[1:])  # UsageError for a missing value or unknown flag
            assert p.verb_of(ns) in p.VERBS, line


@pytest.mark.parametrize("phase", [*SIGNOFF_PHASES, *WORK_PHASES])
def test_phase_prompts_open_with_the_state_precondition(phase: str) -> None:
    text = (RESOURCES / "prompts" / f"{phase}.md").read_text(encoding="utf-8")
    head = text.split("## Rules")[0]
    assert "tasks/{task}/.state" in head and "automaton --phase --task {task}" in head
    assert f"If the phase is not `{phase}`, STOP and report" in head
    assert "Never run `automaton --approve`" in text
    assert "automaton --transition" in text


def test_orchestrate_and_workflow() -> None:
    orchestrate = (RESOURCES / "prompts" / "orchestrate.md").read_text(encoding="utf-8")
    first = orchestrate.split("## Loop")[0]
    assert first.index("Read `tasks/{task}/.state`") < first.index("automaton --phase --task {task}")
    assert "must never run it" in orchestrate
    workflow = (RESOURCES / "prompts" / "workflow.md").read_text(encoding="utf-8")
    assert "canonical phase" in workflow and "fallback" in workflow
    for phase in (*SIGNOFF_PHASES, *WORK_PHASES, "human_intervention"):
        assert f"`{phase}`" in workflow
    assert "## Forbidden artifacts" in workflow and "## Exit codes" in workflow


def test_a_bad_flag_would_be_caught() -> None:
    with pytest.raises(p.UsageError):
        p.build().parse_args(["--aprove-everything"])
