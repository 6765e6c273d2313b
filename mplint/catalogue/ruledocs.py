"""Rule documentation pages and the links findings carry to them.

Each rule's page, `docs/rules/<CODE>.md`, is generated from its docstring (the same
text `mplint rule CODE` prints), with an index in `docs/rules/README.md`:

    python -m mplint.catalogue.ruledocs           # regenerate docs/rules/
    python -m mplint.catalogue.ruledocs --check   # exit 1 if a page is missing or out of date

Links (LSP `codeDescription.href`, SARIF `helpUri`) come from one URL base, the
`Documentation` entry of `[project.urls]` in pyproject.toml, read from the installed
package's metadata: rule CODE's page is `<Documentation>/rules/<CODE>.md`. A fork sets
its own base there and reinstalls. Without one (mplint run from a source tree that was
never installed), editors get a `file://` link to the page in the checkout, and SARIF,
read on other machines, no link.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

DOCS_DIR = Path(__file__).resolve().parents[2] / "docs" / "rules"


def page_name(code: str) -> str:
    return f"{code}.md"


@lru_cache(maxsize=1)
def project_urls() -> dict[str, str]:
    """`[project.urls]` of the installed mplint: lower-cased label -> URL."""
    try:
        from importlib.metadata import PackageNotFoundError, metadata

        entries = metadata("mplint").get_all("Project-URL") or []
    except (ImportError, PackageNotFoundError):
        return {}
    urls = {}
    for entry in entries:
        label, _, url = entry.partition(",")
        if not is_placeholder(url):
            urls[label.strip().lower()] = url.strip().rstrip("/")
    return urls


def is_placeholder(url: str) -> bool:
    """A URL that stands for "your repository here" and leads nowhere: never linked."""
    return any(part in url for part in ("/OWNER/", "example.com", "example.org", "<", "YOUR"))


def documentation_url() -> str | None:
    """The base URL of mplint's documentation (`docs/` of its repository), if declared."""
    url = project_urls().get("documentation", "")
    return url if url.startswith(("https://", "http://")) else None


def homepage_url() -> str | None:
    """mplint's home page (SARIF's `informationUri`): Homepage, Repository or the docs."""
    urls = project_urls()
    for label in ("homepage", "repository", "source"):
        if urls.get(label, "").startswith(("https://", "http://")):
            return urls[label]
    return documentation_url()


def rule_doc_url(code: str) -> str | None:
    """Where the documentation of rule `code` can be read, or None."""
    base = documentation_url()
    if base:
        return f"{base}/rules/{page_name(code)}"
    local = DOCS_DIR / page_name(code)
    if local.is_file():
        return local.as_uri()
    return None


def web_doc_url(code: str) -> str | None:
    """`rule_doc_url` if it is a web link (for reports read on other machines)."""
    url = rule_doc_url(code)
    return url if url is not None and url.startswith(("https://", "http://")) else None


# -- generating the pages ------------------------------------------------------------

_FIX_LINE = {
    "none": "No fix is available.",
    "sometimes": "A fix is sometimes available.",
    "always": "A fix is always available.",
}


def rule_text(code: str) -> str | None:
    """What `mplint rule CODE` prints (engine codes included), or None for an unknown code:
    the command line and the editor's hover show the same text."""
    from mplint.catalogue.registry import rule_class
    from mplint.core.codes import RULES

    if code in ENGINE_DOCS:
        return ENGINE_DOCS[code]
    if code not in RULES:
        return None
    cls = rule_class(code)
    return f"# {cls.name} ({code})\n\n{_header(cls)}\n\n{cls.doc()}"


def _header(rule) -> str:
    """Severity, fix availability, and the premises every finding of the rule rests on."""
    line = f"Severity: {rule.severity.value}. {_FIX_LINE[rule.fix_availability.value]}"
    if rule.premises:
        line += (f" Rests on: {', '.join(rule.premises)} (each finding lists its premises with `-v`). A fix the page "
                 "calls safe is applied as safe only where every premise it rests on is proved; elsewhere it is unsafe "
                 "(`--unsafe-fixes`).")
    if rule.precision != "high":
        line += (f" Precision: {rule.precision} ({rule.precision_evidence}): every finding is in the extended tier "
                 "(`--extended`) and its fix is unsafe.")
    return line


