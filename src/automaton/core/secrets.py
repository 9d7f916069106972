"""The user's credentials that no agent process gets: credential stores on disk, variables in its environment.

Pure data and pure functions (no file system access): `commands.writable` turns the stores into
the paths of a sandbox `Policy` (`masked`, and `hidden` for Landlock and Seatbelt), and
`harnesses._env` and `automaton --sandbox` withhold the variables.

Why a typed tuple in code and not a packaged data file: it is checked by mypy and the tests like
any other rule of the sandbox, it is read by the agent hook's and the tick's own imports with no
file to open (a missing or edited resource file would silently drop the protection), and a
project widens it in `.automaton/config.json` (`"sandbox": {"hide": [...]}`), sealed by a human,
not by editing the package.

`CREDENTIAL_STORES`: entries are `~/`-relative (the form `.automaton/config.json` and `--doctor`
use). One under `~/.config/` is also hidden under `$XDG_CONFIG_HOME`, one under `~/.local/share/`
under `$XDG_DATA_HOME`, when those are set elsewhere. Folders are hidden whole: `~/.ssh` with its
`known_hosts` and `config` (an agent needs no SSH, and a partial list of key file names would
miss a key named otherwise). Deliberately NOT listed: what an agent CLI needs to reach its
model (Claude Code's `~/.claude/.credentials.json` and `~/.claude.json`, Codex's
`~/.codex/auth.json`, Gemini CLI's `~/.gemini/oauth_creds.json`, opencode's
`~/.local/share/opencode/auth.json`; `sandbox.agents` makes parts of those folders writable,
and a hidden path may not lie inside a writable one), and build configuration that may hold a
password but that builds read (`~/.m2/settings.xml`, `~/.gradle/gradle.properties`,
`pip.conf`). Sources: each tool's own documentation of where it keeps its login.

`credential_variable`: exact names (`CREDENTIAL_ENV`), prefixes (`CREDENTIAL_PREFIXES`) and
name shapes (`…_TOKEN`, `…_SECRET`, `…_PASSWORD`, `…SECRET…`, `…PRIVATE_KEY…`) of variables
that carry a secret or reach one (`SSH_AUTH_SOCK`: the ssh-agent's socket signs with every
loaded key). Kept: the agent's own model keys (`MODEL_KEYS`; `*_API_KEY` names match no shape
above), and the provider credentials a switch the user set asks for (`PROVIDERS`: Claude Code
on Bedrock needs `AWS_*` and `~/.aws`, on Vertex AI `~/.config/gcloud`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

CREDENTIAL_STORES: tuple[str, ...] = (
    # SSH, GnuPG, password managers, keyrings, client certificates
    "~/.ssh", "~/.gnupg", "~/.password-store", "~/.local/share/keyrings", "~/.local/share/kwalletd",
    "~/.config/op", "~/.op", "~/.config/Bitwarden CLI", "~/Library/Application Support/Bitwarden CLI",
    "~/Library/Keychains", "~/.pki",
    # cloud SDKs and hosting CLIs
    "~/.aws", "~/.config/gcloud", "~/.azure", "~/.oci", "~/.config/doctl", "~/.config/hcloud", "~/.fly",
    "~/.netlify", "~/.wrangler", "~/.config/.wrangler", "~/.local/share/com.vercel.cli", "~/.s3cfg",
    "~/.boto", "~/.databrickscfg", "~/.config/rclone",
    # infrastructure
    "~/.kube", "~/.docker/config.json", "~/.config/containers/auth.json", "~/.vault-token",
    "~/.terraform.d/credentials.tfrc.json",
    # code hosts and git
    "~/.config/gh", "~/.config/glab-cli", "~/.config/hub", "~/.git-credentials", "~/.config/git/credentials",
    "~/.netrc",
    # package registries
    "~/.npmrc", "~/.yarnrc.yml", "~/.pypirc", "~/.cargo/credentials", "~/.cargo/credentials.toml",
    "~/.gem/credentials", "~/.m2/settings-security.xml", "~/.huggingface/token", "~/.cache/huggingface/token",
    # more hosting, data and service CLIs, and package managers' tokens
    "~/.config/github-copilot", "~/.config/pulumi", "~/.pulumi/credentials.json", "~/.config/vercel",
    "~/.supabase", "~/.config/stripe", "~/.kaggle", "~/.snowflake", "~/.dbt/profiles.yml", "~/.config/scw",
    "~/.config/twilio-cli", "~/.circleci/cli.yml", "~/.ngrok2", "~/.config/ngrok", "~/.config/anthropic",
    "~/.config/openai", "~/.composer/auth.json", "~/.config/composer/auth.json", "~/.nuget/NuGet/NuGet.Config",
    "~/.config/helm/repositories.yaml",
    # decryption keys, wallets, mail and chat logins
    "~/.config/sops", "~/.netrc.gpg", "~/.bitcoin", "~/.electrum", "~/.thunderbird", "~/.config/Slack",
    # databases
    "~/.pgpass", "~/.my.cnf",
    # shell and REPL histories (commands typed with a token in them)
    "~/.bash_history", "~/.zsh_history", "~/.zhistory", "~/.histfile", "~/.sh_history",
    "~/.local/share/fish/fish_history", "~/.config/fish/fish_history", "~/.python_history",
    "~/.node_repl_history", "~/.psql_history", "~/.mysql_history", "~/.sqlite_history", "~/.rediscli_history",
    "~/.irb_history", "~/.lesshst", "~/.local/share/atuin",
)

CREDENTIAL_ENV: frozenset[str] = frozenset({
    "SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO",
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_WEB_IDENTITY_TOKEN_FILE",
    "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CREDENTIALS", "GOOGLE_OAUTH_ACCESS_TOKEN",
    "AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PASSWORD", "ARM_CLIENT_SECRET", "ARM_ACCESS_KEY",
    "GITHUB_TOKEN", "GH_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN", "GITLAB_TOKEN", "GL_TOKEN",
    "NPM_TOKEN", "NODE_AUTH_TOKEN", "TWINE_USERNAME", "TWINE_PASSWORD", "PYPI_TOKEN", "PYPI_API_TOKEN",
    "UV_PUBLISH_TOKEN", "UV_PUBLISH_PASSWORD", "CARGO_REGISTRY_TOKEN", "DOCKER_AUTH_CONFIG", "DOCKER_PASSWORD",
    "VAULT_TOKEN", "CONSUL_HTTP_TOKEN", "NOMAD_TOKEN", "DIGITALOCEAN_ACCESS_TOKEN", "HCLOUD_TOKEN",
    "HEROKU_API_KEY", "CLOUDFLARE_API_KEY", "CLOUDFLARE_API_TOKEN", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
    "BW_SESSION", "OP_SERVICE_ACCOUNT_TOKEN", "PGPASSWORD", "MYSQL_PWD", "REDISCLI_AUTH",
    # automaton's own record key handed to a runner as a secret (store/key.py)
    "AUTOMATON_RECORD_KEY", "AUTOMATON_RECORD_KEY_FILE",
    # the state remote's push credential (git/remote.py `credential_env`): the runner's git only
    "AUTOMATON_GIT_TOKEN",
})
# The record key as a secret (store/key.py `secret_source`): the value itself, or the path of
# a mounted file. A process they are withheld from gets `RECORD_KEY_WITHHELD` instead, so it
# reads keyed lines as a sandboxed process does (KeyHidden), not as if no key existed.
RECORD_KEY_ENV: tuple[str, str] = ("AUTOMATON_RECORD_KEY", "AUTOMATON_RECORD_KEY_FILE")
RECORD_KEY_WITHHELD = "AUTOMATON_RECORD_KEY_WITHHELD"
CREDENTIAL_PREFIXES: tuple[str, ...] = ("OP_SESSION_", "POETRY_PYPI_TOKEN_", "POETRY_HTTP_BASIC_", "TF_TOKEN_",
                                        "CARGO_REGISTRIES_")
_SUFFIXES = ("_TOKEN", "_SECRET", "_PASSWORD", "_PASSWD")
_INFIXES = ("SECRET", "PRIVATE_KEY")
# The agent's own model credentials, kept although a shape above matches them (the API keys
# match none): Claude Code (code.claude.com/docs/en/env-vars), Codex, Gemini CLI, aider, opencode.
MODEL_KEYS: frozenset[str] = frozenset({
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
    "OPENAI_API_KEY", "CODEX_API_KEY", "AZURE_OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
    "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY", "MISTRAL_API_KEY", "GROQ_API_KEY", "XAI_API_KEY",
})


@dataclass(frozen=True)
class Provider:
    """A model provider the agent CLI reaches with the user's cloud login: when `switch` is set
    (not "", "0", "false") in the environment, the variables named in `env` (a trailing "*" is a
    prefix) stay in the agent's environment and the stores in `stores` stay readable to the
    harnesses in `agents`."""

    switch: str
    agents: tuple[str, ...]
    env: tuple[str, ...]
    stores: tuple[str, ...]


PROVIDERS: tuple[Provider, ...] = (
    Provider("CLAUDE_CODE_USE_BEDROCK", ("claude",), ("AWS_*",), ("~/.aws",)),
    Provider("CLAUDE_CODE_USE_VERTEX", ("claude",), ("GOOGLE_APPLICATION_CREDENTIALS",), ("~/.config/gcloud",)),
    Provider("GOOGLE_GENAI_USE_VERTEXAI", ("gemini",), ("GOOGLE_APPLICATION_CREDENTIALS",), ("~/.config/gcloud",)),
)


def _switched(env: Mapping[str, str], provider: Provider) -> bool:
    return env.get(provider.switch, "").strip().lower() not in ("", "0", "false", "no", "off")


def _kept(name: str, env: Mapping[str, str], agent: str | None) -> bool:
    for provider in PROVIDERS:
        if not _switched(env, provider) or (agent is not None and agent not in provider.agents):
            continue
        if any(name == p or (p.endswith("*") and name.startswith(p[:-1])) for p in provider.env):
            return True
    return False


def credential_variable(name: str) -> bool:
    """Whether environment variable `name` carries a credential (see the module text);
    case-insensitive. The model keys (`MODEL_KEYS`) are not credentials here."""
    upper = name.upper()
    if upper in MODEL_KEYS:
        return False
    return (upper in CREDENTIAL_ENV or upper.startswith(CREDENTIAL_PREFIXES) or upper.endswith(_SUFFIXES)
            or any(part in upper for part in _INFIXES))


def withheld(env: Mapping[str, str], agent: str | None = None) -> list[str]:
    """The names in `env` an agent process does not get, sorted: the credential variables,
    less those a provider switch set in `env` keeps. `agent`: the harness name the process
    runs ("command" for a verify command: no provider keeps); None: any agent's."""
    return sorted(k for k in env if credential_variable(k) and not _kept(k.upper(), env, agent))


