"""`--output-format concise` (also `text`, the default): one line per finding, as ruff's
concise format, then the summary.

    path:row:col: CODE [*] severity: message          (notebooks: path:cell N:row:col)

`[*]` marks a fix that `--fix` would apply (with `--unsafe-fixes`, unsafe ones too).
The severity (`error`, `warning`, `info`) is the one `--fail-on` and `--min-severity`
compare, and that SARIF, GitHub and the language server map to their levels.
The summary lines here are shared by the other human-readable formats (grouped,
statistics) and by `--diff`/`--fix-only`, which print only a summary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mplint.core.diagnostics import Finding
from mplint.frontends.reporters.style import PLAIN, Style

if TYPE_CHECKING:
    from mplint.frontends.reporters import ReportContext
    from mplint.engine.runner import RunResult


def location_prefix(finding: Finding, style: Style = PLAIN) -> str:
    sep = style.punctuation(":")
    cell = f"cell {finding.cell}{sep}" if finding.cell is not None else ""
    return f"{style.bold(finding.filename)}{sep}{cell}{finding.location.row}{sep}{finding.location.column}"


def fix_marker(finding: Finding, unsafe: bool, style: Style = PLAIN) -> str:
    """`[*] ` when `--fix` would apply the finding's fix, else empty."""
    if finding.fix is not None and finding.fix.applies(unsafe):
        return f"[{style.punctuation('*')}] "
    return ""


def labelled_message(finding: Finding, unsafe: bool, style: Style = PLAIN) -> str:
    """`[*] severity: message`, the part after the code in the concise and grouped formats."""
    return (f"{fix_marker(finding, unsafe, style)}{style.severity(finding.severity.value)}"
            f"{style.punctuation(':')} {finding.message}")


def format_finding(finding: Finding, unsafe: bool, style: Style = PLAIN) -> str:
    sep = style.punctuation(":")
    return f"{location_prefix(finding, style)}{sep} {style.code(finding.code)} {labelled_message(finding, unsafe, style)}"


def plural(count: int, word: str) -> str:
    if count == 1:
        return f"{count} {word}"
    return f"{count} {word}es" if word.endswith(("x", "s")) else f"{count} {word}s"


def _fixable_counts(result: "RunResult", unsafe: bool) -> tuple[int, int]:
    """(findings whose fix --fix would apply, findings whose fix needs --unsafe-fixes)."""
    applicable = sum(1 for f in result.findings if f.fix is not None and f.fix.applies(unsafe))
    hidden = sum(1 for f in result.findings if f.fix is not None and not f.fix.applies(unsafe))
    return applicable, hidden


def summary_lines(result: "RunResult", context: "ReportContext") -> list[str]:
    """The closing lines of a check: what was found, fixed and can be fixed."""
    remaining = len(result.findings)
    if remaining == 0 and result.fixed == 0:
        # Nothing to report is only a pass if something was checked and nothing failed.
        return [] if result.problems or result.files == 0 else ["All checks passed!"]
    if result.fixed:
        lines = [f"Found {plural(result.fixed + remaining, 'finding')} ({result.fixed} fixed, {remaining} remaining)."]
    else:
        lines = [f"Found {plural(remaining, 'finding')}."]
    applicable, hidden = _fixable_counts(result, context.unsafe)
    marker = f"[{context.style.punctuation('*')}]"
    if applicable and hidden:
        lines.append(f"{marker} {applicable} fixable with the `--fix` option "
                     f"({plural(hidden, 'hidden fix')} can be enabled with the `--unsafe-fixes` option).")
    elif applicable:
        lines.append(f"{marker} {applicable} fixable with the `--fix` option.")
    elif hidden:
        lines.append(f"No fixes available ({plural(hidden, 'hidden fix')} can be enabled with the "
                     f"`--unsafe-fixes` option).")
    return lines


def fix_only_summary(result: "RunResult", context: "ReportContext") -> list[str]:
    """`--fix-only` and `--diff`: what was (or would be) fixed, nothing about the rest."""
    _, unapplied = _fixable_counts(result, context.unsafe)
    verb, nothing = ("Would fix", "No findings would be fixed") if context.diff else ("Fixed", "No findings fixed")
    if result.fixed:
        more = f" ({plural(unapplied, 'additional fix')} available with `--unsafe-fixes`)" if unapplied else ""
        return [f"{verb} {plural(result.fixed, 'finding')}{more}."]
    return [f"{nothing} ({plural(unapplied, 'fix')} available with `--unsafe-fixes`)."] if unapplied else []


def fixes_applied(result: "RunResult", style: Style = PLAIN) -> list[str]:
    """`--show-fixes`: the fixes applied, per file and rule (empty when none was)."""
    if not result.fixed_codes:
        return []
    from mplint.core.codes import ENGINE_CODES, RULES

    lines = ["", f"Fixed {plural(result.fixed, 'finding')}:"]
    for filename in sorted(result.fixed_codes):
        lines.append(f"- {style.bold(filename)}:")
        for code, count in sorted(result.fixed_codes[filename].items()):
            name = RULES[code][0] if code in RULES else ENGINE_CODES.get(code, "")
            lines.append(f"    {count} \u00d7 {style.code(code)} ({name})")
    lines.append("")
    return lines


def with_summary(lines: list[str], result: "RunResult", context: "ReportContext") -> str:
    """Finding lines, the `--show-fixes` list and the summary, as printed text."""
    if not context.quiet:
        if context.show_fixes:
            lines = lines + fixes_applied(result, context.style)
        summary = summary_lines(result, context)
        if summary and lines and lines[-1] != "":
            lines = lines + [""]
        lines = lines + summary
    return "\n".join(lines) + ("\n" if lines else "")


def render(result: "RunResult", context: "ReportContext") -> str:
    lines = [format_finding(f, context.unsafe, context.style) for f in result.findings]
    return with_summary(lines, result, context)
