"""`make mutate`: mutmut over the brake modules, one scoped run per group (tests/mutation/scope.py).

Usage: `python -m tests.mutation.run [GROUP ...] [--max-children N] [--tests FILE ...] [--report]`
(no GROUP: every group; `--tests` replaces a group's test files, e.g. to measure a kill rate
before new tests existed).

Each group runs in its own scratch copy `build/mutate/<group>/` (src/, tests/ and a
pyproject.toml with a `[tool.mutmut]` section naming the group's modules and tests), so groups
never share mutmut's cache and the worktree is never touched. Prints per module and per
group: mutants, killed, equivalent, surviving, kill rate (and a table of the groups when several
ran), then every surviving mutant as its diff. A survivor listed in
tests/mutation/equivalent.py (it cannot change a brake's answer, with the reason) is printed
as equivalent and not counted against the brakes.

Exit status: 0 when no survivor changes a brake's answer; 1 when one does (or a mutant timed
out, or the clean run failed); 2 for an unknown group or a missing test or module file.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import NamedTuple

from tests.mutation.equivalent import EQUIVALENT, Equivalent
from tests.mutation.scope import GROUPS, Group

ROOT = Path(__file__).resolve().parents[2]
SCRATCH = ROOT / "build" / "mutate"
MUTMUT = Path(sys.executable).with_name("mutmut")
# `mutmut results --all true` line: "    automaton.core.gates.x_gate_budget__mutmut_3: survived"
# A timeout is a kill, as mutmut scores it: the tests did not pass on the mutant.
KILLED = ("killed", "timeout", "caught by type check")
_RESULT = re.compile(r"^\s*(?P<name>\S+__mutmut_\d+): (?P<status>.+)$")
# A mutant's function: "x_<name>__mutmut_<n>", a method "xǁ<Class>ǁ<name>__mutmut_<n>"
_FUNC = re.compile(r"\.x(?:_|ǁ)(?P<func>[^.]+?)__mutmut_\d+$")


def _pyproject(group: Group, tests: tuple[str, ...]) -> str:
    deselect = [arg for test_id in group.deselect for arg in ("--deselect", test_id)]
    base = (ROOT / "pyproject.toml").read_text("utf-8")
    quoted = lambda xs: "[" + ", ".join(f'"{x}"' for x in xs) + "]"  # noqa: E731
    return (base + "\n[tool.mutmut]\n"
            f"source_paths = [\"src\"]\n"
            f"only_mutate = {quoted(group.modules)}\n"
            f"pytest_add_cli_args_test_selection = {quoted(tests)}\n"
            f"pytest_add_cli_args = {quoted(('-p', 'no:randomly', '-x', *deselect))}\n"
            "use_git_change_detection = false\n")


def _functions(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(qualified name, node) of the module's functions and of its classes' methods."""
    out: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out.append((node.name, node))
        elif isinstance(node, ast.ClassDef):
            out += [(f"{node.name}.{m.name}", m) for m in node.body
                    if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)]
    return out


def fence(source: str, keep: tuple[str, ...]) -> str:
    """`source` with mutmut's `# pragma: no mutate block` on the header of every function and
    method not named in `keep` (the body is then not mutated). ValueError when a name in `keep`
    is not there."""
    found = _functions(ast.parse(source))
    missing = set(keep) - {name for name, _ in found}
    if missing:
        raise ValueError(f"no function {sorted(missing)[0]!r}")
    lines = source.splitlines()
    for name, node in found:
        if name in keep:
            continue
        colon = node.body[0].lineno - 2  # 0-based: the line ending the header, above the body
        while lines[colon].strip() == "" or lines[colon].lstrip().startswith("#"):
            colon -= 1
        lines[colon] += "  # pragma: no mutate block"
    return "\n".join(lines) + "\n"


def _prepare(group: Group, tests: tuple[str, ...]) -> Path:
    where = SCRATCH / group.name
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "src", where / "src", ignore=ignore)
    shutil.copytree(ROOT / "tests", where / "tests", ignore=ignore)
    (where / "pyproject.toml").write_text(_pyproject(group, tests), "utf-8")
    for module, keep in group.only:
        target = where / module
        target.write_text(fence(target.read_text("utf-8"), keep), "utf-8")
    return where


