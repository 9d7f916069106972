"""Any argv as a harness (README.md#harnesses): scripts and deterministic tools.

argv is loop.json `harness.command` with `harness.args` appended. The rendered prompt goes
on stdin and into a file named by `AUTOMATON_PROMPT_FILE` (`runs/<n>/<role>.prompt.md`);
the role is in `AUTOMATON_ROLE`. stdout is the final text; cost is unknown (None).
"""

from __future__ import annotations

from automaton.core.errors import BadInput
from automaton.harnesses import HarnessRequest, HarnessResult, Invocation
from automaton.harnesses._cli import run_cli, tail


def prompt_file(req: HarnessRequest) -> str:
    return str(req.run_dir / f"{req.role}.prompt.md")


def invocation(req: HarnessRequest) -> Invocation:
    """argv = command + args; env AUTOMATON_PROMPT_FILE; stdin = the prompt."""
    if not req.command:
        raise BadInput("harness 'command' needs loop.json harness.command (a non-empty argv list)")
    return Invocation(argv=[*req.command, *req.args], env={"AUTOMATON_PROMPT_FILE": prompt_file(req)},
                      stdin=req.prompt)


def run(req: HarnessRequest) -> HarnessResult:
    """Write the prompt file, run the command, and return its stdout as the final text."""
    inv = invocation(req)
    req.run_dir.mkdir(parents=True, exist_ok=True)
    (req.run_dir / f"{req.role}.prompt.md").write_text(req.prompt, encoding="utf-8")

    def parse(stdout: str, stderr: str, code: int) -> HarnessResult:
        error = None if code == 0 else f"command exited {code}: {tail(stderr, 200)}".strip().rstrip(":")
        return HarnessResult(code, stdout.strip(), None, {}, error)

    # Not sealed: its cost is always unknown and it reports no limit, and a user's script may
    # write to /dev/stdout, which cannot be opened on a socket (bash: "No such device").
    return run_cli(req, inv, parse, sealed=False)
