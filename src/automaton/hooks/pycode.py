"""Whether inline Python (`python -c CODE`, `python - <<EOF`) is provably read-only.

Inline interpreter code can write any file the process can, so the hook allows it outside a
whole-project scope only when it can prove the code writes nothing. Only Python is read (with
`ast`, imported here and only for a line that runs inline Python), and conservatively: the code
must parse, import only modules of SAFE_MODULES (none of which writes files or runs programs
through its public functions), call `open` only by name with a literal reading mode, and touch
no name or attribute of BLOCKED_NAMES, no private or dunder attribute (`random._os`,
`().__class__`), and none of the dynamic-code builtins. Anything else is "not provably
read-only": the caller denies it unless the scope allows writing the whole project. What stays
open: a read-only reading is of this text only; a module that the code imports from the current
directory under a safe name (`json.py`) runs that file's code (the kernel sandbox holds that).
"""

from __future__ import annotations

SAFE_MODULES = frozenset({
    "json", "sys", "re", "math", "cmath", "collections", "itertools", "functools", "statistics", "string",
    "textwrap", "datetime", "time", "decimal", "fractions", "pprint", "tomllib", "hashlib", "base64",
    "binascii", "struct", "typing", "dataclasses", "enum", "random", "unicodedata", "difflib", "keyword",
    "calendar", "zlib", "heapq", "bisect", "copy", "numbers", "uuid", "ipaddress", "colorsys", "html",
})
# Names and attributes that reach the file system, processes, or code built at run time, even
# through a safe module (`sys.modules`, `statistics.sys`, `platform.os`).
BLOCKED_NAMES = frozenset({
    "exec", "eval", "compile", "__import__", "importlib", "getattr", "setattr", "delattr", "globals",
    "locals", "vars", "breakpoint", "help", "os", "modules", "shutil", "pathlib", "subprocess", "io",
    "builtins", "ctypes", "system", "popen", "spawnl", "spawnv", "posix_spawn", "fork", "environ", "putenv",
    "fdopen", "dup2", "write_text", "write_bytes", "unlink", "mkdir", "makedirs", "rmdir", "symlink",
    "chmod", "chown", "truncate", "write", "writelines", "settrace", "setprofile", "addaudithook",
    "meta_path", "path_hooks", "displayhook", "excepthook", "open_code", "tofile", "Popen", "check_call",
    "check_output", "getoutput", "stdout", "stderr", "stdin",
})
# Standard-library names no module of SAFE_MODULES imports, common as project folder names.
_NEVER_IMPORTED = frozenset({"test", "this", "antigravity", "idlelib", "turtledemo", "tkinter", "turtle"})
_OK_STD_STREAMS = frozenset({"stdout", "stderr", "stdin"})
# Attributes of frames, generators, coroutines and tracebacks (`gi_frame.f_builtins['exec']`),
# and names that evaluate strings as code (`typing.get_type_hints` of a string annotation).
_INTROSPECTION = ("f_", "gi_", "cr_", "ag_", "tb_", "co_")
_EVALUATORS = frozenset({"get_type_hints", "exc_info", "literal_eval", "ForwardRef", "_eval_type"})


def not_read_only(code: str, dirs: list[str] | None) -> str | None:
    """Why `code`, run with each of `dirs` as its working directory (None: unknown), is not
    provably read-only (one short phrase), or None when it is. Python puts the working directory
    first on `sys.path` for `-c` and stdin, so a directory holding a file or folder named as a
    standard-library module (`json.py`, `re/`) would run that instead."""
    if dirs is None:
        return "code run in a directory the hook cannot tell"
    for folder in dirs:
        shadow = _shadowing(folder)
        if shadow:
            return f"code run next to {shadow!r}, which shadows a standard module"
    import ast

    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return "code the hook cannot parse"
    for node in ast.walk(tree):
        why = _node(node)
        if why:
            return why
    return _bare_open(tree)


