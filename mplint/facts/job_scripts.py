"""The TensorFlow of the job scripts that run a file.

A cluster job loads its TensorFlow as an environment module and then runs one script:

    module load TensorFlow/2.6.0-foss-2021a-CUDA-11.3.1
    python pipelines/train_og.py --epoch 500

That job runs `pipelines/train_og.py` on TensorFlow 2.6, whatever `requirements.txt` pins
for the rest of the project: a project often keeps an old pipeline on the cluster's old
module beside its new code. Where every job script of the project that runs a file loads a
TensorFlow module, those versions are the file's TensorFlow. A script that runs the file
without loading one says nothing of it (its TensorFlow comes from elsewhere: a virtual
environment, the pins), so the file keeps the project's.

Job scripts are shell scripts (`.sh`, `.slurm`, `.sbatch`, `.pbs`, `.job`, `.qsub`, `.lsf`) at the project's
root and in its folders for them (`jobs/`, `slurm/`, `scripts/`, ... and any `*_jobs`,
`*_scripts`). Comment lines never count (`#SBATCH` options are comments to the shell).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache

JOB_SCRIPT_SUFFIXES = (".sh", ".slurm", ".sbatch", ".pbs", ".job", ".qsub", ".lsf")
_FOLDERS = frozenset({"jobs", "job", "job_scripts", "slurm", "sbatch", "submit", "hpc", "cluster", "scripts", "tools",
                      "bin", "run", "runs", "launch", "launchers"})
_MAX_SCRIPTS = 500
_MAX_ENTRIES = 20_000  # files and folders walked per job folder, at most
_MAX_BYTES = 200_000
# `module load TensorFlow/2.6.0-foss-2021a-CUDA-11.3.1`, `ml tensorflow/2.15`, `module add ...`
_MODULE_LOAD = re.compile(r"^\s*(?:module\s+(?:load|add)|ml)\b[^\n]*?\btensorflow/(\d+)\.(\d+)", re.IGNORECASE)
_PYTHON_RUN = re.compile(r"\bpython[\d.]*\b")
# A file a Python command line runs: a path ending in `.py`, after a space, `=` or a quote.
_RUN_FILE = re.compile(r"""(?:(?<=[\s="'])|^)\.?/?([\w./$-]*?[\w-]+\.py)(?=$|[\s"';|&)])""")


@dataclass(frozen=True)
class _Jobs:
    """A project's job scripts, read once: the Python files each runs and the TensorFlow
    modules each loads."""

    scripts: tuple[tuple[str, tuple[tuple[int, int], ...]], ...]  # (script, TensorFlow versions it loads)
    runs: dict[str, list[tuple[str, int]]]  # a run file's name -> (the path as written, index in `scripts`)


@lru_cache(maxsize=64)
def _jobs(root: str) -> _Jobs:
    scripts: list[tuple[str, tuple[tuple[int, int], ...]]] = []
    runs: dict[str, list[tuple[str, int]]] = {}
    for path in _script_paths(root):
        try:
            with open(path, "rb") as handle:
                data = handle.read(_MAX_BYTES)
        except OSError:
            continue
        if b"python" not in data:
            continue
        text = re.sub(r"\\\r?\n", " ", data.decode("utf-8", "replace"))  # continuation lines joined
        lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
        loaded = tuple((int(m.group(1)), int(m.group(2))) for m in map(_MODULE_LOAD.match, lines) if m is not None)
        index = len(scripts)
        scripts.append((os.path.relpath(path, root).replace(os.sep, "/"), loaded))
        for line in lines:
            match = _PYTHON_RUN.search(line)
            if match is None:
                continue
            for written in _RUN_FILE.findall(line, match.end()):
                runs.setdefault(written.rsplit("/", 1)[-1], []).append((written, index))
    return _Jobs(tuple(scripts), runs)


def _script_paths(root: str) -> list[str]:
    paths: list[str] = []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return []
    for entry in entries:
        if entry.is_file() and entry.name.endswith(JOB_SCRIPT_SUFFIXES):
            paths.append(entry.path)
        elif entry.is_dir(follow_symlinks=False) and (entry.name.lower() in _FOLDERS
                                                      or entry.name.lower().endswith(("_jobs", "_scripts", "-scripts"))):
            seen = 0
            for folder, subfolders, names in os.walk(entry.path):
                subfolders[:] = sorted(s for s in subfolders if not s.startswith("."))
                paths += [os.path.join(folder, n) for n in sorted(names) if n.endswith(JOB_SCRIPT_SUFFIXES)]
                seen += len(names) + len(subfolders)
                if len(paths) >= _MAX_SCRIPTS:
                    return paths[:_MAX_SCRIPTS]
                if seen >= _MAX_ENTRIES:
                    break  # a `runs/` folder of experiment outputs: not a folder of job scripts
    return paths


def job_tensorflow(root: str, path: str) -> tuple[list[tuple[int, int]], str] | None:
    """(the TensorFlow versions the jobs that run `path` load, a reason naming the first
    job), where every job script that runs it loads a TensorFlow module; None otherwise.
    A job runs the file where a Python command line names its path from the project root,
    or a path ending in it (`$ROOT/pipelines/train.py`)."""
    relative = os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")
    if relative.startswith("../"):
        return None
    jobs = _jobs(root)
    running = sorted({index for written, index in jobs.runs.get(os.path.basename(relative), ())
                      if written == relative or written.endswith("/" + relative)})
    if not running:
        return None
    versions: list[tuple[int, int]] = []
    for index in running:
        script, loaded = jobs.scripts[index]
        if not loaded:
            return None  # this job's TensorFlow comes from elsewhere
        versions += loaded
    script, loaded = jobs.scripts[running[0]]
    major, minor = loaded[0]
    return versions, f"{script} runs it on TensorFlow {major}.{minor} (`module load TensorFlow/{major}.{minor}`)"


def forget_job_scripts() -> None:
    _jobs.cache_clear()
