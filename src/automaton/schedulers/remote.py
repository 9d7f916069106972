"""Loop ticks on engines past one machine: a GitHub Actions workflow and a Kubernetes CronJob.

Pure renderers (README.md#running-loops-on-github-actions, #running-loops-on-kubernetes): a
`RemoteJob` in, the text of one YAML file out; nothing is installed, the user commits or
applies the file. The documents are built as data and written with PyYAML's safe dumper, so
every value is quoted by the library, never by a template.

Protocol facts, each from the engine's own documentation:

- GitHub Actions (docs.github.com, "Events that trigger workflows", `schedule`): POSIX cron in
  UTC, and "the shortest interval you can run scheduled workflows is once every 5 minutes";
  scheduled runs may start late under load. ("Control the concurrency of workflows and jobs"):
  a `concurrency` group holds at most one running and one pending run; with
  `cancel-in-progress: false` a running tick is never cancelled, a newer queued run replaces
  the pending one. `permissions` set at the top level apply to every job; keys left out get
  `none`; `contents: write` lets the job's `GITHUB_TOKEN` push (`secrets.GITHUB_TOKEN`, "Automatic
  token authentication"; a push made with it starts no other workflow). `actions/checkout`
  writes the job's token into `.git/config` unless `persist-credentials: false`;
  `fetch-depth: 0` fetches every branch and tag.
- Kubernetes (kubernetes.io, "CronJob"): `concurrencyPolicy: Forbid` skips a run while the
  previous one is still going; `startingDeadlineSeconds` is how late a missed run may still
  start; a CronJob's name is at most 52 characters (the controller appends 11 to name the
  Jobs). ("Jobs"): `backoffLimit: 0` never retries a failed pod, so a killed tick is not
  re-run on its own. ("Secrets"): a secret volume's files get `defaultMode`; `secretKeyRef`
  puts one key of a Secret into a container's environment.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

import yaml

from automaton.core.errors import BadInput
from automaton.core.names import LoopName
from automaton.schedulers.cron import cron_spec

GITHUB_MIN_INTERVAL_S = 300  # GitHub's shortest schedule: every 5 minutes (see the module text)
K8S_MAX_CRONJOB_NAME = 52
KEY_SECRET_ENV = "AUTOMATON_RECORD_KEY"
KEY_FILE_ENV = "AUTOMATON_RECORD_KEY_FILE"
TOKEN_ENV = "AUTOMATON_GIT_TOKEN"  # the state remote's push credential (git/remote.py `credential_env`)
GITHUB_TOKEN = "${{ secrets.GITHUB_TOKEN }}"  # the job's own token, scoped by `permissions`
KEY_MOUNT = "/var/run/automaton/record-key"  # the Secret's folder in the pod, outside the checkout
KEY_FILE_NAME = "record-key"
WORK = "/work"  # the pod's emptyDir: the clone, the venv and the agent CLI, fresh each run
PYTHON_VERSION = "3.12"
NODE_VERSION = "22"
# Official images by tag (pin them by digest in your registry: README.md#running-loops-on-kubernetes).
# python:*-bookworm is built on buildpack-deps:bookworm, which carries git; node:*-bookworm too,
# and both are Debian 12, so the node binary copied from one runs in the other.
PYTHON_IMAGE = f"python:{PYTHON_VERSION}-bookworm"
NODE_IMAGE = f"node:{NODE_VERSION}-bookworm"
CHECKOUT_ACTION = "actions/checkout@v4"
SETUP_PYTHON_ACTION = "actions/setup-python@v5"
SETUP_NODE_ACTION = "actions/setup-node@v4"
# Ubuntu 24.04 lets AppArmor refuse unprivileged user namespaces, which the sandbox's
# namespaces layer needs; the runner VM is the job's own, so the tick's step lifts that.
USERNS_SYSCTL = "kernel.apparmor_restrict_unprivileged_userns"


@dataclass(frozen=True)
class AgentInstall:
    """A pinned agent CLI install: the npm `package` at `version`, and the environment
    variables (`key_env`) that carry its model API key, each filled from a secret of the same name."""

    package: str
    version: str
    key_env: tuple[str, ...]


@dataclass(frozen=True)
class RemoteJob:
    """One loop's tick on a remote engine. `interval_s`: seconds between ticks;
    `automaton_version`: the `automaton-framework` release pinned on the runner; `agent`:
    the pinned agent CLI, None for a harness without one (`command`, `scripted`, `aider`);
    `state_remote`: the git remote the tick keeps the loop's state in (`--state-remote`)."""

    name: LoopName
    interval_s: int
    automaton_version: str
    agent: AgentInstall | None
    state_remote: str = "origin"

    @property
    def resource_name(self) -> str:
        """`automaton-<loop>`: the workflow file's stem, the CronJob's and the Secret's name."""
        return f"automaton-{self.name}"


