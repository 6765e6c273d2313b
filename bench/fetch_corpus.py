"""Rebuild an audit corpus from its committed list: clone each repository and check out
the recorded commit, one folder per repository (`owner-name`), as `bench/audit.py run`
expects.

    python bench/fetch_corpus.py bench/audit/fresh-corpus.tsv /tmp/fresh-corpus
    MPLINT_NO_SERVER=1 python bench/audit.py run fresh /tmp/fresh-corpus/*

The list is tab-separated with a header: repo (owner/name), commit (40 hex digits),
kind, why, and optionally folder (the checkout's folder name, where an earlier round's
labels key findings by another name than `owner-name`). Nothing fetched is kept in this repository. A repository that can no longer
be fetched at its commit is reported and skipped.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys


def rows(listing: str) -> list[dict]:
    with open(listing, newline="", encoding="utf-8") as handle:
        return [r for r in csv.DictReader(handle, delimiter="\t") if r.get("repo")]


def fetch(repo: str, commit: str, into: str, name: str = "") -> bool:
    folder = os.path.join(into, name or repo.replace("/", "-"))
    if os.path.isdir(os.path.join(folder, ".git")):
        current = subprocess.run(["git", "-C", folder, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        if current == commit:
            return True
    os.makedirs(folder, exist_ok=True)
    steps = [["git", "-C", folder, "init", "-q"],
             ["git", "-C", folder, "fetch", "-q", "--depth", "1", f"https://github.com/{repo}.git", commit],
             ["git", "-C", folder, "checkout", "-q", "--detach", "FETCH_HEAD"]]
    for step in steps:
        if subprocess.run(step).returncode != 0:
            print(f"skipped {repo}@{commit}: `{' '.join(step[3:])}` failed", file=sys.stderr)
            return False
    return True


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        raise SystemExit(__doc__)
    listing, into = argv
    fetched = [r["repo"] for r in rows(listing) if fetch(r["repo"], r["commit"], into, r.get("folder") or "")]
    print(f"{len(fetched)} repositories under {into}")


if __name__ == "__main__":
    main(sys.argv[1:])
