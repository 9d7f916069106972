"""VRAM probe: NVML, nvidia-smi, AMD sysfs, Apple and RAM fallbacks, in order; the JSON shape."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton import vram
from automaton.core.errors import BadInput

GIB = 1024**3
MIB = 1024**2
# nvidia-smi --query-gpu=memory.total,memory.free --format=csv,noheader,nounits on two GPUs
SMI_TWO_GPUS = "81559, 1024\n81559, 79872\n"
SMI_BROKEN = ('sys.stdout.write("NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver.\\n")\n'
              "sys.exit(9)\n")
KEYS = {"available_context_kb", "context_tokens", "loop_mode_eligible", "probe", "kv_kib_per_token",
        "total_bytes", "free_bytes", "device"}


@pytest.fixture
def no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # `import pynvml` raises ImportError


def fake_nvml(free_totals: list[tuple[int, int]], shutdowns: list[int]) -> types.ModuleType:
    mod = types.ModuleType("pynvml")
    mod.nvmlInit = lambda: None  # type: ignore[attr-defined]
    mod.nvmlDeviceGetCount = lambda: len(free_totals)  # type: ignore[attr-defined]
    mod.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    mod.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(  # type: ignore[attr-defined]
        free=free_totals[h][0], total=free_totals[h][1], used=free_totals[h][1] - free_totals[h][0])
    mod.nvmlShutdown = lambda: shutdowns.append(1)  # type: ignore[attr-defined]
    return mod


def empty_dir(tmp_path: Path) -> Path:
    path = tmp_path / "empty-sysfs"
    path.mkdir(exist_ok=True)
    return path


def test_nvml_answers_first_with_the_device_with_most_free_memory(
        monkeypatch: pytest.MonkeyPatch, fake_bin: Callable[[str, str], Path], tmp_path: Path) -> None:
    shutdowns: list[int] = []
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml([(2 * GIB, 80 * GIB), (40 * GIB, 80 * GIB)], shutdowns))
    fake_bin("nvidia-smi", f"sys.stdout.write({SMI_TWO_GPUS!r})\n")
    got = vram.probe(sysfs_root=empty_dir(tmp_path))
    assert got["probe"] == "nvml" and got["device"] == "gpu1"
    assert got["free_bytes"] == 40 * GIB and got["total_bytes"] == 80 * GIB
    assert got["available_context_kb"] == 40 * 1024 * 1024
    assert got["context_tokens"] == 40 * 1024 * 1024 // 128
    assert got["loop_mode_eligible"] is True
    assert shutdowns == [1]
    assert set(got) == KEYS


def test_nvml_without_a_driver_falls_through_to_nvidia_smi(
        monkeypatch: pytest.MonkeyPatch, fake_bin: Callable[[str, str], Path], tmp_path: Path) -> None:
    mod = fake_nvml([], [])

    def no_driver() -> None:
        raise OSError("NVML Shared Library Not Found")

    mod.nvmlInit = no_driver  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    fake_bin("nvidia-smi", f"sys.stdout.write({SMI_TWO_GPUS!r})\n")
    got = vram.probe(sysfs_root=empty_dir(tmp_path))
    assert got["probe"] == "nvidia-smi" and got["device"] == "gpu1"
    assert got["free_bytes"] == 79872 * MIB and got["total_bytes"] == 81559 * MIB
    assert got["available_context_kb"] == 79872 * 1024


@pytest.mark.usefixtures("no_nvml")
def test_nvidia_smi_argv_is_the_documented_query(fake_bin: Callable[[str, str], Path], tmp_path: Path) -> None:
    from tests.helpers import calls

    fake_bin("nvidia-smi", f"sys.stdout.write({SMI_TWO_GPUS!r})\n")
    vram.probe(sysfs_root=empty_dir(tmp_path))
    assert calls(fake_bin.dir, "nvidia-smi") == [  # type: ignore[attr-defined]
        ["--query-gpu=memory.total,memory.free", "--format=csv,noheader,nounits"]]


def test_parse_nvidia_smi_skips_na_and_message_lines() -> None:
    assert vram.parse_nvidia_smi("[N/A], [N/A]\nNo devices were found\n") is None
    got = vram.parse_nvidia_smi("[N/A], [N/A]\n24576, 20000\n")
    assert got is not None and got.free == 20000 * MIB and got.device == "gpu1"


def amd_tree(root: Path) -> Path:
    for card, total, used in (("card0", 8 * GIB, 7 * GIB), ("card1", 24 * GIB, 4 * GIB)):
        dev = root / card / "device"
        dev.mkdir(parents=True)
        (dev / "mem_info_vram_total").write_text(f"{total}\n")
        (dev / "mem_info_vram_used").write_text(f"{used}\n")
    (root / "card0-DP-1").mkdir()  # a connector: no device/ memory files
    return root


@pytest.mark.usefixtures("no_nvml")
def test_amd_sysfs_after_nvidia_fails(fake_bin: Callable[[str, str], Path], tmp_path: Path) -> None:
    fake_bin("nvidia-smi", SMI_BROKEN)
    got = vram.probe(sysfs_root=amd_tree(tmp_path / "drm"), system="Linux")
    assert (got["probe"], got["device"]) == ("amd-sysfs", "card1")
    assert got["free_bytes"] == 20 * GIB and got["total_bytes"] == 24 * GIB


@pytest.mark.usefixtures("no_nvml")
def test_apple_uses_the_metal_share_of_unified_memory(fake_bin: Callable[[str, str], Path], tmp_path: Path) -> None:
    fake_bin("nvidia-smi", SMI_BROKEN)
    fake_bin("sysctl", 'assert sys.argv[1:] == ["-n", "hw.memsize"]\nprint(34359738368)\n')
    got = vram.probe(sysfs_root=empty_dir(tmp_path), system="Darwin")
    assert got["probe"] == "apple"
    assert got["free_bytes"] == int(32 * GIB * 0.75) and got["free_bytes"] < 32 * GIB


@pytest.mark.usefixtures("no_nvml")
def test_meminfo_fallback_and_eligibility_threshold(fake_bin: Callable[[str, str], Path], tmp_path: Path) -> None:
    fake_bin("nvidia-smi", SMI_BROKEN)
    meminfo = tmp_path / "meminfo"
    # 1,000,000 KiB available / 128 KiB per token = 7812 tokens: not eligible
    meminfo.write_text("MemTotal:       16000000 kB\nMemFree:         500000 kB\nMemAvailable:    1000000 kB\n")
    got = vram.probe(sysfs_root=empty_dir(tmp_path), meminfo=meminfo, system="Linux")
    assert got["probe"] == "system-ram"
    assert (got["available_context_kb"], got["context_tokens"], got["loop_mode_eligible"]) == (1000000, 7812, False)
    # a smaller KV footprint per token makes the same memory eligible: 1,000,000 / 32 = 31250
    small = vram.probe(32.0, sysfs_root=empty_dir(tmp_path), meminfo=meminfo, system="Linux")
    assert (small["context_tokens"], small["loop_mode_eligible"], small["kv_kib_per_token"]) == (31250, True, 32.0)


@pytest.mark.usefixtures("no_nvml")
def test_exactly_16000_tokens_is_eligible(fake_bin: Callable[[str, str], Path], tmp_path: Path) -> None:
    fake_bin("nvidia-smi", SMI_BROKEN)
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal: {4 * 16000 * 128} kB\nMemAvailable: {16000 * 128} kB\n")
    got = vram.probe(sysfs_root=empty_dir(tmp_path), meminfo=meminfo, system="Linux")
    assert (got["context_tokens"], got["loop_mode_eligible"]) == (16000, True)
    meminfo.write_text(f"MemTotal: {4 * 16000 * 128} kB\nMemAvailable: {16000 * 128 - 1} kB\n")
    assert vram.probe(sysfs_root=empty_dir(tmp_path), meminfo=meminfo, system="Linux")["loop_mode_eligible"] is False


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), True])
def test_kv_per_token_must_be_positive(bad: Any) -> None:
    with pytest.raises(BadInput, match="kv_kib_per_token"):
        vram.probe(bad)


def test_vram_json_via_the_cli(monkeypatch: pytest.MonkeyPatch, fake_bin: Callable[[str, str], Path]) -> None:
    pytest.importorskip("automaton.cli.verbs_loops")  # the loops engineer's adapter module
    from tests.helpers import run_cli

    monkeypatch.setitem(sys.modules, "pynvml", None)
    fake_bin("nvidia-smi", f"sys.stdout.write({SMI_TWO_GPUS!r})\n")
    res = run_cli("--vram", "--json")
    assert res.code == 0, res.err
    data = res.json
    assert set(data) >= KEYS
    assert data["probe"] == "nvidia-smi" and data["available_context_kb"] == 79872 * 1024
    assert data["loop_mode_eligible"] is True
