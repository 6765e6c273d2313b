"""An earlier mplint (a git ref of this repository) laid out so `python -m mplint` runs it.

`snapshot(ref, folder)` extracts `mplint/` and `rules/` of `ref` (rules renamed to
`mplint_rules`, as the installed package is named) and compiles their bytecode, as
`pip install` would. Running a command with `PYTHONPATH=folder` then imports that
snapshot ahead of the installed (editable) mplint: the editable finder comes after the
path finder on `sys.meta_path`. The benchmarks use it to compare a previous release with
the working tree on the same machine in one run.
"""

from __future__ import annotations

import compileall
import io
import os
import subprocess
import tarfile

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def snapshot(ref: str, folder: str) -> str:
    """Extract mplint at `ref` into `folder`; returns the commit it resolved to."""
    commit = subprocess.run(["git", "rev-parse", "--verify", f"{ref}^{{commit}}"], cwd=REPOSITORY,
                            capture_output=True, text=True, check=True).stdout.strip()
    archive = subprocess.run(["git", "archive", "--format=tar", commit, "mplint", "rules"], cwd=REPOSITORY,
                             capture_output=True, check=True).stdout
    os.makedirs(folder, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    os.rename(os.path.join(folder, "rules"), os.path.join(folder, "mplint_rules"))
    compileall.compile_dir(folder, quiet=1)
    return commit


def environment(folder: str | None) -> dict[str, str]:
    """The environment that runs the snapshot in `folder` (None: the working tree)."""
    env = dict(os.environ)
    env["MPLINT_NO_SERVER"] = "1"
    if folder is not None:
        env["PYTHONPATH"] = folder + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env
