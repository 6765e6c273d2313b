"""Benchmark mplint on real checkouts, side by side with ruff and a bare libcst parse.

Everything is measured in one run, on copies of the checkouts (mplint writes its cache,
the edited-file case edits a file): a bare libcst parse of every file mplint would
walk (single process, texts in memory: the cost of parsing everything once),
`ruff check --select ALL --no-cache` (exit code ignored), mplint cold (no cache), warm
(cache filled, nothing changed), one edited mixed-precision file with a warm cache (the
pre-commit run `mplint FILE`, and the whole-tree run after that one edit), and the peak
memory of a cold run (the sum over mplint's processes, and the largest one). Then one
generated 50,000-line file: check time and memory, and `--fix --unsafe-fixes` time.
With `--server`, the edited-file case is measured again through a running `mplint
server`.

Each time is the wall time of the real command (start-up included); best and median
of `--repeat` runs.

    python bench/real_corpus.py /work/corpus/keras-hub /work/corpus/OpenNMT-tf \\
        /work/corpus/DeepLearningExamples/TensorFlow2 [--repeat 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from run_bench import compile_bytecode  # noqa: E402
from synthetic_repo import large_file  # noqa: E402

MPLINT = [sys.executable, "-m", "mplint"]
GOALS = {  # issue 20
    "cold": ("x ruff ALL", 1.0),
    "warm": ("x bare parse", 0.02),
    "one edited file": ("s", 0.15),
    "50k-line file: check": ("s", 5.0),
    "50k-line file: fix": ("s", 30.0),
}


# -- measuring --------------------------------------------------------------------------

def _tree(pid: int) -> list[int]:
    """`pid` and its descendants (Linux /proc)."""
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    stack.extend(int(c) for c in handle.read().split())
        except OSError:
            pass
    return found


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Run:
    def __init__(self, seconds: float, code: int, stderr: str, peak_total_kib: int = 0, peak_one_kib: int = 0):
        self.seconds, self.code, self.stderr = seconds, code, stderr
        self.peak_total_kib, self.peak_one_kib = peak_total_kib, peak_one_kib


def run(cmd: list[str], cwd: str, memory: bool = False, ok=(0, 1)) -> Run:
    """Wall time (and with `memory`, peak RSS sampled every 5 ms) of one command."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peaks = [0, 0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            sizes = [_rss_kib(p) for p in _tree(proc.pid)]
            peaks[0] = max(peaks[0], sum(sizes))
            peaks[1] = max(peaks[1], max(sizes, default=0))
            done.wait(0.005)

    sampler = threading.Thread(target=sample, daemon=True) if memory else None
    if sampler:
        sampler.start()
    _, err = proc.communicate()
    seconds = time.perf_counter() - start
    done.set()
    if sampler:
        sampler.join()
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.decode()[-2000:]}")
    return Run(seconds, proc.returncode, err.decode(), peaks[0], peaks[1])


def best(times: list[float]) -> float:
    return min(times)


