"""The engine: parse once, build the module facts, run the enabled rules, and fix.

    lint(document, file_settings)            -> findings for the current text
    check_document(document, file_settings,  -> findings after the fix loop, the fixed
                   fix=True, unsafe=False)      text and how many fixes were applied

Every lint vets its fixes (mplint.engine.fix_vetting): a finding keeps its fix only if the
fix compiles, binds every name it inserts and, in a fix group, comes with all of its
group; so what a report offers is what `--fix` applies.

The fix loop applies every non-overlapping applicable fix (a group's members together),
re-parses and re-lints, until nothing changes (at most MAX_ROUNDS rounds). A round
whose result does not parse or compile is undone fix by fix: the fixes that break the
code are thrown away and reported as MP900 naming their rule; the others are kept.
"""

from __future__ import annotations

import collections

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from mplint.analysis.positions import PositionFinder, Span, render
from mplint.core.diagnostics import (
    DEFAULT_TIER,
    INTERNAL_ERROR,
    PARSE_ERROR,
    Edit,
    Finding,
    Fix,
    Location,
    tier_of,
    Severity,
)
from mplint.inputs.config import FileSettings  # noqa: F401  (re-exported: engine API)
from mplint.core.gc_pause import paused_gc
from mplint.facts.module import ModuleFacts
from mplint.engine.fix_vetting import FixVetting, apply_edits, compiles, without_fix
from mplint.catalogue.registry import rules_for
from mplint.catalogue.rule import (
    Change,
    InsertAfter,
    InsertBefore,
    RemoveStatement,
    Replace,
    ReplaceText,
    Report,
)
from mplint.analysis import parsed_once
from mplint.inputs import python_tree
from mplint.inputs.source import Document

if TYPE_CHECKING:
    from mplint.facts.project_context import ProjectContext
from mplint.inputs.suppressions import parse_suppressions

MAX_ROUNDS = 10


@dataclass
class Outcome:
    findings: list[Finding]
    text: str  # the final text (== the input when nothing was fixed)
    fixed: int = 0  # number of fixes applied
    fixed_codes: dict[str, int] = field(default_factory=dict)
    target: str | None = None
    policy: str | None = None
    backend: str | None = None
    initial: list[Finding] = field(default_factory=list)  # findings before any fix


class _InvalidFix(Exception):
    pass


# -- one lint pass ----------------------------------------------------------------------

def _syntax_error(doc: Document, filename: str, parser_error: Exception) -> Finding:
    """MP000 for text that does not parse, at the error's position."""
    message, row, column = None, 1, 1
    try:
        compile(doc.text, filename, "exec", ast.PyCF_ONLY_AST | doc.compile_flags(), dont_inherit=True)
    except SyntaxError as exc:
        message = f"SyntaxError: {exc.msg}"
        row, column = exc.lineno or 1, exc.offset or 1
    except (ValueError, RecursionError, MemoryError) as exc:
        message = f"cannot parse: {exc}"
    if message is None:
        first = str(getattr(parser_error, "message", parser_error)).splitlines()[0]
        message = f"mplint's parser (libcst) cannot parse this file: {first}"
    offset = doc.lines.offset(row, column)
    cell, location = doc.locate(offset)
    return _engine_finding(PARSE_ERROR, message, filename, location, cell, doc.row_of(offset))


def _engine_finding(kind: tuple[str, str], message: str, filename: str, location: Location,
                    cell: int | None = None, row: int = 1) -> Finding:
    code, name = kind
    severity = Severity.ERROR
    return Finding(code, name, message, severity, filename, location, location, None, cell, (row, row))


def parse(text: str) -> cst.Module:
    from mplint.inputs.parsing import parse as parse_faster

    return parse_faster(text)


