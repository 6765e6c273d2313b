"""bench/tensor_core_speedup.py keeps working: a tiny CPU run, and its table/settings."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from tests.fixture_cases import ROOT
from tests.tf_harness import tf_env

SCRIPT = ROOT / "bench" / "tensor_core_speedup.py"


def _bench_module():
    spec = importlib.util.spec_from_file_location("tensor_core_speedup", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_settings_follow_the_preset_and_the_flags() -> None:
    bench = _bench_module()
    on_cpu = bench._settings(bench.parse_args([]), has_gpu=False)
    on_gpu = bench._settings(bench.parse_args([]), has_gpu=True)
    assert on_cpu["preset"] == "small" and on_gpu["preset"] == "large"
    chosen = bench._settings(bench.parse_args(["--units", "9", "17", "--steps", "3", "--preset", "large"]), has_gpu=False)
    assert chosen["units"] == [9, 17] and chosen["steps"] == 3 and chosen["filters"] == bench.PRESETS["large"]["filters"]
    with pytest.raises(SystemExit):
        bench._settings(bench.parse_args(["--steps", "0"]), has_gpu=False)


def test_table_lists_every_result_and_says_when_there_is_no_gpu() -> None:
    bench = _bench_module()
    result = bench.Result("dense", 2, 100, 104, 30, 32, 15.0, 2.0, 1.0, 2.0, 15000.0, 32000.0)
    report = {
        "device": "CPU", "tensor_cores": False, "policy": "mixed_float16", "jit": False,
        "tensorflow": "2.21.0", "keras": "3.15.0",
        "settings": {"preset": "small", "steps": 5, "repeats": 3}, "results": [result.__dict__],
    }
    table = bench.format_table(report)
    assert "100 -> 104" in table and "30 -> 32" in table and "2.00x" in table and "+15.0%" in table
    assert "No GPU" in table
    assert "No GPU" not in bench.format_table(dict(report, tensor_cores=True, device="GPU X"))


@pytest.mark.tensorflow
def test_tiny_run_on_cpu_reports_original_and_rounded_timings(tmp_path) -> None:
    out = tmp_path / "bench.json"
    args = [
        "--units", "9", "--filters", "9", "--batch", "6", "--depth", "1", "--image-size", "4",
        "--steps", "1", "--warmup", "1", "--repeats", "1", "--device", "cpu", "--json", str(out),
    ]
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300, env=tf_env(3)
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "9 -> 16" in proc.stdout and "6 -> 8" in proc.stdout
    report = json.loads(out.read_text())
    assert report["device"] == "CPU" and report["tensor_cores"] is False
    assert [(r["stack"], r["size"], r["rounded_size"]) for r in report["results"]] == [("dense", 9, 16), ("conv2d", 9, 16)]
    for r in report["results"]:
        assert r["batch"] == 6 and r["rounded_batch"] == 8
        assert r["original_ms"] > 0 and r["rounded_ms"] > 0
        assert r["speedup"] == pytest.approx(r["original_ms"] / r["rounded_ms"], rel=0.01)
        assert r["extra_work_percent"] == pytest.approx(((16 / 9) ** 2 * 8 / 6 - 1) * 100, abs=0.01)