def github_cron(interval_s: int) -> str:
    """The cron field of a workflow firing every `interval_s` seconds; BadInput (exit 2) under
    GitHub's 5-minute minimum or when cron cannot fire it exactly (`schedulers.cron.cron_spec`)."""
    if interval_s < GITHUB_MIN_INTERVAL_S:
        raise BadInput(f"--interval {interval_s} s is shorter than GitHub's shortest schedule (every 5 minutes):"
                       " use --interval 300 or more")
    return cron_spec(interval_s)


def _dump(doc: dict[str, Any], header: str) -> str:
    class _Plain(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:  # a value used twice is written twice, never as &id001
            return True

    return header + yaml.dump(doc, Dumper=_Plain, sort_keys=False, default_flow_style=False, width=1000)


def _secret(name: str) -> str:
    return "${{ secrets." + name + " }}"


def _install_steps(job: RemoteJob) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [
        {"name": "Set up Python", "uses": SETUP_PYTHON_ACTION, "with": {"python-version": PYTHON_VERSION}},
        {"name": f"Install automaton {job.automaton_version} (pinned)",
         "run": f'python -m pip install "automaton-framework=={job.automaton_version}"'},
    ]
    if job.agent is not None:
        steps += [
            {"name": "Set up Node.js", "uses": SETUP_NODE_ACTION, "with": {"node-version": NODE_VERSION}},
            {"name": f"Install {job.agent.package} {job.agent.version} (pinned)",
             "run": f'npm install --global "{job.agent.package}@{job.agent.version}"'},
        ]
    return steps


def render_github(job: RemoteJob) -> str:
    """`.github/workflows/automaton-<loop>.yml`: scheduled and `workflow_dispatch`, one
    concurrency group per loop that never cancels a running tick, `contents: write` only (the
    state remote's push), a full-history checkout that keeps no token, pinned installs, then a
    `--doctor --state-remote` preflight and the tick with `--state-remote`, the only steps with
    the record key (secret `AUTOMATON_RECORD_KEY`), the agent's API key secrets and the job's
    token (as `AUTOMATON_GIT_TOKEN`, which the runner gives its own fetch and push only) in
    their environment. BadInput as `github_cron`."""
    key = {KEY_SECRET_ENV: _secret(KEY_SECRET_ENV), TOKEN_ENV: GITHUB_TOKEN}
    remote = ["--state-remote", job.state_remote]
    api = {env: _secret(env) for env in (job.agent.key_env if job.agent else ())}
    loop = str(job.name)
    doc: dict[str, Any] = {
        "name": f"automaton loop {loop}",
        "on": {"schedule": [{"cron": github_cron(job.interval_s)}], "workflow_dispatch": None},
        # The tick pushes the loop's state ref and loop/<name>: nothing else is granted.
        "permissions": {"contents": "write"},
        "concurrency": {"group": f"automaton-loop-{loop}", "cancel-in-progress": False},
        "jobs": {"tick": {
            "runs-on": "ubuntu-latest",
            "steps": [
                {"name": "Check out with full history, keeping no token in .git/config", "uses": CHECKOUT_ACTION,
                 "with": {"fetch-depth": 0, "persist-credentials": False}},
                *_install_steps(job),
                {"name": "Allow the sandbox's user namespaces (Ubuntu 24.04 AppArmor)",
                 "run": f"if [ -e /proc/sys/{USERNS_SYSCTL.replace('.', '/')} ]; then"
                        f" sudo sysctl -w {USERNS_SYSCTL}=0; fi"},
                # --doctor checks the agent's login too: the preflight gets the API key as the tick does.
                {"name": "Preflight: automaton --doctor", "run": shlex.join(["automaton", "--doctor", "--loop", loop,
                                                                             *remote]),
                 "env": {**key, **api}},
                {"name": "Tick", "run": shlex.join(["automaton-loop", "--mode", "tick", "--loop", loop, *remote]),
                 "env": {**key, **api}},
            ],
        }},
    }
    header = (f"# automaton loop {loop}: written by automaton --install-schedule {loop} --on github-actions.\n"
              "# Regenerate it rather than edit it. Secrets: AUTOMATON_RECORD_KEY (64 hex digits)"
              + "".join(f", {env}" for env in api)
              + "; the tick pushes the loop's state with the job's GITHUB_TOKEN.\n")
    return _dump(doc, header)


def k8s_name(job: RemoteJob) -> str:
    """The CronJob's (and its Secret's) name; BadInput (exit 2) past Kubernetes' 52 characters."""
    name = job.resource_name
    if len(name) > K8S_MAX_CRONJOB_NAME:
        raise BadInput(f"loop name {job.name!r} is too long for a Kubernetes CronJob ({name!r} has {len(name)}"
                       f" characters, at most {K8S_MAX_CRONJOB_NAME}): use a loop name of at most"
                       f" {K8S_MAX_CRONJOB_NAME - len('automaton-')} characters")
    return name


def _clone_script() -> str:
    # The token goes in one command's -c, so it never lands in .git/config, where the agent reads.
    return ("set -eu\n"
            'auth=""\n'
            'if [ -n "${GIT_TOKEN:-}" ]; then\n'
            '  auth="Authorization: Basic $(printf \'x-access-token:%s\' "$GIT_TOKEN" | base64 -w0)"\n'
            "fi\n"
            f'git -c "http.extraHeader=$auth" clone --no-single-branch "$REPO_URL" {WORK}/repo\n'
            f"python -m venv {WORK}/venv\n"
            f'{WORK}/venv/bin/pip install "automaton-framework==$AUTOMATON_VERSION"\n')


def _agent_script(agent: AgentInstall) -> str:
    return ("set -eu\n"
            f'npm install --prefix {WORK}/npm "{agent.package}@{agent.version}"\n'
            f'mkdir -p {WORK}/bin && cp "$(command -v node)" {WORK}/bin/node\n')


def _secret_env(env: str, secret: str, key: str, optional: bool = False) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": secret, "key": key}
    if optional:
        ref["optional"] = True
    return {"name": env, "valueFrom": {"secretKeyRef": ref}}


def _limits() -> dict[str, Any]:
    return {"requests": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "2Gi"},
            "limits": {"cpu": "2", "memory": "4Gi", "ephemeral-storage": "8Gi"}}


