"""Importing the CLI is cheap: never TensorFlow, and not even the parser."""

from __future__ import annotations

import subprocess
import sys


def _imported_modules(statement: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement], capture_output=True, text=True, check=True
    )
    names = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def test_importing_the_cli_imports_no_tensorflow_and_no_parser():
    modules = _imported_modules("import mplint.frontends.cli")
    assert "mplint.frontends.cli" in modules
    assert not any(m.startswith(("tensorflow", "keras", "tf_keras")) for m in modules)
    assert "libcst" not in modules


def test_checking_a_file_without_mixed_precision_does_not_load_the_parser(tmp_path):
    (tmp_path / "plain.py").write_text("print('hello')\n")
    code = (
        "import sys; from click.testing import CliRunner; from mplint.frontends.cli import main;"
        f"r = CliRunner().invoke(main, ['--no-cache', {str(tmp_path)!r}]);"
        "assert r.exit_code == 0, r.output;"
        "assert 'libcst' not in sys.modules and 'tensorflow' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_linting_a_mixed_precision_file_never_imports_tensorflow(tmp_path):
    (tmp_path / "m.py").write_text(
        "import tensorflow as tf\ntf.keras.mixed_precision.set_global_policy('float16')\ntf.keras.Model().fit()\n"
    )
    code = (
        "import sys; from click.testing import CliRunner; from mplint.frontends.cli import main;"
        # --extended: MP103, the file's finding, is an extended-tier rule.
        f"r = CliRunner().invoke(main, ['--no-cache', '--extended', {str(tmp_path)!r}]);"
        "assert r.exit_code == 1 and 'MP103' in r.output, r.output;"
        "assert 'libcst' in sys.modules and 'tensorflow' not in sys.modules and 'keras' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
