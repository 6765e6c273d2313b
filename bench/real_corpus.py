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

`--baseline REF` is the regression check: mplint at that git ref (the previous release;
`bench/snapshot.py` extracts it) is measured in the same run, on its own copy of the
corpus, each round interleaved with the working tree's, and the report ends with the
ratios working tree / baseline. A ratio above 1 is a slowdown to explain before it lands.

    python bench/real_corpus.py /work/corpus/keras-hub /work/corpus/OpenNMT-tf \\
        /work/corpus/DeepLearningExamples/TensorFlow2 [--repeat 5] [--baseline REF] [--server] [--json out.json]
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
from snapshot import environment, snapshot  # noqa: E402
from synthetic_repo import large_file  # noqa: E402

MPLINT = [sys.executable, "-m", "mplint"]
GOALS = {  # issue 32 (the fix time is issue 20's)
    "mplint cold": ("x ruff ALL", 1.0),
    "mplint warm": ("x bare parse", 0.02),
    "one edited file (mplint FILE)": ("s", 0.30),
    "one edited file, server (first)": ("s", 0.15),
    "one edited file, server running": ("s", 0.15),
    "one edited file, server, 2.5 s later": ("s", 0.15),
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


def run(cmd: list[str], cwd: str, memory: bool = False, ok=(0, 1), env: dict[str, str] | None = None) -> Run:
    """Wall time (and with `memory`, peak RSS sampled every 5 ms) of one command."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
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


# -- one implementation ------------------------------------------------------------------

class Implementation:
    """One mplint to measure: the working tree, or a snapshot of a git ref (`--baseline`).

    Each has its own copy of the corpus, so its cache never meets the other's.
    """

    def __init__(self, label: str, source: str | None, work: str, copies: list[str]):
        self.label, self.source, self.work, self.copies = label, source, work, copies
        self.times: dict[str, list[float]] = {}

    def run(self, args: list[str], cwd: str | None = None, memory: bool = False, server: bool = False) -> Run:
        env = environment(self.source)
        if server:
            env.pop("MPLINT_NO_SERVER", None)
            env["MPLINT_SERVER_DIR"] = os.path.join(self.work, ".server")  # its own, not the user's
        return run([*MPLINT, *args], cwd or self.work, memory=memory, env=env)

    def record(self, label: str, seconds: float) -> None:
        self.times.setdefault(label, []).append(seconds)


def measure_tree(impl: Implementation, target: str, round_: int) -> None:
    """One round of the whole-corpus runs: cold, warm, one edited file, tree after an edit."""
    clear_caches(impl.work)
    impl.record("mplint cold", impl.run(["check", *impl.copies]).seconds)
    impl.record("mplint warm", impl.run(["check", *impl.copies]).seconds)
    for n in range(2):
        edit(os.path.join(impl.work, target), 10 * round_ + n)
        impl.record("one edited file (mplint FILE)", impl.run(["check", target]).seconds)
    edit(os.path.join(impl.work, target), 1000 + round_)
    impl.record("tree, one file edited", impl.run(["check", *impl.copies]).seconds)


def measure_server(impl: Implementation, target: str, repeat: int) -> None:
    """The edited file through a running `mplint server`, started in the file's project
    as a user would (and as pre-commit runs there): the check right after the edit, from
    the server's first command on, then a check two seconds after the edit (the server
    reads edited files while idle)."""
    project, _, relative = target.partition("/")
    folder = os.path.join(impl.work, project)
    impl.run(["server", "start"], folder, server=True)
    time.sleep(1.0)  # let it come up: the first command is measured, not the start
    try:
        for n in range(repeat * 2):
            edit(os.path.join(folder, relative), 2000 + n)
            seconds = impl.run(["check", relative], folder, server=True).seconds
            impl.record("one edited file, server (first)" if n == 0 else "one edited file, server running", seconds)
        for n in range(repeat):
            edit(os.path.join(folder, relative), 3000 + n)
            time.sleep(2.5)
            impl.record("one edited file, server, 2.5 s later", impl.run(["check", relative], folder, server=True).seconds)
    finally:
        impl.run(["server", "stop"], folder, server=True)


def measure_large(impl: Implementation, text: str, repeat: int) -> dict[str, float]:
    folder = os.path.join(impl.work, "large")
    os.makedirs(folder, exist_ok=True)
    big = os.path.join(folder, "big_model.py")
    checks, fixes = [], []
    for _ in range(max(1, repeat // 2)):
        with open(big, "w", encoding="utf-8") as handle:
            handle.write(text)
        checks.append(impl.run(["check", "--no-cache", "big_model.py"], folder, memory=True))
        fixes.append(impl.run(["check", "--no-cache", "--fix", "--unsafe-fixes", "big_model.py"], folder, memory=True))
    impl.times["50k-line file: check"] = [c.seconds for c in checks]
    impl.times["50k-line file: fix"] = [f.seconds for f in fixes]
    shutil.rmtree(folder)
    return {"check_peak_mib": max(c.peak_total_kib for c in checks) / 1024,
            "fix_peak_mib": max(f.peak_total_kib for f in fixes) / 1024}


# -- reporting ----------------------------------------------------------------------------

def goal_text(label: str, seconds: float, ruff_all: float, parse: float) -> str:
    if label in GOALS:
        unit, limit = GOALS[label]
        value = seconds / ruff_all if unit == "x ruff ALL" else seconds / parse if unit == "x bare parse" else seconds
        shown = f"{limit} {unit}" if unit.startswith("x") else f"{limit} s"
        return f"{'met' if value <= limit else 'MISSED'} (<= {shown})"
    return ""


def report(impls: list[Implementation], baseline: dict[str, list[float]]) -> None:
    parse, ruff_all = best(baseline["bare libcst parse"]), best(baseline["ruff check --select ALL"])
    for label, times in baseline.items():
        print(f"{label:36} {best(times):8.3f} {median(times):8.3f} {best(times) / ruff_all:7.2f} "
              f"{best(times) / parse:8.3f}")
    for impl in impls:
        print(f"\n{impl.label}")
        print(f"{'run':36} {'best s':>8} {'median':>8} {'x ruff':>7} {'x parse':>8}  goal")
        for label, times in impl.times.items():
            b = best(times)
            print(f"{label:36} {b:8.3f} {median(times):8.3f} {b / ruff_all:7.2f} {b / parse:8.3f}  "
                  f"{goal_text(label, b, ruff_all, parse)}")
    if len(impls) == 2:
        head, base = impls
        print(f"\n{'ratio ' + head.label + ' / ' + base.label:36} {'best':>8} {'median':>8}")
        for label, times in head.times.items():
            if label in base.times:
                print(f"{label:36} {best(times) / best(base.times[label]):8.2f} "
                      f"{median(times) / median(base.times[label]):8.2f}")


# -- main -------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkouts", nargs="+")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", metavar="REF",
                        help="also measure mplint at this git ref (the previous release), interleaved, and report ratios")
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
    impls = [Implementation("working tree", None, os.path.join(work, "head"), [])]
    commit = None
    if args.baseline:
        source = os.path.join(work, "baseline-source")
        commit = snapshot(args.baseline, source)
        impls.append(Implementation(f"baseline {args.baseline} ({commit[:9]})", source, os.path.join(work, "base"), []))
    for impl in impls:
        os.makedirs(impl.work)
        impl.copies = copy_checkouts(args.checkouts, impl.work)
    paths = walked_files(impls[0].copies, impls[0].work)
    repeat = args.repeat

    baseline: dict[str, list[float]] = {"bare libcst parse": [], "ruff check --select ALL": []}
    for _ in range(repeat):
        seconds, n_py, lines = bare_parse(paths, impls[0].work)
        baseline["bare libcst parse"].append(seconds)
        baseline["ruff check --select ALL"].append(run(
            [ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "--quiet", *impls[0].copies],
            impls[0].work).seconds)
    target = edited_file(paths, impls[0].work)
    for round_ in range(repeat):  # interleaved, so a busy moment hurts both alike
        for impl in impls:
            measure_tree(impl, target, round_)
    if args.server:
        for impl in impls:
            measure_server(impl, target, repeat)
    memory = {}
    for impl in impls:
        clear_caches(impl.work)
        memory[impl.label] = impl.run(["check", "--no-cache", *impl.copies], memory=True)
    large: dict[str, dict[str, float]] = {}
    if not args.no_large:
        text = large_file(args.large_lines)
        for impl in impls:
            large[impl.label] = measure_large(impl, text, repeat)

    print(f"corpus: {', '.join(args.checkouts)}")
    print(f"  {len(paths)} files walked ({n_py} .py, {lines} lines); cpu={os.cpu_count()}; "
          f"load {os.getloadavg()[0]:.1f}; edited: {target}")
    report(impls, baseline)
    print()
    for impl in impls:
        peak = memory[impl.label]
        print(f"{impl.label}: peak RSS of a cold run {peak.peak_total_kib / 1024:.0f} MiB in all, "
              f"{peak.peak_one_kib / 1024:.0f} MiB the largest process", end="")
        if impl.label in large:
            sizes = large[impl.label]
            print(f"; 50k-line file check {sizes['check_peak_mib']:.0f} MiB, fix {sizes['fix_peak_mib']:.0f} MiB", end="")
        print()
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as handle:
            json.dump({
                "checkouts": args.checkouts, "files": len(paths), "py_files": n_py, "lines": lines,
                "edited": target, "baseline_commit": commit, "measures": baseline,
                "implementations": {impl.label: impl.times for impl in impls},
                "peak_rss_mib": {label: r.peak_total_kib / 1024 for label, r in memory.items()},
                "large": large,
            }, handle, indent=2)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