def lint(doc: Document, settings: FileSettings, filename: str, module: cst.Module | None = None,
         outcome: Outcome | None = None, project: "ProjectContext | None" = None) -> list[Finding]:
    """Findings for the document's current text (suppressions applied); `project` is
    what the rest of its project says about the module (mplint.project.index)."""
    python_tree.forget()  # the pre-filter and the project scan are done with the file's `ast` tree
    walk = None
    if module is None:
        shared = parsed_once.take(doc.path, doc.text)  # the project index's parse of this very text
        if shared is not None:
            module, walk = shared
        else:
            try:
                module = parse(doc.text)
            except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError) as exc:
                return [_syntax_error(doc, filename, exc)]
    reports: list[Report] = []
    findings: list[Finding] = [
        _engine_finding(PARSE_ERROR, message, filename, location, cell, location.row)
        for cell, location, message in doc.source_diagnostics()
    ]
    try:
        facts = ModuleFacts(
            module,
            doc.text,
            doc.path,
            configured_target=settings.target,
            assumed_policy=settings.assumed_policy,
            tensor_core_multiple=settings.tensor_core_multiple,
            project=project,
            notebook=getattr(doc, "notebook", None),
            walk=walk,
        )
        mixed = facts.policy.mixed_in_force
    except Exception as exc:  # an engine bug must surface, not crash the run
        return [_internal_error(doc, filename, "module analysis", exc)]
    for rule_class in rules_for(settings.codes):
        if rule_class.requires_mixed_policy and not mixed:
            continue
        before = len(reports)
        try:
            rule_class(facts, reports).check()
        except Exception as exc:
            del reports[before:]
            findings.append(_internal_error(doc, filename, f"rule {rule_class.code} ({rule_class.name})", exc))
    if outcome is not None and settings.details:
        try:
            outcome.policy = facts.policy.describe()
            outcome.target = f"{facts.target.keras} ({facts.target.reason})"
            outcome.backend = facts.backend.describe()
        except Exception as exc:
            findings.append(_internal_error(doc, filename, "module analysis", exc))
    if not settings.extended:  # the default tier: findings on proved or inferred premises
        reports = [r for r in reports if tier_of(r.premises) == DEFAULT_TIER]
    if reports:
        findings.extend(_vetted_findings(doc, module, filename, reports, facts))
    findings.sort(key=Finding.sort_key)
    return findings


def _vetted_findings(doc: Document, module: cst.Module, filename: str, reports: list[Report],
                     facts: ModuleFacts) -> list[Finding]:
    """The reports as findings, suppressions applied, each fix kept only if it applies
    cleanly (see mplint.engine.fix_vetting); a fix that would break the code is an MP900."""
    pairs = _to_findings(doc, module, filename, reports, facts.positions)
    kept = set(map(id, _apply_suppressions(doc.text, [f for _, f in pairs])))
    errors = [f for report, f in pairs if report is None and id(f) in kept]
    pairs = [(report, f) for report, f in pairs if report is not None and id(f) in kept]
    vetting = FixVetting(doc, facts)
    try:
        findings = vetting.vet(pairs)  # type: ignore[arg-type]
    except Exception as exc:  # an engine bug must surface; the findings stay, without fixes
        return errors + [without_fix(f) for _, f in pairs] + [_internal_error(doc, filename, "fix vetting", exc)]
    for broken in vetting.broken:
        errors.append(_engine_finding(
            INTERNAL_ERROR,
            f"the fix of {broken.code} ({broken.name}) would make the code invalid; reported without a fix",
            filename, broken.location, broken.cell, broken.span_rows[0],
        ))
    return errors + findings


def _internal_error(doc: Document, filename: str, what: str, exc: BaseException) -> Finding:
    import traceback

    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" at {frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}" if frame else ""
    message = f"internal error in {what} on {filename}: {type(exc).__name__}: {exc}{where}"
    return _engine_finding(INTERNAL_ERROR, message.replace("\n", " "), filename, Location(1, 1))


def _apply_suppressions(text: str, findings: list[Finding]) -> list[Finding]:
    suppressions = parse_suppressions(text)
    if not suppressions.lines and not suppressions.file:
        return findings
    return [
        f
        for f in findings
        if f.code in (PARSE_ERROR[0], INTERNAL_ERROR[0])
        or not suppressions.suppresses(f.code, f.span_rows[0], f.span_rows[1])
    ]


# -- reports -> findings with positions and edits ----------------------------------------

def _change_nodes(change: Change) -> list[cst.CSTNode]:
    if isinstance(change, (Replace, ReplaceText)):
        return [change.node]
    return [change.statement]


def _to_findings(doc: Document, module: cst.Module, filename: str, reports: list[Report],
                 positions: PositionFinder) -> list[tuple[Report | None, Finding]]:
    """Each report as a finding (paired with it; engine errors pair with None)."""
    wanted: list[cst.CSTNode] = []
    for report in reports:
        wanted.append(report.node)
        if report.fix is not None:
            for change in report.fix.changes:
                wanted.extend(_change_nodes(change))
    spans = positions.spans(wanted)
    findings: list[tuple[Report | None, Finding]] = []
    for report in reports:
        span = spans.get(id(report.node))
        if span is None:
            findings.append((None, _internal_error(doc, filename, f"rule {report.code}", LookupError("reported a node that is not in the module"))))
            continue
        cell, start = doc.locate(span.start)
        _, end = doc.locate(span.end)
        fix = None
        if report.fix is not None:
            try:
                fix = _build_fix(doc, module, spans, report)
            except _InvalidFix as exc:
                findings.append((None, _internal_error(doc, filename, f"rule {report.code}", exc)))
                fix = None
        rows = (doc.row_of(span.start), doc.row_of(max(span.start, span.end - 1)))
        findings.append((report, Finding(
            report.code, report.name, report.message, report.severity, filename, start, end, fix, cell, rows,
            report.premises, report.detail,
        )))
    return findings


