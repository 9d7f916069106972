"""The environment an agent process gets: the runner's, cleaned, plus automaton's own.

The runner may itself run inside an agent session (a human's Claude Code, Codex or Gemini
shell; a git hook; another loop's tick). Its environment then carries that session's
markers, which make the loop's agent refuse to start ("Claude Code cannot be launched inside
another Claude Code session … unset the CLAUDECODE environment variable") or attach it to the
parent session, its IDE or its git repository. `STRIPPED` lists what is removed; everything
else is inherited except the user's credentials (`core.secrets.credential_variable`:
`AWS_SECRET_ACCESS_KEY`, `GITHUB_TOKEN`, `SSH_AUTH_SOCK` …, unless a provider switch such as
`CLAUDE_CODE_USE_BEDROCK` keeps them for the agent's model): the agent's own model
credentials and provider choices (`ANTHROPIC_API_KEY`, `CLAUDE_CODE_USE_BEDROCK`,
`CLAUDE_CODE_USE_VERTEX`, `CLAUDE_CODE_OAUTH_TOKEN`, `CODEX_API_KEY`, `CODEX_HOME`,
`GEMINI_API_KEY` …), PATH (its absolute entries only: `absolute_path`), HOME, proxies.

Only the variables each tool documents as set BY it for the processes it starts are removed,
never a prefix of user settings: most `CLAUDE_CODE_*` variables are the user's configuration
(the provider and auth ones above among them). Sources:

- Claude Code, code.claude.com/docs/en/env-vars (snapshot 2026-08): `CLAUDECODE` "set to 1
  in subprocesses Claude Code spawns"; `CLAUDE_CODE_CHILD_SESSION`, `CLAUDE_CODE_SESSION_ID`,
  `CLAUDE_CODE_BRIDGE_SESSION_ID`, `CLAUDE_CODE_MESSAGING_SOCKET`/`_TOKEN`, `CLAUDE_PID`,
  `CLAUDE_EFFORT` are set automatically in its Bash tool and hook processes;
  `CLAUDE_CODE_REMOTE`/`_REMOTE_SESSION_ID` mark a cloud session; `CLAUDE_ENV_FILE` is the
  session's own shell-setup script, filled by its SessionStart hooks; `CLAUDE_PROJECT_DIR`
  is the parent session's project root (code.claude.com/docs/en/hooks). Undocumented but
  exported by Claude Code and its IDE extensions: `CLAUDE_CODE_ENTRYPOINT` (the parent's
  entry point; github.com/theNetworkChuck/claude-phone issue #25 had to drop it with
  CLAUDECODE) and `CLAUDE_CODE_SSE_PORT` (the port of the user's editor integration).
- Codex, github.com/openai/codex `codex-rs/core/src/spawn.rs`: `CODEX_SANDBOX` and
  `CODEX_SANDBOX_NETWORK_DISABLED` are set on every sandboxed shell-tool command;
  `CODEX_THREAD_ID` since openai/codex PR #10096.
- Gemini CLI, github.com/google-gemini/gemini-cli `docs/tools/shell.md`: `GEMINI_CLI=1` in
  `run_shell_command` processes.
- automaton: `AUTOMATON_APPROVER` and `AUTOMATON_TASK` belong to a human's session (who
  signs off, which task the human works on); an agent never inherits them. The record key
  handed in as a secret (`AUTOMATON_RECORD_KEY`, `AUTOMATON_RECORD_KEY_FILE`) is a credential
  (`core.secrets.CREDENTIAL_ENV`): withheld, and `AUTOMATON_RECORD_KEY_WITHHELD=1` set in its
  place (`core.secrets.withheld_marker`). Push credentials (`GITHUB_TOKEN`, `GH_TOKEN`,
  `SSH_AUTH_SOCK`, the state remote's `AUTOMATON_GIT_TOKEN` …) are withheld the same way.
- git, git(1) "ENVIRONMENT VARIABLES": `GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`,
  `GIT_OBJECT_DIRECTORY`, `GIT_ALTERNATE_OBJECT_DIRECTORIES`, `GIT_COMMON_DIR` and
  `GIT_NAMESPACE` point git at another repository than the one in the agent's working
  directory (git sets some of them for its hooks); `GIT_CONFIG*` (`GIT_CONFIG_GLOBAL`,
  `GIT_CONFIG_COUNT`/`_KEY_n`/`_VALUE_n`, `GIT_CONFIG_PARAMETERS` from `git -c` …) inject
  configuration the worktree's own config does not have.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from automaton.core.secrets import withheld, withheld_marker

# Exact names; an entry ending in "*" removes every name starting with what precedes it.
STRIPPED: tuple[str, ...] = (
    # Claude Code session markers
    "CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_CHILD_SESSION", "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_CODE_BRIDGE_SESSION_ID", "CLAUDE_CODE_REMOTE", "CLAUDE_CODE_REMOTE_SESSION_ID",
    "CLAUDE_CODE_MESSAGING_SOCKET", "CLAUDE_CODE_MESSAGING_TOKEN", "CLAUDE_CODE_SSE_PORT", "CLAUDE_PID",
    "CLAUDE_EFFORT", "CLAUDE_ENV_FILE", "CLAUDE_PROJECT_DIR",
    # Codex sandbox and session markers
    "CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED", "CODEX_THREAD_ID",
    # Gemini CLI
    "GEMINI_CLI",
    # a human's automaton session
    "AUTOMATON_APPROVER", "AUTOMATON_TASK",
    # git pointed elsewhere
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_CONFIG*",
)
_EXACT = frozenset(name for name in STRIPPED if not name.endswith("*"))
_PREFIXES = tuple(name[:-1] for name in STRIPPED if name.endswith("*"))


def stripped(name: str) -> bool:
    """Whether the inherited variable `name` is removed (case-insensitive: Windows names are)."""
    upper = name.upper()
    return upper in _EXACT or upper.startswith(_PREFIXES)


def environment(inherited: Mapping[str, str] | None, *layers: Mapping[str, str]) -> dict[str, str]:
    """The agent's environment: `inherited` (default: this process's) without the `STRIPPED`
    variables and the user's credentials (`core.secrets.withheld`; the record key's variables
    replaced by `core.secrets.withheld_marker`), then each of `layers` in
    order (automaton's own variables, which may set any name). Returns a new dict; nothing is changed in place."""
    base = os.environ if inherited is None else inherited
    secret = set(withheld(base))
    env = {key: value for key, value in base.items() if not stripped(key) and key not in secret}
    if "PATH" in env:
        env["PATH"] = absolute_path(env["PATH"])
    env.update(withheld_marker(base))
    for layer in layers:
        env.update(layer)
    return env


def absolute_path(path: str) -> str:
    """PATH without its empty and relative entries. An agent runs in its worktree, which it
    writes: an empty or relative entry would let a program it left there (`./claude`) stand in
    for the agent CLI or a tool on the next tick."""
    return os.pathsep.join(entry for entry in path.split(os.pathsep) if os.path.isabs(entry))
