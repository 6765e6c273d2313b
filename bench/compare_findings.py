"""Prove that a speed change changes no finding: mplint's JSON findings on real
checkouts, saved before the change and compared after it.

Each checkout is checked twice, from its own folder (`--no-cache`, JSON output): with
its own settings, and with `--config` naming a file that says `assume-policy =
"mixed_float16"` (so every Keras file is analysed). The findings are saved sorted, one
file per checkout and mode; `--against` compares a new run with a saved one and prints
the first differences.

    python bench/compare_findings.py --save /tmp/before /work/corpus/*
    python bench/compare_findings.py --save /tmp/after --against /tmp/before /work/corpus/*

`--source DIR` runs a snapshot instead of the installed mplint (DIR holds `mplint/` and
`mplint_rules/`: `bench/snapshot.py` makes one from a git ref).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

MODES = ("own", "assumed")


def run_mplint(checkout: str, config: str | None, source: str | None = None) -> tuple[list[dict], str]:
    args = [sys.executable, "-m", "mplint", "check", "--no-cache", "--output-format", "json", "--exit-zero"]
    if config is not None:
        args += ["--config", config]
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = source
    proc = subprocess.run([*args, "."], cwd=checkout, capture_output=True, text=True, env=env)
    try:
        findings = json.loads(proc.stdout or "[]")
    except json.JSONDecodeError:
        raise SystemExit(f"mplint printed no JSON in {checkout} (exit {proc.returncode}): {proc.stderr[-2000:]}")
    findings.sort(key=lambda f: json.dumps(f, sort_keys=True))
    return findings, proc.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkouts", nargs="+")
    parser.add_argument("--save", required=True, help="folder to write the findings to")
    parser.add_argument("--against", help="folder of a saved run to compare with")
    parser.add_argument("--source", help="run the mplint found here (a folder holding mplint/ and mplint_rules/, "
                                         "e.g. a snapshot of another branch) instead of the installed one")
    args = parser.parse_args()
    os.makedirs(args.save, exist_ok=True)
    differences = 0
    with tempfile.TemporaryDirectory() as scratch:
        config = os.path.join(scratch, "assume.toml")
        with open(config, "w", encoding="utf-8") as handle:
            handle.write('assume-policy = "mixed_float16"\n')
        for checkout in args.checkouts:
            name = os.path.basename(os.path.normpath(checkout))
            for mode in MODES:
                start = time.perf_counter()
                findings, stderr = run_mplint(checkout, config if mode == "assumed" else None, args.source)
                seconds = time.perf_counter() - start
                stem = os.path.join(args.save, f"{name}.{mode}")
                with open(stem + ".json", "w", encoding="utf-8") as handle:
                    json.dump(findings, handle, indent=1, sort_keys=True)
                with open(stem + ".err", "w", encoding="utf-8") as handle:
                    handle.write(stderr)
                verdict = ""
                if args.against:
                    old_path = os.path.join(args.against, f"{name}.{mode}.json")
                    if not os.path.exists(old_path):
                        old = None
                        verdict = "(no saved run to compare with)"
                    else:
                        with open(old_path, encoding="utf-8") as handle:
                            old = json.load(handle)
                    if old is None:
                        pass
                    elif old == findings:
                        verdict = "identical"
                    else:
                        differences += 1
                        old_set = {json.dumps(f, sort_keys=True) for f in old}
                        new_set = {json.dumps(f, sort_keys=True) for f in findings}
                        verdict = f"DIFFERENT: {len(old_set - new_set)} gone, {len(new_set - old_set)} new"
                        for line in sorted(old_set - new_set)[:3]:
                            verdict += f"\n    - {line[:300]}"
                        for line in sorted(new_set - old_set)[:3]:
                            verdict += f"\n    + {line[:300]}"
                print(f"{name:40} {mode:8} {len(findings):6} findings {seconds:7.1f} s  {verdict}", flush=True)
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
