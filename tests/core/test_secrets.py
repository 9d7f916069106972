"""core.secrets: which credential stores and variables an agent process never gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from automaton.core import secrets
from automaton.sandbox.agents import STATE


@pytest.mark.parametrize("name", ["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GITHUB_TOKEN", "GH_TOKEN",
                                  "NPM_TOKEN", "TWINE_PASSWORD", "PYPI_API_TOKEN", "DOCKER_AUTH_CONFIG",
                                  "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "OP_SESSION_my", "TF_TOKEN_app_terraform_io",
                                  "STRIPE_SECRET_KEY", "MY_DB_PASSWORD", "SENTRY_AUTH_TOKEN", "github_token"])
def test_credential_variables_are_recognised(name: str) -> None:
    assert secrets.credential_variable(name)


@pytest.mark.parametrize("name", ["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN",
                                  "OPENAI_API_KEY", "CODEX_API_KEY", "GEMINI_API_KEY", "PATH", "HOME", "PWD",
                                  "KUBECONFIG", "CLAUDE_CODE_MAX_OUTPUT_TOKENS", "CLAUDE_CODE_USE_BEDROCK", "LANG"])
def test_model_keys_and_ordinary_variables_are_kept(name: str) -> None:
    assert not secrets.credential_variable(name)


def test_a_provider_switch_keeps_what_its_agent_needs() -> None:
    env = {"AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "eu", "GITHUB_TOKEN": "g", "ANTHROPIC_API_KEY": "k"}
    assert secrets.withheld(env) == ["AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"]
    bedrock = {**env, "CLAUDE_CODE_USE_BEDROCK": "1"}
    assert secrets.withheld(bedrock) == ["GITHUB_TOKEN"]
    assert secrets.withheld(bedrock, "claude") == ["GITHUB_TOKEN"]
    assert secrets.withheld(bedrock, "command") == ["AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"]  # a verify command
    assert secrets.withheld({**env, "CLAUDE_CODE_USE_BEDROCK": "0"}) == ["AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"]
    assert secrets.provider_stores(bedrock, "claude") == {"~/.aws"}
    assert secrets.provider_stores(bedrock, "codex") == frozenset()
    assert secrets.without_credentials(bedrock, "command") == {"AWS_REGION": "eu", "ANTHROPIC_API_KEY": "k",
                                                                "CLAUDE_CODE_USE_BEDROCK": "1"}


def test_xdg_folders_are_followed(tmp_path: Path) -> None:
    home = tmp_path / "h"
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_DATA_HOME": "relative/ignored"}
    assert secrets.expand("~/.config/gh", home, env) == (home / ".config/gh", tmp_path / "cfg" / "gh")
    assert secrets.expand("~/.local/share/keyrings", home, env) == (home / ".local/share/keyrings",)
    assert secrets.expand("~/.ssh", home, env) == (home / ".ssh",)
    assert secrets.expand("/etc/app/token", home, env) == (Path("/etc/app/token"),)
    assert secrets.expand("~/.config/gh", home, {"XDG_CONFIG_HOME": str(home / ".config")}) == (home / ".config/gh",)


def test_no_store_overlaps_what_an_agent_cli_must_write_or_read_to_reach_its_model() -> None:
    # A hidden path inside a writable one (or the reverse) is a policy the kernel cannot
    # enforce: the sandbox refuses it, and the agent would never start.
    agent_paths = [p for folders, files in STATE.values() for p in (*folders, *files)]
    agent_paths += [".claude/.credentials.json", ".codex/auth.json", ".gemini/oauth_creds.json",
                    ".local/share/opencode/auth.json"]
    for entry in secrets.CREDENTIAL_STORES:
        rel = entry.removeprefix("~/")
        assert entry.startswith("~/") and rel and ".." not in rel.split("/")
        for path in agent_paths:
            assert not (path == rel or path.startswith(rel + "/") or rel.startswith(path + "/")), (entry, path)
    assert len(set(secrets.CREDENTIAL_STORES)) == len(secrets.CREDENTIAL_STORES)
