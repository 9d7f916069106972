"""schedulers.remote: every harness's workflow and CronJob, at several intervals, pass the
engines' own validators offline (one validator run per engine for all of them)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from automaton.core.errors import BadInput
from automaton.core.names import LoopName
from automaton.harnesses.versions import TESTED
from automaton.schedulers.remote import AgentInstall, RemoteJob, github_cron, k8s_name, render_github, render_kubernetes
from tests.commands.test_schedule_remote import K8S_VERSION, validate

AGENTS = [None, *(AgentInstall(t.package, t.highest, (f"{name.upper()}_API_KEY",)) for name, t in TESTED.items())]
INTERVALS = (300, 900, 3600, 7200, 86400)


def jobs() -> list[RemoteJob]:
    return [RemoteJob(LoopName(f"l{i}-{s}"), s, "0.1.0", agent) for i, agent in enumerate(AGENTS) for s in INTERVALS]


def test_every_generated_workflow_and_cronjob_passes_its_validator(tmp_path: Path) -> None:
    files: dict[str, list[str]] = {"wf": [], "k8s": []}
    for job in jobs():
        wf, k8s = tmp_path / f"{job.name}.yml", tmp_path / f"{job.name}.yaml"
        wf.write_text(render_github(job))
        k8s.write_text(render_kubernetes(job))
        files["wf"].append(str(wf))
        files["k8s"].append(str(k8s))
    done = validate("check-jsonschema", "--builtin-schema", "vendor.github-workflows", *files["wf"])
    assert done.returncode == 0, done.stdout + done.stderr
    done = validate("kubernetes-validate", "--strict", "-k", K8S_VERSION, *files["k8s"])
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_job_without_an_agent_cli_installs_none() -> None:
    job = RemoteJob(LoopName("plain"), 900, "0.1.0", None)
    steps = yaml.safe_load(render_github(job))["jobs"]["tick"]["steps"]
    assert not any("npm" in s.get("run", "") for s in steps)
    pod = yaml.safe_load(render_kubernetes(job))["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["initContainers"]] == ["clone"]


def test_github_cron_and_the_cronjob_name_limits() -> None:
    assert github_cron(300) == "*/5 * * * *" and github_cron(86400) == "0 0 * * *"
    with pytest.raises(BadInput, match="every 5 minutes"):
        github_cron(299)
    with pytest.raises(BadInput, match="at most 52"):
        k8s_name(RemoteJob(LoopName("a" * 43), 900, "0.1.0", None))
    assert k8s_name(RemoteJob(LoopName("a" * 42), 900, "0.1.0", None)) == "automaton-" + "a" * 42
