"""Inline interpreter code: allowed only where the scope is the whole project, or (Python only)
where `hooks.pycode` proves it read-only; otherwise one line naming `automaton --sandbox`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.hooks.pycode import not_read_only
from tests.helpers import Result
from tests.hooks.conftest import assert_allowed, assert_denied

Hook = Callable[..., Result]


def bash(project: Path, command: str) -> dict[str, Any]:
    return {"cwd": str(project), "tool_name": "Bash", "tool_input": {"command": command}}


@pytest.fixture
def research(make_task: Callable[..., Path], project: Path) -> Path:
    (project / "src").mkdir()
    (project / "src/app.py").write_text("x = 1\n")
    return make_task("demo", "research")


WRITERS = [
    "node -e \"require('fs').appendFileSync('src/app.py','x')\"",
    "python3 -c \"open('src/app.py','a').write('x')\"",
    "perl -e 'open(F,\">>src/app.py\")'",
    "python -c 'import pathlib; pathlib.Path(\"src/app.py\").write_text(\"x\")'",
    "python3 - <<'EOF'\nimport os\nos.system('echo x >> src/app.py')\nEOF",
    "python3 <<'EOF'\nopen('src/app.py', 'w').write('x')\nEOF",
    "cat payload.py | python3",
    "node --eval \"require('fs').writeFileSync('src/app.py','x')\"",
    "node -p \"require('fs').writeFileSync('src/app.py','x')\"",
    "perl -E 'open(F,\">src/app.py\")'",
    "ruby -e 'File.write(\"src/app.py\", \"x\")'",
    "php -r 'file_put_contents(\"src/app.py\", \"x\");'",
    "deno eval 'Deno.writeTextFileSync(\"src/app.py\", \"x\")'",
    "bun -e 'await Bun.write(\"src/app.py\", \"x\")'",
    "lua -e 'io.open(\"src/app.py\",\"w\"):write(\"x\")'",
    "Rscript -e 'writeLines(\"x\", \"src/app.py\")'",
    "osascript -e 'do shell script \"echo x > src/app.py\"'",
    "python3 -W ignore -c \"open('src/app.py','a').write('x')\"",
    # read-only code, but the interpreter runs another file first
    "PYTHONPATH=evil python3 -c 'import json'",
    "env PYTHONSTARTUP=evil.py python3 -c 'print(1)'",
    "python3 -i -c 'print(1)'",
    "python3 -c \"g = (x for x in [1]); g.gi_frame.f_builtins['exec']('open(1)')\"",
]


@pytest.mark.parametrize("command", WRITERS)
def test_inline_code_is_denied_at_research(research: Path, project: Path, hook: Hook, command: str) -> None:
    assert_denied(hook("claude", bash(project, command)), "automaton --sandbox -- <agent>")


@pytest.mark.parametrize("command", WRITERS[:3])
def test_inline_code_is_allowed_where_the_scope_is_the_whole_project(make_task: Callable[..., Path],
                                                                       project: Path, hook: Hook,
                                                                       command: str) -> None:
    (project / "src").mkdir()
    make_task("demo", "implement")
    assert_allowed(hook("claude", bash(project, command)))


@pytest.mark.parametrize("command", [
    "python3 -c 'print(1 + 1)'",
    "python3 -c 'import json, sys; print(json.load(open(\"data.json\"))[\"k\"])'",
    "python -c 'import sys; sys.stdout.write(sys.version)'",
    "python3 <<'EOF'\nimport re\nprint(re.findall(r'x', open('src/app.py').read()))\nEOF",
    "python3 --version", "node --version", "python3 -m pytest -q", "python3 script.py", "node build.js",
])
def test_read_only_python_and_non_inline_runs_pass_at_research(research: Path, project: Path, hook: Hook,
                                                                command: str) -> None:
    assert_allowed(hook("claude", bash(project, command)))


@pytest.mark.parametrize("code", [
    "open('x', 'w')", "open('x', mode='a')", "open('x', m)", "open('x', 'r+')", "f = open; f('x', 'w')",
    "import os", "from os import path", "import shutil", "import subprocess", "import io", "import pathlib",
    "exec('x')", "eval('1')", "compile('1', 'x', 'exec')", "__import__('os')", "import importlib",
    "getattr(print, 'x')", "import random; random._os.system('x')", "import statistics; statistics.sys.modules",
    "().__class__.__bases__", "__builtins__.open('x', 'w')", "from json import *", "from . import x",
    "open('x', **kw)", "import sys; sys.modules['os']", "import ctypes", "x.write('y')", "def (",
    "breakpoint()", "open('x', opener=o)", "help()",
])
def test_not_read_only(code: str, tmp_path: Path) -> None:
    assert not_read_only(code, [str(tmp_path)]) is not None


@pytest.mark.parametrize("code", [
    "print(1)", "import json; print(json.dumps({}))", "open('x').read()", "open('x', 'rb').read()",
    "import sys; sys.stdout.write('x'); sys.stderr.write('y')", "import sys; sys.stdout.buffer.write(b'x')",
    "from collections import Counter; print(Counter('abc'))", "with open('x') as f: print(f.read())",
])
def test_read_only(code: str, tmp_path: Path) -> None:
    assert not_read_only(code, [str(tmp_path)]) is None


def test_a_module_next_to_the_code_shadowing_the_standard_library_is_not_read_only(tmp_path: Path) -> None:
    (tmp_path / "json.py").write_text("import os\n")
    assert "json.py" in (not_read_only("import json", [str(tmp_path)]) or "")
    assert not_read_only("print(1)", None) is not None  # a directory the hook cannot tell


@pytest.mark.parametrize("code", [
    "g = (x for x in [1]); g.gi_frame.f_builtins['exec']('print(1)')",
    "import sys; sys.exc_info()[2].tb_frame.f_globals",
    "import typing\ndef f(x: \"print(1)\"): pass\ntyping.get_type_hints(f)",
    "from typing import get_type_hints",
    "d = {'__builtins__': 1}",
])
def test_frames_and_string_evaluators_are_not_read_only(code: str, tmp_path: Path) -> None:
    assert not_read_only(code, [str(tmp_path)]) is not None
