"""Shared helpers of the bench/ scripts: interleaved timing, figure lines, throwaway projects.

Every figure is a RATIO of medians against a baseline measured in the same run: subject and
baseline runs are interleaved (the order rotates each round), so a burst of load from another
process hits both sides alike. Times are wall-clock seconds from `time.perf_counter()` around
`subprocess.run`, i.e. they include process start, as an agent or a scheduler sees them.

Nothing here touches the real HOME: every child process gets a temporary HOME and a pinned git
identity (`bench_env`), and this process uses the same HOME (`args`) for what it writes
in-process, such as the key that seals the logs it builds for its children to read.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent  # the venv's bin/: `make bench` runs .venv/bin/python
FIGURE_PREFIX = "FIGURE"
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


class BenchError(Exception):
    """A command the benchmark depends on failed (the figure would be meaningless)."""


def exe(name: str) -> str:
    """Absolute path of console script `name`: beside the running interpreter, else on PATH."""
    path = BIN / name
    if path.is_file():
        return str(path)
    found = shutil.which(name)
    if not found:
        raise BenchError(f"console script {name!r} not found in {BIN} nor on PATH: run `make bench` (installs it)")
    return found


def args(doc: str | None, extra: Callable[[argparse.ArgumentParser], None] | None = None) -> argparse.Namespace:
    """Common flags: --quick (a smoke run: few repetitions, small inputs), --reps N, --keep."""
    p = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0] if doc else None)
    p.add_argument("--quick", action="store_true", help="smoke run: few repetitions, small inputs")
    p.add_argument("--reps", type=int, default=None, help="override the number of timed repetitions")
    p.add_argument("--keep", action="store_true", help="keep the temporary projects (their path is printed)")
    if extra is not None:
        extra(p)
    ns = p.parse_args()
    os.environ["HOME"] = bench_env()["HOME"]  # in-process writes and the children share one key
    return ns


_HOME: Path | None = None


def base_dir() -> Path:
    """`$TMPDIR/automaton-bench/`: the parent of every folder a benchmark makes, kept between
    runs. On the recorded machine (ext4 on a virtual disk) creating a file costs about 0.5 ms
    in a folder made directly in /tmp and 0.03 ms in one made under a folder that already
    existed, which would make every figure that writes files measure the disk's allocator."""
    base = Path(tempfile.gettempdir()) / "automaton-bench"
    (base / "tmp").mkdir(parents=True, exist_ok=True)
    return base


def bench_env(**extra: str) -> dict[str, str]:
    """os.environ + a temporary HOME + a pinned git identity + `extra` (for every child process).
    TMPDIR is `base_dir()/tmp` (see there) for the children, subject and baseline alike."""
    global _HOME
    if _HOME is None:
        _HOME = Path(tempfile.mkdtemp(prefix="home-", dir=base_dir()))
        atexit.register(shutil.rmtree, _HOME, True)
    env = dict(os.environ)
    for key in ("AUTOMATON_TASK", "AUTOMATON_HOME", "AUTOMATON_APPROVER", "GIT_DIR", "GIT_WORK_TREE",
                "PYTHONDONTWRITEBYTECODE"):
        env.pop(key, None)
    # Bytecode is cached (as after `pip install`, which compiles it), but in a folder of the
    # bench's own, so an environment with PYTHONDONTWRITEBYTECODE=1 (this project's dev
    # shells) does not make every run recompile automaton from source, and nothing is
    # written into the source tree.
    env.update(GIT_IDENTITY, HOME=str(_HOME), GIT_CONFIG_NOSYSTEM="1", PYTHONPYCACHEPREFIX=str(_HOME / "pycache"),
               TMPDIR=str(base_dir() / "tmp"))
    env.update(extra)
    return env


@contextmanager
def workspace(tag: str, keep: bool = False) -> Iterator[Path]:
    """A temporary folder, removed afterwards unless `keep`."""
    path = Path(tempfile.mkdtemp(prefix=f"{tag}-", dir=base_dir())).resolve()
    try:
        yield path
    finally:
        if keep:
            print(f"  (kept {path})")
        else:
            shutil.rmtree(path, ignore_errors=True)


