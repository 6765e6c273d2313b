"""Benchmark mplint on a synthetic repository (see bench/synthetic_repo.py).

Reports files/s and lines/s for: a bare libcst parse of every file (the baseline,
single process, texts already in memory), a cold mplint run (empty cache), a warm run
(cache filled), and one-file runs (pre-commit: one mixed-precision file, one ordinary
file), each as wall time of the real `mplint` command, plus peak memory (RSS) of the
cold run. Targets (issue 10, 2-core machine): cold <= 0.1x bare parse, warm <= 0.02x,
one-file < 0.3 s.

    python bench/run_bench.py [--files 3000] [--repeat 3] [--json out.json] [--keep DIR]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from synthetic_repo import generate  # noqa: E402


def _mplint(args: list[str], cwd: str) -> float:
    """Wall time of one `python -m mplint` run (start-up included)."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mplint", *args], cwd=cwd,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"mplint failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return elapsed


def _peak_rss_kib(args: list[str], cwd: str) -> int:
    code = (
        "import resource, subprocess, sys;"
        f"subprocess.run([sys.executable, '-m', 'mplint', *{args!r}], cwd={cwd!r}, "
        "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    return int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def bare_parse_seconds(paths: list[str]) -> float:
    import libcst

    texts = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            texts.append(handle.read())
    start = time.perf_counter()
    for text in texts:
        libcst.parse_module(text)
    return time.perf_counter() - start


def best(times: list[float]) -> float:
    return min(times)


def median(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[len(ordered) // 2]


def compile_bytecode() -> None:
    """Write mplint's bytecode first, as `pip install` does for an installed mplint.

    An editable install under PYTHONDONTWRITEBYTECODE=1 (this sandbox sets it) would
    otherwise compile every mplint module from source in every process it starts.
    """
    import compileall
    import importlib.util

    for package in ("mplint", "mplint_rules"):
        spec = importlib.util.find_spec(package)
        for location in spec.submodule_search_locations or ():
            compileall.compile_dir(location, quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(description="mplint benchmark")
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", dest="json_out")
    parser.add_argument("--keep", help="generate into this folder and keep it")
    parser.add_argument("--memory", action="store_true", help="also measure peak RSS on a repository twice as big")
    args = parser.parse_args()

    compile_bytecode()
    root = args.keep or tempfile.mkdtemp(prefix="mplint-bench-")
    if os.path.exists(root):
        shutil.rmtree(root)
    counts = generate(root, args.files, args.seed)
    paths = sorted(glob.glob(os.path.join(root, "**", "*.py"), recursive=True))
    files, lines = counts["files"], counts["lines"]
    mixed_file = next(p for p in paths if "mixed_precision" in open(p, encoding="utf-8").read())
    plain_file = next(p for p in paths if "keras" not in open(p, encoding="utf-8").read())

    parse_times = [bare_parse_seconds(paths) for _ in range(args.repeat)]
    cold_times, warm_times = [], []
    for _ in range(args.repeat):
        shutil.rmtree(os.path.join(root, ".mplint_cache"), ignore_errors=True)
        cold_times.append(_mplint(["."], root))
        warm_times.append(_mplint(["."], root))
    one_mixed_times = [_mplint(["--no-cache", mixed_file], root) for _ in range(args.repeat * 3)]
    one_plain_times = [_mplint(["--no-cache", plain_file], root) for _ in range(args.repeat * 3)]
    parse, cold, warm = best(parse_times), best(cold_times), best(warm_times)
    one_mixed, one_plain = best(one_mixed_times), best(one_plain_times)
    rss = _peak_rss_kib(["--no-cache", "."], root)
    rss_double = None
    if args.memory:
        double = tempfile.mkdtemp(prefix="mplint-bench-2x-")
        generate(double, args.files * 2, args.seed)
        rss_double = _peak_rss_kib(["--no-cache", "."], double)
        shutil.rmtree(double, ignore_errors=True)

    rows = [
        ("bare libcst parse (baseline)", parse_times, files, lines),
        ("mplint cold (empty cache)", cold_times, files, lines),
        ("mplint warm (cache filled)", warm_times, files, lines),
        ("mplint one mixed-precision file", one_mixed_times, 1, None),
        ("mplint one ordinary file", one_plain_times, 1, None),
    ]
    print(f"repository: {files} files, {lines} lines, {counts['mixed']} with mixed precision; cpu={os.cpu_count()}")
    print("best of the runs, then the median (this machine is noisy)")
    print(f"{'run':34} {'seconds':>9} {'median':>9} {'files/s':>10} {'lines/s':>12} {'x parse':>8}")
    for label, times, n_files, n_lines in rows:
        seconds = best(times)
        per_lines = f"{n_lines / seconds:12.0f}" if n_lines else f"{'':12}"
        print(f"{label:34} {seconds:9.3f} {median(times):9.3f} {n_files / seconds:10.0f} {per_lines} "
              f"{seconds / parse:8.3f}")
    print(f"peak RSS of a cold run: {rss / 1024:.0f} MiB")
    if rss_double is not None:
        print(f"peak RSS of a cold run on twice as many files: {rss_double / 1024:.0f} MiB")
    verdict = {
        "cold <= 0.1x parse": cold <= 0.1 * parse,
        "warm <= 0.02x parse": warm <= 0.02 * parse,
        "one file < 0.3 s (mixed-precision file)": one_mixed < 0.3,
        "one file < 0.3 s (ordinary file)": one_plain < 0.3,
    }
    for target, ok in verdict.items():
        print(f"  {'PASS' if ok else 'MISS'}  {target}")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as handle:
            json.dump({
                "files": files, "lines": lines, "mixed_files": counts["mixed"], "parse_s": parse,
                "cold_s": cold, "warm_s": warm, "one_mixed_s": one_mixed, "one_plain_s": one_plain,
                "peak_rss_mib": rss / 1024, "targets": verdict,
                "peak_rss_double_mib": rss_double / 1024 if rss_double else None,
            }, handle, indent=2)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
