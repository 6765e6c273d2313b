"""The content-hash cache and the worker pool."""

from __future__ import annotations

import json
import os
import time

import pytest

from mplint.engine import runner
from tests.conftest import write

FLOAT16 = 'import tensorflow as tf\ntf.keras.mixed_precision.set_global_policy("float16")\ntf.keras.Model().fit()\n'


@pytest.fixture(autouse=True)
def _extended_tier(tmp_path):
    """The sample's MP103 is a medium-precision rule (bench/rule_precision.py): these
    tests see it in the extended tier."""
    write(tmp_path / "mplint.toml", "extended = true\n")


def _count_engine_runs(monkeypatch):
    calls = []
    real = runner.process

    def counting(job):
        calls.append(job.path)
        return real(job)

    monkeypatch.setattr(runner, "process", counting)
    return calls


def test_warm_run_skips_the_engine_and_gives_the_same_output(cli, tmp_path, monkeypatch):
    write(tmp_path / "a.py", FLOAT16)
    write(tmp_path / "b.py", FLOAT16.replace('"float16"', '"mixed_float16"'))
    calls = _count_engine_runs(monkeypatch)
    cold = cli(["--output-format", "json", "."], cwd=tmp_path)
    assert sorted(calls) == ["a.py", "b.py"]
    assert (tmp_path / ".mplint_cache").is_dir()
    calls.clear()
    warm = cli(["--output-format", "json", "."], cwd=tmp_path)
    assert calls == []
    assert warm.stdout == cold.stdout and warm.exit_code == cold.exit_code == 1


def _aged(*paths, seconds: float = 60.0) -> None:
    """Files written a while ago: the cache trusts sizes and times only older than RACY_SECONDS."""
    then = time.time() - seconds
    for path in paths:
        os.utime(path, (then, then))


def _count_reads(monkeypatch):
    reads = []
    real = runner.read_bytes

    def counting(path):
        reads.append(path)
        return real(path)

    monkeypatch.setattr(runner, "read_bytes", counting)
    return reads


MODEL = """import tensorflow as tf

def build():
    inputs = tf.keras.Input((4,))
    outputs = tf.keras.layers.Dense(10, activation="softmax")(inputs)
    return tf.keras.Model(inputs, outputs)
"""
TRAIN = 'import tensorflow as tf\nimport model\ntf.keras.mixed_precision.set_global_policy("mixed_float16")\n'


def test_warm_run_reads_no_unchanged_file(cli, tmp_path, monkeypatch):
    """Sizes and modification times prove what the cache holds: nothing is read, also the
    files that need no engine and those whose policy is inherited from another module."""
    files = [write(tmp_path / "train.py", TRAIN), write(tmp_path / "model.py", MODEL),
             write(tmp_path / "a.py", FLOAT16), write(tmp_path / "plain.py", "print(1)\n"),
             write(tmp_path / "keras_only.py", "import keras\nkeras.layers.Dense(3)\n")]
    _aged(*files)
    cold = cli(["--output-format", "json", "."], cwd=tmp_path)
    assert {f["code"] for f in json.loads(cold.stdout)} == {"MP101", "MP103"}  # MP101 inherited by model.py
    reads = _count_reads(monkeypatch)
    calls = _count_engine_runs(monkeypatch)
    warm = cli(["--output-format", "json", "."], cwd=tmp_path)
    assert reads == [] and calls == []
    assert warm.stdout == cold.stdout and warm.exit_code == cold.exit_code


def test_a_file_rewritten_within_the_time_resolution_is_read_again(cli, tmp_path, monkeypatch):
    """Same size, same modification time (two writes in one tick of a coarse clock): a
    file modified that recently is never trusted by its size and time."""
    path = write(tmp_path / "a.py", FLOAT16)
    stamp = os.stat(path).st_mtime_ns
    first = cli(["."], cwd=tmp_path)
    path.write_text(FLOAT16.replace('"float16"', '"float32"'))  # same size
    os.utime(path, ns=(stamp, stamp))
    second = cli(["."], cwd=tmp_path)
    assert first.exit_code == 1 and second.exit_code == 0


def test_an_old_file_changed_is_read_again(cli, tmp_path, monkeypatch):
    path = write(tmp_path / "a.py", FLOAT16)
    _aged(path, seconds=120)
    cli(["."], cwd=tmp_path)
    path.write_text(FLOAT16 + "# edited\n")
    _aged(path, seconds=60)
    reads = _count_reads(monkeypatch)
    result = cli(["."], cwd=tmp_path)
    assert set(reads) == {"a.py"} and result.exit_code == 1


def test_changed_file_is_rechecked(cli, tmp_path, monkeypatch):
    path = write(tmp_path / "a.py", FLOAT16)
    cli(["."], cwd=tmp_path)
    path.write_text(FLOAT16.replace('"float16"', '"mixed_float16"'))
    calls = _count_engine_runs(monkeypatch)
    result = cli(["."], cwd=tmp_path)
    assert len(calls) == 1 and result.exit_code == 0


def test_settings_change_invalidates(cli, tmp_path, monkeypatch):
    write(tmp_path / "a.py", FLOAT16)
    cli(["."], cwd=tmp_path)
    calls = _count_engine_runs(monkeypatch)
    result = cli(["--ignore", "MP103", "."], cwd=tmp_path)
    assert len(calls) == 1 and result.exit_code == 0


def test_no_cache_neither_reads_nor_writes(cli, tmp_path, monkeypatch):
    write(tmp_path / "a.py", FLOAT16)
    cli(["--no-cache", "."], cwd=tmp_path)
    assert not (tmp_path / ".mplint_cache").exists()
    cli(["."], cwd=tmp_path)
    calls = _count_engine_runs(monkeypatch)
    cli(["--no-cache", "."], cwd=tmp_path)
    assert len(calls) == 1


def test_corrupt_cache_is_ignored(cli, tmp_path):
    write(tmp_path / "a.py", FLOAT16)
    cli(["."], cwd=tmp_path)
    (cache_file,) = (tmp_path / ".mplint_cache").rglob("findings.json")
    cache_file.write_text("{not json")
    result = cli(["."], cwd=tmp_path)
    assert result.exit_code == 1 and "MP103" in result.stdout


def test_fix_uses_cache_of_the_fixed_content(cli, test_rules, tmp_path, monkeypatch):
    path = write(tmp_path / "a.py", "# mixed_float16\nx = old_name\n")
    cli(["--select", "MP990", "--fix", "."], cwd=tmp_path)
    assert path.read_text() == "# mixed_float16\nx = new_name\n"
    calls = _count_engine_runs(monkeypatch)
    result = cli(["--select", "MP990", "."], cwd=tmp_path)
    assert calls == [] and result.exit_code == 0


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_worker_pool_output_is_deterministic(mplint_process, tmp_path, jobs):
    for i in range(40):
        body = FLOAT16 if i % 3 == 0 else "print('ordinary code')\n"
        write(tmp_path / f"pkg{i % 4}" / f"m{i:02d}.py", body)
    results = [
        mplint_process(["--no-cache", "-j", jobs, "--output-format", "json", "."], cwd=tmp_path) for _ in range(2)
    ]
    first = json.loads(results[0].stdout)
    assert len(first) == 14
    assert results[0].stdout == results[1].stdout
    assert [f["filename"] for f in first] == sorted(f["filename"] for f in first)
    single = mplint_process(["--no-cache", "-j", "1", "--output-format", "json", "."], cwd=tmp_path)
    assert single.stdout == results[0].stdout