def without_credentials(env: Mapping[str, str], agent: str | None = None) -> dict[str, str]:
    """A copy of `env` without the `withheld` names, plus `withheld_marker(env)`."""
    drop = set(withheld(env, agent))
    return {**{k: v for k, v in env.items() if k not in drop}, **withheld_marker(env)}


def withheld_marker(env: Mapping[str, str]) -> dict[str, str]:
    """`{RECORD_KEY_WITHHELD: "1"}` when `env` hands the record key in (`RECORD_KEY_ENV`), else {}."""
    return {RECORD_KEY_WITHHELD: "1"} if any(env.get(name) for name in RECORD_KEY_ENV) else {}


def provider_stores(env: Mapping[str, str], agent: str) -> frozenset[str]:
    """The `~/` entries of CREDENTIAL_STORES that harness `agent` needs readable because a
    provider switch is set in `env` (empty for "command" and any agent without a provider)."""
    return frozenset(s for p in PROVIDERS if agent in p.agents and _switched(env, p) for s in p.stores)


def expand(entry: str, home: Path, env: Mapping[str, str]) -> tuple[Path, ...]:
    """The absolute paths of one `~/…` (or absolute) entry: under `home`, and for `~/.config/…`
    and `~/.local/share/…` also under `$XDG_CONFIG_HOME`/`$XDG_DATA_HOME` when `env` sets them
    to another absolute folder. A relative XDG value is ignored (the XDG spec says so)."""
    if not entry.startswith("~/"):
        return (Path(entry),)
    rel = entry[2:]
    out = [home / rel]
    for var, prefix in (("XDG_CONFIG_HOME", ".config/"), ("XDG_DATA_HOME", ".local/share/")):
        base = env.get(var, "")
        if rel.startswith(prefix) and base.startswith("/") and Path(base) != home / prefix.rstrip("/"):
            out.append(Path(base) / rel[len(prefix):])
    return tuple(out)
