"""`automaton --hook opencode`: the payloads automaton's OpenCode plugin sends, and the plugin itself."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.hooks.install import OPENCODE_PLUGIN, opencode_plugin
from tests.helpers import run_cli
from tests.hooks.conftest import assert_allowed, assert_denied

RECORDED = Path(__file__).resolve().parents[1] / "e2e" / "recorded" / "opencode-1.18.33"


def payload(project: Path, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """What `.opencode/plugin/automaton.js` sends for one `tool.execute.before` (hooks/opencode.py)."""
    return {"hook_event_name": "tool.execute.before", "session_id": "ses_1", "call_id": "call_1",
            "tool_name": tool, "tool_input": tool_input, "cwd": str(project)}


def test_the_fake_payload_has_the_fields_of_a_recorded_real_one(project: Path) -> None:
    for name, tool, given in (("tool-execute-before.json", "write", {"filePath": "src/b.py", "content": "y"}),
                              ("tool-execute-before-bash.json", "bash",
                               {"command": "echo z > c.txt", "workdir": "src", "description": "allowed"})):
        real = json.loads((RECORDED / name).read_text())
        fake = payload(project, tool, given)
        assert set(fake) == set(real) and set(fake["tool_input"]) == set(real["tool_input"])
        assert real["tool_name"] == tool


def test_write_and_edit(project: Path, make_task: Callable[..., Path], hook: Any) -> None:
    make_task("demo", "research")
    assert_allowed(hook("opencode", payload(project, "write", {"filePath": "tasks/demo/SPEC.md", "content": "#"})))
    result = hook("opencode", payload(project, "write", {"filePath": "src/main.py", "content": "x"}))
    assert_denied(result)
    assert result.err == ("automaton denied this tool call: write: src/main.py is outside the scope of"
                          " task demo at phase 'research'\n")
    edit = {"filePath": str(project / "src/main.py"), "oldString": "a", "newString": "b"}
    assert_denied(hook("opencode", payload(project, "edit", edit)), "edit:", "src/main.py")


def test_bash_in_workdir(project: Path, make_task: Callable[..., Path], hook: Any) -> None:
    make_task("demo", "research")
    (project / "tasks/demo").mkdir(exist_ok=True)
    assert_allowed(hook("opencode", payload(project, "bash", {"command": "echo d > SPEC.md", "workdir": "tasks/demo"})))
    assert_denied(hook("opencode", payload(project, "bash", {"command": "echo x > SPEC.md", "workdir": "src"})),
                  "bash:", "src/SPEC.md")
    assert_denied(hook("opencode", payload(project, "bash", {"command": "ls", "workdir": 3})), "workdir")


def test_apply_patch_names_every_file(project: Path, make_task: Callable[..., Path], hook: Any) -> None:
    make_task("demo", "research")
    patch = "*** Begin Patch\n*** Add File: src/x.py\n+x = 1\n*** End Patch"
    assert_denied(hook("opencode", payload(project, "apply_patch", {"patchText": patch})), "src/x.py")
    assert_denied(hook("opencode", payload(project, "apply_patch", {"patchText": "nothing"})), "apply_patch")


def test_multiedit_judges_the_path_of_every_edit(project: Path, make_task: Callable[..., Path], hook: Any) -> None:
    make_task("demo", "research")
    spec = "tasks/demo/SPEC.md"
    edit = {"oldString": "a", "newString": "b"}
    assert_allowed(hook("opencode", payload(project, "multiedit", {"filePath": spec, "edits": [edit]})))
    assert_allowed(hook("opencode", payload(project, "multiedit",
                                            {"filePath": spec, "edits": [{**edit, "filePath": spec}]})))
    for given in (
        {"filePath": spec, "edits": [{**edit, "filePath": ".opencode/plugin/automaton.js"}]},  # one edit overrides
        {"edits": [{**edit, "filePath": spec}, {**edit, "filePath": "src/main.py"}]},  # no top-level filePath
        {"filePath": spec, "edits": [edit, {**edit, "file_path": "src/main.py"}]},
        {"filePath": spec, "edits": [{**edit, "path": str(project / "src/main.py")}]},
    ):
        assert_denied(hook("opencode", payload(project, "multiedit", given)), "multiedit:")
    for given, why in (({"edits": [edit]}, "no filePath"), ({}, "no filePath"),
                       ({"filePath": spec, "edits": {"filePath": "src/x.py"}}, "edits is not a list"),
                       ({"filePath": spec, "edits": ["src/x.py"]}, "not an object"),
                       ({"filePath": spec, "edits": [{**edit, "filePath": 3}]}, "not a non-empty string"),
                       ({"filePath": 3, "edits": [{**edit, "filePath": spec}]}, "not a non-empty string")):
        assert_denied(hook("opencode", payload(project, "multiedit", given)), why)


@pytest.mark.parametrize("rel", [".opencode/plugin/evil.js", ".opencode/tool/t.ts", ".OpenCode/package.json",
                                 "opencode.json", "src/opencode.jsonc", "src/.opencode/plugin/x.js"])
def test_opencode_configuration_and_code_are_never_written(project: Path, hook: Any, rel: str) -> None:
    result = hook("opencode", payload(project, "write", {"filePath": rel, "content": "x"}))
    assert_denied(result, "agent hook configuration is changed only by a human")


def test_read_only_and_unknown_tools(project: Path, hook: Any) -> None:
    for tool in ("read", "glob", "grep", "task", "skill", "todowrite", "webfetch"):
        assert_allowed(hook("opencode", payload(project, tool, {"filePath": "tasks/demo/.state"})))
    assert_denied(hook("opencode", payload(project, "mcp_write", {})), "unknown tool 'mcp_write'")
    assert_denied(hook("opencode", payload(project, "write", {"content": "x"})), "no filePath")


def test_install_writes_the_plugin_once_and_refuses_a_foreign_file(project: Path) -> None:
    first = run_cli("--install-hooks", "opencode", "--project", str(project), "--json")
    assert first.code == 0 and first.json["changed"] is True, first.err
    path = project / OPENCODE_PLUGIN
    text = path.read_text()
    command = first.json["command"]
    assert json.dumps(command) in text and f"--hook opencode --project {project.resolve()}" in command
    assert command.endswith(" || exit 2")
    ignore = project / ".opencode" / ".gitignore"
    assert ignore.read_text() == "node_modules\npackage.json\npackage-lock.json\nbun.lock\n"
    ignore.write_text("node_modules\n")  # a human's own: kept
    second = run_cli("--install-hooks", "opencode", "--project", str(project), "--json")
    assert second.code == 0 and second.json["changed"] is False and path.read_text() == text
    assert ignore.read_text() == "node_modules\n"
    path.write_text("export const Mine = async () => ({});\n")
    refused = run_cli("--install-hooks", "opencode", "--project", str(project))
    assert refused.code == 1 and "another plugin" in refused.err
    assert path.read_text() == "export const Mine = async () => ({});\n"


NODE = shutil.which("node")
DRIVER = """
const mod = await import(process.argv[2]);
const hooks = await mod.AutomatonHook({ directory: "/proj" });
try {
  await hooks["tool.execute.before"]({ tool: "write", sessionID: "s", callID: "c" }, { args: { filePath: "a" } });
  console.log("ALLOWED");
} catch (err) {
  console.log("THROWN " + err.message);
}
"""


def _run_plugin(tmp_path: Path, command: str) -> str:
    plugin = tmp_path / "automaton.mjs"
    plugin.write_text(opencode_plugin(command))
    driver = tmp_path / "driver.mjs"
    driver.write_text(DRIVER)
    done = subprocess.run([str(NODE), str(driver), str(plugin)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.skipif(NODE is None, reason="node is not installed: the plugin's JavaScript is not run")
def test_the_plugin_allows_only_on_exit_0_and_throws_every_other_answer(tmp_path: Path) -> None:
    seen = tmp_path / "stdin.json"
    assert _run_plugin(tmp_path, f"cat > {seen}") == "ALLOWED"
    sent = json.loads(seen.read_text())
    assert sent == {"hook_event_name": "tool.execute.before", "session_id": "s", "call_id": "c",
                    "tool_name": "write", "tool_input": {"filePath": "a"}, "cwd": "/proj"}
    assert _run_plugin(tmp_path, "echo 'automaton denied this tool call: no' >&2; exit 2") == (
        "THROWN automaton denied this tool call: no")
    assert _run_plugin(tmp_path, "cat > /dev/null; exit 1") == (
        "THROWN automaton denied this tool call: the hook exited 1 without a reason; denied to stay safe")
    died = _run_plugin(tmp_path, "cat > /dev/null; kill -9 $$")
    assert died.startswith("THROWN automaton denied this tool call: the hook died"), died
    missing = _run_plugin(tmp_path, "/no/such/automaton --hook opencode || exit 2")
    assert missing.startswith("THROWN ") and "/no/such/automaton" in missing
