"""commands.writable.secret_stores: the credential stores in force, widened and narrowed by the sealed config.json."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from automaton.commands.writable import secret_stores
from automaton.core.errors import BadInput
from automaton.store.project_config import ConfigNotSealed
from tests.commands.test_can_edit_config import write_config
from tests.helpers import run_exe


def plant(home: Path, *rels: str) -> None:
    for rel in rels:
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text("secret\n")


def test_the_packaged_list_in_force_names_only_what_exists(project: Path, forbid_real_home: Path) -> None:
    home = forbid_real_home
    plant(home, ".ssh/id_ed25519", ".netrc", ".config/gh/hosts.yml")
    got = secret_stores(project, "claude", home, {})
    assert set(got.paths) == {home / ".ssh", home / ".netrc", home / ".config/gh"}
    assert "~/.aws" in got.entries and got.unhidden == () and got.provider == () and got.notes() == []


def test_a_sealed_config_adds_and_takes_out_entries(project: Path, forbid_real_home: Path) -> None:
    home = forbid_real_home
    plant(home, ".netrc", ".config/mytool/token", "elsewhere.key")
    write_config(project, {"schema_version": 1, "sandbox": {"hide": ["~/.config/mytool", str(home / "elsewhere.key")],
                                                            "unhide": ["~/.netrc"]}})
    got = secret_stores(project, "command", home, {})
    assert set(got.paths) == {home / ".config/mytool", home / "elsewhere.key"}
    assert got.unhidden == ("~/.netrc",) and "~/.netrc" not in got.entries
    assert got.notes() == ["sandbox: ~/.netrc is readable to agents: .automaton/config.json unhides it"
                           " (sealed by a human)"]


def test_an_unsealed_sandbox_list_is_not_used(project: Path, forbid_real_home: Path) -> None:
    write_config(project, {"schema_version": 1, "sandbox": {"unhide": ["~/.ssh"]}}, seal=False)
    with pytest.raises(ConfigNotSealed):
        secret_stores(project, "command", forbid_real_home, {})


def test_a_provider_switch_leaves_its_store_readable_to_its_agent_only(project: Path, forbid_real_home: Path) -> None:
    home = forbid_real_home
    plant(home, ".aws/credentials")
    env = {"CLAUDE_CODE_USE_BEDROCK": "1"}
    assert secret_stores(project, "claude", home, env).paths == ()
    assert secret_stores(project, "claude", home, env).provider == ("~/.aws",)
    assert secret_stores(project, "command", home, env).paths == (home / ".aws",)


@pytest.mark.parametrize("sandbox, words", [
    ({"hide": "~/.x"}, "must be lists"),
    ({"hide": ["relative/path"]}, "~/"),
    ({"hide": ["~/"]}, "not ~ or /"),
    ({"hide": ["~/../etc"]}, "no '..'"),
    ({"hide": [""]}, "non-empty"),
    ({"unhide": ["~/.not-in-the-list"]}, "not in the packaged list"),
    ({"hidden": []}, "unknown key"),
    ({"hide": ["~/.claude"]}, "an agent CLI must write"),
    ({"hide": ["~/.local"]}, "an agent CLI must write"),
    (["~/.x"], "must be an object"),
])
def test_a_bad_entry_is_one_line_exit_2(project: Path, sandbox: object, words: str) -> None:
    write_config(project, {"schema_version": 1, "sandbox": sandbox}, seal=False)
    with pytest.raises(BadInput) as caught:
        secret_stores(project, "command")
    assert "config.json" in caught.value.message and words in caught.value.message
    done = run_exe("automaton", "--sandbox", "--project", str(project), "--", sys.executable, "-c", "print('ran')",
                   cwd=project)
    assert done.returncode == 2 and "ran" not in done.stdout
    assert words in done.stderr and len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
