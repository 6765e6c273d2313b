"""Jupyter notebooks end to end through the CLI: cell-relative positions, IPython
syntax left alone, and `--fix` writing back only the changed cells' sources."""

from __future__ import annotations

import codecs
import copy
import difflib
import json
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner
from nbformat import v4

from mplint.frontends.cli import main

# `; layer.fit()`: something trains the variables (MP103's role premise), on one line.
FLOAT16_LAYER = "layer = tf.keras.layers.Dense(64, dtype='float16'); layer.fit()"
MIXED_LAYER = "layer = tf.keras.layers.Dense(64, dtype='mixed_float16'); layer.fit()"


def mplint(*args: str):
    # --extended: MP103, the sample finding, is an extended-tier rule (its fix is unsafe).
    return CliRunner().invoke(main, ["check", "--no-cache", "--extended", *args], catch_exceptions=False)


def write_notebook(path: Path, cells, **write_options) -> nbformat.NotebookNode:
    nb = v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = cells
    nbformat.validate(nb)
    if write_options:
        path.write_text(json.dumps(nb, **write_options) + "\n", encoding="utf-8")
    else:
        nbformat.write(nb, str(path))
    return nb


def sample_cells():
    return [
        v4.new_markdown_cell("# Training\nSome *text*."),
        v4.new_code_cell("%matplotlib inline\nimport tensorflow as tf\n!pip install -q foo", execution_count=1),
        v4.new_code_cell(
            f"x = 1\n{FLOAT16_LAYER}\nfiles = !ls",
            execution_count=2,
            outputs=[v4.new_output("stream", name="stdout", text="done\n")],
            metadata={"tags": ["keep-me"], "collapsed": False},
        ),
        v4.new_code_cell("%%bash\necho float16 'unbalanced\n", execution_count=3),
        v4.new_code_cell("print('untouched')", execution_count=4,
                         outputs=[v4.new_output("execute_result", data={"text/plain": "1"}, execution_count=4)]),
    ]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def test_findings_are_cell_relative_in_text_and_json(tmp_path):
    write_notebook(tmp_path / "train.ipynb", sample_cells())
    text = mplint("train.ipynb")
    assert text.exit_code == 1, text.output
    assert "train.ipynb:cell 3:2:9: MP103 warning: layer dtype 'float16'" in text.output
    assert "MP000" not in text.output

    result = mplint("train.ipynb", "--output-format", "json")
    findings = json.loads(result.output)
    assert [(f["code"], f["cell"], f["location"], f["end_location"]) for f in findings] == [
        ("MP103", 3, {"row": 2, "column": 9}, {"row": 2, "column": len(FLOAT16_LAYER) - len("; layer.fit()") + 1}),
    ]
    assert findings[0]["message"].endswith("(extended suite)") and findings[0]["fix"]["applicability"] == "unsafe"
    edit = findings[0]["fix"]["edits"][0]
    assert edit == {"content": "'mixed_float16'", "location": {"row": 2, "column": 41},
                    "end_location": {"row": 2, "column": 50}}
    # The edit's positions are those of the cell's own source.
    source_line = FLOAT16_LAYER
    assert source_line[40:49] == "'float16'"


def test_fix_writes_back_only_the_changed_cell_source(tmp_path):
    path = tmp_path / "train.ipynb"
    write_notebook(path, sample_cells())
    before_text = path.read_text(encoding="utf-8")
    before = json.loads(before_text)
    nbformat.validate(nbformat.reads(before_text, as_version=4))

    result = mplint("train.ipynb", "--fix", "--unsafe-fixes")
    assert result.exit_code == 0, result.output

    after_text = path.read_text(encoding="utf-8")
    nbformat.validate(nbformat.reads(after_text, as_version=4))
    after = json.loads(after_text)
    assert "".join(after["cells"][2]["source"]) == f"x = 1\n{MIXED_LAYER}\nfiles = !ls"
    # Everything else, outputs, execution counts, metadata and ids included, is unchanged.
    restored = copy.deepcopy(after)
    restored["cells"][2]["source"] = before["cells"][2]["source"]
    assert restored == before
    # Byte level: same layout (nbformat's indent=1), only the one source line differs.
    changed = [line for line in difflib.ndiff(before_text.splitlines(), after_text.splitlines())
               if line.startswith(("- ", "+ "))]
    assert changed == [f'-     "{FLOAT16_LAYER}\\n",', f'+     "{MIXED_LAYER}\\n",']
    assert mplint("train.ipynb").exit_code == 0


