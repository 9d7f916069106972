"""The pre-tick gate's decision (`--check-gate`, and every tick before it reserves): pure.

`decide` takes the loop's state as read under its lock, its tamper finding and the lazy facts
(`GateCheckFacts`: the six gates' facts of `core.gates.GateFacts`, plus the project config's
seal, the harness account's deferral and loop.json's validity), and returns a `GateDecision`:
the gate's result, the loop.json it read, why that loop.json is invalid, and the transition
to apply (`halt_step`). The store applies it (`commands.loop_gate`), the CLI reports it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Protocol

from automaton.core import loopstate
from automaton.core.gates import CONFIG_CHANGED, STATE_TAMPERED, GateResult, run_gates
from automaton.core.loopconfig import LoopConfig
from automaton.core.loopstate import LogEvent, LoopState

if TYPE_CHECKING:  # core.gates defines GateFacts for the type checker only (it keeps typing off the fast path)
    from automaton.core.gates import GateFacts

    class GateCheckFacts(GateFacts, Protocol):
        """The facts `decide` asks for beyond the six gates', each at most once."""

        def unsealed_project_config(self) -> str | None: ...  # the project config (posix path) when not sealed
        def deferral(self, harness: str, passed: GateResult) -> GateResult: ...  # `passed`, or deferred
        def config_error(self) -> str | None: ...  # why loop.json is not valid now (None: valid)


@dataclass(frozen=True)
class GateDecision:
    """What the gate decided. `result`: as `core.gates.run_gates` says (`halt` set: a new halt to
    apply); `config`: loop.json when it was read and sealed; `invalid`: why loop.json is not
    valid now (a `config_changed` halt names it), None when it is or was not looked at;
    `tamper`: the state's tamper finding (the halt re-seals it)."""

    result: GateResult
    config: LoopConfig | None = None
    invalid: str | None = None
    tamper: str = ""

    def halt_step(self) -> Callable[[LoopState], tuple[LoopState, LogEvent]] | None:
        """The transition that applies the new halt (`core.loopstate.halt`), None when there is none."""
        r = self.result
        if r.halt is None:
            return None
        fields: dict[str, object] = {"reason": r.halt, "detail": STATE_TAMPERED if self.tamper else r.detail}
        if not self.tamper:
            fields["gate"] = r.gate
        return partial(loopstate.halt, reason=r.halt, detail=r.detail, fields=fields)


def project_config_gate(state: LoopState, facts: GateCheckFacts) -> GateResult | None:
    """Right after the loop.json seal: `.automaton/config.json` must be the one a human sealed
    (it decides what the agents' hooks let a task's phase write). A running loop whose project
    config is not sealed (or is invalid) halts `human_intervention`, detail
    `config_changed: .automaton/config.json`. None: pass on to the other gates."""
    if state.status != "running" or facts.config_sha256() != state.config_sha256:
        return None  # gate 1 and the loop.json seal come first (run_gates)
    unsealed = facts.unsealed_project_config()
    if unsealed is None:
        return None
    return GateResult(False, "halted:human_intervention", "config", "human_intervention",
                      f"{CONFIG_CHANGED}: {unsealed}")


def decide(state: LoopState, tamper: str, facts: GateCheckFacts) -> GateDecision:
    """The gate's decision for `state` (see the module docstring). A tampered state halts
    `human_intervention` (detail `state_tampered: <finding>`) without any other gate; with
    every brake passing, a deferred harness account refuses without a halt; a refusal made
    without reading loop.json looks at whether it is valid, and a `config_changed` halt then
    names what is wrong with it."""
    config: LoopConfig | None = None
    if tamper:
        result = GateResult(False, STATE_TAMPERED, "tamper", "human_intervention", f"{STATE_TAMPERED}: {tamper}")
    else:
        project_halt = project_config_gate(state, facts)
        result, config = (project_halt, None) if project_halt is not None else run_gates(state, facts)
        if result.ok and config is not None:  # every brake passed: is the agent's account deferred?
            result = facts.deferral(config.harness.name, result)
    invalid = None
    if not result.ok and config is None:
        invalid = facts.config_error()
        if invalid is not None and result.halt is not None and result.detail == CONFIG_CHANGED:
            # which file, what is wrong; several invalid fields on the one line a halt detail is
            result = replace(result, detail=f"{CONFIG_CHANGED}: {'; '.join(invalid.splitlines())}")
    return GateDecision(result, config, invalid, tamper)
