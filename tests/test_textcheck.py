"""mplint.engine.textcheck: the in-memory check the language server and flake8 plugin use."""

from __future__ import annotations

from mplint.engine.textcheck import check_text

MODEL = "import tensorflow as tf\nlayer = tf.keras.layers.Dense(8, dtype='float16')\ntf.keras.Model().fit()\n"


def extended_tier(folder) -> None:
    """MP103, MODEL's finding, is an extended-tier rule: a text held in memory is checked
    with the nearest configuration of its path, whose `extended = true` reports that tier."""
    (folder / "mplint.toml").write_text("extended = true\n", encoding="utf-8")


def test_findings_and_fix_for_text_held_in_memory(tmp_path):
    extended_tier(tmp_path)
    path = str(tmp_path / "model.py")  # need not exist on disk
    outcome = check_text(path, MODEL)
    assert [(f.code, f.location.row) for f in outcome.findings] == [("MP103", 2)]
    assert outcome.findings[0].message.endswith("(extended suite)")
    fixed = check_text(path, MODEL, fix=True, unsafe=True)
    assert fixed.text == MODEL.replace("'float16'", "'mixed_float16'")
    assert check_text(path, MODEL, fix=True).text == MODEL  # the fix is unsafe


def test_config_exclude_and_selection_apply(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.mplint]\nextended = true\nexclude = ["gen/"]\nselect = ["MP103"]\n'
                                             'per-file-ignores = { "old.py" = ["MP103"] }\n', encoding="utf-8")
    (tmp_path / "gen").mkdir()
    excluded = tmp_path / "gen" / "model.py"
    excluded.write_text(MODEL, encoding="utf-8")
    assert check_text(str(excluded), MODEL) is None
    assert check_text(str(tmp_path / "old.py"), MODEL) is None  # no rule enabled there
    assert [f.code for f in check_text(str(tmp_path / "new.py"), MODEL).findings] == ["MP103"]


def test_prefilter_and_notebook_cells(tmp_path):
    extended_tier(tmp_path)
    assert check_text(str(tmp_path / "plain.py"), "x = 1\n").findings == []
    cell = "%time x = 1\n!ls\n" + MODEL
    outcome = check_text(str(tmp_path / "nb.ipynb"), cell, fix=True, unsafe=True, notebook_cell=True)
    assert outcome.text == cell.replace("'float16'", "'mixed_float16'")
    assert [f.location.row for f in check_text(str(tmp_path / "nb.ipynb"), cell, notebook_cell=True).findings] == [4]