def _shadowing(folder: str) -> str | None:
    import os
    import sys

    names = (sys.stdlib_module_names | SAFE_MODULES) - _NEVER_IMPORTED
    try:
        entries = os.listdir(folder)
    except OSError:
        return None if not os.path.lexists(folder) else folder
    for entry in entries:
        if entry.split(".", 1)[0] in names:
            return entry
    return None


def _node(node: object) -> str | None:
    import ast as a

    if isinstance(node, a.Import):
        bad = [n.name for n in node.names if n.name not in SAFE_MODULES]
        return f"import {bad[0]}" if bad else None
    if isinstance(node, a.ImportFrom):
        if node.level or node.module not in SAFE_MODULES or any(n.name == "*" for n in node.names):
            return f"from {'.' * node.level}{node.module or ''} import"
        bad = [n.name for n in node.names if n.name in BLOCKED_NAMES or n.name in _EVALUATORS
               or n.name.startswith("_")]
        return f"from {node.module} import {bad[0]}" if bad else None
    if isinstance(node, a.Name) and (node.id in BLOCKED_NAMES or node.id in _EVALUATORS or node.id.startswith("__")):
        return f"{node.id!r}"
    if isinstance(node, a.Constant) and isinstance(node.value, str) and "__" in node.value:
        return "a string naming a dunder (a key into builtins or globals)"
    if isinstance(node, a.Attribute):
        return _attribute(node)
    if isinstance(node, a.Call) and isinstance(node.func, a.Name) and node.func.id == "open":
        return _open_mode(node)
    return None


def _attribute(node: object) -> str | None:
    import ast

    assert isinstance(node, ast.Attribute)
    attr = node.attr
    if attr.startswith("_"):
        return f"the private attribute {attr!r}"
    if attr.startswith(_INTROSPECTION) or attr in _EVALUATORS:
        return f"the attribute {attr!r}, which reaches frames or evaluates strings"
    if attr in _OK_STD_STREAMS and isinstance(node.value, ast.Name) and node.value.id == "sys":
        return None  # sys.stdout/stderr/stdin themselves; `.write` on them is allowed below
    if attr in ("write", "writelines") and _is_std_stream(node.value):
        return None
    if attr in BLOCKED_NAMES:
        return f"the attribute {attr!r}"
    return None


def _is_std_stream(value: object) -> bool:
    import ast as a

    target = value.value if isinstance(value, a.Attribute) and value.attr == "buffer" else value
    return (isinstance(target, a.Attribute) and target.attr in ("stdout", "stderr")
            and isinstance(target.value, a.Name) and target.value.id == "sys")


def _open_mode(call: object) -> str | None:
    import ast as a

    assert isinstance(call, a.Call)
    mode: object = "r"
    if len(call.args) > 1:
        mode = call.args[1]
    for kw in call.keywords:
        if kw.arg is None:
            return "open(**…)"
        if kw.arg == "mode":
            mode = kw.value
        if kw.arg == "opener":
            return "open(opener=…)"
    if len(call.args) > 2 or any(isinstance(arg, a.Starred) for arg in call.args):
        return "open(…) with arguments the hook does not read"
    if isinstance(mode, a.Constant):
        mode = mode.value
    if not isinstance(mode, str):
        return "open(…) with a mode known only at run time"
    if set(mode) & set("wax+"):
        return f"open(…, {mode!r})"
    return None


def _bare_open(tree: object) -> str | None:
    """`open` used other than as a direct call (`f = open`, `map(open, …)`), or rebound."""
    import ast as a

    calls = {id(n.func) for n in a.walk(tree) if isinstance(n, a.Call)}  # type: ignore[arg-type]
    for n in a.walk(tree):  # type: ignore[arg-type]
        if isinstance(n, a.Name) and n.id == "open" and (id(n) not in calls or not isinstance(n.ctx, a.Load)):
            return "open used other than as a call"
    return None
