"""The verifier of the packaged loop templates: runs the real tool and prints one verdict line.

`--create-loop` copies this file into the loop folder (`scorer.py`) and loop.json runs it with
the project's Python (`{{python}}`, resolved to an absolute path when the loop is created, so a
cron job's short PATH finds the same interpreter). Standard library only: that interpreter has
ruff, mypy, pytest and pytest-cov, never automaton itself.

    python scorer.py lint --target DIR [--suite]    ruff: 1 - violations now / at the base commit
    python scorer.py types --target DIR [--suite]   mypy: 1 - errors now / at the base, suppressions cut,
                                                    every body checked; 0 when a file has fewer
                                                    annotations, or more explicit Any, typing.cast
                                                    or `# type: ignore`, than at the base
    python scorer.py coverage --target DIR          pytest-cov: line coverage of DIR, 0..1
    python scorer.py flaky --repeat N NODEID...     pytest N times: runs where every test passed / N
    python scorer.py dependency --name DIST         the suite, and DIST's pin equal to its installed version

`--suite`: 0 while the project's pytest suite fails.
`--collect-only` (every mode): only collect the tests the mode's pytest run would run (the
runner's frozen test set at the base commit) and exit with pytest's status.

Inside a tick the runner names an inherited pipe in AUTOMATON_VERDICT_FD (runner/freeze.py):
the one pytest run of coverage, dependency and lint/types `--suite`, and each of flaky's N
runs in turn, then load automaton's plugin (`-p automaton_verdicts`) with that descriptor, so
the runner reads each test's outcome itself, and checks the frozen test set, whatever this
script prints. Only pytest sessions write to it, one at a time; ruff and mypy never get the
descriptor.

It runs in the runner's clean export of the tick's commit (the working directory), prints one
JSON object `{"score": 0..1, "passed": bool, "done": bool, "summary": str}` as its last line
(loop.json `"score": "agent"` reads it) and exits 0; a tool that cannot run prints a line
without a score (the tick is unscored) and exits 2.

The base commit (`base_commit` of the loop's `.state.loop`, the folder named by
AUTOMATON_LOOP_DIR) is read with `git archive` from the project's repository into a temp dir:
the lint and type counts are compared with it, and the files and pins it had are checked.
Outside a tick (no AUTOMATON_LOOP_DIR) the tree itself is the base.
"""

from __future__ import annotations

import argparse
import ast
import atexit
import functools
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