_HOME = {"name": "HOME", "value": f"{WORK}/home"}  # the image's HOME is root's; the pod runs as uid 1000


def _init_containers(job: RemoteJob, secret: str) -> list[dict[str, Any]]:
    work = [{"name": "work", "mountPath": WORK}]
    inits: list[dict[str, Any]] = [{
        "name": "clone", "image": PYTHON_IMAGE, "command": ["sh", "-c", _clone_script()],
        "env": [_secret_env("REPO_URL", secret, "repo-url"), _secret_env("GIT_TOKEN", secret, "git-token", True),
                {"name": "AUTOMATON_VERSION", "value": job.automaton_version}, _HOME],
        "volumeMounts": work, "resources": _limits(),
    }]
    if job.agent is not None:
        inits.append({"name": "agent-cli", "image": NODE_IMAGE, "command": ["sh", "-c", _agent_script(job.agent)],
                      "env": [_HOME], "volumeMounts": work, "resources": _limits()})
    return inits


def render_kubernetes(job: RemoteJob) -> str:
    """A CronJob manifest (batch/v1): `concurrencyPolicy: Forbid`, `startingDeadlineSeconds`
    of one interval, `backoffLimit: 0`; init containers that clone the repository (Secret
    keys `repo-url`, `git-token`) and install the pinned automaton and agent CLI into an
    emptyDir; the tick container (`--state-remote`) with the record key mounted from Secret key
    `record-key` (mode 0400, named by `AUTOMATON_RECORD_KEY_FILE`), the push credential from
    the optional key `git-token` (as `AUTOMATON_GIT_TOKEN`), the agent's API keys from their
    Secret keys, resource limits, and no service account token. The Secret itself is not written
    (README says how to make it). BadInput for an interval cron cannot fire or a name past 52
    characters."""
    name, loop = k8s_name(job), str(job.name)
    api = [_secret_env(env, name, env.lower().replace("_", "-")) for env in (job.agent.key_env if job.agent else ())]
    path = f"{WORK}/venv/bin:{WORK}/npm/node_modules/.bin:{WORK}/bin:/usr/local/bin:/usr/bin:/bin"
    tick = {
        "name": "tick", "image": PYTHON_IMAGE, "workingDir": f"{WORK}/repo",
        "command": ["automaton-loop", "--mode", "tick", "--loop", loop, "--state-remote", job.state_remote],
        "env": [{"name": "PATH", "value": path}, _HOME,
                {"name": KEY_FILE_ENV, "value": f"{KEY_MOUNT}/{KEY_FILE_NAME}"},
                _secret_env(TOKEN_ENV, name, "git-token", True), *api],
        "volumeMounts": [{"name": "work", "mountPath": WORK},
                         {"name": "record-key", "mountPath": KEY_MOUNT, "readOnly": True}],
        "resources": _limits(),
        "securityContext": {"allowPrivilegeEscalation": False},
    }
    pod = {
        "restartPolicy": "Never",
        # No Kubernetes API token in the pod: an agent that read it could act on the cluster.
        "automountServiceAccountToken": False,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000},
        "initContainers": _init_containers(job, name),
        "containers": [tick],
        "volumes": [{"name": "work", "emptyDir": {}},
                    {"name": "record-key", "secret": {"secretName": name, "defaultMode": 0o400,
                                                      "items": [{"key": "record-key", "path": KEY_FILE_NAME}]}}],
    }
    doc: dict[str, Any] = {
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "automaton", "automaton/loop": loop}},
        "spec": {
            "schedule": cron_spec(job.interval_s),
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": job.interval_s,
            "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {"spec": {"backoffLimit": 0, "template": {"metadata": {"labels": {"automaton/loop": loop}},
                                                                   "spec": pod}}},
        },
    }
    header = (f"# automaton loop {loop}: written by automaton --install-schedule {loop} --on kubernetes.\n"
              f"# Regenerate it rather than edit it. Needs Secret {name} with keys record-key, repo-url"
              + "".join(f", {e['valueFrom']['secretKeyRef']['key']}" for e in api)
              + ", git-token (the push credential of an https repo-url).\n")
    return _dump(doc, header)
