"""Check the VRAM probe on a real machine: print its JSON; with NVML, compare against nvidia-smi.

Run: `python bench/vram_check.py` (exit 0: agree or nothing to compare, 1: they disagree).
NVML reports bytes and nvidia-smi MiB (PROTOCOLS §5.3), so per-GPU totals must agree to within
1 MiB; free memory moves between the two reads, so it may differ by up to 1 % of the total.
"""

from __future__ import annotations

import json
import sys

from automaton import vram
from automaton.proc import run_capture

MIB = 1024 * 1024


def nvml_devices() -> list[tuple[int, int]] | None:
    """[(total, free)] in bytes per GPU from NVML, or None when NVML cannot answer."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as exc:
        print(f"NVML: unavailable ({type(exc).__name__}: {exc})")
        return None
    try:
        out = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            info = pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(i))
            out.append((int(info.total), int(info.free)))
        return out
    finally:
        pynvml.nvmlShutdown()


def smi_devices() -> list[tuple[int, int]] | None:
    got = run_capture(["nvidia-smi", "--query-gpu=memory.total,memory.free", "--format=csv,noheader,nounits"])
    if got.code != 0:
        print(f"nvidia-smi: exit {got.code}: {(got.err or got.out).strip()[:200]}")
        return None
    print("nvidia-smi raw:", got.out.strip().replace("\n", " | "))
    rows = []
    for line in got.out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and all(p.isdigit() for p in parts):
            rows.append((int(parts[0]) * MIB, int(parts[1]) * MIB))
    return rows


def main() -> int:
    result = vram.probe()
    print("probe:", json.dumps(result, sort_keys=True))
    nvml, smi = nvml_devices(), smi_devices()
    if nvml is None or smi is None:
        print("nothing to compare (need both NVML and nvidia-smi)")
        return 0
    ok = len(nvml) == len(smi)
    for i, ((nt, nf), (st, sf)) in enumerate(zip(nvml, smi, strict=False)):
        total_ok = abs(nt - st) <= MIB
        free_ok = abs(nf - sf) <= max(MIB, nt // 100)
        ok = ok and total_ok and free_ok
        print(f"gpu{i}: total nvml={nt // MIB} MiB smi={st // MIB} MiB {'ok' if total_ok else 'MISMATCH'};"
              f" free nvml={nf // MIB} MiB smi={sf // MIB} MiB {'ok' if free_ok else 'MISMATCH'}")
    best_free = max(f for _, f in nvml)
    if result["probe"] == "nvml":
        picked_ok = abs(result["free_bytes"] - best_free) <= max(MIB, best_free // 100)
        print(f"probe picked free={result['free_bytes'] // MIB} MiB; best device free={best_free // MIB} MiB"
              f" {'ok' if picked_ok else 'MISMATCH'}")
    else:
        print(f"probe answered with {result['probe']!r} although NVML works: MISMATCH")
        picked_ok = False
    ok = ok and picked_ok
    print("RESULT:", "agree" if ok else "DISAGREE")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