def _mutmut(where: Path, *args: str, log: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    if log is None:
        return subprocess.run([str(MUTMUT), *args], cwd=where, env=env, capture_output=True, text=True, check=False)
    with log.open("w") as out:
        return subprocess.run([str(MUTMUT), *args], cwd=where, env=env, stdout=out, stderr=subprocess.STDOUT,
                              text=True, check=False)


def _module_of(name: str, group: Group) -> str:
    for module in group.modules:
        dotted = module.removeprefix("src/").removesuffix(".py").replace("/", ".")
        if name.startswith(dotted + "."):
            return module
    return "?"


def _changed_line(diff: str, sign: str = "+") -> str:
    """The mutant's lines (`sign` "+") or the original ones ("-"), stripped, joined by a space,
    without a trailing comment: an entry names the code, not what the line says about it."""
    lines = [ln[1:].split("  # ", 1)[0].strip() for ln in diff.splitlines()
             if ln.startswith(sign) and not ln.startswith(sign * 3)]
    return " ".join(lines)


def _equivalent(module: str, name: str, diff: str) -> Equivalent | None:
    func = m.group("func").replace("ǁ", ".") if (m := _FUNC.search(name)) else ""
    line, was = _changed_line(diff), _changed_line(diff, "-")
    for entry in EQUIVALENT:
        if ((entry.module, entry.function, entry.mutated) == (module, func, line) and entry.original in ("", was)
                and entry.near in diff):
            return entry
    return None


def _diffs(where: Path, pairs: list[tuple[str, str]]) -> dict[str, str]:
    """{mutant name: its diff} from one process in the scratch copy (tests/mutation/_diffs.py)."""
    if not pairs:
        return {}
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("_diffs.py"))], cwd=where,
                          input=json.dumps(pairs), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {name: f"(no diff: {done.stderr.strip().splitlines()[-1:]})" for name, _ in pairs}
    result: dict[str, str] = json.loads(done.stdout)
    return result


