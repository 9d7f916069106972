"""Loop templates: which exist (`--list-templates`), which folder a name picks, and the
`{{placeholders}}` a template's loop.json and prompts are filled with at `--create-loop`.

A template is a folder holding `loop.json` and its role prompts: the packaged ones under the
framework home (`resources/templates/loops/`), the project's own under
`.automaton/templates/loops/`; a project template of the same name shadows the packaged one.

Placeholders, `{{name}}` in any string of loop.json and in the prompts:
- `{{python}}`: the absolute path of the Python that runs the verifier. `--var python=PATH`,
  else the project's `.venv/bin/python` or `venv/bin/python`, else `python3` as found on this
  PATH now. Absolute on purpose: a scheduled tick runs with cron's or launchd's short PATH.
- `{{scorer}}`: the loop folder's `scorer.py`, the packaged verifier (`resources/scorer.py`),
  copied there when loop.json names it. Filled as `{loop_dir}/scorer.py`: the runner puts the
  loop folder of the machine running the tick there (`store.loops.with_loop_dir`), so a loop
  whose state lives in a git remote runs its own copy on every runner.
- any other name: `--var NAME=VALUE`, else its default in the template's `template.json`
  (`{"vars": {"NAME": {"default": "VALUE" | null, "help": "one line", "kind": KIND}}}`);
  without either, `--create-loop` fails (exit 2) naming what to pass.

Every value (given or default) is checked before anything is created (`check_value`, BadInput,
exit 2): never empty, no control character (a newline would split a file_scope line), no
leading `-` (it would read as an option where it lands in the verify command), no `{{`. A
declared `kind` checks more: `int` (a whole number within `min`..`max` when given), `path` (a
relative path inside the project: no `..` out of it, not the project root itself), `test_id`
(a pytest node id `path.py` or `path.py::name`, its path as `path`), `package` (a distribution
name, PEP 508: letters, digits, `.`, `_`, `-`). A `--var` given twice is refused; `python=`
is resolved to an absolute path (a bare name on this PATH) and must be an executable file.
"""

from __future__ import annotations

import difflib
import os
import posixpath
import re
import shutil
from pathlib import Path
from typing import Any

from automaton.core import jsontext
from automaton.core.errors import BadInput
from automaton.core.loopconfig import LOOP_DIR
from automaton.core.names import NAME_RE
from automaton.core.outcome import Outcome
from automaton.store.layout import Project, framework_home

CONFIG_FILE = "loop.json"
META_FILE = "template.json"
MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
SCORER = "scorer.py"
PLACEHOLDER = re.compile(r"\{\{([a-z][a-z0-9_]*)\}\}")
_VAR_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def packaged_dir() -> Path:
    return framework_home() / "templates" / "loops"


def project_dir(project: Project) -> Path:
    return project.dot / "templates" / "loops"


def _names(folder: Path) -> list[str]:
    """Template names in `folder`: sub-folders with a loop.json and a valid name."""
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    return [p.name for p in entries if NAME_RE.match(p.name) and (p / CONFIG_FILE).is_file()]


def template_dir(project: Project, name: str) -> tuple[Path, bool]:
    """(the folder of template `name`, whether it is the project's copy shadowing a packaged
    one). BadInput (exit 2): an invalid name, or no such template; the message lists the
    closest names (`difflib.get_close_matches`)."""
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise BadInput(f"invalid template name {name!r}: templates are kebab-case folder names like 'ci-triage'")
    places = [project_dir(project) / name, packaged_dir() / name]
    found = [place for place in places if (place / CONFIG_FILE).is_file()]
    if found:
        return found[0], found[0] == places[0] and len(found) == 2
    known = sorted(set(_names(places[0].parent)) | set(_names(places[1].parent)))
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    raise BadInput(f"no loop template {name!r}{hint} (automaton --list-templates lists them: {', '.join(known)})")


def _description(folder: Path) -> str:
    """loop.json's `description` (one line), or "" when unreadable."""
    try:
        obj = jsontext.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "(unreadable loop.json)"
    text = obj.get("description") if isinstance(obj, dict) else None
    return " ".join(text.split()) if isinstance(text, str) else ""


