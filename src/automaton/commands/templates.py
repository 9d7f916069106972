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
  copied there when loop.json names it.
- any other name: `--var NAME=VALUE`, else its default in the template's `template.json`
  (`{"vars": {"NAME": {"default": "VALUE" | null, "help": "one line"}}}`); without either,
  `--create-loop` fails (exit 2) naming what to pass.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from automaton.core.errors import BadInput
from automaton.core.names import NAME_RE
from automaton.core.outcome import Outcome
from automaton.store.layout import Project, framework_home

CONFIG_FILE = "loop.json"
META_FILE = "template.json"
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
        obj = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
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
    """`--var NAME=VALUE` flags as a dict; BadInput (exit 2) for one without `=` or a bad name."""
    out: dict[str, str] = {}
    for item in given or []:
        name, sep, value = item.partition("=")
        if not sep or not _VAR_NAME.match(name):
            raise BadInput(f"--var {item!r}: expected NAME=VALUE with a lower-case NAME like target=src")
        out[name] = value
    return out


def _declared(folder: Path) -> dict[str, dict[str, Any]]:
    """The template's `template.json` vars ({} without the file); BadInput when invalid."""
    path = folder / META_FILE
    if not path.is_file():
        return {}
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BadInput(f"{path}: not valid JSON ({exc})") from None
    found = obj.get("vars") if isinstance(obj, dict) else None
    if not isinstance(found, dict) or not all(isinstance(v, dict) for v in found.values()):
        raise BadInput(f'{path}: expected {{"vars": {{"NAME": {{"default": ..., "help": ...}}}}}}')
    return found


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


def values(project: Project, folder: Path, loop_dir: Path, used: set[str], given: dict[str, str]) -> dict[str, str]:
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
        if name in given:
            out[name] = given[name]
        elif name == "scorer":
            out[name] = str(loop_dir / SCORER)
        elif name == "python":
            found = default_python(project.root)
            if found is None:
                missing.append("python=PATH (no .venv/bin/python in the project and no python3 on PATH)")
            else:
                out[name] = found
        elif isinstance(declared.get(name, {}).get("default"), str):
            out[name] = declared[name]["default"]
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
