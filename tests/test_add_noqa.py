"""`mplint check --add-noqa`: comments that suppress every finding and never change code."""

from __future__ import annotations

import ast
import shutil

import nbformat
from nbformat import v4

from tests.conftest import ROOT, write

HEADER = 'import tensorflow as tf\ndef train(model): return model.fit()\ntf.keras.mixed_precision.set_global_policy("mixed_float16")\n'


# --extended: MP103, the sample finding, is an extended-tier rule; both the comments added
# and the check after them cover that tier.
def _add_noqa(mplint_exe, folder, *paths):
    result = mplint_exe(["check", "-n", "--extended", "--add-noqa", *(paths or (".",))], cwd=folder)
    assert result.stdout == "", result.stdout
    return result


def _remaining(mplint_exe, folder, *paths):
    return mplint_exe(["check", "-n", "--extended", *(paths or (".",))], cwd=folder)


def test_adds_comments_merges_codes_and_keeps_other_comments(mplint_exe, tmp_path):
    source = (
        HEADER
        + 'a = tf.keras.layers.Dense(8, dtype="float16")  # noqa:E501\n'
        + 'b = tf.keras.layers.Dense(8, dtype="float16")  # type: ignore\n'
        + 'c = tf.keras.layers.Dense(8, dtype="float16")  # keep me # noqa: E501, W291 trailing words\n'
        + 'd = tf.keras.layers.Dense(8, dtype="float16")\n'
    )
    path = write(tmp_path / "m.py", source)
    result = _add_noqa(mplint_exe, tmp_path)
    assert result.exit_code == 0
    assert result.stderr == "Added 4 noqa directives.\n"
    assert path.read_text().splitlines()[3:] == [
        'a = tf.keras.layers.Dense(8, dtype="float16")  # noqa: E501, MP103',
        'b = tf.keras.layers.Dense(8, dtype="float16")  # type: ignore  # noqa: MP103',
        'c = tf.keras.layers.Dense(8, dtype="float16")  # keep me # noqa: E501, W291, MP103 trailing words',
        'd = tf.keras.layers.Dense(8, dtype="float16")  # noqa: MP103',
    ]
    assert _remaining(mplint_exe, tmp_path).stdout == "All checks passed!\n"
    again = _add_noqa(mplint_exe, tmp_path)
    assert again.stderr == "" and path.read_text().splitlines()[3:][0].endswith("# noqa: E501, MP103")


def test_several_codes_on_one_line_share_one_comment(mplint_exe, tmp_path):
    source = (
        "import tensorflow as tf\n\n"
        'tf.keras.mixed_precision.set_global_policy("mixed_float16")\n'
        "resolver = tf.distribute.cluster_resolver.TPUClusterResolver()\n"
        "layer = tf.keras.layers.Dense(10, activation='softmax', dtype='float16'); "
        "model = tf.keras.Sequential([layer]); model.fit()\n"
    )
    path = write(tmp_path / "m.py", source)
    before = _remaining(mplint_exe, tmp_path, "--output-format", "json", "m.py").stdout
    assert before.count('"code"') >= 2
    _add_noqa(mplint_exe, tmp_path)
    assert _remaining(mplint_exe, tmp_path).stdout == "All checks passed!\n"
    last = path.read_text().splitlines()[-1]
    assert last.count("# noqa") == 1


def test_never_breaks_multiline_strings_and_continuations(mplint_exe, tmp_path):
    source = (
        HEADER
        + 'doc = """\n'
        + "dtype=float16 # noqa inside a string is text\n"
        + '"""; a = tf.keras.layers.Dense(\n'
        + '    8, dtype="float16")\n'
        + 'b = tf.keras.layers.Dense(8, dtype="float16") + \\\n'
        + "    0\n"
        + 'c = f"""{tf.keras.layers.Dense(8, dtype="float16")\n'
        + '}"""\n'
    )
    path = write(tmp_path / "m.py", source)
    tree = ast.dump(ast.parse(source))
    result = _add_noqa(mplint_exe, tmp_path)
    assert result.stderr == "Added 3 noqa directives.\n"
    text = path.read_text()
    assert ast.dump(ast.parse(text)) == tree  # comments only
    assert text.splitlines()[3:] == [
        'doc = """',
        "dtype=float16 # noqa inside a string is text",
        '"""; a = tf.keras.layers.Dense(  # noqa: MP103',
        '    8, dtype="float16")',
        # A line continued with a backslash, or inside a multi-line string, cannot end
        # with a comment: as in ruff, the comment goes where the continuation or the
        # string ends, and covers its lines.
        'b = tf.keras.layers.Dense(8, dtype="float16") + \\',
        "    0  # noqa: MP103",
        'c = f"""{tf.keras.layers.Dense(8, dtype="float16")',
        '}"""  # noqa: MP103',
    ]
    assert _remaining(mplint_exe, tmp_path).stdout == "All checks passed!\n"