def render_page(code: str) -> str:
    from mplint.catalogue.registry import rule_class

    rule = rule_class(code)
    return (
        f"# {rule.name} ({code})\n\n"
        f"{_header(rule)}\n\n"
        f"{rule.doc()}\n\n"
        f"<!-- Generated from the docstring of {rule.__module__.replace('mplint_rules', 'rules')}."
        f"{rule.__name__} by `python -m mplint.catalogue.ruledocs`; do not edit. -->\n"
    )


def render_index() -> str:
    from mplint.core.codes import all_codes
    from mplint.catalogue.registry import rule_class

    lines = [
        "# mplint rules",
        "",
        "| Code | Name | Severity | Fix | What it finds |",
        "| --- | --- | --- | --- | --- |",
    ]
    for code in all_codes():
        rule = rule_class(code)
        summary = rule.summary().replace("|", "\\|")
        lines.append(
            f"| [{code}]({page_name(code)}) | {rule.name} | {rule.severity.value} | "
            f"{rule.fix_availability.value} | {summary} |"
        )
    lines += ["", "<!-- Generated by `python -m mplint.catalogue.ruledocs`; do not edit. -->", ""]
    return "\n".join(lines)


def expected_pages() -> dict[str, str]:
    """File name -> content of every page that docs/rules/ must hold."""
    from mplint.core.codes import all_codes

    pages = {page_name(code): render_page(code) for code in all_codes()}
    pages["README.md"] = render_index()
    return pages


def stale_pages(folder: Path = DOCS_DIR) -> list[str]:
    """Pages that are missing, out of date, or left over from a removed rule."""
    expected = expected_pages()
    stale = []
    for name, content in sorted(expected.items()):
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != content:
            stale.append(name)
    if folder.is_dir():
        stale += sorted(p.name for p in folder.glob("*.md") if p.name not in expected)
    return stale


def write_pages(folder: Path = DOCS_DIR) -> list[str]:
    """Regenerate the pages; returns the names written or removed."""
    expected = expected_pages()
    changed = stale_pages(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name in changed:
        path = folder / name
        if name in expected:
            path.write_text(expected[name], encoding="utf-8", newline="\n")
        else:
            path.unlink()
    return changed


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--check"]:
        stale = stale_pages()
        for name in stale:
            print(f"docs/rules/{name} is out of date", file=sys.stderr)
        if stale:
            print("run: python -m mplint.catalogue.ruledocs", file=sys.stderr)
        return 1 if stale else 0
    if args:
        print("usage: python -m mplint.catalogue.ruledocs [--check]", file=sys.stderr)
        return 2
    for name in write_pages():
        print(f"wrote docs/rules/{name}" if (DOCS_DIR / name).exists() else f"removed docs/rules/{name}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())


# The engine's own codes: not rules (they cannot be selected, ignored or suppressed), but
# documented like them, for `mplint rule MP000` and the report formats.
ENGINE_DOCS = {
    "MP000": """# MP000 unreadable-or-invalid-source (engine code, error)

## What it means
A file mplint had to read could not be decoded or parsed: a syntax error (at its
position), a file that is not UTF-8 and has no PEP 263 coding cookie, a binary file, or a
notebook whose JSON is broken. The other files are still checked; this one is not.

## What to do
Fix the file, or exclude it (`exclude` in `[tool.mplint]`). A file that mentions neither
mixed precision nor Keras/TensorFlow is never decoded, so its errors are not reported.

MP000 is always reported: it cannot be selected, ignored or suppressed.""",
    "MP900": """# MP900 internal-error (engine code, error)

## What it means
mplint itself failed: a rule raised an exception on this file (the message names the
rule and where), or a fix was discarded because applying it would have made the code
invalid (the finding is still reported, without its fix). The run exits 2.

## What to do
Report it with the file (or a reduced copy) and the message. The file's other findings
are still reported; a discarded fix was never written.

MP900 is always reported: it cannot be selected, ignored or suppressed.""",
}