def run_group(group: Group, tests: tuple[str, ...], children: int, *, report_only: bool = False,
              ) -> tuple[bool, list[str], Tally | None]:
    """Run one group (`report_only`: report its last run again); returns (whether no survivor
    changes a brake's answer, report lines, the group's total row; None when it did not run)."""
    where = SCRATCH / group.name
    if not report_only:
        where = _prepare(group, tests)
        log = SCRATCH / f"{group.name}.log"
        done = _mutmut(where, "run", "--max-children", str(children), log=log)
        if done.returncode != 0:
            return False, [f"{group.name}: mutmut run failed (exit {done.returncode}); see {log}"], None
    elif not (where / "mutants").is_dir():
        return False, [f"{group.name}: no run to report in {where}; run it first"], None
    listing = _mutmut(where, "results", "--all", "true").stdout
    status: dict[str, str] = {m.group("name"): m.group("status").strip()
                              for line in listing.splitlines() if (m := _RESULT.match(line))}
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for name, st in status.items():
        counts[_module_of(name, group)][st] += 1
    open_ = sorted(name for name, st in status.items() if st not in KILLED)
    diffs = _diffs(where, [(name, _module_of(name, group)) for name in open_])
    lines: list[str] = []
    matched: list[Equivalent] = []
    clean = True
    for name in open_:
        st, module, diff = status[name], _module_of(name, group), diffs.get(name, "")
        eq = _equivalent(module, name, diff) if st in ("survived", "no tests") else None
        if eq is not None:
            matched.append(eq)
            counts[module]["equivalent"] += 1
            lines.append(f"  equivalent {name}: {eq.why}")
            continue
        clean = False
        lines.append(f"  {st.upper()} {name} ({module})")
        lines.extend("    " + ln for ln in diff.splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---"))
    rows = [Tally.of(module, counts.get(module, Counter())) for module in group.modules]
    used = {id(e) for e in matched}
    stale = [e for e in EQUIVALENT if e.module in group.modules and id(e) not in used]
    lines += [f"  listed in equivalent.py but no survivor of this run: {e.module} {e.function}: {e.mutated}"
              for e in stale]
    total = Tally.total(group.name, rows)
    return clean, [f"== {group.name} (tests: {', '.join(tests)})", *table([*rows, total]), *lines], total


class Tally(NamedTuple):
    """One row of the report: mutants, killed (a timeout included), equivalent (survivors listed
    in tests/mutation/equivalent.py), surviving (neither killed nor listed: `no tests` included)."""

    name: str
    mutants: int
    killed: int
    equivalent: int
    surviving: int

    @classmethod
    def of(cls, name: str, c: Counter[str]) -> Tally:
        """The row of one module from its {mutmut status (and "equivalent"): count}."""
        total = sum(v for k, v in c.items() if k != "equivalent")
        killed = sum(c[k] for k in KILLED)
        return cls(name, total, killed, c["equivalent"], total - killed - c["equivalent"])

    @classmethod
    def total(cls, name: str, rows: list[Tally]) -> Tally:
        """The sum of `rows`, named `name`."""
        return cls(f"{name} (total)", *(sum(col) for col in list(zip(*rows, strict=True))[1:]))

    @property
    def rate(self) -> str:
        """killed / (mutants - equivalent), as a percentage with one decimal; "-" when none."""
        real = self.mutants - self.equivalent
        return f"{100 * self.killed / real:.1f}%" if real else "-"


def table(rows: list[Tally]) -> list[str]:
    """The report's table: a header, one line per row, and what the columns mean."""
    out = [f"{'module':<40} {'mutants':>7} {'killed':>6} {'equivalent':>10} {'surviving':>9} {'kill rate':>9}"]
    out += [f"{r.name:<40} {r.mutants:>7} {r.killed:>6} {r.equivalent:>10} {r.surviving:>9} {r.rate:>9}"
            for r in rows]
    out.append("(equivalent: survivors listed in tests/mutation/equivalent.py; surviving: neither killed nor listed,"
               " `no tests` included; kill rate: killed / (mutants - equivalent))")
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point; see the module docstring for arguments and exit status."""
    parser = argparse.ArgumentParser(prog="make mutate", allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("groups", nargs="*", help=f"groups to run (default: all of {[g.name for g in GROUPS]})")
    parser.add_argument("--max-children", type=int, default=2, help="parallel mutant workers (default 2)")
    parser.add_argument("--report", action="store_true", help="report the last run of each group again")
    parser.add_argument("--tests", nargs="+", help="test files replacing the group's own (one group only)")
    args = parser.parse_args(argv)
    by_name = {g.name: g for g in GROUPS}
    unknown = [g for g in args.groups if g not in by_name]
    if unknown:
        print(f"make mutate: unknown group {unknown[0]!r}; known: {', '.join(by_name)}", file=sys.stderr)
        return 2
    chosen = [by_name[g] for g in args.groups] or list(GROUPS)
    if args.tests and len(chosen) != 1:
        print("make mutate: --tests needs exactly one group", file=sys.stderr)
        return 2
    for group in chosen:
        tests = tuple(args.tests) if args.tests else group.tests
        missing = [p for p in (*group.modules, *tests) if not (ROOT / p).is_file()]
        if missing:
            print(f"make mutate: {missing[0]} (group {group.name}) does not exist; fix tests/mutation/scope.py",
                  file=sys.stderr)
            return 2
    all_clean, totals = True, []
    for group in chosen:
        clean, lines, total = run_group(group, tuple(args.tests) if args.tests else group.tests, args.max_children,
                                        report_only=args.report)
        all_clean &= clean
        totals += [total] if total is not None else []
        print("\n".join(lines), flush=True)
    if len(totals) > 1:
        print("\n".join(["== every group", *table([*totals, Tally.total("all", totals)])]))
    print("no surviving mutant that changes a brake's answer" if all_clean
          else "SURVIVING MUTANTS above may change a brake's answer: add a test that kills each,"
               " or list it in tests/mutation/equivalent.py with the reason it cannot")
    return 0 if all_clean else 1


if __name__ == "__main__":
    sys.exit(main())