def run(argv: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
        stdin: bytes | None = None, expect: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[bytes]:
    """Run a command to completion; BenchError when its exit code is not in `expect`."""
    done = subprocess.run(argv, cwd=cwd, env=env or bench_env(), input=stdin, capture_output=True, check=False)
    if done.returncode not in expect:
        tail = (done.stderr or done.stdout).decode("utf-8", "replace").strip()[-400:]
        raise BenchError(f"{' '.join(argv[:4])} exited {done.returncode} (expected {expect}): {tail}")
    return done


@dataclass(frozen=True)
class Sample:
    """One timed run: `wall` seconds, and `cpu` seconds (user + system) of the bench process and
    the child processes it waited for (their own children included). CPU time barely moves when other processes
    load the machine, so it backs up a wall-clock ratio measured on a busy machine."""

    wall: float
    cpu: float


def _children_cpu() -> float:
    """CPU seconds of this process and of the children it has waited for."""
    mine, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + kids.ru_utime + kids.ru_stime


def measure(work: Callable[[], object]) -> Sample:
    """Time `work()`: wall seconds, and CPU seconds of this process plus the children it waits
    for (so in-process work counts too; starting a child costs this process the same small
    amount for a subject and its baseline)."""
    c0, t0 = _children_cpu(), time.perf_counter()
    work()
    return Sample(time.perf_counter() - t0, _children_cpu() - c0)


def timed(argv: list[str], **kw: Any) -> Sample:
    """One `run(argv, **kw)`, process start included."""
    return measure(lambda: run(argv, **kw))


def interleave(cases: dict[str, Callable[[], Sample]], reps: int, warmup: int = 2) -> dict[str, list[Sample]]:
    """Run each case `warmup` times untimed, then `reps` rounds of one run of each case.

    The order rotates every round so no case always follows the same one. Returns case ->
    the `reps` samples.
    """
    names = list(cases)
    for _ in range(warmup):
        for name in names:
            cases[name]()
    out: dict[str, list[Sample]] = {name: [] for name in names}
    for i in range(reps):
        k = i % len(names)
        for name in names[k:] + names[:k]:
            out[name].append(cases[name]())
    return out


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def wall(xs: list[Sample]) -> float:
    """Median wall seconds."""
    return statistics.median(x.wall for x in xs)


def cpu(xs: list[Sample]) -> float:
    """Median CPU seconds."""
    return statistics.median(x.cpu for x in xs)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def spread(xs: list[Sample]) -> str:
    """Median wall time with its interquartile range, and median CPU time."""
    walls = [x.wall for x in xs]
    iqr = ""
    if len(walls) >= 4:
        q = statistics.quantiles(walls, n=4)
        iqr = f" (IQR {q[0] * 1000:.1f}-{q[2] * 1000:.1f})"
    return f"wall {ms(wall(xs))}{iqr}, cpu {ms(cpu(xs))}, n={len(xs)}"


def figure(num: int, title: str, value: float, target: float | None, detail: str, unit: str = "x") -> str:
    """Print and return the one figure line `run_all.py` collects:
    `FIGURE <num> <title>: <value><unit> (target <= T<unit>: met|MISSED); <detail>`."""
    verdict = ""
    if target is not None:
        verdict = f" (target <= {target:g}{unit}: {'met' if value <= target else 'MISSED'})"
    line = f"{FIGURE_PREFIX} {num} {title}: {value:.2f}{unit}{verdict}; {detail}"
    print(line, flush=True)
    return line


def import_profile(module: str, args: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
                   stdin: bytes | None = None, expect: tuple[int, ...] = (0,), top: int = 10) -> str:
    """Where the imports of one run of `module.main()` with `args` go (what a console script
    runs): `python -X importtime` of it, self time of every module the baseline interpreter
    (`python -c "import json, argparse, pathlib"`) does not import too, summed by package
    (automaton's modules one by one), the `top` largest named. importtime's own overhead
    inflates every module a little."""
    floor = set(run([sys.executable, "-c", "import sys, json, argparse, pathlib; print(' '.join(sys.modules))"],
                    env=env).stdout.decode().split())
    code = f"import sys; from {module} import main; sys.exit(main())"
    done = run([sys.executable, "-X", "importtime", "-c", code, *args], cwd=cwd, env=env, stdin=stdin,
               expect=expect)
    groups: dict[str, int] = {}
    for line in done.stderr.decode("utf-8", "replace").splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        fields = [f.strip() for f in line[len("import time:"):].split("|")]
        if not fields[0].isdigit() or fields[2] in floor:
            continue
        key = fields[2] if fields[2].startswith("automaton") else fields[2].split(".")[0].lstrip("_")
        groups[key] = groups.get(key, 0) + int(fields[0])
    mine = sum(v for k, v in groups.items() if k.startswith("automaton"))
    named = ", ".join(f"{k} {v / 1000:.1f}" for k, v in sorted(groups.items(), key=lambda kv: -kv[1])[:top])
    return (f"imports beyond the bare interpreter's: automaton {mine / 1000:.1f} ms, others"
            f" {(sum(groups.values()) - mine) / 1000:.1f} ms; largest (ms): {named}")


def python_script(code: str) -> list[str]:
    """argv running `code` on this interpreter (a baseline written in Python pays the same
    interpreter start as automaton's console scripts)."""
    return [sys.executable, "-c", code]


# ---- throwaway projects -------------------------------------------------------------------

def git(repo: Path, *argv: str) -> str:
    """`git argv` in `repo` (pinned identity, temporary HOME); BenchError on failure."""
    return run(["git", *argv], cwd=repo).stdout.decode("utf-8", "replace")


def init_repo(root: Path, files: int = 0, per_dir: int = 200) -> Path:
    """A git repo on branch main with `files` small files under src/dNNN/ and one commit."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for i in range(files):
        folder = root / "src" / f"d{i // per_dir:03d}"
        if i % per_dir == 0:
            folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:05d}.py").write_text(f"VALUE = {i}\n", encoding="utf-8")
    (root / "README.md").write_text("bench project\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


def loop_json(name: str, **over: Any) -> dict[str, Any]:
    """A valid loop.json: the in-process scripted harness replaying an empty script (it changes
    nothing, costs $0), verify = `true` (a no-op), builtin orchestrate; `over` merged in."""
    base: dict[str, Any] = {
        "schema_version": 1, "name": name, "template": "bench", "description": "bench loop", "task": None,
        "harness": {"name": "scripted", "model": None, "args": ["script.json"], "timeout_s": 120},
        "roles": {"implement": {"prompt": "implement.md"},
                  "verify": {"command": [shutil.which("true") or "true"], "score": "summary"},
                  "orchestrate": {"builtin": True}},
        "brakes": {"max_iterations": 1000, "max_budget_usd": 1000.0, "max_tick_usd": 1.0,
                   "score_plateau_window": 5, "plateau_epsilon": 0.0, "target_score": 1.0},
        "blast_radius": {"use_worktree": True, "file_scope": ["src/**"], "base_branch": None},
        "schedule": {"interval_seconds": 900},
    }
    for key, value in over.items():
        base[key] = {**base[key], **value} if isinstance(value, dict) and isinstance(base.get(key), dict) else value
    return base


def write_template(project: Path, template: str, config: dict[str, Any]) -> None:
    """A project-local loop template `.automaton/templates/loops/<template>/`."""
    folder = project / ".automaton" / "templates" / "loops" / template
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "loop.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    (folder / "implement.md").write_text("Do nothing; this is a benchmark.\n", encoding="utf-8")


def create_loop(project: Path, name: str, template: str) -> Path:
    """`automaton --create-loop NAME --from-template T` (the real CLI), its first approval by a
    human (a project template's loop starts halted until then: `--approve --loop NAME --yes`
    as AUTOMATON_APPROVER=bench) + an empty scripted harness script; returns the loop folder."""
    run([exe("automaton"), "--create-loop", name, "--from-template", template, "--project", str(project)],
        cwd=project, env=bench_env(AUTOMATON_APPROVER="bench"))  # creating a loop is a human act
    run([exe("automaton"), "--approve", "--loop", name, "--yes", "--project", str(project)], cwd=project,
        env=bench_env(AUTOMATON_APPROVER="bench"))
    folder = project / ".automaton" / "loops" / name
    (folder / "script.json").write_text('{"implement": []}\n', encoding="utf-8")
    return folder


def machine() -> dict[str, str]:
    """nproc, CPU model, Python, OS and git version, for BENCHMARKS.md."""
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    os_name = platform.platform()
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                os_name = f"{line.split('=', 1)[1].strip(chr(34))} ({platform.system()} {platform.release()})"
    except OSError:
        pass
    gitv = subprocess.run(["git", "--version"], capture_output=True, text=True, check=False).stdout.strip()
    return {"nproc": str(os.cpu_count()), "cpu": cpu, "python": platform.python_version(), "os": os_name,
            "git": gitv or "git not found"}
