"""`--install-prompts claude|codex|gemini`: the shipped prompts where each agent finds them.

Where (verified against each agent's docs):
- Claude Code: `.claude/commands/automaton-<name>.md` (project slash commands, `$ARGUMENTS`
  takes the task; code.claude.com/docs "slash commands"; a skill of the same name wins).
- Codex: `.agents/skills/automaton-<name>/SKILL.md` with `name`/`description` frontmatter
  (developers.openai.com/codex/skills: repo skills are found in `.agents/skills` from the
  working directory up to the repo root; `~/.codex/prompts` is user-level only).
- Gemini CLI: `.gemini/commands/automaton/<name>.toml` → `/automaton:<name>`, keys
  `description` and `prompt`, `{{args}}` takes the task (geminicli.com/docs/cli/custom-commands).

Each installed file ends with a seal line holding the SHA-256 of what automaton wrote. A
reinstall rewrites a file only when it is still exactly what automaton wrote; a file a user
changed (or wrote) is left alone and named in a warning.
"""

from __future__ import annotations

import hashlib
import json
import re

from automaton.core.errors import BadInput
from automaton.core.outcome import Outcome
from automaton.store.atomic import atomic_write
from automaton.store.layout import Project, framework_home

PROMPTS: tuple[str, ...] = (
    "orchestrate", "workflow", "research", "decomposition", "design", "test_design", "implement",
    "bug_find", "adversarial_bug_find", "doc_review", "referee",
)
AGENTS = ("claude", "codex", "gemini")
_SEAL = re.compile(r"^(?:<!-- |# )automaton-prompt sha256=([0-9a-f]{64})(?: -->)?$")


def prompt_text(name: str) -> str:
    """The shipped prompt `name` (from `$AUTOMATON_HOME/prompts` or the package)."""
    path = framework_home() / "prompts" / f"{name}.md"
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the shipped prompt ({exc.strerror}); reinstall automaton") from None


def _summary(text: str) -> str:
    first = next((line for line in text.splitlines() if line.startswith("# ")), "# automaton")
    return "automaton: " + first[2:].strip()


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def render(agent: str, name: str, text: str) -> tuple[str, str]:
    """(project-relative path, full sealed file content) of prompt `name` for `agent`."""
    summary = _summary(text)
    slug = "automaton-" + name.replace("_", "-")
    if agent == "claude":
        body = (f"---\ndescription: {json.dumps(summary)}\nargument-hint: TASK\n---\n"
                + text.replace("{task}", "$ARGUMENTS"))
        return f".claude/commands/{slug}.md", body + f"\n<!-- automaton-prompt sha256={_sha(body)} -->\n"
    if agent == "codex":
        body = (f"---\nname: {slug}\ndescription: {json.dumps(summary + ' (give the task name)')}\n---\n"
                "The task is the name the user gave you; below it is written `{task}`.\n\n" + text)
        return f".agents/skills/{slug}/SKILL.md", body + f"\n<!-- automaton-prompt sha256={_sha(body)} -->\n"
    if agent == "gemini":
        prompt = text.replace("{task}", "{{args}}")
        body = (f"description = {json.dumps(summary, ensure_ascii=False)}\n"
                f"prompt = {json.dumps(prompt, ensure_ascii=False)}\n")
        return f".gemini/commands/automaton/{name}.toml", body + f"# automaton-prompt sha256={_sha(body)}\n"
    raise BadInput(f"--install-prompts {agent!r}: use claude, codex or gemini")


def sealed_by_us(content: str) -> bool:
    """Whether `content` is exactly what automaton wrote (its seal matches the rest)."""
    head, _, last = content.rstrip("\n").rpartition("\n")
    match = _SEAL.match(last)
    if not match:
        return False
    return _sha(head.rstrip("\n") + "\n") == match.group(1) or _sha(head + "\n") == match.group(1)


def install_prompts(project: Project, agent: str) -> Outcome:
    """Install every shipped prompt for `agent`. data {agent, written, unchanged, skipped}."""
    if agent not in AGENTS:
        raise BadInput(f"--install-prompts {agent!r}: use claude, codex or gemini")
    written: list[str] = []
    unchanged: list[str] = []
    skipped: list[str] = []
    for name in PROMPTS:
        rel, content = render(agent, name, prompt_text(name))
        path = project.root / rel
        try:
            old: str | None = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            old = None
        except (OSError, UnicodeDecodeError):
            old = "\0unreadable"
        if old == content:
            unchanged.append(rel)
            continue
        if old is not None and not sealed_by_us(old):
            skipped.append(rel)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, content.encode("utf-8"))
        written.append(rel)
    out = Outcome(
        lines=[f"{agent} prompts: {len(written)} written, {len(unchanged)} unchanged, {len(skipped)} kept"],
        data={"agent": agent, "written": written, "unchanged": unchanged, "skipped": skipped},
    )
    out.lines += [f"  wrote {rel}" for rel in written]
    out.warnings += [f"{rel} differs from the shipped prompt and was changed by someone else: kept as is"
                     " (delete it and rerun to install the shipped one)" for rel in skipped]
    return out