def list_templates(project: Project) -> Outcome:
    """`--list-templates`: one line per template, `NAME  [packaged|project]  description`, a
    project template that shadows a packaged one marked so. data: {"templates": [{"name",
    "source": "packaged" | "project", "path", "description", "shadows": bool,
    "shadowed_by_project": bool}]}."""
    packaged, local = set(_names(packaged_dir())), set(_names(project_dir(project)))
    rows: list[dict[str, Any]] = []
    for name in sorted(packaged | local):
        if name in local:
            folder = project_dir(project) / name
            rows.append({"name": name, "source": "project", "path": str(folder), "description": _description(folder),
                         "shadows": name in packaged, "shadowed_by_project": False})
        if name in packaged:
            folder = packaged_dir() / name
            rows.append({"name": name, "source": "packaged", "path": str(folder), "description": _description(folder),
                         "shadows": False, "shadowed_by_project": name in local})
    width = max((len(r["name"]) for r in rows), default=0)
    lines = []
    for r in rows:
        note = (" (shadows the packaged one)" if r["shadows"] else
                " (shadowed by the project's copy)" if r["shadowed_by_project"] else "")
        lines.append(f"{r['name']:<{width}}  {r['source']:<8}  {r['description']}{note}")
    if not rows:
        lines.append("no loop templates found")
    return Outcome(lines=lines, data={"templates": rows})


# ---- placeholders -----------------------------------------------------------------------------

def parse_vars(given: list[str] | None) -> dict[str, str]:
    """`--var NAME=VALUE` flags as a dict; BadInput (exit 2) for one without `=`, a bad name,
    or a name given twice."""
    out: dict[str, str] = {}
    for item in given or []:
        name, sep, value = item.partition("=")
        if not sep or not _VAR_NAME.match(name):
            raise BadInput(f"--var {item!r}: expected NAME=VALUE with a lower-case NAME like target=src")
        if name in out:
            raise BadInput(f"--var {name} is given twice ({out[name]!r} and {value!r}): pass it once")
        out[name] = value
    return out


KINDS = ("text", "int", "path", "test_id", "package")
_PACKAGE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")  # PEP 508 distribution name


def _inside(name: str, value: str) -> str:
    """`value` as a path inside the project (normalised posix), else BadInput."""
    rel = posixpath.normpath(value.replace("\\", "/"))
    if value.startswith("/") or os.path.isabs(value) or rel in (".", "..") or rel.startswith("../"):
        raise BadInput(f"--var {name}={value!r}: must be a relative path inside the project, not its root or"
                       " outside it (it goes into blast_radius.file_scope and the verify command)")
    return rel


def check_value(name: str, value: str, spec: dict[str, Any]) -> str:
    """`value` of placeholder `name` checked against the rules every value follows and its
    declared `kind` (see the module docstring); BadInput (exit 2) naming the value and what
    to pass instead."""
    help_text = spec.get("help")
    hint = f" ({help_text})" if isinstance(help_text, str) else ""
    if not value:
        raise BadInput(f"--var {name}= is empty: pass a value{hint}")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise BadInput(f"--var {name}={value!r}: a control character (newline, tab) is not allowed{hint}")
    if value.startswith("-"):
        raise BadInput(f"--var {name}={value!r}: a value may not start with '-' (it would read as an option){hint}")
    if "{{" in value:
        raise BadInput(f"--var {name}={value!r}: '{{{{' is placeholder syntax, not a value{hint}")
    _check_kind(name, value, spec, hint)
    return value


def _check_kind(name: str, value: str, spec: dict[str, Any], hint: str) -> None:
    """BadInput unless `value` reads as the placeholder's declared `kind` (text: anything)."""
    kind = spec.get("kind", "text")
    if kind == "int":
        low, high = spec.get("min"), spec.get("max")
        ok = value.isascii() and value.isdigit() and (not isinstance(low, int) or int(value) >= low) and \
            (not isinstance(high, int) or int(value) <= high)
        if not ok:
            span = f" from {low if isinstance(low, int) else 0} to {high}" if isinstance(high, int) else ""
            raise BadInput(f"--var {name}={value!r}: expected a whole number{span}{hint}")
    elif kind == "path":
        _inside(name, value)
    elif kind == "test_id":
        path = value.split("::", 1)[0]
        if not path.endswith(".py") or value.endswith("::"):
            raise BadInput(f"--var {name}={value!r}: expected a pytest node id like tests/test_x.py::test_y{hint}")
        _inside(name, path)
    elif kind == "package" and not _PACKAGE.match(value):
        raise BadInput(f"--var {name}={value!r}: expected a distribution name like requests{hint}")


def resolve_python(value: str) -> str:
    """`--var python=` as an absolute path: a bare name is looked up on this PATH, a relative
    path taken from the working directory; BadInput unless it is an executable file."""
    found = shutil.which(value) if "/" not in value and os.sep not in value else value
    if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise BadInput(f"--var python={value!r}: no executable file there; pass the absolute path of the Python"
                       " that has the verifier's tools (e.g. --var python=$PWD/.venv/bin/python)")
    return os.path.abspath(found)


