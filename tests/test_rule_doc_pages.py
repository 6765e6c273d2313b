"""docs/rules/ is generated from the rule docstrings and must be up to date."""

from __future__ import annotations

import subprocess
import sys

from mplint.catalogue import ruledocs
from mplint.core.codes import all_codes


def test_generated_rule_pages_are_up_to_date():
    stale = ruledocs.stale_pages()
    assert not stale, f"docs/rules/ is out of date ({', '.join(stale)}): run `python -m mplint.catalogue.ruledocs`"


def test_every_rule_has_a_page_with_its_docs():
    from mplint.catalogue.registry import rule_class

    for code in all_codes():
        page = (ruledocs.DOCS_DIR / f"{code}.md").read_text(encoding="utf-8")
        rule = rule_class(code)
        assert page.startswith(f"# {rule.name} ({code})\n")
        for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
            assert section in page
        assert rule.doc() in page
    index = (ruledocs.DOCS_DIR / "README.md").read_text(encoding="utf-8")
    assert all(f"[{code}]({code}.md)" in index for code in all_codes())


def test_check_mode_notices_a_stale_and_a_leftover_page(tmp_path):
    ruledocs.write_pages(tmp_path)
    assert ruledocs.stale_pages(tmp_path) == []
    code = all_codes()[0]
    (tmp_path / f"{code}.md").write_text("edited by hand\n", encoding="utf-8")
    (tmp_path / "MP999.md").write_text("a removed rule\n", encoding="utf-8")
    assert ruledocs.stale_pages(tmp_path) == [f"{code}.md", "MP999.md"]
    assert sorted(ruledocs.write_pages(tmp_path)) == sorted([f"{code}.md", "MP999.md"])
    assert ruledocs.stale_pages(tmp_path) == []
    assert not (tmp_path / "MP999.md").exists()


def test_check_command_exit_code():
    done = subprocess.run([sys.executable, "-m", "mplint.catalogue.ruledocs", "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_doc_links_come_from_the_documentation_url_in_pyproject(monkeypatch):
    """A published mplint declares `Documentation` in [project.urls]; its rule links are
    pages under it (this checkout declares none: see the next test)."""
    base = "https://github.com/someone/mplint/blob/main/docs"
    monkeypatch.setattr(ruledocs, "project_urls", lambda: {"documentation": base})
    for code in all_codes():
        assert ruledocs.rule_doc_url(code) == ruledocs.web_doc_url(code) == f"{base}/rules/{code}.md"


def test_doc_links_without_a_declared_url_are_the_local_pages(monkeypatch):
    monkeypatch.setattr(ruledocs, "project_urls", lambda: {})
    code = all_codes()[0]
    assert ruledocs.rule_doc_url(code) == (ruledocs.DOCS_DIR / f"{code}.md").as_uri()
    assert ruledocs.web_doc_url(code) is None and ruledocs.homepage_url() is None


def test_no_placeholder_home_is_declared_or_linked():
    """Links only where there is a home: pyproject declares no placeholder URL, and one
    that is (a fork's `OWNER`) is never used for SARIF or editor links."""
    import tomllib

    from tests.conftest import ROOT

    urls = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"].get("urls", {})
    assert not [url for url in urls.values() if ruledocs.is_placeholder(url)]
    assert ruledocs.is_placeholder("https://github.com/OWNER/mplint/blob/main/docs")
    assert not ruledocs.is_placeholder("https://github.com/someone/mplint/blob/main/docs")


def test_a_rule_page_names_the_premises_its_findings_rest_on():
    from mplint.catalogue.registry import rule_class
    from mplint.catalogue.ruledocs import rule_text

    assert "Rests on: keras-target" in rule_text("MP401")
    assert "applied as safe only where every premise it rests on is proved" in rule_text("MP401")
    assert rule_class("MP204").premises == () and "Rests on" not in rule_text("MP204")
