"""No function above cyclomatic complexity 20 (radon's `cc_visit`), outside the shell reader.

The brakes' rules (core/) and the use cases that apply them (commands/) stay small enough to
read and test branch by branch, and so does the rest; a function that grows past the bound is
split (decide, apply, report) rather than the bound raised. The one exception is the hooks'
shell reader (SHELL_READER): its functions walk a command's words case by case, and a table of
cases split across helpers reads worse than one switch.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from radon.complexity import cc_visit

SRC = Path(__file__).resolve().parent.parent / "src" / "automaton"
PACKAGES = ("cli", "commands", "core", "dashboard", "git", "harnesses", "hooks", "resources", "runner", "sandbox",
            "schedulers", "store")
# The hooks' shell-command reader: modules that take a shell command apart word by word.
SHELL_READER = frozenset({"hooks/cwd.py", "hooks/detach.py", "hooks/downloads.py", "hooks/gitcmd.py",
                          "hooks/humanacts.py", "hooks/pycode.py", "hooks/scripts.py", "hooks/shell.py",
                          "hooks/shellparse.py", "hooks/tempdirs.py", "hooks/unpack.py", "hooks/writers.py"})
LIMIT = 20


def _too_complex(source: str) -> list[tuple[str, int]]:
    return sorted((block.fullname, block.complexity) for block in cc_visit(source) if block.complexity > LIMIT)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_function_is_above_complexity_20(package: str) -> None:
    files = sorted(f for f in (SRC / package).rglob("*.py") if str(f.relative_to(SRC)) not in SHELL_READER)
    assert files, f"no source files under {SRC / package}"
    found = {str(f.relative_to(SRC)): _too_complex(f.read_text(encoding="utf-8")) for f in files}
    assert {path: blocks for path, blocks in found.items() if blocks} == {}


def test_the_check_counts_branches() -> None:
    """The measure itself: 21 `if`s make a function of complexity 22, which the check reports."""
    body = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(21))
    assert _too_complex(f"def f(x):\n{body}    return -1\n") == [("f", 22)]
    assert _too_complex("def g(x):\n    return x\n") == []


def test_every_package_and_top_module_is_checked() -> None:
    """A new package is not left out of the bound by accident; the top-level modules too."""
    folders = {p.name for p in SRC.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    assert folders == set(PACKAGES)
    assert {s.split("/")[0] for s in SHELL_READER} == {"hooks"}
    assert all((SRC / s).is_file() for s in SHELL_READER)
    tops = sorted(SRC.glob("*.py"))
    assert {str(f.relative_to(SRC)): _too_complex(f.read_text(encoding="utf-8")) for f in tops
            if _too_complex(f.read_text(encoding="utf-8"))} == {}
