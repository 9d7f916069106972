"""Figure 6: what the kernel sandbox adds to starting an agent process: `proc.run_streaming` of a
trivial command confined by a real policy, against the same call unconfined. Target: <= 1.2x.

Two commands: `true` (the fixed cost of a start: the sandboxed start forks instead of
vfork-ing and applies the Landlock rules in the child) and `python -c` writing a file in the
working folder (a start of an interpreter, as an agent CLI is). The policy is a tick's: the
working folder and a private temp dir writable, a `~/.config/automaton` hidden in a throwaway
home with a few dotfiles. Both sides of a pair run in this process, interleaved; each sample is
one whole call (pipes, reader threads, the clean-up of leftover processes included). Linux only
(Landlock); elsewhere the script says so and exits 1.
Run: .venv/bin/python bench/bench_sandbox.py [--quick] [--reps N]
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import _common as c

TARGET = 1.2


def main() -> int:
    ns = c.args(__doc__)
    reps = ns.reps or (10 if ns.quick else 60)
    from automaton.core.sandbox import Policy
    from automaton.proc import run_streaming
    from automaton.sandbox import available

    found = available()
    if not found.ok:
        raise c.BenchError(f"no sandbox here: {found.detail}")
    with c.workspace("sandbox", ns.keep) as tmp:
        work, home = tmp / "work", tmp / "home"
        (work / "tmp").mkdir(parents=True)
        for name in (".bashrc", ".gitconfig", ".cache", ".local", ".config/automaton", ".config/git"):
            (home / name).mkdir(parents=True, exist_ok=True)
        (home / ".config" / "automaton" / "key").write_text("secret")
        policy = Policy((work,), (home / ".config" / "automaton",), work / "tmp", "bench")
        writer = [sys.executable, "-c", "open('out.txt', 'w').write('x')"]
        commands = {"true": ["true"], "python write": writer}
        # Prove the sandbox is in force before timing it: a write outside is refused.
        outside = [sys.executable, "-c", f"open({str(tmp / 'outside.txt')!r}, 'w')"]
        if run_streaming(outside, out_path=tmp / "check.log", cwd=work, timeout_s=60, sandbox=policy).code == 0:
            raise c.BenchError("a sandboxed write outside the working folder succeeded")

        def case(argv: list[str], confined: bool) -> Callable[[], c.Sample]:
            def go() -> None:
                done = run_streaming(argv, out_path=tmp / "out.log", cwd=work, timeout_s=60,
                                     sandbox=policy if confined else None)
                if done.code != 0:
                    raise c.BenchError(f"{argv[0]} exited {done.code}: {(tmp / 'out.log').read_text()[-300:]}")
            return lambda: c.measure(go)

        cases = {f"{name}, {side}": case(argv, side == "sandboxed")
                 for name, argv in commands.items() for side in ("unconfined", "sandboxed")}
        times = c.interleave(cases, reps, warmup=3)
    ratios: dict[str, float] = {}
    for name in commands:
        base, sub = times[f"{name}, unconfined"], times[f"{name}, sandboxed"]
        ratios[name] = c.wall(sub) / c.wall(base)
        print(f"  {name + ', unconfined':26} {c.spread(base)}")
        print(f"  {name + ', sandboxed':26} {c.spread(sub)}  -> {ratios[name]:.2f}x wall,"
              f" {c.cpu(sub) / c.cpu(base):.2f}x cpu")
    worst = max(ratios, key=lambda k: ratios[k])
    detail = (", ".join(f"{k} {c.ms(c.wall(times[k + ', sandboxed']))} vs {c.ms(c.wall(times[k + ', unconfined']))}"
                        for k in commands)
              + f"; worst = {worst}; Landlock ABI {found.abi}; medians of {reps} interleaved runs")
    c.figure(6, "run_streaming sandboxed vs unconfined (true, python -c write)", ratios[worst], TARGET, detail)
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except c.BenchError as exc:
        print(f"bench_sandbox: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
