"""Configuration: discovery, validation errors (exit 2 naming the key), every key."""

from __future__ import annotations

import json

import pytest

from tests.conftest import write

FLOAT16 = 'import tensorflow as tf\ntf.keras.mixed_precision.set_global_policy("float16")\ntf.keras.Model().fit()\n'
TPU = (
    "import tensorflow as tf\n"
    "strategy = tf.distribute.TPUStrategy(tf.distribute.cluster_resolver.TPUClusterResolver())\n"
    "tf.keras.mixed_precision.set_global_policy('mixed_float16')\n"
)


def _codes(cli, cwd, *args):
    # the sample's MP103 is a medium-precision rule (bench/rule_precision.py): extended tier
    result = cli(["--no-cache", "--extended", "--output-format", "json", *args], cwd=cwd)
    return result, sorted((f["filename"], f["code"]) for f in json.loads(result.stdout or "[]"))


@pytest.mark.parametrize(
    "config,message",
    [
        ("[tool.mplint]\nselct = ['MP1']\n", "unknown key 'selct'"),
        ("[tool.mplint]\nselect = ['MP7']\n", "select: unknown rule code MP7"),
        ("[tool.mplint]\nignore = ['MP1', 'XX1']\n", "ignore: unknown rule code XX1"),
        # a string where a list belongs is refused, not read as codes (issue #28)
        ("[tool.mplint]\nselect = 'MP1'\n", "select: expected a list of rule codes, got 'MP1'"),
        ("[tool.mplint]\nignore = ['MP000']\n", "ignore: MP000 is an engine code"),
        ("[tool.mplint]\nfail-on = 'never'\n", "fail-on: expected one of info, warning, error"),
        ("[tool.mplint]\ntarget = 'keras4'\n", "target: expected one of auto, keras2, keras3"),
        ("[tool.mplint]\ntensor-core-multiple = 0\n", "tensor-core-multiple: expected a positive integer"),
        ("[tool.mplint]\ntensor-core-multiple = 'eight'\n", "tensor-core-multiple: expected a positive integer"),
        ("[tool.mplint]\nassume-policy = 'float16'\n", "assume-policy: expected one of mixed_float16, mixed_bfloat16"),
        ("[tool.mplint]\nexclude = 'build'\n", "exclude: expected a list of globs"),
        ("[tool.mplint]\nper-file-ignores = ['x']\n", "per-file-ignores: expected a table"),
        ("[tool.mplint]\nper-file-ignores = {'tests/*' = ['MP8']}\n", "unknown rule code MP8"),
        ("[tool.mplint\nselect = 1\n", "invalid TOML"),
    ],
)
def test_bad_config_exits_2_naming_the_key(cli, tmp_path, config, message):
    write(tmp_path / "pyproject.toml", config)
    write(tmp_path / "a.py", FLOAT16)
    result = cli(["--no-cache", "a.py"], cwd=tmp_path)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "pyproject.toml" in result.stderr


def test_nearest_config_upward_wins(cli, tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.mplint]\nignore = ['MP104']\n")
    write(tmp_path / "sub" / "mplint.toml", "ignore = ['MP103']\n")
    write(tmp_path / "top.py", FLOAT16 + TPU)
    write(tmp_path / "sub" / "deep" / "inner.py", FLOAT16 + TPU)
    _, found = _codes(cli, tmp_path, ".")
    assert found == [("sub/deep/inner.py", "MP104"), ("top.py", "MP103")]


def test_pyproject_without_tool_table_is_skipped(cli, tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.mplint]\nignore = ['MP103']\n")
    write(tmp_path / "sub" / "pyproject.toml", "[project]\nname = 'x'\n")
    write(tmp_path / "sub" / "a.py", FLOAT16)
    result, found = _codes(cli, tmp_path, "sub")
    assert found == [] and result.exit_code == 0


def test_select_and_extend_select(cli, tmp_path):
    write(tmp_path / "mplint.toml", "select = ['MP103']\nextend-select = ['MP104']\n")
    write(tmp_path / "a.py", FLOAT16 + TPU)
    _, found = _codes(cli, tmp_path, ".")
    assert found == [("a.py", "MP103"), ("a.py", "MP104")]