def test_crlf_and_encoding_survive(mplint_exe, tmp_path):
    source = "# -*- coding: latin-1 -*-\n" + HEADER + 'a = tf.keras.layers.Dense(8, dtype="float16")  # caf\xe9\n'
    path = tmp_path / "m.py"
    path.write_bytes(source.replace("\n", "\r\n").encode("latin-1"))
    _add_noqa(mplint_exe, tmp_path)
    data = path.read_bytes()
    assert data.endswith(b'a = tf.keras.layers.Dense(8, dtype="float16")  # caf\xe9  # noqa: MP103\r\n')
    assert data.count(b"\r\n") == source.count("\n") and b"\n" not in data.replace(b"\r\n", b"")


def test_notebook_cells_get_comments_and_magics_stay(mplint_exe, tmp_path):
    notebook = v4.new_notebook()
    code = "%matplotlib inline\n" + HEADER + 'layer = tf.keras.layers.Dense(8, dtype="float16")\n!ls'
    notebook.cells = [v4.new_markdown_cell("# Train"), v4.new_code_cell(code, execution_count=3)]
    path = tmp_path / "train.ipynb"
    nbformat.write(notebook, str(path))
    result = _add_noqa(mplint_exe, tmp_path)
    assert result.stderr == "Added 1 noqa directive.\n"
    cells = nbformat.read(str(path), as_version=4).cells
    assert cells[1].source == code.replace('dtype="float16")\n', 'dtype="float16")  # noqa: MP103\n')
    assert cells[1].execution_count == 3 and cells[0].source == "# Train"
    assert _remaining(mplint_exe, tmp_path).stdout == "All checks passed!\n"


def test_add_noqa_over_every_fixture_suppresses_everything_and_changes_no_code(mplint_exe, tmp_path):
    """The rule fixtures hold every shape of finding the rules make: after --add-noqa,
    each file has the same syntax tree and nothing is reported but what --add-noqa said
    it could not place."""
    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures",
                    ignore=shutil.ignore_patterns("*.expected", "*.fixed.py", "__pycache__"))
    sources = {p: p.read_text(encoding="utf-8") for p in (tmp_path / "fixtures").rglob("*.py")}
    before = _remaining(mplint_exe, tmp_path, "--output-format", "json", "fixtures")
    assert before.exit_code in (0, 1)
    result = _add_noqa(mplint_exe, tmp_path, "fixtures")
    assert result.exit_code == 0 and "Added " in result.stderr
    for path, source in sources.items():
        text = path.read_text(encoding="utf-8")
        try:
            tree = ast.dump(ast.parse(source))
        except SyntaxError:
            assert text == source, path  # files that do not parse are left alone
            continue
        assert ast.dump(ast.parse(text)) == tree, path
    import json

    left = json.loads(_remaining(mplint_exe, tmp_path, "--output-format", "json", "fixtures").stdout)
    unplaced = [line for line in result.stderr.splitlines() if "no noqa comment added" in line]
    rule_findings = [f for f in left if f["code"] not in ("MP000", "MP900")]
    assert len(rule_findings) == len(unplaced), (rule_findings, unplaced)


def test_a_cell_mplint_cannot_rewrite_is_left_alone_and_said_so(mplint_exe, tmp_path):
    # IPython runs an indented cell dedented; mplint checks it that way but never rewrites it.
    indented = "    import tensorflow as tf\n    tf.keras.mixed_precision.set_global_policy('float16')\n    tf.keras.Model().fit()\n"
    notebook = v4.new_notebook()
    notebook.cells = [v4.new_code_cell(indented)]
    path = tmp_path / "nb.ipynb"
    nbformat.write(notebook, str(path))
    before = path.read_bytes()
    result = _add_noqa(mplint_exe, tmp_path)
    assert result.exit_code == 0
    assert "nb.ipynb: MP103 at cell 1:2:5: no noqa comment added: no line it spans can take a comment" in result.stderr
    assert path.read_bytes() == before
    assert "MP103" in _remaining(mplint_exe, tmp_path).stdout