def _declared(folder: Path) -> dict[str, dict[str, Any]]:
    """The template's `template.json` vars ({} without the file); BadInput when invalid."""
    path = folder / META_FILE
    if not path.is_file():
        return {}
    try:
        obj = jsontext.loads(path.read_text(encoding="utf-8"), unique=True)
    except (OSError, ValueError) as exc:
        raise BadInput(f"{path}: not valid JSON ({exc})") from None
    found = obj.get("vars") if isinstance(obj, dict) else None
    if not isinstance(found, dict) or not all(isinstance(v, dict) for v in found.values()):
        raise BadInput(f'{path}: expected {{"vars": {{"NAME": {{"default": ..., "help": ...}}}}}}')
    odd = sorted(n for n, v in found.items() if v.get("kind", "text") not in KINDS)
    if odd:
        raise BadInput(f"{path}: unknown kind for var(s) {', '.join(odd)}: use one of {', '.join(KINDS)}")
    return found


def verify_needs(folder: Path) -> tuple[str, ...]:
    """The modules the Python of the template's verifier (`{{python}}`) must import: its
    `template.json` `"verify_python": {"needs": [...]}` (import names such as `pytest_cov`);
    () without the file or the key. BadInput (exit 2) naming the file when it is not a list
    of module names."""
    path = folder / META_FILE
    if not path.is_file():
        return ()
    try:
        obj = jsontext.loads(path.read_text(encoding="utf-8"), unique=True)
    except (OSError, ValueError) as exc:
        raise BadInput(f"{path}: not valid JSON ({exc})") from None
    meta = obj.get("verify_python", {}) if isinstance(obj, dict) else {}
    needs = meta.get("needs", []) if isinstance(meta, dict) else None
    if not isinstance(needs, list) or not all(isinstance(n, str) and MODULE_RE.match(n) for n in needs):
        raise BadInput(f'{path}: "verify_python": {{"needs": [...]}} must list module names such as "pytest"')
    return tuple(needs)


def default_python(root: Path) -> str | None:
    """The project's virtual environment's Python, else `python3` on this PATH (absolute)."""
    for rel in (".venv/bin/python", "venv/bin/python", ".venv/Scripts/python.exe", "venv/Scripts/python.exe"):
        candidate = root / rel
        if candidate.is_file():
            return os.path.abspath(candidate)
    found = shutil.which("python3") or shutil.which("python")
    return os.path.abspath(found) if found else None


def used_names(texts: list[str]) -> set[str]:
    return {m.group(1) for text in texts for m in PLACEHOLDER.finditer(text)}


def values(project: Project, folder: Path, used: set[str], given: dict[str, str]) -> dict[str, str]:
    """The value of each placeholder in `used`; BadInput naming every one without a value, or a
    `--var` the template does not use."""
    declared = _declared(folder)
    unused = sorted(set(given) - used)
    if unused:
        raise BadInput(f"--var {', '.join(unused)}: template {folder.name} has no such placeholder"
                       f" (it uses: {', '.join(sorted(used)) or 'none'})")
    out: dict[str, str] = {}
    missing: list[str] = []
    for name in sorted(used):
        if name == "python" and name in given:
            out[name] = resolve_python(check_value(name, given[name], {}))
        elif name in given:
            out[name] = check_value(name, given[name], declared.get(name, {}))
        elif name == "scorer":
            out[name] = f"{LOOP_DIR}/{SCORER}"  # the runner's own copy, wherever it runs the tick
        elif name == "python":
            found = default_python(project.root)
            if found is None:
                missing.append("python=PATH (no .venv/bin/python in the project and no python3 on PATH)")
            else:
                out[name] = found
        elif isinstance(declared.get(name, {}).get("default"), str):
            out[name] = check_value(name, declared[name]["default"], declared[name])
        else:
            help_text = declared.get(name, {}).get("help")
            missing.append(f"{name}=VALUE" + (f" ({help_text})" if isinstance(help_text, str) else ""))
    if missing:
        raise BadInput(f"template {folder.name} needs " + "; ".join(f"--var {m}" for m in missing))
    return out


def fill(text: str, found: dict[str, str]) -> str:
    return PLACEHOLDER.sub(lambda m: found.get(m.group(1), m.group(0)), text)


def fill_json(obj: Any, found: dict[str, str]) -> Any:
    """`obj` with every placeholder in its strings (never its keys) replaced: a value cannot
    break out of the JSON string it lands in."""
    if isinstance(obj, str):
        return fill(obj, found)
    if isinstance(obj, list):
        return [fill_json(v, found) for v in obj]
    if isinstance(obj, dict):
        return {k: fill_json(v, found) for k, v in obj.items()}
    return obj


def json_strings(obj: Any) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, list):
        return [s for v in obj for s in json_strings(v)]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in json_strings(v)]
    return []


def scorer_bytes() -> bytes:
    """The packaged verifier `resources/scorer.py`."""
    return (framework_home() / SCORER).read_bytes() if (framework_home() / SCORER).is_file() else \
        (Path(__file__).parent.parent / "resources" / SCORER).read_bytes()
