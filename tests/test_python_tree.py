"""The `ast` tree of a text is parsed once: the pre-filter's code scan and the project
scan of the same file read one tree."""

from mplint.inputs import python_tree as memo
from mplint.inputs.code_scan import CodeScan
from mplint.project import scan


def test_the_same_text_gives_the_same_tree_and_another_text_a_new_one():
    memo.forget()
    text = "import keras\nx = 1\n"
    first = memo.python_tree(text)
    equal_text = "".join(["import keras\n", "x = 1\n"])  # noqa: FLY002 (an equal string, not the same object)
    assert first is not None and memo.python_tree(equal_text) is first
    other = memo.python_tree("y = 2\n")
    assert other is not first and memo.python_tree(text) is not first


def test_flags_are_part_of_the_key_and_rejected_text_gives_none():
    import ast

    memo.forget()
    text = "x = 1\n"
    plain = memo.python_tree(text)
    assert memo.python_tree(text, ast.PyCF_ALLOW_TOP_LEVEL_AWAIT) is not plain
    assert memo.python_tree("def (:\n") is None


def test_the_project_scan_reads_the_tree_the_code_scan_parsed(monkeypatch):
    text = "import tensorflow as tf\ntf.keras.mixed_precision.set_global_policy('mixed_float16')\n"
    memo.forget()
    assert CodeScan.of(text) is not None
    parses = []
    real_compile = compile

    def counting_compile(*args, **kwargs):
        parses.append(args[1] if len(args) > 1 else "?")
        return real_compile(*args, **kwargs)

    monkeypatch.setattr("builtins.compile", counting_compile)
    assert scan._calls_a_setter(scan._Parsed(text))
    assert parses == []
