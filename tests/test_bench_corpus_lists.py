"""The audit corpora can be rebuilt by a reader (#28 item 12): each committed list names
repositories and the exact commits, and bench/fetch_corpus.py checks them out into the
folder names the labels key on."""

from __future__ import annotations

import csv
import importlib.util
import re
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"
LISTS = sorted((BENCH / "audit").glob("*corpus.tsv"))


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def _fetch_corpus():
    spec = importlib.util.spec_from_file_location("fetch_corpus", BENCH / "fetch_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_corpus_list_names_repositories_at_exact_commits():
    assert {p.name for p in LISTS} >= {"round5-corpus.tsv", "fresh-corpus.tsv", "fresh2-corpus.tsv", "fresh3-corpus.tsv"}
    for path in LISTS:
        rows = _rows(path)
        assert rows, path
        repos = [r["repo"] for r in rows]
        assert len(repos) == len(set(repos)), path
        for row in rows:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+", row["repo"]), (path, row)
            assert re.fullmatch(r"[0-9a-f]{40}", row["commit"]), (path, row)


def test_the_round5_list_covers_corpus_md_and_keeps_its_folder_names():
    listed = {r["repo"]: r for r in _rows(BENCH / "audit" / "round5-corpus.tsv")}
    bullets = re.findall(r"^- ([\w.-]+/[\w.-]+)$", (BENCH / "audit" / "corpus.md").read_text(), re.M)
    assert bullets and set(bullets) <= set(listed)
    assert listed["IntelAI/models"]["folder"] == "IntelAI-models"
    assert listed["keras-team/keras-hub"]["folder"] == "keras-hub"


def test_fetch_corpus_checks_out_into_the_listed_folder(tmp_path, monkeypatch):
    module = _fetch_corpus()
    steps = []
    monkeypatch.setattr(module.subprocess, "run", lambda args, **_: steps.append(args) or type("R", (), {
        "returncode": 0, "stdout": ""})())
    assert module.fetch("IntelAI/models", "0" * 40, str(tmp_path), "IntelAI-models")
    assert (tmp_path / "IntelAI-models").is_dir()
    assert ["git", "-C", str(tmp_path / "IntelAI-models"), "fetch", "-q", "--depth", "1",
            "https://github.com/IntelAI/models.git", "0" * 40] in steps
    assert module.fetch("a/b", "1" * 40, str(tmp_path))
    assert (tmp_path / "a-b").is_dir()