def _line_indent(text: str, offset: int) -> str | None:
    """The whitespace between the start of the line and `offset`, or None if the line
    has code before `offset` (e.g. `if x: stmt`)."""
    line_start = max(text.rfind("\n", 0, offset), text.rfind("\r", 0, offset)) + 1
    prefix = text[line_start:offset]
    return prefix if prefix.strip() == "" else None


def _indented(code: str, indent: str, newline: str) -> list[str]:
    lines = code.strip("\n").split("\n")
    return [(indent + line if line.strip() else "") for line in lines]


def _edits_for(doc: Document, module: cst.Module, spans: dict[int, Span], change: Change) -> list[tuple[int, int, str]]:
    text = doc.text
    newline = module.default_newline
    nodes = _change_nodes(change)
    span = spans.get(id(nodes[0]))
    if span is None:
        raise _InvalidFix(f"fix refers to a node that is not in the module ({type(nodes[0]).__name__})")
    if isinstance(change, Replace):
        return [(span.full_start, span.full_end, render(module, change.new, span.indent))]
    if isinstance(change, ReplaceText):
        return [(span.start, span.end, change.text)]
    indent = _line_indent(text, span.start)
    if indent is None:
        raise _InvalidFix("cannot insert a statement next to one that shares its line")
    if isinstance(change, InsertBefore):
        lines = _indented(change.code, indent, newline)
        content = newline.join(lines)[len(indent):] + newline + indent
        return [(span.start, span.start, content)]
    if isinstance(change, InsertAfter):
        end = span.full_end
        lines = _indented(change.code, indent, newline)
        content = newline.join(lines) + newline
        if end == 0 or text[end - 1] not in "\r\n":
            content = newline + content
        return [(end, end, content)]
    if isinstance(change, RemoveStatement):
        line_start = span.start - len(indent)
        return [(line_start, span.full_end, "")]
    raise _InvalidFix(f"unknown change {change!r}")


def _build_fix(doc: Document, module: cst.Module, spans: dict[int, Span], report: Report) -> Fix | None:
    assert report.fix is not None
    raw: list[tuple[int, int, str]] = []
    for change in report.fix.changes:
        raw.extend(_edits_for(doc, module, spans, change))
    raw.sort()
    for (s1, e1, _), (s2, e2, _) in zip(raw, raw[1:]):
        if s2 < e1 or (s1 == s2):
            raise _InvalidFix(f"fix has overlapping edits at offsets {s1}-{e1} and {s2}-{e2}")
    for start, end, _ in raw:
        for p_start, p_end in doc.protected:
            if start < p_end and p_start < end or (start == end and p_start < start < p_end):
                return None  # would touch a notebook magic: report without a fix
    edits = []
    for start, end, content in raw:
        if doc.text[start:end] == content:
            continue
        _, location = doc.locate(start)
        _, end_location = doc.locate(end)
        edits.append(Edit(content, start, end, location, end_location))
    if not edits:
        return None
    return Fix(report.fix.applicability, report.fix.message, tuple(edits))


# -- the fix loop -------------------------------------------------------------------------

def _conflict(a: Edit, b: Edit) -> bool:
    if a.start == b.start:
        return True
    if max(a.start, b.start) < min(a.end, b.end):
        return True
    return (a.start == a.end and b.start < a.start < b.end) or (b.start == b.end and a.start < b.start < a.end)


def select_fixes(findings: list[Finding]) -> list[Finding]:
    """Non-overlapping fixes, first in the file first; the rest wait for the next round.
    The members of a fix group share their edits: they are chosen together or not at
    all."""
    chosen: list[Finding] = []
    taken: list[Edit] = []
    groups: set[str] = set()
    for finding in sorted(findings, key=lambda f: (f.fix.edits[0].start, f.code)):  # type: ignore[union-attr]
        fix = finding.fix
        assert fix is not None
        if fix.group is not None and fix.group in groups:
            chosen.append(finding)
            continue
        if any(_conflict(e, t) for e in fix.edits for t in taken):
            continue
        chosen.append(finding)
        taken.extend(fix.edits)
        if fix.group is not None:
            groups.add(fix.group)
    return chosen