LOOP_DIR_ENV = "AUTOMATON_LOOP_DIR"
VERDICT_FD_ENV = "AUTOMATON_VERDICT_FD"
# Where the streamed pytest run writes its JUnit XML for the runner, which holds the stream to it.
VERDICT_JUNIT_ENV = "AUTOMATON_VERDICT_JUNIT"
# Comments and decorators that make mypy say nothing about code it would otherwise reject: cut
# from the copy mypy checks, so adding one hides nothing.
SUPPRESSION = re.compile(r"#\s*(type:\s*ignore\b|mypy:).*$")
DECORATOR = re.compile(r"^\s*@\s*(typing\.)?no_type_check\b")
# Not copied for mypy: version control, environments, caches.
COPY_SKIP = (".git", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", ".tox")
RUFF_BATCH = 500  # files per ruff command line (a command line has a length limit)
# Retry plugins whose reruns would turn a flaky failure into a pass.
NO_RETRY = ("-p", "no:rerunfailures", "-p", "no:flaky", "-p", "no:cacheprovider")


class Unscored(Exception):
    """The verifier could not measure: the tick gets no score."""


def emit(score: float | None, passed: bool, summary: str, runs: list[int] | None = None) -> int:
    """Print the verdict line; 0, or 2 when unscored. `runs`: each pytest run's exit status
    (flaky), which the runner holds to the stream."""
    obj: dict[str, object] = {"passed": passed, "done": passed, "summary": summary}
    if score is not None:
        obj["score"] = round(min(max(score, 0.0), 1.0), 6)
    if runs is not None:
        obj["runs"] = runs
    print(json.dumps(obj))
    return 0 if score is not None else 2


def verdict_fd() -> int | None:
    """The runner's result pipe (AUTOMATON_VERDICT_FD), or None outside a tick or when unset."""
    value = os.environ.get(VERDICT_FD_ENV, "")
    return int(value) if value.isdigit() else None


@functools.lru_cache(maxsize=1)
def private_cache() -> str:
    """An empty folder of this process's own for PYTHONPYCACHEPREFIX (nothing is written to it:
    PYTHONDONTWRITEBYTECODE), removed at exit."""
    folder = tempfile.mkdtemp(prefix="automaton-scorer-pycache-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


def junit_for_runner(run: int | None = None) -> Path | None:
    """The JUnit XML path the runner reads (AUTOMATON_VERDICT_JUNIT), or None outside a tick;
    with `run` (flaky's run i, from 0) the runner's name for that run: `junit.xml` ->
    `junit-<i>.xml` (runner/freeze.py `run_junit`)."""
    value = os.environ.get(VERDICT_JUNIT_ENV, "")
    if not value:
        return None
    path = Path(value)
    return path if run is None else path.with_name(f"{path.stem}-{run}{path.suffix}")


def run(argv: list[str], cwd: Path, timeout: float = 3600, streamed: bool = False) -> subprocess.CompletedProcess[str]:
    """`argv` in `cwd`; Unscored when it cannot start. `streamed` (the mode's one pytest run):
    with the runner's pipe, pytest loads automaton's plugin and inherits the descriptor; every
    other program runs without either."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop(VERDICT_FD_ENV, None)
    # Python then never reads a `__pycache__` of the tree: committed bytecode cannot stand in
    # for the source the tools check.
    # A folder of its own (fresh, empty), never a fixed path another process could fill first.
    env.setdefault("PYTHONPYCACHEPREFIX", private_cache())
    fd = verdict_fd() if streamed else None
    fds: tuple[int, ...] = ()
    if fd is not None:
        argv, env[VERDICT_FD_ENV], fds = [*argv, "-p", "automaton_verdicts"], str(fd), (fd,)
        junit = junit_for_runner()
        if junit is not None and not any(a.startswith("--junitxml=") for a in argv):
            argv.append(f"--junitxml={junit}")
    try:
        return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False,
                              pass_fds=fds)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unscored(f"{argv[0]} could not run: {exc}") from None


# ---- the base commit ------------------------------------------------------------------------

def base_tree(into: Path) -> Path | None:
    """The base commit's tree extracted into `into`; None outside a tick. Unscored when the
    loop's state names no base commit or git cannot read it."""
    loop_dir = os.environ.get(LOOP_DIR_ENV)
    if not loop_dir:
        return None
    folder = Path(loop_dir)
    try:
        saved = json.loads((folder / ".state.loop").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: JSON nested too deeply
        raise Unscored(f"cannot read the loop's state in {folder}: {exc}") from None
    base = saved.get("base_commit") if isinstance(saved, dict) else None
    if not isinstance(base, str) or not re.fullmatch(r"[0-9a-f]{40,64}", base):
        raise Unscored("the loop has no base commit yet")
    root = folder.parent.parent.parent  # <project>/.automaton/loops/<name>
    try:
        done = subprocess.run(["git", "-C", str(root), "archive", "--format=tar", base], capture_output=True,
                              timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unscored(f"git archive of the base commit failed: {exc}") from None
    if done.returncode != 0:
        raise Unscored(f"git archive {base[:12]} failed: {done.stderr.decode(errors='replace').strip()[:200]}")
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        if hasattr(tarfile, "data_filter"):  # Python 3.11.4+: no link or path out of `into`
            tar.extractall(into, filter="data")
        else:  # git archive of a commit holds no absolute path and no `..`
            tar.extractall(into)
    return into


def python_files(root: Path, target: str) -> set[str]:
    """Paths (relative to `root`, posix) of the .py and .pyi files under `root/target`."""
    top = root / target
    if top.is_file():
        return {target}
    return {p.relative_to(root).as_posix() for p in top.rglob("*") if p.suffix in (".py", ".pyi") and p.is_file()}


def removed(now: Path, base: Path | None, target: str) -> list[str]:
    """Python files under `target` at the base that are gone now (a count lowered by deletion)."""
    if base is None:
        return []
    return sorted(python_files(base, target) - python_files(now, target))


# ---- lint: ruff ---------------------------------------------------------------------------------

def ruff_count(root: Path, target: str) -> int:
    """Ruff violations in every .py and .pyi file under `target` with every `# noqa` ignored
    (adding one fixes nothing). The files are named to ruff one by one (found here, not by
    ruff's walk), with `--no-respect-gitignore`: no `.gitignore`, `.ignore` or `exclude` in
    the tree can hide a file (ruff lints a file named on its command line unless
    `--force-exclude`, never given here)."""
    files = sorted(python_files(root, target))
    found: list[object] = []
    for i in range(0, len(files), RUFF_BATCH):
        done = run([sys.executable, "-m", "ruff", "check", "--ignore-noqa", "--no-cache", "--exit-zero",
                    "--no-respect-gitignore", "--output-format", "json", "--", *files[i:i + RUFF_BATCH]], root)
        try:
            batch = json.loads(done.stdout or "null")
        except (ValueError, RecursionError):
            batch = None
        if not isinstance(batch, list):
            raise Unscored(f"ruff gave no JSON report (exit {done.returncode}): {done.stderr.strip()[:200]}")
        found += batch
    return len(found)


def stripped_copy(root: Path, into: Path, target: str, stubs_from: Path | None) -> Path:
    """A copy of `root` in `into` where nothing can hide a type error from mypy: every
    `# type: ignore` and `# mypy:` comment cut, every `no_type_check` decorator line blanked
    (line numbers kept), and each .pyi stub under `target` that `stubs_from` (the base tree)
    lacks removed (a new stub can declare the module's functions as Any)."""
    shutil.copytree(root, into, symlinks=True, ignore=shutil.ignore_patterns(*COPY_SKIP))
    keep = python_files(stubs_from, target) if stubs_from is not None else None
    for rel in python_files(into, target):
        path = into / rel
        if rel.endswith(".pyi") and keep is not None and rel not in keep:
            path.unlink()
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        lines = [("" if DECORATOR.match(line) else SUPPRESSION.sub("", line)) for line in text.split("\n")]
        path.write_text("\n".join(lines), encoding="utf-8")
    return into


# mypy checks every body (an unannotated function is no place to hide an error), and reports
# each function without full annotations as `no-untyped-def` and each explicit `Any` as
# `explicit-any` (its own reading: aliases, string annotations, `cast(Any, …)`, type comments):
# counted apart, never scored, and never allowed to grow over the base's, file by file
# (removing annotations, or writing `Any`, hides errors).
MYPY_FLAGS = ("--check-untyped-defs", "--disallow-untyped-defs", "--disallow-incomplete-defs",
              "--disallow-any-explicit", "--show-error-codes")
MYPY_ERROR = re.compile(r"^(?P<file>.+?):\d+(?::\d+)?: error: .*?(?:\s+\[(?P<code>[a-z0-9-]+)\])?$")
UNTYPED = "no-untyped-def"
EXPLICIT_ANY = "explicit-any"
# What each counted kind is called in a verdict: more of one in a file than at the base scores 0.
SILENCERS = {UNTYPED: "functions without full annotations", EXPLICIT_ANY: "explicit Any",
             "cast": "typing.cast calls", "ignore": "# type: ignore comments"}
TYPING_MODULES = ("typing", "typing_extensions")


def mypy_count(root: Path, target: str, cache: Path) -> tuple[int, dict[str, dict[str, int]]]:
    """(mypy errors under `target` in `root` (a stripped copy) other than missing annotations
    and explicit Any, {UNTYPED or EXPLICIT_ANY: {file: count}})."""
    done = run([sys.executable, "-m", "mypy", "--no-error-summary", "--no-pretty", "--hide-error-context",
                *MYPY_FLAGS, "--cache-dir", str(cache), target], root)
    if done.returncode not in (0, 1):
        raise Unscored(f"mypy failed (exit {done.returncode}): {(done.stderr or done.stdout).strip()[:200]}")
    errors, apart = 0, {UNTYPED: dict[str, int](), EXPLICIT_ANY: dict[str, int]()}
    for line in done.stdout.splitlines():
        m = MYPY_ERROR.match(line)
        if m is None:
            continue
        found = apart.get(m.group("code") or "")
        if found is not None:
            found[m.group("file")] = found.get(m.group("file"), 0) + 1
        else:
            errors += 1
    return errors, apart


def _cast_refs(tree: ast.Module) -> int:
    """References to `typing.cast` in a module: each use of a name imported as it (`from typing
    import cast [as c]`) and each `<typing module alias>.cast`. A name bound any other way
    (`getattr(typing, "cast")`, an import through `importlib`) is not seen."""
    names, modules = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in TYPING_MODULES:
            names |= {a.asname or a.name for a in node.names if a.name in ("cast", "*")}
        elif isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name in TYPING_MODULES}
    if "*" in names:
        names = (names - {"*"}) | {"cast"}
    return sum(1 for node in ast.walk(tree)
               if (isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load))
               or (isinstance(node, ast.Attribute) and node.attr == "cast" and isinstance(node.value, ast.Name)
                   and node.value.id in modules))


def source_counts(root: Path | None, target: str) -> dict[str, dict[str, int]]:
    """{"cast" | "ignore": {file: count}} under `target` in `root` (the tree itself, not the
    stripped copy): `typing.cast` references (`_cast_refs`), and `# type: ignore` comments as
    Python's parser reads them (`ast.parse(..., type_comments=True).type_ignores`, the same
    comments mypy honours). A file that does not parse counts nothing here (mypy reports it)."""
    out: dict[str, dict[str, int]] = {"cast": {}, "ignore": {}}
    if root is None:
        return out
    for rel in sorted(python_files(root, target)):
        try:
            tree = ast.parse((root / rel).read_bytes(), filename=rel, type_comments=True)
        except (SyntaxError, ValueError):
            continue
        out["cast"][rel] = _cast_refs(tree)
        out["ignore"][rel] = len(tree.type_ignores)
    return out


def silencers_added(now: dict[str, dict[str, int]], base: dict[str, dict[str, int]]) -> str | None:
    """Why the tree hides more from mypy than the base did: a file with more of one counted
    kind (`SILENCERS`) than the base's same file, or None."""
    for kind, what in SILENCERS.items():
        old = base.get(kind, {})
        grown = sorted(f for f, n in now.get(kind, {}).items() if n > old.get(f, 0))
        if grown:
            verb = "annotations removed" if kind == UNTYPED else f"{what} added"
            return f"{verb}: more {what} than at the base in {', '.join(grown[:5])}"
    return None


def suite_argv(tests: list[str]) -> list[str]:
    """The pytest command line every mode's suite run starts with (and `--collect-only` uses):
    the project's own testpaths unless `tests` names some."""
    return [sys.executable, "-m", "pytest", "-q", *NO_RETRY, *tests]


def collect_only(tests: list[str]) -> int:
    """The mode's suite collected (`--collect-only`), streamed to the runner's pipe; pytest's
    exit status, after one line that carries no score."""
    done = run([*suite_argv(tests), "--collect-only"], Path.cwd(), streamed=True)
    print(json.dumps({"passed": False, "done": False, "summary": f"collected (exit {done.returncode})"}))
    return done.returncode


def suite_fails(here: Path) -> str | None:
    """Why the project's test suite fails (None: it passes, or it has no test): a lint or type
    fix that breaks behaviour, or guts the code the tests cover, scores nothing."""
    done = run(suite_argv([]), here, streamed=True)
    if done.returncode in (0, 5):  # 5: no test collected
        return None
    last = (done.stdout.strip().splitlines() or ["no output"])[-1]
    return f"the suite fails (exit {done.returncode}: {last[:160]})"


def count_score(kind: str, target: str, suite: bool = False) -> int:
    """lint / types: 1 - count now / count at the base commit (0 when it grew); with `suite`,
    0 while the test suite fails."""
    here = Path.cwd()
    what = "ruff violations" if kind == "lint" else "mypy errors"
    failing = suite_fails(here) if suite else None
    if failing:
        return emit(0.0, False, f"{failing}: {what} not counted")
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        base = base_tree(tmp / "base")
        gone = removed(here, base, target)
        if gone:
            return emit(0.0, False, f"{len(gone)} Python file(s) of the base are gone: {', '.join(gone[:5])}")
        if kind == "lint":
            now = ruff_count(here, target)
            start = ruff_count(base, target) if base is not None else now
        else:
            now, apart = mypy_count(stripped_copy(here, tmp / "now", target, base), target, tmp / "cache-now")
            start, apart_base = (mypy_count(stripped_copy(base, tmp / "base-stripped", target, None), target,
                                            tmp / "cache-base") if base is not None else (now, apart))
            added = silencers_added({**apart, **source_counts(here, target)},
                                    {**apart_base, **source_counts(base or here, target)})
            if added:
                return emit(0.0, False, f"{added}: {what} not counted")
    if now == 0:
        return emit(1.0, True, f"0 {what} (base: {start})")
    score = 0.0 if start == 0 else 1.0 - now / start
    return emit(score, False, f"{now} {what} (base: {start})")


# ---- coverage: pytest-cov ------------------------------------------------------------------------

def coverage_score(target: str, tests: list[str]) -> int:
    """Line coverage of `target` by the suite, with the project's coverage config ignored (its
    `omit`, `exclude_lines`) and no line excluded (`# pragma: no cover` counts as code). A
    failing suite scores 0."""
    with tempfile.TemporaryDirectory() as tmp:
        rc, report = Path(tmp) / "coveragerc", Path(tmp) / "coverage.json"
        rc.write_text(f"[run]\ndata_file = {Path(tmp) / 'data'}\n"
                      "[report]\nexclude_lines =\n    (?!)never\n", encoding="utf-8")
        done = run([*suite_argv(tests), f"--cov={target}", f"--cov-config={rc}", f"--cov-report=json:{report}"],
                   Path.cwd(), streamed=True)
        if done.returncode != 0:
            last = (done.stdout.strip().splitlines() or ["no output"])[-1]
            return emit(0.0, False, f"the suite fails (exit {done.returncode}: {last[:160]}): coverage not counted")
        try:
            totals = json.loads(report.read_text(encoding="utf-8"))["totals"]
            covered, statements = int(totals["covered_lines"]), int(totals["num_statements"])
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
            raise Unscored(f"no coverage report: {exc}") from None
    if statements == 0:
        raise Unscored(f"no statement measured under {target}")
    score = covered / statements
    return emit(score, covered == statements, f"{covered}/{statements} lines of {target} covered")


# ---- flaky: repeated runs -----------------------------------------------------------------------

def clean_run(xml_path: Path) -> bool:
    """Whether a JUnit report ran at least one test and every test passed (a skip or xfail
    counts as not passing: a skip marker must not make a flaky test stable)."""
    passed, ran = junit_counts(xml_path)
    return ran > 0 and passed == ran


def run_passed(code: int, xml_path: Path) -> bool:
    """Whether one flaky run passed: pytest exited 0 and its JUnit report is clean. Unscored
    when the two contradict each other (exit 0 with no readable report, or a failed test in
    it; exit 1 with a clean report): the code under test rewrote one of them, and neither can
    be trusted."""
    clean = clean_run(xml_path)
    if code == 0 and not clean:
        try:
            cases = list(ET.parse(xml_path).getroot().iter("testcase"))
        except (OSError, ET.ParseError):
            raise Unscored("pytest exited 0 but wrote no JUnit report: the run contradicts itself") from None
        if any(child.tag in ("failure", "error") for case in cases for child in case):
            raise Unscored("pytest exited 0 but its JUnit report has a failed test: the run contradicts itself")
    if code == 1 and clean:
        raise Unscored("pytest exited 1 (tests failed) but its JUnit report shows every test passing")
    return code == 0 and clean


def flaky_score(repeat: int, ids: list[str]) -> int:
    """Stable passes / `repeat`: runs of `ids` where pytest exited 0 and every test passed
    (`run_passed`: a run whose exit status and JUnit report disagree leaves the verify unscored).
    Inside a tick every run is streamed to the runner's pipe, one session after another, with its
    JUnit XML where the runner reads it; the verdict line lists each run's exit status
    (`runs`)."""
    if repeat < 1 or not ids:
        raise Unscored("flaky needs --repeat N >= 1 and at least one test id")
    good, exits = 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeat):
            xml = junit_for_runner(i) or Path(tmp) / f"run-{i}.xml"
            done = run([*suite_argv(ids), f"--junitxml={xml}"], Path.cwd(), streamed=True)
            exits.append(done.returncode)
            good += run_passed(done.returncode, xml)
    return emit(good / repeat, good == repeat, f"{good}/{repeat} runs passed: {' '.join(ids)[:160]}", exits)


# ---- dependency: one pin ----------------------------------------------------------------------

def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


PIN = re.compile(r"""^\s*["']?([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*==\s*([^\s"',;#]+)""", re.M)
PIN_FILES = ("requirements.txt", "requirements-dev.txt", "pyproject.toml", "setup.cfg")


def pins(root: Path) -> dict[str, dict[str, str]]:
    """{file: {normalised name: version}} of the `name==version` pins in PIN_FILES at `root`."""
    out: dict[str, dict[str, str]] = {}
    for rel in PIN_FILES:
        path = root / rel
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            out[rel] = {_norm(m.group(1)): m.group(3) for m in PIN.finditer(text)}
    return out


def _without_pin(text: str, name: str) -> str:
    """`text` with the version of each `name==version` pin blanked: the rest of each line, and
    every line, still count (a line added after a pin is a change beyond the pin)."""
    out = []
    for line in text.splitlines():
        m = PIN.match(line)
        out.append(line[:m.start(3)] + "<pin>" + line[m.end(3):] if m and _norm(m.group(1)) == name else line)
    return "\n".join(out)


def dependency_problem(here: Path, base: Path | None, name: str) -> str | None:
    """Why the pins are not one upgrade of `name` alone: another pin changed, or a pin file
    changed beyond `name`'s line (pyproject.toml also holds the test configuration)."""
    if base is None:
        return None
    for rel in PIN_FILES:
        old, new = base / rel, here / rel
        a = old.read_text(encoding="utf-8", errors="replace") if old.is_file() else None
        b = new.read_text(encoding="utf-8", errors="replace") if new.is_file() else None
        if (a is None) != (b is None) or (a is not None and b is not None
                                          and _without_pin(a, name) != _without_pin(b, name)):
            return f"{rel} changed beyond the pin of {name}: one dependency at a time"
    return None


def dependency_score(name: str) -> int:
    """Half for the suite (passed / run, JUnit), half for `name`'s pin equal to the version
    installed in this Python; done when both hold."""
    from importlib import metadata  # lazy: the dependency mode only, in a script run by path (module docstring)

    want = _norm(name)
    try:
        installed = metadata.version(name)
    except metadata.PackageNotFoundError:
        raise Unscored(f"{name} is not installed in {sys.executable}: install the new version there first") from None
    here = Path.cwd()
    with tempfile.TemporaryDirectory() as tmp:
        # The suite first, always: the runner's stream then holds this one run, whatever comes next.
        xml = junit_for_runner() or Path(tmp) / "junit.xml"
        done = run([*suite_argv([]), f"--junitxml={xml}"], here, streamed=True)
        passed, total = junit_counts(xml)
        problem = dependency_problem(here, base_tree(Path(tmp) / "base"), want)
        if problem:
            return emit(0.0, False, problem)
    found = {rel: found[want] for rel, found in pins(here).items() if want in found}
    pinned = bool(found) and all(v == installed for v in found.values())
    suite = passed / total if total else 0.0
    ok = pinned and total > 0 and passed == total and done.returncode == 0
    where = ", ".join(f"{rel}: {v}" for rel, v in found.items()) or "no pin found"
    return emit(0.5 * suite + 0.5 * pinned, ok,
                f"{passed}/{total} tests passed; {name} installed {installed}, pinned {where}")


def junit_counts(xml_path: Path) -> tuple[int, int]:
    """(passed, run) of a JUnit report; skipped tests count as run and not passed."""
    try:
        root = ET.parse(xml_path).getroot()
    except (OSError, ET.ParseError):
        return 0, 0
    cases = list(root.iter("testcase"))
    good = sum(1 for case in cases if all(child.tag in ("system-out", "system-err") for child in case))
    return good, len(cases)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scorer.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="kind", required=True)
    for kind in ("lint", "types", "coverage"):
        p = sub.add_parser(kind)
        p.add_argument("--collect-only", action="store_true", help="collect the suite's test ids only")
        p.add_argument("--target", required=True)
        if kind == "coverage":
            p.add_argument("tests", nargs="*")
        else:
            p.add_argument("--suite", action="store_true", help="score 0 while the test suite fails")
    p = sub.add_parser("flaky")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--collect-only", action="store_true", help="collect the named tests only")
    p.add_argument("ids", nargs="+")
    p = sub.add_parser("dependency")
    p.add_argument("--name", required=True)
    p.add_argument("--collect-only", action="store_true", help="collect the suite's test ids only")
    ns = parser.parse_args(argv)
    try:
        if getattr(ns, "collect_only", False):
            return collect_only(getattr(ns, "ids", None) or getattr(ns, "tests", []))
        if ns.kind in ("lint", "types"):
            return count_score(ns.kind, ns.target, ns.suite)
        if ns.kind == "coverage":
            return coverage_score(ns.target, ns.tests)
        if ns.kind == "flaky":
            return flaky_score(ns.repeat, ns.ids)
        return dependency_score(ns.name)
    except Unscored as exc:
        return emit(None, False, f"unscored: {exc}")
    except Exception as exc:  # a crash is an unscored tick with its cause, never a bare traceback
        return emit(None, False, f"unscored: the scorer failed: {exc!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