@pytest.mark.parametrize("options", [
    {"indent": 2, "ensure_ascii": False},
    {"indent": 4, "ensure_ascii": True},
    {"indent": 1, "sort_keys": True, "ensure_ascii": True},
])
def test_fix_keeps_the_json_layout(tmp_path, options):
    path = tmp_path / "nb.ipynb"
    cells = [v4.new_code_cell(f"import tensorflow as tf\n# caf\u00e9 \u2615\n{FLOAT16_LAYER}")]
    write_notebook(path, cells, **options)
    before_text = path.read_text(encoding="utf-8")
    result = mplint("nb.ipynb", "--fix", "--unsafe-fixes")
    assert result.exit_code == 0, result.output
    after_text = path.read_text(encoding="utf-8")
    expected = before_text.replace("dtype='float16'", "dtype='mixed_float16'")
    assert after_text == expected
    nbformat.validate(nbformat.reads(after_text, as_version=4))


def test_fix_keeps_crlf_bom_and_string_sources(tmp_path):
    path = tmp_path / "win.ipynb"
    nb = v4.new_notebook()
    nb.cells = [v4.new_code_cell("import tensorflow as tf"), v4.new_code_cell(FLOAT16_LAYER)]
    raw = json.loads(nbformat.writes(nb))
    raw["cells"][1]["source"] = FLOAT16_LAYER  # one string, not a list of lines
    text = json.dumps(raw, indent=1, ensure_ascii=False) + "\n"
    path.write_bytes(codecs.BOM_UTF8 + text.replace("\n", "\r\n").encode("utf-8"))
    result = mplint("win.ipynb", "--fix", "--unsafe-fixes")
    assert result.exit_code == 0, result.output
    data = path.read_bytes()
    assert data.startswith(codecs.BOM_UTF8)
    expected = text.replace(FLOAT16_LAYER, MIXED_LAYER).replace("\n", "\r\n")
    assert data[len(codecs.BOM_UTF8):].decode("utf-8") == expected
    assert json.loads(data.decode("utf-8-sig"))["cells"][1]["source"] == MIXED_LAYER


def test_magics_and_shell_lines_are_tolerated_and_never_rewritten(tmp_path):
    path = tmp_path / "magic.ipynb"
    cell = (
        "%load_ext autoreload\n"
        "import tensorflow as tf\n"
        "for i in range(2):\n"
        "    %time f(i)\n"
        "    !echo $i\n"
        "doc = '''\n"
        "%s looks like a magic\n"
        "!so does this\n"
        "what?\n"
        "'''\n"
        "tf.keras.layers.Dense?\n"
        "files = !ls *.py\n"
        f"{FLOAT16_LAYER}\n"
        "%env TF_CPP_MIN_LOG_LEVEL=3"
    )
    write_notebook(path, [v4.new_code_cell(cell), v4.new_code_cell("%%writefile x.py\nthis is (not python\n")])
    result = mplint("magic.ipynb", "--output-format", "json")
    findings = json.loads(result.output)
    assert [(f["code"], f["cell"], f["location"]["row"]) for f in findings] == [("MP103", 1, 13)]

    assert mplint("magic.ipynb", "--fix", "--unsafe-fixes").exit_code == 0
    after = nbformat.read(str(path), as_version=4)
    nbformat.validate(after)
    assert after.cells[0].source == cell.replace(FLOAT16_LAYER, MIXED_LAYER)
    assert after.cells[1].source == "%%writefile x.py\nthis is (not python\n"


def test_fix_on_the_first_line_of_a_cell_and_next_to_a_magic(tmp_path):
    path = tmp_path / "first.ipynb"
    cells = [v4.new_code_cell("import tensorflow as tf"),
             v4.new_code_cell(f"{FLOAT16_LAYER}\n%time layer.build((None, 8))")]
    write_notebook(path, cells)
    assert mplint("first.ipynb", "--fix", "--unsafe-fixes").exit_code == 0
    after = nbformat.read(str(path), as_version=4)
    assert [c.source for c in after.cells] == ["import tensorflow as tf", f"{MIXED_LAYER}\n%time layer.build((None, 8))"]


def test_noqa_in_a_cell(tmp_path):
    write_notebook(tmp_path / "q.ipynb", [v4.new_code_cell(f"import tensorflow as tf\n{FLOAT16_LAYER}  # noqa: MP103")])
    result = mplint("q.ipynb")
    assert result.exit_code == 0, result.output


