"""Figure 11: what the namespace layer adds to a sandboxed start: `proc.run_streaming` of a
trivial command under a tick's policy with user+mount namespaces and Landlock, against the same
call under Landlock alone. Target: <= 1.2x.

Two commands: `true` (the fixed cost: unshare, the read-only remount of every mount, the
private tmpfs folders and the paths bound back into them, all in the child before exec) and
`python -c` writing a file in the working folder (a start of an interpreter, as an agent CLI
is). The policy is a tick's, with its paths under /tmp as a tick's are: the working folder and
a private temp dir writable, a throwaway home (visible, with `~/.config/automaton` hidden and
a masked `~/.ssh`), the PATH folders visible. A third pair runs the verifier's shape
(`network=False`: a network namespace too, loopback brought up). Both sides of a pair run in
this process, interleaved; each sample is one whole call. Linux only, with user namespaces;
elsewhere the script says so and exits 1.
Run: .venv/bin/python bench/bench_isolation.py [--quick] [--reps N]
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
    from automaton.sandbox import available, namespaces_work, visible_paths

    found = available()
    if not found.ok or not namespaces_work():
        raise c.BenchError(f"no namespaces here: {found.detail}; {found.isolation_detail}")
    with c.workspace("isolation", ns.keep) as tmp:
        work, home = tmp / "work", tmp / "home"
        (work / "tmp").mkdir(parents=True)
        for name in (".cache", ".local", ".config/automaton", ".config/git", ".ssh"):
            (home / name).mkdir(parents=True, exist_ok=True)
        (home / ".config" / "automaton" / "key").write_text("secret")
        (home / ".ssh" / "id_ed25519").write_text("private")
        seen = visible_paths(home=home, cwd=work, project_root=tmp, argv=[sys.executable])
        policy = Policy((work,), (home / ".config" / "automaton",), work / "tmp", "bench", masked=(home / ".ssh",),
                        visible=seen)
        quiet = Policy(policy.writable, policy.hidden, policy.tmpdir, "bench verify", masked=policy.masked,
                       network=False, visible=seen)
        writer = [sys.executable, "-c", "open('out.txt', 'w').write('x')"]
        # Prove the namespaces are in force before timing them: a chmod outside is refused.
        probe = [sys.executable, "-c", f"import os; os.chmod({str(tmp / 'home')!r}, 0o777)"]
        if run_streaming(probe, out_path=tmp / "check.log", cwd=work, timeout_s=60, sandbox=policy).code == 0:
            raise c.BenchError("a chmod outside the writable folder succeeded: no namespaces in force")

        def case(argv: list[str], pol: Policy, with_ns: bool) -> Callable[[], c.Sample]:
            import automaton.sandbox as sb

            def go() -> None:
                real = sb.namespaces_work
                sb.namespaces_work = lambda: with_ns  # type: ignore[assignment]
                try:
                    done = run_streaming(argv, out_path=tmp / "out.log", cwd=work, timeout_s=60, sandbox=pol)
                finally:
                    sb.namespaces_work = real  # type: ignore[assignment]
                if done.code != 0:
                    raise c.BenchError(f"{argv[0]} exited {done.code}: {(tmp / 'out.log').read_text()[-300:]}")
            return lambda: c.measure(go)

        commands = {"true": (["true"], policy), "python write": (writer, policy), "true, no network": (["true"], quiet)}
        cases = {f"{name}, {side}": case(argv, pol, side == "namespaces")
                 for name, (argv, pol) in commands.items() for side in ("landlock only", "namespaces")}
        times = c.interleave(cases, reps, warmup=3)
    ratios: dict[str, float] = {}
    for name in commands:
        base, sub = times[f"{name}, landlock only"], times[f"{name}, namespaces"]
        ratios[name] = c.wall(sub) / c.wall(base)
        print(f"  {name + ', landlock only':32} {c.spread(base)}")
        print(f"  {name + ', namespaces':32} {c.spread(sub)}  -> {ratios[name]:.2f}x wall,"
              f" {c.cpu(sub) / c.cpu(base):.2f}x cpu")
    worst = max(ratios, key=lambda k: ratios[k])
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        mounts = sum(1 for _ in fh)
    detail = (", ".join(f"{k} {c.ms(c.wall(times[k + ', namespaces']))} vs {c.ms(c.wall(times[k + ', landlock only']))}"
                        for k in commands)
              + f"; worst = {worst}; {mounts} mounts here; Landlock ABI {found.abi}; medians of {reps} interleaved"
                " runs")
    c.figure(11, "run_streaming namespaces+Landlock vs Landlock only (true, python -c write)", ratios[worst], TARGET,
             detail)
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except c.BenchError as exc:
        print(f"bench_isolation: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
