"""Accelerator memory probe for local harnesses' budget gate (`automaton --vram`).

Probes in order, each failing quietly to the next:
1. NVML through `pynvml` from nvidia-ml-py: `nvmlDeviceGetMemoryInfo` free/total in bytes.
2. `nvidia-smi --query-gpu=memory.total,memory.free --format=csv,noheader,nounits` (MiB per
   line; nvidia-smi(1) says its output may change, so it only backs NVML up).
3. AMD sysfs `card*/device/mem_info_vram_total` and `mem_info_vram_used` (bytes, amdgpu).
4. Apple unified memory: `sysctl -n hw.memsize` × Metal's working-set share (~0.75; Metal's
   `recommendedMaxWorkingSetSize` is ~65-75 % of RAM, so full RAM is never reported as VRAM).
5. System RAM available (`/proc/meminfo` MemAvailable, else `os.sysconf`).
With several GPUs the device with the most free memory counts (one model runs on one device).
"""

from __future__ import annotations

import contextlib
import os
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from automaton.core.errors import BadInput
from automaton.proc import run_capture

DEFAULT_KV_KIB_PER_TOKEN = 128.0  # Llama-3-8B f16: 2*32 layers*8 kv heads*128 dims*2 B (Ollama fs/ggml/ggml.go)
MIN_CONTEXT_TOKENS = 16000  # loop mode needs this much context (README.md#harnesses, "Local models")
APPLE_WORKING_SET_SHARE = 0.75
SYSFS_DRM = Path("/sys/class/drm")
MEMINFO = Path("/proc/meminfo")
MIB = 1024 * 1024


@dataclass(frozen=True)
class Memory:
    """What one probe found: `total`/`free` in bytes on the best device, and which probe."""

    probe: str
    total: int
    free: int
    device: str | None = None


def _nvml() -> Memory | None:
    try:
        import pynvml  # lazy: the `gpu` extra, optional: without it the probe asks nvidia-smi
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # NVMLError_LibraryNotFound / DriverNotLoaded: no NVIDIA driver here
        return None
    try:
        best: Memory | None = None
        for i in range(int(pynvml.nvmlDeviceGetCount())):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            info = pynvml.nvmlDeviceGetMemoryInfo(handle)
            found = Memory("nvml", int(info.total), int(info.free), f"gpu{i}")
            if best is None or found.free > best.free:
                best = found
        return best
    except Exception:  # a device that cannot answer (MIG, lost GPU): try the next probe
        return None
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def parse_nvidia_smi(text: str) -> Memory | None:
    """Parse `memory.total, memory.free` lines in MiB (noheader,nounits); None if none valid."""
    best: Memory | None = None
    for i, line in enumerate(text.splitlines()):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            continue  # "[N/A]" (MIG) or a message line
        found = Memory("nvidia-smi", int(parts[0]) * MIB, int(parts[1]) * MIB, f"gpu{i}")
        if best is None or found.free > best.free:
            best = found
    return best


def _nvidia_smi() -> Memory | None:
    got = run_capture(["nvidia-smi", "--query-gpu=memory.total,memory.free",
                       "--format=csv,noheader,nounits"], timeout_s=15)
    return parse_nvidia_smi(got.out) if got.code == 0 else None


def _amd_sysfs(root: Path) -> Memory | None:
    best: Memory | None = None
    seen: set[Path] = set()
    for device in sorted(root.glob("card*/device")):
        try:
            real = device.resolve()
            if real in seen:
                continue
            seen.add(real)
            total = int((device / "mem_info_vram_total").read_text().strip())
            used = int((device / "mem_info_vram_used").read_text().strip())
        except (OSError, ValueError):
            continue
        found = Memory("amd-sysfs", total, max(total - used, 0), device.parent.name)
        if best is None or found.free > best.free:
            best = found
    return best


def _apple(system: str) -> Memory | None:
    if system != "Darwin":
        return None
    got = run_capture(["sysctl", "-n", "hw.memsize"], timeout_s=10)
    if got.code != 0 or not got.out.strip().isdigit():
        return None
    usable = int(int(got.out.strip()) * APPLE_WORKING_SET_SHARE)
    return Memory("apple", usable, usable, "unified")


def _system_ram(meminfo: Path) -> Memory | None:
    try:
        fields = {}
        for line in meminfo.read_text().splitlines():
            key, _, rest = line.partition(":")
            fields[key.strip()] = int(rest.split()[0]) * 1024  # kB in /proc/meminfo are KiB
        return Memory("system-ram", fields["MemTotal"], fields["MemAvailable"], "ram")
    except (OSError, ValueError, KeyError, IndexError):
        pass
    try:
        page = os.sysconf("SC_PAGE_SIZE")
        return Memory("system-ram", os.sysconf("SC_PHYS_PAGES") * page, os.sysconf("SC_AVPHYS_PAGES") * page, "ram")
    except (ValueError, OSError, AttributeError):
        return None


def measure(*, sysfs_root: Path = SYSFS_DRM, meminfo: Path = MEMINFO, system: str | None = None) -> Memory:
    """The first probe that answers, in the module docstring's order."""
    system = platform.system() if system is None else system
    for attempt in (_nvml, _nvidia_smi, lambda: _amd_sysfs(sysfs_root), lambda: _apple(system),
                    lambda: _system_ram(meminfo)):
        found = attempt()
        if found is not None:
            return found
    return Memory("none", 0, 0)


def probe(kv_kib_per_token: float = DEFAULT_KV_KIB_PER_TOKEN, *, sysfs_root: Path = SYSFS_DRM,
          meminfo: Path = MEMINFO, system: str | None = None) -> dict[str, Any]:
    """The `--vram --json` object:

    available_context_kb (int, KiB free for the KV cache: free memory of the best device; a
    model already loaded there is already subtracted), context_tokens (int, = KiB /
    kv_kib_per_token), loop_mode_eligible (bool, context_tokens >= 16000), probe ("nvml" |
    "nvidia-smi" | "amd-sysfs" | "apple" | "system-ram" | "none"), kv_kib_per_token (float),
    total_bytes, free_bytes (int), device (str | null). BadInput when kv_kib_per_token <= 0.
    """
    if isinstance(kv_kib_per_token, bool) or not kv_kib_per_token > 0:
        raise BadInput(f"kv_kib_per_token must be a number > 0 (KiB per token), got {kv_kib_per_token!r}")
    found = measure(sysfs_root=sysfs_root, meminfo=meminfo, system=system)
    available_kb = found.free // 1024
    tokens = int(available_kb / kv_kib_per_token)
    return {
        "available_context_kb": available_kb,
        "context_tokens": tokens,
        "loop_mode_eligible": tokens >= MIN_CONTEXT_TOKENS,
        "probe": found.probe,
        "kv_kib_per_token": float(kv_kib_per_token),
        "total_bytes": found.total,
        "free_bytes": found.free,
        "device": found.device,
    }