def test_diff_names_the_cell_and_writes_nothing(tmp_path):
    path = tmp_path / "d.ipynb"
    write_notebook(path, sample_cells())
    before = path.read_bytes()
    result = CliRunner().invoke(main, ["--no-cache", "--extended", "d.ipynb", "--diff", "--unsafe-fixes"])
    assert result.exit_code == 1
    assert "--- d.ipynb:cell 3\n+++ d.ipynb:cell 3\n" in result.output
    assert f"-{FLOAT16_LAYER}\n+{MIXED_LAYER}\n" in result.output
    assert path.read_bytes() == before


def test_syntax_error_is_reported_in_its_cell(tmp_path):
    write_notebook(tmp_path / "s.ipynb", [v4.new_code_cell("import tensorflow as tf\nPOLICY = 'mixed_float16'"),
                                          v4.new_markdown_cell("text"),
                                          v4.new_code_cell("x = 1\ny = (2,\n")])
    result = mplint("s.ipynb", "--output-format", "json")
    (finding,) = json.loads(result.output)
    assert finding["code"] == "MP000"
    assert finding["cell"] == 3
    assert finding["location"]["row"] == 2


# Each mentions Keras: a file that mentions nothing mplint looks for is not even
# decoded (see test_broken_notebook_about_something_else_is_not_read).
@pytest.mark.parametrize("content, message", [
    ('{"cells": ["import keras", ', "broken notebook: invalid JSON"),
    ('{"metadata": {"k": "keras"}, "nbformat": 4, "nbformat_minor": 5}', "broken notebook: no 'cells' list"),
    ('["keras", 2]', "broken notebook: no 'cells' list"),
    ('{"worksheets": [], "nbformat": 3, "k": "keras"}', "nbformat 3 notebooks are not supported"),
    ('{"cells": [{"cell_type": "code", "source": 5}], "metadata": {"k": "keras"}}', "cell 1 has a non-text source"),
    (b'{"cells": "\xff", "k": "keras"}', "notebook is not valid UTF-8"),
])
def test_broken_notebooks_are_one_line_mp000(tmp_path, content, message):
    data = content if isinstance(content, bytes) else content.encode()
    (tmp_path / "broken.ipynb").write_bytes(data)
    write_notebook(tmp_path / "ok.ipynb", [v4.new_code_cell(f"import tensorflow as tf\n{FLOAT16_LAYER}")])
    result = mplint("broken.ipynb", "ok.ipynb", "--output-format", "json")
    assert result.exit_code == 1, result.output
    findings = json.loads(result.output)
    assert [(f["filename"], f["code"]) for f in findings] == [("broken.ipynb", "MP000"), ("ok.ipynb", "MP103")]
    assert message in findings[0]["message"]
    assert "\n" not in findings[0]["message"]
    text = mplint("broken.ipynb", "--quiet").output.strip().splitlines()
    assert len(text) == 1 and text[0].startswith("broken.ipynb:") and "MP000" in text[0]


def test_broken_notebook_about_something_else_is_not_read(tmp_path):
    (tmp_path / "other.ipynb").write_text('{"cells": [', encoding="utf-8")
    result = mplint("other.ipynb", "--output-format", "json")
    assert result.exit_code == 0 and json.loads(result.output) == []


def test_odd_metadata_does_not_crash(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": [FLOAT16_LAYER], "metadata": {}, "outputs": [],
                     "execution_count": None}],
          "metadata": ["not", "a", "table"], "nbformat": 4, "nbformat_minor": 4}
    (tmp_path / "odd.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    result = mplint("odd.ipynb", "--select", "MP103", "--output-format", "json")
    assert [f["code"] for f in json.loads(result.output)] == ["MP103"]


def test_other_kernel_languages_are_skipped(tmp_path):
    nb = v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "ir", "display_name": "R", "language": "R"}
    nb.metadata["language_info"] = {"name": "R"}
    nb.cells = [v4.new_code_cell("x <- tf$float16 # mixed_float16")]
    nbformat.write(nb, str(tmp_path / "r.ipynb"))
    result = mplint("r.ipynb")
    assert result.exit_code == 0, result.output


