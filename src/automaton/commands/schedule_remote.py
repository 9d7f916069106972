"""`--install-schedule NAME --on github-actions|kubernetes`: write a loop's workflow or CronJob.

README.md#running-loops-on-github-actions and #running-loops-on-kubernetes. Nothing is installed
on this machine and no state changes: the file is written into the project (atomically; a
second run replaces it) for a human to review and commit (the workflow) or apply (the
manifest). The pinned versions are this automaton's own and the highest agent CLI version
its end-to-end suite tested (`harnesses.versions.TESTED`).

A runner on either engine starts from a fresh clone, where the loop's state files (ignored by
git) do not exist: the generated tick passes `--state-remote` (loop.json's sealed
`state_remote`, else `origin`) and so keeps the state in the git remote
(README.md#state-in-the-git-remote); its push credential reaches the tick as
`$AUTOMATON_GIT_TOKEN` (the job's `GITHUB_TOKEN`; the Secret's `git-token` key).
"""

from __future__ import annotations

from pathlib import Path

from automaton import __version__
from automaton.commands.schedule import default_interval, parse_interval
from automaton.core.errors import AutomatonError, BadInput, Refused
from automaton.core.loopstate import Event, LogEvent
from automaton.core.outcome import Outcome
from automaton.harnesses.versions import TESTED
from automaton.schedulers.remote import AgentInstall, RemoteJob, render_github, render_kubernetes
from automaton.store.atomic import atomic_write
from automaton.store.layout import Project
from automaton.store.loops import Loop

ENGINES = ("github-actions", "kubernetes")
# The environment variable(s) each pinned agent CLI reads its model API key from (each tool's
# own documentation). opencode picks a provider per model: its key is the user's to add.
API_KEYS: dict[str, tuple[str, ...]] = {
    "claude": ("ANTHROPIC_API_KEY",),
    "codex": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY",),
    "opencode": (),
}
DEFAULT_REMOTE = "origin"  # the remote a fresh clone (actions/checkout, `git clone`) names its source


def target(loop: Loop, engine: str) -> Path:
    """Where `engine`'s file goes: `.github/workflows/automaton-<loop>.yml` or
    `deploy/kubernetes/automaton-<loop>.yaml`, in the project root."""
    if engine == "github-actions":
        return loop.project.root / ".github" / "workflows" / f"automaton-{loop.name}.yml"
    return loop.project.root / "deploy" / "kubernetes" / f"automaton-{loop.name}.yaml"


def remote_job(loop: Loop, interval_s: int, out: Outcome) -> RemoteJob:
    """The `RemoteJob` of `loop`: its harness's pinned CLI and API key names, its state remote
    (the sealed `state_remote`, else `origin`); a warning in `out` for a harness with no pinned
    install (the user adds its install step)."""
    config = loop.read_config()
    harness = config.harness.name
    tested = TESTED.get(harness)
    agent = None if tested is None else AgentInstall(tested.package, tested.highest, API_KEYS.get(harness, ()))
    if tested is None and harness not in ("scripted", "command"):
        out.warnings.append(f"harness {harness!r} has no pinned install: add its install step to the generated file")
    if agent is not None and not agent.key_env:
        out.warnings.append(f"harness {harness!r} reads the API key of the provider its model names: add that"
                            " secret to the generated file")
    return RemoteJob(loop.name, interval_s, __version__, agent, config.state_remote or DEFAULT_REMOTE)


def install_schedule_on(project: Project, name: str, interval_s: int | None, engine: str) -> Outcome:
    """`--install-schedule NAME --on ENGINE [--interval SECONDS]`: `install_remote` of the
    tracked loop NAME, at `interval_s` or the loop's default interval. Errors as `install_remote`,
    and BadInput (exit 2) for an untracked loop or a bad interval."""
    loop = Loop.resolve(project, name)
    return install_remote(loop, parse_interval(interval_s) or default_interval(loop), engine)


def install_remote(loop: Loop, interval_s: int, engine: str) -> Outcome:
    """Write `engine`'s file for `loop` ticking every `interval_s` seconds.

    data: {ok, loop, on, file, interval_seconds, automaton_version, agent_package,
    agent_version, secrets: [names], state_remote}. Errors: BadInput (exit 2) for an unknown
    engine, an interval the engine cannot fire (GitHub: under 5 minutes or not exact in cron),
    a name too long for a CronJob, or a file that cannot be written; Refused (exit 1) for a
    complete loop."""
    if engine not in ENGINES:
        raise BadInput(f"--on {engine!r} is not an engine automaton writes for: use {' or '.join(ENGINES)}")
    if loop.read_state().status == "complete":
        raise Refused(f"loop {loop.name} is complete (terminal): there is nothing to schedule")
    out = Outcome()
    job = remote_job(loop, interval_s, out)
    text = render_github(job) if engine == "github-actions" else render_kubernetes(job)
    path = target(loop, engine)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"{path.parent}: cannot create the folder ({exc.strerror}); check the disk and permissions")\
            from None
    atomic_write(path, text.encode("utf-8"))
    secrets = ["AUTOMATON_RECORD_KEY", *(job.agent.key_env if job.agent else ())]
    if engine == "kubernetes":
        secrets = ["record-key", "repo-url", "git-token (an https repo-url's push credential)",
                   *(k.lower().replace("_", "-") for k in (job.agent.key_env if job.agent else ()))]
    out.lines += [f"wrote {path}", f"secrets it needs: {', '.join(secrets)}",
                  f"its tick keeps the loop's state in the git remote {job.state_remote!r} (--state-remote): run one"
                  f" tick with --state-remote {job.state_remote} where the loop was made before the first fire"]
    if engine == "kubernetes" and job.state_remote != DEFAULT_REMOTE and not any(c in job.state_remote for c in ":/"):
        out.warnings.append(f"loop.json's state_remote {job.state_remote!r} is not {DEFAULT_REMOTE!r}, the only remote"
                            " of the pod's clone: seal a URL there, or origin")
    try:
        loop.log_event(LogEvent(Event.INSTALLED, {"scheduler": engine, "interval_s": interval_s, "enabled": True}))
    except AutomatonError as exc:  # the file is written already: say so rather than hide it
        out.warnings.append(f"{path} written but not logged: {exc.message}")
    out.data = {"ok": True, "loop": str(loop.name), "on": engine, "file": str(path), "interval_seconds": interval_s,
                "automaton_version": __version__, "agent_package": job.agent.package if job.agent else None,
                "agent_version": job.agent.version if job.agent else None, "secrets": secrets,
                "state_remote": job.state_remote}
    return out
