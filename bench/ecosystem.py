"""Run mplint over real repositories and check that `--fix` never breaks them.

Like ruff's ecosystem check: for each checkout given, count the findings by code (with
the repository's own settings, and again with `assume-policy = "mixed_float16"` so every
Keras file is analysed), then copy the repository, apply every fix (`--fix
--unsafe-fixes`, all rules), and verify that every changed file still compiles, that a
second run changes nothing, that no MP900 (internal error, or a fix discarded) occurred,
and that what the check offered is what `--fix` did: every finding shown with a fix is
gone, and no fix group (findings sharing their edits) is left half-applied. Nothing is
fetched: pass paths of checkouts you already have.

    python bench/ecosystem.py ~/src/keras-hub ~/src/addons [--json report.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def mplint(args: list[str], cwd: str) -> tuple[list[dict], float, int]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mplint", "--no-cache", "--output-format", "json", *args],
                          cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    try:
        findings = json.loads(proc.stdout or "[]")
    except json.JSONDecodeError:
        raise SystemExit(f"mplint printed no JSON in {cwd}: {proc.stderr[-2000:]}")
    return findings, elapsed, proc.returncode


def changed_files(before: str, after: str) -> list[str]:
    changed = []
    for folder, _, names in os.walk(after):
        for name in names:
            if not name.endswith((".py", ".ipynb")):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, after)
            with open(path, "rb") as a, open(os.path.join(before, rel), "rb") as b:
                if a.read() != b.read():
                    changed.append(rel)
    return sorted(changed)


def compiles(path: str) -> str | None:
    """None if the file compiles, else the error. A notebook compiles cell by cell, as
    Jupyter runs it (a `from __future__` import may open any cell)."""
    import re

    from mplint.inputs.documents import load_document

    with open(path, "rb") as handle:
        doc = load_document(path, handle.read())
    units = re.split(r"(?m)^# mplint-cell \d+$", doc.text) if path.endswith(".ipynb") else [doc.text]
    for unit in units:
        try:
            compile(unit, path, "exec", doc.compile_flags())
        except SyntaxError as exc:
            return f"{exc.msg} (line {exc.lineno})"
    return None


def offered_versus_applied(offered: list[dict], remaining: list[dict]) -> dict:
    """What a check offered as fixes against what `--fix` left: every finding shown with
    a fix must be gone afterwards, and the findings of one fix group (the same edits)
    all or none of them."""
    key = lambda f: (f["filename"], f["cell"], f["code"], f["message"])  # noqa: E731
    left = collections.Counter(key(f) for f in remaining)
    fixable = [f for f in offered if f["fix"]]
    not_applied = [f for f in fixable if left[key(f)] > 0]
    groups: dict[tuple, list[dict]] = {}
    for f in fixable:
        edits = json.dumps(f["fix"]["edits"], sort_keys=True)
        groups.setdefault((f["filename"], f["cell"], edits), []).append(f)
    half = [members for members in groups.values()
            if len(members) > 1 and 0 < sum(left[key(f)] > 0 for f in members) < len(members)]
    return {
        "fixes_offered": len(fixable),
        "fix_groups": sum(len(m) > 1 for m in groups.values()),
        "offered_not_applied": [f"{f['filename']}: {f['code']} {f['message'][:120]}" for f in not_applied],
        "half_applied_groups": [f"{m[0]['filename']}: {', '.join(f['code'] for f in m)}" for m in half],
    }


def check_repository(path: str) -> dict:
    name = os.path.basename(os.path.abspath(path))
    report: dict = {"repository": name}
    findings, seconds, _ = mplint(["."], path)
    report["findings"] = dict(sorted(collections.Counter(f["code"] for f in findings).items()))
    report["check_seconds"] = round(seconds, 2)
    with tempfile.TemporaryDirectory() as scratch:
        config = os.path.join(scratch, "assume.toml")
        with open(config, "w", encoding="utf-8") as handle:
            handle.write('assume-policy = "mixed_float16"\n')
        assumed, seconds, _ = mplint(["--config", config, "."], path)
        report["findings_assuming_mixed_float16"] = dict(sorted(collections.Counter(f["code"] for f in assumed).items()))
        copy = os.path.join(scratch, name)
        shutil.copytree(path, copy, symlinks=True, ignore=shutil.ignore_patterns(".git", ".mplint_cache"))
        offered, _, _ = mplint(["--config", config, "--select", "ALL", "--unsafe-fixes", "."], copy)
        remaining, seconds, _ = mplint(["--config", config, "--select", "ALL", "--fix", "--unsafe-fixes", "."], copy)
        report["fix_seconds"] = round(seconds, 2)
        changed = changed_files(path, copy)
        report["files_fixed"] = len(changed)
        # a file that did not compile before (a `from __future__` import after code) is not
        # the fix's doing: only files that compiled and no longer do count
        report["broken_after_fix"] = {rel: err for rel in changed if (err := compiles(os.path.join(copy, rel)))
                                      and compiles(os.path.join(path, rel)) is None}
        report["broken_before_fix"] = sorted(rel for rel in changed if compiles(os.path.join(path, rel)) is not None)
        report["internal_errors"] = [f"{f['filename']}: {f['message']}" for f in offered + remaining if f["code"] == "MP900"]
        report.update(offered_versus_applied(offered, remaining))
        snapshot = {rel: open(os.path.join(copy, rel), "rb").read() for rel in changed}
        mplint(["--config", config, "--select", "ALL", "--fix", "--unsafe-fixes", "."], copy)
        report["second_fix_changed"] = [rel for rel in changed_files(path, copy)
                                        if snapshot.get(rel) != open(os.path.join(copy, rel), "rb").read()]
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repositories", nargs="+")
    parser.add_argument("--json", dest="json_out")
    args = parser.parse_args()
    reports = [check_repository(path) for path in args.repositories]
    failed = False
    for report in reports:
        print(json.dumps(report, indent=2))
        failed |= bool(report["broken_after_fix"] or report["internal_errors"] or report["second_fix_changed"]
                       or report["half_applied_groups"])
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as handle:
            json.dump(reports, handle, indent=2)
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