def test_layout_mplint_cannot_reproduce_is_reported_not_rewritten(tmp_path):
    nb = v4.new_notebook()
    nb.cells = [v4.new_code_cell(f"import tensorflow as tf\n{FLOAT16_LAYER}")]
    text = json.dumps(json.loads(nbformat.writes(nb)), indent="\t") + "\n"
    path = tmp_path / "tabs.ipynb"
    path.write_text(text, encoding="utf-8")
    result = mplint("tabs.ipynb", "--fix", "--unsafe-fixes", "-v")
    assert result.exit_code == 1
    # Known when checking: the finding offers no fix (no `[*]`), and says why (its detail, `-v`).
    assert "mplint cannot write this notebook back unchanged (its JSON layout is not Jupyter's standard one)" in result.output
    assert "[*]" not in result.output
    assert path.read_text(encoding="utf-8") == text


def test_shell_continuations_and_automagics_are_tolerated_and_kept(tmp_path):
    path = tmp_path / "nb.ipynb"
    cells = [
        v4.new_code_cell(
            "import tensorflow as tf\nls ./data/train/\npip install -q foo\ncd ..\nls = [1, 2]\n"
            "history = model.fit(x,\n                    epochs=2)\ntime (1)"
        ),
        v4.new_code_cell(
            "!python train.py --model=d4 \\\n  --ckpt=/tmp/x \\\n  --batch=8\n" + FLOAT16_LAYER
        ),
    ]
    write_notebook(path, cells)
    result = mplint("--output-format", "json", str(path))
    findings = json.loads(result.stdout)
    assert [(f["code"], f["cell"], f["location"]["row"]) for f in findings] == [("MP103", 2, 4)]
    mplint("--fix", "--unsafe-fixes", str(path))
    fixed = nbformat.read(str(path), as_version=4)
    nbformat.validate(fixed)
    assert fixed.cells[0].source == cells[0].source
    assert fixed.cells[1].source == cells[1].source.replace(FLOAT16_LAYER, MIXED_LAYER)


def test_indented_cell_is_checked_like_ipython_runs_it_but_not_rewritten(tmp_path):
    path = tmp_path / "nb.ipynb"
    indented = "  import tensorflow as tf\n  " + FLOAT16_LAYER + "\n" + FLOAT16_LAYER
    write_notebook(path, [v4.new_code_cell(indented)])
    findings = json.loads(mplint("--output-format", "json", str(path)).stdout)
    # Like IPython: the first line's indentation is stripped from the lines that have it.
    assert [(f["code"], f["cell"], f["location"]) for f in findings] == [
        ("MP103", 1, {"row": 2, "column": 11}),
        ("MP103", 1, {"row": 3, "column": 9}),
    ]
    assert findings[0]["fix"] is None and findings[1]["fix"] is None  # analysed dedented: never rewritten
    before = path.read_bytes()
    mplint("--fix", "--unsafe-fixes", str(path))
    assert path.read_bytes() == before


def test_a_cell_that_is_not_python_is_reported_and_the_rest_checked(tmp_path):
    path = tmp_path / "nb.ipynb"
    cells = [
        v4.new_code_cell("import tensorflow as tf\n" + FLOAT16_LAYER),
        v4.new_code_cell("def broken(:\n    pass"),
    ]
    write_notebook(path, cells)
    result = mplint("--output-format", "json", str(path))
    found = sorted((f["code"], f["cell"]) for f in json.loads(result.stdout))
    assert found == [("MP000", 2), ("MP103", 1)]
    error = next(f for f in json.loads(result.stdout) if f["code"] == "MP000")
    assert "cell 2 is not Python; not checked" in error["message"] and error["location"]["row"] == 1
    mplint("--fix", "--unsafe-fixes", str(path))
    fixed = nbformat.read(str(path), as_version=4)
    assert fixed.cells[1].source == cells[1].source
    assert fixed.cells[0].source == cells[0].source.replace(FLOAT16_LAYER, MIXED_LAYER)


def test_a_notebook_json_error_says_where_in_full(tmp_path):
    """json's message for a control character ends in "at": the position is said too."""
    import json as _json
    import subprocess
    import sys

    path = tmp_path / "bad.ipynb"
    path.write_bytes(b'{"cells": [{"cell_type": "code", "source": "import tensorflow\x01"}]}')
    proc = subprocess.run([sys.executable, "-m", "mplint", "--no-cache", "--output-format", "json", str(path)],
                          capture_output=True, text=True, timeout=60)
    (finding,) = _json.loads(proc.stdout)
    assert finding["message"] == "broken notebook: invalid JSON: Invalid control character at line 1, column 62"