def median(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[len(ordered) // 2]


# -- the corpus -------------------------------------------------------------------------

def copy_checkouts(checkouts: list[str], work: str) -> list[str]:
    copies = []
    for checkout in checkouts:
        name = os.path.basename(os.path.normpath(checkout))
        copy = os.path.join(work, name)
        shutil.copytree(checkout, copy, symlinks=True, ignore=shutil.ignore_patterns(".git", ".mplint_cache"))
        copies.append(name)
    return copies


def walked_files(copies: list[str], work: str) -> list[str]:
    """The files mplint walks (its discovery: excludes and .gitignore honoured)."""
    cwd = os.getcwd()
    os.chdir(work)
    try:
        from mplint.inputs.config import ConfigResolver
        from mplint.inputs.discovery import Found, discover

        return [item.path for item in discover(copies, ConfigResolver()) if isinstance(item, Found)]
    finally:
        os.chdir(cwd)


def bare_parse(paths: list[str], work: str) -> tuple[float, int, int]:
    """Seconds to libcst-parse every .py file once (single process), files, lines."""
    import libcst

    texts = []
    for path in paths:
        if path.endswith(".py"):
            with open(os.path.join(work, path), "rb") as handle:
                texts.append(handle.read().decode("utf-8", errors="replace"))
    start = time.perf_counter()
    for text in texts:
        try:
            libcst.parse_module(text)
        except Exception:  # a file libcst cannot parse still cost its attempt
            pass
    return time.perf_counter() - start, len(texts), sum(t.count("\n") for t in texts)


def clear_caches(work: str) -> None:
    for folder, subfolders, _ in os.walk(work):
        if ".mplint_cache" in subfolders:
            shutil.rmtree(os.path.join(folder, ".mplint_cache"))
            subfolders.remove(".mplint_cache")


def edited_file(paths: list[str], work: str) -> str:
    """The first walked file (sorted) that sets a mixed policy: the file a user edits."""
    for path in sorted(paths):
        if path.endswith(".py"):
            with open(os.path.join(work, path), encoding="utf-8", errors="replace") as handle:
                if "mixed_float16" in handle.read():
                    return path
    raise SystemExit("no mixed-precision file in the checkouts")


def edit(path: str, n: int) -> None:
    """A small edit at the end of the file, different each time (a new content hash)."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f"\n_edited_{n} = {n}\n")


# -- main -------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkouts", nargs="+")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", dest="json_out")
    parser.add_argument("--large-lines", type=int, default=50_000)
    parser.add_argument("--no-large", action="store_true", help="skip the generated large file")
    parser.add_argument("--server", action="store_true", help="also measure the edited file through `mplint server`")
    parser.add_argument("--keep", help="copy into this folder and keep it")
    args = parser.parse_args()
    ruff = shutil.which("ruff") or os.path.join(os.path.dirname(sys.executable), "ruff")
    if not os.path.exists(ruff):
        raise SystemExit("ruff is needed for the comparison: pip install ruff")

    compile_bytecode()
    work = args.keep or tempfile.mkdtemp(prefix="mplint-real-")
    if args.keep and os.path.exists(work):
        shutil.rmtree(work)
    os.makedirs(work, exist_ok=True)
    copies = copy_checkouts(args.checkouts, work)
    paths = walked_files(copies, work)
    repeat = args.repeat
    results: dict[str, list[float]] = {}

    parse_times = []
    for _ in range(repeat):
        seconds, n_py, lines = bare_parse(paths, work)
        parse_times.append(seconds)
    results["bare libcst parse"] = parse_times
    results["ruff check --select ALL"] = [
        run([ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "--quiet", *copies], work).seconds
        for _ in range(repeat)
    ]
    cold, warm = [], []
    for _ in range(repeat):
        clear_caches(work)
        cold.append(run([*MPLINT, "check", *copies], work).seconds)
        warm.append(run([*MPLINT, "check", *copies], work).seconds)
    results["mplint cold"], results["mplint warm"] = cold, warm

    target = edited_file(paths, work)
    one, tree_after_edit = [], []
    for n in range(repeat * 2):
        edit(os.path.join(work, target), n)
        one.append(run([*MPLINT, "check", target], work).seconds)
    for n in range(repeat):
        edit(os.path.join(work, target), 100 + n)
        tree_after_edit.append(run([*MPLINT, "check", *copies], work).seconds)
    results["one edited file (mplint FILE)"] = one
    results["tree, one file edited"] = tree_after_edit
    if args.server:
        run([*MPLINT, "server", "start"], work, ok=(0,))
        try:
            served = []
            for n in range(repeat * 2):
                edit(os.path.join(work, target), 200 + n)
                served.append(run([*MPLINT, "check", target], work).seconds)
            results["one edited file, server running"] = served
        finally:
            run([*MPLINT, "server", "stop"], work, ok=(0,))

    clear_caches(work)
    memory = run([*MPLINT, "check", "--no-cache", *copies], work, memory=True)

    large: dict[str, object] = {}
    if not args.no_large:
        folder = os.path.join(work, "large")
        os.makedirs(folder)
        big = os.path.join(folder, "big_model.py")
        text = large_file(args.large_lines)
        large["lines"] = text.count("\n")
        checks, fixes = [], []
        for _ in range(max(1, repeat // 2)):
            with open(big, "w", encoding="utf-8") as handle:
                handle.write(text)
            check = run([*MPLINT, "check", "--no-cache", "big_model.py"], folder, memory=True)
            checks.append(check)
            fix = run([*MPLINT, "check", "--no-cache", "--fix", "--unsafe-fixes", "big_model.py"], folder, memory=True)
            fixes.append(fix)
        results["50k-line file: check"] = [c.seconds for c in checks]
        results["50k-line file: fix"] = [f.seconds for f in fixes]
        large["check_peak_mib"] = max(c.peak_total_kib for c in checks) / 1024
        large["fix_peak_mib"] = max(f.peak_total_kib for f in fixes) / 1024

    parse, ruff_all = best(parse_times), best(results["ruff check --select ALL"])
    print(f"corpus: {', '.join(args.checkouts)}")
    print(f"  {len(paths)} files walked ({n_py} .py, {lines} lines); cpu={os.cpu_count()}; edited: {target}")
    print(f"{'run':36} {'best s':>8} {'median':>8} {'x ruff':>7} {'x parse':>8}  goal")
    for label, times in results.items():
        b = best(times)
        goal = ""
        for key, (unit, limit) in GOALS.items():
            if label.startswith(key) or (key == "one edited file" and label.startswith("one edited")):
                value = b / ruff_all if unit == "x ruff ALL" else b / parse if unit == "x bare parse" else b
                goal = f"{'met' if value <= limit else 'MISSED'} (<= {limit}{'' if unit.startswith('x') else ' s'}" \
                       f"{' ' + unit if unit.startswith('x') else ''})"
        print(f"{label:36} {b:8.3f} {median(times):8.3f} {b / ruff_all:7.2f} {b / parse:8.3f}  {goal}")
    print(f"peak RSS of a cold run: {memory.peak_total_kib / 1024:.0f} MiB in all, "
          f"{memory.peak_one_kib / 1024:.0f} MiB the largest process")
    if large:
        print(f"50k-line file ({large['lines']} lines): peak RSS check {large['check_peak_mib']:.0f} MiB, "
              f"fix {large['fix_peak_mib']:.0f} MiB (goal <= 500 MB for the check)")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as handle:
            json.dump({
                "checkouts": args.checkouts, "files": len(paths), "py_files": n_py, "lines": lines,
                "edited": target, "times": results,
                "peak_rss_mib": memory.peak_total_kib / 1024, "peak_rss_one_process_mib": memory.peak_one_kib / 1024,
                "large": large,
            }, handle, indent=2)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
