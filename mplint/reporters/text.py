"""ruff-style text: `path:row:col: CODE [*] message` (notebooks: `path:cell N:row:col`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mplint.diagnostics import Finding

if TYPE_CHECKING:
    from mplint.reporters import ReportContext
    from mplint.runner import RunResult


def location_prefix(finding: Finding) -> str:
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    return f"{finding.filename}:{cell}{finding.location.row}:{finding.location.column}"


def format_finding(finding: Finding, unsafe: bool) -> str:
    marker = " [*]" if finding.fix is not None and finding.fix.applies(unsafe) else ""
    return f"{location_prefix(finding)}: {finding.code}{marker} {finding.message}"


def _plural(count: int, word: str) -> str:
    if count == 1:
        return f"{count} {word}"
    return f"{count} {word}es" if word.endswith(("x", "s")) else f"{count} {word}s"


def render(result: "RunResult", context: "ReportContext") -> str:
    lines = [format_finding(f, context.unsafe) for f in result.findings]
    if context.quiet:
        return "\n".join(lines) + ("\n" if lines else "")
    remaining = len(result.findings)
    if remaining == 0 and result.fixed == 0:
        lines.append("All checks passed!")
        return "\n".join(lines) + "\n"
    if lines:
        lines.append("")
    verb = "Would fix" if context.diff else "fixed"
    if result.fixed and context.diff:
        lines.append(f"Would fix {_plural(result.fixed, 'finding')}; {remaining} would remain.")
    elif result.fixed:
        lines.append(f"Found {_plural(result.fixed + remaining, 'finding')} ({result.fixed} {verb}, {remaining} remaining).")
    else:
        lines.append(f"Found {_plural(remaining, 'finding')}.")
    safe = sum(1 for f in result.findings if f.fix is not None and f.fix.applies(context.unsafe))
    hidden = sum(1 for f in result.findings if f.fix is not None and not f.fix.applies(context.unsafe))
    if safe or hidden:
        parts = []
        if safe:
            parts.append(f"[*] {safe} fixable with the `--fix` option")
        if hidden:
            parts.append(f"{_plural(hidden, 'hidden fix')} can be enabled with the `--unsafe-fixes` option")
        lines.append(parts[0] + (f" ({parts[1]})." if len(parts) > 1 else "."))
    return "\n".join(lines) + "\n"