def test_per_file_ignores_with_globs(cli, tmp_path):
    write(tmp_path / "mplint.toml", "[per-file-ignores]\n'legacy/*.py' = ['MP1']\n'**/tpu_*.py' = 'MP104'\n")
    write(tmp_path / "legacy" / "old.py", FLOAT16)
    write(tmp_path / "src" / "tpu_main.py", TPU)
    write(tmp_path / "src" / "model.py", FLOAT16)
    _, found = _codes(cli, tmp_path, ".")
    assert found == [("src/model.py", "MP103")]


def test_exclude_globs_add_to_the_defaults(cli, tmp_path):
    write(tmp_path / "mplint.toml", "exclude = ['generated', '*_pb2.py']\n")
    for name in ("generated/a.py", "model_pb2.py", "build/b.py", ".venv/c.py", "src/d.py"):
        write(tmp_path / name, FLOAT16)
    _, found = _codes(cli, tmp_path, ".")
    assert found == [("src/d.py", "MP103")]


def test_named_files_are_checked_even_if_excluded_unless_force_exclude(cli, tmp_path):
    write(tmp_path / "mplint.toml", "exclude = ['generated']\n")
    write(tmp_path / "generated" / "a.py", FLOAT16)
    _, found = _codes(cli, tmp_path, "generated/a.py")
    assert found == [("generated/a.py", "MP103")]
    _, found = _codes(cli, tmp_path, "--force-exclude", "generated/a.py")
    assert found == []


def test_gitignore_is_honoured(cli, tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".gitignore", "ignored/\n*.gen.py\n!keep.gen.py\n")
    write(tmp_path / "sub" / ".gitignore", "local.py\n")
    for name in ("ignored/a.py", "x.gen.py", "keep.gen.py", "sub/local.py", "sub/other.py"):
        write(tmp_path / name, FLOAT16)
    _, found = _codes(cli, tmp_path, ".")
    assert found == [("keep.gen.py", "MP103"), ("sub/other.py", "MP103")]
    # Walking a subfolder still honours the parent's .gitignore.
    write(tmp_path / "sub" / "ignored" / "z.py", FLOAT16)
    _, found = _codes(cli, tmp_path / "sub", ".")
    assert found == [("other.py", "MP103")]


def test_assume_policy_makes_policy_rules_apply(cli, tmp_path):
    tpu_without_policy = (
        "import tensorflow as tf\n"
        "strategy = tf.distribute.TPUStrategy(tf.distribute.cluster_resolver.TPUClusterResolver())\n"
    )
    write(tmp_path / "a.py", tpu_without_policy)
    _, found = _codes(cli, tmp_path, ".")
    assert found == []  # no policy set: MP1xx stays silent
    write(tmp_path / "mplint.toml", "assume-policy = 'mixed_float16'\n")
    result = cli(["--no-cache", "--verbose", "."], cwd=tmp_path)
    assert "policy mixed_float16 (assume-policy)" in result.stderr


def test_assume_policy_per_glob(cli, tmp_path):
    write(tmp_path / "mplint.toml", "[assume-policy]\n'models/*' = 'mixed_bfloat16'\n")
    write(tmp_path / "models" / "m.py", "import keras\n")
    write(tmp_path / "other.py", "import keras\n")
    result = cli(["--no-cache", "--verbose", "."], cwd=tmp_path)
    assert "models/m.py: target" in result.stderr and "policy mixed_bfloat16 (assume-policy)" in result.stderr
    assert "other.py: target" not in result.stderr  # not parsed at all


def test_target_from_config(cli, tmp_path):
    write(tmp_path / "mplint.toml", "target = 'keras2'\n")
    write(tmp_path / "a.py", FLOAT16)
    result = cli(["--no-cache", "--verbose", "."], cwd=tmp_path)
    assert "a.py: target keras2 (set by --target/config)" in result.stderr


def test_missing_explicit_config(cli, tmp_path):
    result = cli(["--config", "nope.toml", "."], cwd=tmp_path)
    assert result.exit_code == 2 and "nope.toml: config file not found" in result.stderr
