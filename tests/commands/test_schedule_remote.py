"""`--install-schedule NAME --on github-actions|kubernetes`: the files written, end to end through
the CLI, and each checked by its ecosystem's own offline validator (check-jsonschema's bundled
GitHub workflow schema, kubernetes-validate's bundled schemas in strict mode)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from automaton import __version__
from automaton.harnesses.versions import TESTED
from tests.commands.test_schedule import log_events, make_loop
from tests.helpers import run_cli

BIN = Path(sys.executable).parent
# kubernetes-validate validates against the schemas it bundles for this version: pinned, so a
# newer release with another default cannot change what the tests check.
K8S_VERSION = "1.37.0"
LOCK = Path(__file__).resolve().parents[1] / "e2e" / "clis.lock.json"


def _offline_env() -> dict[str, str]:
    # An unroutable proxy: a validator that tried the network would fail here, not pass.
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update({"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": ""})
    return env


def validate(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    exe = BIN / tool
    if not exe.exists():
        pytest.fail(f"{tool} is not installed in {BIN}: run make .venv/.installed (it is a dev dependency)")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, env=_offline_env(), timeout=120,
                          check=False)


def check_workflow(path: Path) -> subprocess.CompletedProcess[str]:
    return validate("check-jsonschema", "--builtin-schema", "vendor.github-workflows", str(path))


def check_manifest(path: Path) -> subprocess.CompletedProcess[str]:
    return validate("kubernetes-validate", "--strict", "-k", K8S_VERSION, str(path))


def install(project: Path, on: str, *extra: str) -> tuple[int, dict[str, object], str]:
    res = run_cli("--install-schedule", "demo", "--on", on, *extra, "--project", str(project), "--json")
    return res.code, (res.json if res.code == 0 else {}), res.err


def test_github_workflow_is_valid_and_keeps_the_brakes(project: Path) -> None:
    loop_dir = make_loop(project)
    code, data, err = install(project, "github-actions")
    assert code == 0, err
    path = project / ".github" / "workflows" / "automaton-demo.yml"
    assert data["file"] == str(path) and data["interval_seconds"] == 900
    result = check_workflow(path)
    assert result.returncode == 0, result.stdout + result.stderr
    doc = yaml.safe_load(path.read_text())
    on = doc["on"]  # written quoted: YAML 1.1 readers (PyYAML) would read a bare `on` as true
    assert on["schedule"] == [{"cron": "*/15 * * * *"}] and "workflow_dispatch" in on
    assert doc["concurrency"] == {"group": "automaton-loop-demo", "cancel-in-progress": False}
    assert doc["permissions"] == {"contents": "write"}  # the state remote's push, nothing else
    steps = doc["jobs"]["tick"]["steps"]
    checkout = steps[0]
    assert checkout["uses"].startswith("actions/checkout@")
    assert checkout["with"] == {"fetch-depth": 0, "persist-credentials": False}
    runs = [s.get("run", "") for s in steps]
    assert f'python -m pip install "automaton-framework=={__version__}"' in runs
    assert "automaton --doctor --loop demo --state-remote origin" in runs
    assert "automaton-loop --mode tick --loop demo --state-remote origin" in runs
    tick = steps[-1]
    assert tick["env"]["AUTOMATON_RECORD_KEY"] == "${{ secrets.AUTOMATON_RECORD_KEY }}"
    # The push credential: the job's token, in the preflight's (its fetch) and the tick's
    # environment only, never in .git/config (the checkout keeps none).
    job_token = "${{ secrets.GITHUB_TOKEN }}"
    assert tick["env"]["AUTOMATON_GIT_TOKEN"] == steps[-2]["env"]["AUTOMATON_GIT_TOKEN"] == job_token
    assert not any("GITHUB_TOKEN" in json.dumps(s) for s in steps[:-2])
    assert log_events(loop_dir)[-1] == "INSTALLED"
    assert data["state_remote"] == "origin" and "not built" not in err


def test_workflow_pins_the_tested_agent_cli(project: Path) -> None:
    make_loop(project)
    loop_json = project / ".automaton" / "loops" / "demo" / "loop.json"
    config = json.loads(loop_json.read_text())
    config["harness"] = {"name": "claude"}
    loop_json.write_text(json.dumps(config))
    code, data, err = install(project, "github-actions")
    assert code == 0, err
    lock = json.loads(LOCK.read_text())["claude"]
    assert (data["agent_package"], data["agent_version"]) == (lock["package"], lock["version"])
    doc = yaml.safe_load(Path(str(data["file"])).read_text())
    steps = doc["jobs"]["tick"]["steps"]
    assert f'npm install --global "{lock["package"]}@{lock["version"]}"' in [s.get("run") for s in steps]
    assert steps[-1]["env"]["ANTHROPIC_API_KEY"] == "${{ secrets.ANTHROPIC_API_KEY }}"
    # The secrets go to the preflight (--doctor checks the login) and the tick alone.
    assert steps[-2]["env"]["ANTHROPIC_API_KEY"] == "${{ secrets.ANTHROPIC_API_KEY }}"
    assert all("env" not in s for s in steps[:-2])
    assert check_workflow(Path(str(data["file"]))).returncode == 0


def test_pins_follow_the_e2e_lock() -> None:
    lock = json.loads(LOCK.read_text())
    assert {k: (t.package, t.highest) for k, t in TESTED.items()} == {
        k: (v["package"], v["version"]) for k, v in lock.items()}


@pytest.mark.parametrize("interval", ["60", "240"])
def test_github_refuses_an_interval_under_five_minutes(project: Path, interval: str) -> None:
    make_loop(project)
    code, _, err = install(project, "github-actions", "--interval", interval)
    assert code == 2 and "shortest schedule (every 5 minutes)" in err and "--interval 300" in err
    assert not (project / ".github").exists()  # nothing half-written


def test_github_refuses_an_interval_cron_cannot_fire(project: Path) -> None:
    make_loop(project)
    code, _, err = install(project, "github-actions", "--interval", "5400")
    assert code == 2 and "cannot be expressed exactly in cron" in err


def test_kubernetes_cronjob_is_valid_and_keeps_the_brakes(project: Path) -> None:
    make_loop(project)
    code, data, err = install(project, "kubernetes", "--interval", "3600")
    assert code == 0, err
    path = project / "deploy" / "kubernetes" / "automaton-demo.yaml"
    assert data["file"] == str(path)
    result = check_manifest(path)
    assert result.returncode == 0, result.stdout + result.stderr
    doc = yaml.safe_load(path.read_text())
    assert (doc["apiVersion"], doc["kind"]) == ("batch/v1", "CronJob")
    spec = doc["spec"]
    assert spec["schedule"] == "0 * * * *" and spec["concurrencyPolicy"] == "Forbid"
    assert spec["startingDeadlineSeconds"] == 3600
    job = spec["jobTemplate"]["spec"]
    assert job["backoffLimit"] == 0
    pod = job["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False  # no cluster credentials for the agent to find
    assert pod["initContainers"][0]["name"] == "clone" and "git" in pod["initContainers"][0]["command"][2]
    tick = pod["containers"][0]
    assert tick["command"] == ["automaton-loop", "--mode", "tick", "--loop", "demo", "--state-remote", "origin"]
    assert tick["resources"]["limits"]["memory"] and tick["resources"]["limits"]["cpu"]
    env = {e["name"]: e for e in tick["env"]}
    assert env["AUTOMATON_RECORD_KEY_FILE"]["value"] == "/var/run/automaton/record-key/record-key"
    assert "GIT_TOKEN" not in env and "REPO_URL" not in env  # the clone's own variables stay in the init container
    # The push credential: the Secret's optional git-token, as the variable the runner's git reads.
    assert env["AUTOMATON_GIT_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "automaton-demo", "key": "git-token",
                                                                       "optional": True}
    key = next(v for v in pod["volumes"] if v["name"] == "record-key")
    assert key["secret"]["secretName"] == "automaton-demo" and key["secret"]["defaultMode"] == 0o400


def test_the_validators_catch_a_broken_file(project: Path) -> None:
    """The checks can fail: an unknown field and a wrong type are rejected offline."""
    make_loop(project)
    assert install(project, "kubernetes")[0] == 0
    path = project / "deploy" / "kubernetes" / "automaton-demo.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["spec"]["concurrencyPolicee"] = "Forbid"
    path.write_text(yaml.safe_dump(doc))
    assert check_manifest(path).returncode != 0
    assert install(project, "github-actions")[0] == 0
    wf = project / ".github" / "workflows" / "automaton-demo.yml"
    doc = yaml.safe_load(wf.read_text())
    doc["concurrency"]["cancel-in-progress"] = "later"
    doc["jobs"]["tick"]["runs-on"] = 5
    wf.write_text(yaml.safe_dump(doc))
    assert check_workflow(wf).returncode != 0


def test_kubernetes_refuses_a_name_past_52_characters(project: Path) -> None:
    name = "a" * 43
    res = run_cli("--create-loop", name, "--from-template", "ci-triage", "--project", str(project))
    assert res.code == 0, res.err
    res = run_cli("--install-schedule", name, "--on", "kubernetes", "--project", str(project))
    assert res.code == 2 and "at most 52" in res.err
    assert not (project / "deploy").exists()


def test_unknown_engine_and_untracked_loop(project: Path) -> None:
    make_loop(project)
    res = run_cli("--install-schedule", "demo", "--on", "nomad", "--project", str(project))
    assert res.code == 2 and "github-actions or kubernetes" in res.err
    res = run_cli("--install-schedule", "ghost", "--on", "kubernetes", "--project", str(project))
    assert res.code == 2
    res = run_cli("--create-loop", "x", "--from-template", "ci-triage", "--on", "kubernetes",
                  "--project", str(project))
    assert res.code == 2 and "--on does not go with --create-loop" in res.err


def test_the_init_clone_keeps_the_git_token_out_of_the_checkout(tmp_path: Path) -> None:
    """The CronJob's clone step, run here against a local bare repository: full history and
    every branch, and the token (used for that one command) is nowhere in `.git/`."""
    import shutil

    from automaton.schedulers.remote import _clone_script

    if shutil.which("sh") is None or shutil.which("base64") is None:
        pytest.skip("needs sh and base64")
    from tests.helpers import git

    src = tmp_path / "src"
    src.mkdir()
    git(src, "init", "-q", "-b", "main")
    git(src, "commit", "-q", "--allow-empty", "-m", "one")
    git(src, "branch", "loop/demo")
    git(tmp_path, "clone", "-q", "--bare", str(src), str(tmp_path / "remote.git"))
    repo = tmp_path / "repo"
    script = _clone_script().split("python -m venv")[0].replace("/work/repo", str(repo))
    env = dict(os.environ, REPO_URL=(tmp_path / "remote.git").as_uri(), GIT_TOKEN="tok-not-in-config")
    done = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "remotes/origin/loop/demo" in git(repo, "branch", "-a")
    for path in (repo / ".git").rglob("*"):
        if path.is_file():
            assert b"tok-not-in-config" not in path.read_bytes(), path


def test_the_generated_tick_uses_the_sealed_state_remote(project: Path) -> None:
    """loop.json's `state_remote` is what the tick passes (a flag that disagreed would exit 2)."""
    make_loop(project)
    loop_json = project / ".automaton" / "loops" / "demo" / "loop.json"
    config = json.loads(loop_json.read_text())
    config["state_remote"] = "https://git.example.com/team/repo.git"
    loop_json.write_text(json.dumps(config))
    code, data, err = install(project, "kubernetes")
    assert code == 0, err
    tick = yaml.safe_load(Path(str(data["file"])).read_text())["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert tick["containers"][0]["command"][-2:] == ["--state-remote", "https://git.example.com/team/repo.git"]
    assert check_manifest(Path(str(data["file"]))).returncode == 0
