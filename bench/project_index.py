"""What the project index costs on a real repository: build, warm re-use, one edit.

    python bench/project_index.py ~/src/DeepLearningExamples [--repeat 3]

Copies the checkout (nothing is written into it), then measures, each in a fresh
process so that nothing is shared but the on-disk store:

- cold: the store is empty: every file is scanned, and the modules that matter for
  policies are summarised (`ProjectIndex.policy_modules` and the project-wide policy
  solution, as a whole-project `mplint check` needs them);
- warm: nothing changed: the store answers (file sizes and times only);
- one edit: one module of the solution is changed, the rest comes from the store;
- the same three with every question a whole-project run asks of the index (the
  mixed policies other modules bring to each module).

Prints the file count, the number of policy modules and the times (best of `--repeat`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

_PROBE = r"""
import sys, time
from mplint.project.index import ProjectIndex
root, full = sys.argv[1], sys.argv[2] == "full"
start = time.perf_counter()
index = ProjectIndex(root)
policy = index.policy_modules
index._solve()
if full:
    for path in index.paths:
        context = index.context_for(path)
        if context is not None:
            context.mixed_policies()
index.save()
print(f"{time.perf_counter() - start:.3f} {len(index.paths)} {len(policy)} {len(index._solve()[0])}")
"""


def _run(root: str, full: bool) -> tuple[float, int, int, int]:
    done = subprocess.run([sys.executable, "-c", _PROBE, root, "full" if full else "policy"],
                          capture_output=True, text=True, check=True)
    seconds, files, policy, solved = done.stdout.split()
    return float(seconds), int(files), int(policy), int(solved)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkout")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = os.path.join(folder, "repo")
        shutil.copytree(args.checkout, root, symlinks=True, ignore=shutil.ignore_patterns(".mplint_cache"))
        if not os.path.exists(os.path.join(root, ".git")):
            os.mkdir(os.path.join(root, ".git"))  # a checkout's root, as a clone has
        cache = os.path.join(root, ".mplint_cache")
        for full in (False, True):
            label = "every module's questions" if full else "policy modules and solution"
            cold, warm, edit = [], [], []
            shape = None
            for _ in range(args.repeat):
                shutil.rmtree(cache, ignore_errors=True)
                seconds, *shape = _run(root, full)
                cold.append(seconds)
                warm.append(_run(root, full)[0])
                edit.append(_edit_and_run(root, full))
            files, policy, solved = shape  # type: ignore[misc]
            print(f"{label}: {files} files, {policy} policy modules, {solved} modules in the solution")
            print(f"  cold {min(cold):.2f} s   warm {min(warm):.2f} s   one edit {min(edit):.2f} s")


def _edit_and_run(root: str, full: bool) -> float:
    """Touch one module of the policy solution (a comment appended), then run."""
    probe = "from mplint.project.index import ProjectIndex; i = ProjectIndex(%r); print(i.path_of[sorted(i._solve()[0])[0]] if i._solve()[0] else '')" % root
    target = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    if not target:
        target = next(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".py"))
    with open(target, "a", encoding="utf-8") as handle:
        handle.write(f"\n# edited {time.time()}\n")
    return _run(root, full)[0]


if __name__ == "__main__":
    main()