def _apply(text: str, findings: list[Finding]) -> str:
    return apply_edits(text, [e for f in findings for e in f.fix.edits])  # type: ignore[union-attr]


def _fix_signature(text: str, finding: Finding) -> tuple:
    return (finding.code, tuple((text[e.start : e.end], e.content) for e in finding.fix.edits))  # type: ignore[union-attr]


def _valid(doc: Document, text: str, must_compile: bool) -> cst.Module | None:
    """The parsed module if `text` parses (and compiles, when the original did)."""
    try:
        module = parse(text)
    except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError):
        return None
    if must_compile and not compiles(doc, text):
        return None
    return module


def check_document(doc: Document, settings: FileSettings, filename: str, *, fix: bool = False,
                   unsafe: bool = False, project: "ProjectContext | None" = None) -> Outcome:
    """Lint a document and, with `fix`, run the convergent fix loop on it."""
    with paused_gc():  # see mplint.core.gc_pause
        return _check_document(doc, settings, filename, fix=fix, unsafe=unsafe, project=project)


def _check_document(doc: Document, settings: FileSettings, filename: str, *, fix: bool,
                    unsafe: bool, project: "ProjectContext | None") -> Outcome:
    outcome = Outcome([], doc.text)
    findings = lint(doc, settings, filename, outcome=outcome, project=project)
    outcome.initial = findings
    if not fix or not any(f.fix and f.fix.applies(unsafe) for f in findings):
        outcome.findings = findings
        return outcome
    must_compile = compiles(doc, doc.text)
    # A finding counts as fixed once, whatever follow-up edits its fix needs in later
    # rounds (a fix whose result another rule then rewrites): the count matches the
    # "N fixable" of a check without --fix.
    uncounted = collections.Counter(f.code for f in findings if f.fix is not None and f.fix.applies(unsafe))
    current = doc
    rejected: set[tuple] = set()
    errors: list[Finding] = []
    converged = False
    for _ in range(MAX_ROUNDS):
        candidates = [
            f for f in findings
            if f.fix is not None and f.fix.applies(unsafe) and _fix_signature(current.text, f) not in rejected
        ]
        if not candidates:
            converged = True
            break
        chosen = select_fixes(candidates)
        new_text = _apply(current.text, chosen)
        module = _valid(doc, new_text, must_compile)
        if module is None:
            # Fixes that are valid alone can clash together (two removals emptying one
            # block): keep each that still leaves valid code, the others wait for the
            # next round, which lints the result again.
            kept = []
            for finding in chosen:
                if finding.fix.group is not None and any(k.fix.group == finding.fix.group for k in kept):  # type: ignore[union-attr]
                    kept.append(finding)  # its group's edits are in already
                elif _valid(doc, _apply(current.text, [finding]), must_compile) is None:
                    rejected.add(_fix_signature(current.text, finding))
                    errors.append(_engine_finding(
                        INTERNAL_ERROR,
                        f"the fix of {finding.code} ({finding.name}) would make the code invalid; kept the original text",
                        filename, finding.location, finding.cell, finding.span_rows[0],
                    ))
                elif not kept or _valid(doc, _apply(current.text, [*kept, finding]), must_compile) is not None:
                    kept.append(finding)
            new_text = _apply(current.text, kept)
            module = _valid(doc, new_text, must_compile) if kept else None
            if module is None:
                for finding in kept:
                    rejected.add(_fix_signature(current.text, finding))
                findings = [f for f in findings if f not in chosen] + [
                    without_fix(f) for f in chosen
                ]
                continue
            chosen = kept
        if new_text == current.text:
            converged = True
            break
        for finding in chosen:
            if uncounted[finding.code] > 0:
                uncounted[finding.code] -= 1
                outcome.fixed_codes[finding.code] = outcome.fixed_codes.get(finding.code, 0) + 1
                outcome.fixed += 1
        current = current.with_text(new_text)
        findings = lint(current, settings, filename, module=module, project=project)
    if not converged:
        # A rule that keeps fixing its own output is a bug: keep the original text.
        pending = sorted({f.code for f in findings if f.fix is not None and f.fix.applies(unsafe)})
        errors.append(_engine_finding(
            INTERNAL_ERROR,
            f"fixes did not converge after {MAX_ROUNDS} rounds (still fixing: {', '.join(pending)}); "
            "kept the original text",
            filename, Location(1, 1),
        ))
        outcome.findings = sorted(outcome.initial + errors, key=Finding.sort_key)
        outcome.fixed = 0
        outcome.fixed_codes = {}
        return outcome
    outcome.findings = sorted(findings + errors, key=Finding.sort_key)
    outcome.text = current.text
    return outcome

