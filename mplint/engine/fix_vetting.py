"""Which fixes are offered: only those that apply cleanly, decided when linting.

A finding shows a fix (`[*]`, the JSON `fix` object, SARIF fixes, LSP code actions,
"N fixable") only when `--fix` would apply it, so this runs on every lint, not only
when fixing:

- every name the fix inserts is bound where it goes (`mplint.analysis.bound_names`:
  the optimizer, `tf`/`keras`, an import; in notebooks, in the edit's cell or an
  earlier one);
- a fix group is complete: every member still has its fix (none suppressed, none
  withheld), and each member then carries the edits of the whole group, so applying
  any one of them applies all;
- the text after the fix (or its whole group) still compiles;
- the file can be written back (a notebook whose JSON layout mplint cannot reproduce
  keeps its findings without fixes).

A fix failing the first two is dropped and the finding's message says why; one that
would not compile is a rule's bug: dropped too, and reported (MP900) by the engine.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import functools
import textwrap
from typing import TYPE_CHECKING

import libcst as cst

from mplint.analysis.bound_names import AFTER, FROM, BoundNames, Site, names_a_variable
from mplint.core.diagnostics import Applicability, Edit, Finding, Fix
from mplint.catalogue.rule import Change, FixGroup, InsertAfter, InsertBefore, Replace, ReplaceText, Report
from mplint.inputs.source import Document

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts


def compiles(doc: Document, text: str) -> bool:
    try:
        compile(text, doc.path, "exec", doc.compile_flags(), dont_inherit=True)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def apply_edits(text: str, edits: list[Edit]) -> str:
    """The text with the edits applied (an edit listed twice, as group members share
    theirs, is applied once)."""
    unique = {(e.start, e.end, e.content): e for e in edits}
    for start, end, content in sorted(unique, reverse=True):
        text = text[:start] + content + text[end:]
    return text


def without_fix(finding: Finding, why: str | None = None) -> Finding:
    detail = "; ".join(part for part in (finding.detail, f"no automatic fix: {why}" if why else "") if part)
    return dataclasses.replace(finding, fix=None, detail=detail)


class FixVetting:
    """Vets the fixes of one lint pass; `broken` collects the findings whose fix would
    not compile (the engine reports them as MP900)."""

    def __init__(self, doc: Document, facts: "ModuleFacts") -> None:
        self.doc = doc
        self.facts = facts
        self.broken: list[Finding] = []
        self._original_compiles: bool | None = None
        self._bounds: tuple[list[int], list[int]] | None = None

    def vet(self, pairs: list[tuple[Report, Finding]]) -> list[Finding]:
        """The findings, with the fixes that do not apply cleanly dropped."""
        findings = {i: finding for i, (_, finding) in enumerate(pairs)}
        if not getattr(self.doc, "layout", {}).get("faithful", True):
            why = "mplint cannot write this notebook back unchanged (its JSON layout is not Jupyter's standard one)"
            self._drop(findings, [i for i, f in findings.items() if f.fix is not None], why)
            return [findings[i] for i in range(len(pairs))]
        units: dict[int, list[int]] = {}  # the findings fixed together: a group, or one finding
        for i, (report, finding) in enumerate(pairs):
            if report.fix is not None and finding.fix is not None:
                key = id(report.fix.group) if report.fix.group is not None else -1 - i
                units.setdefault(key, []).append(i)
        for members in units.values():
            group = pairs[members[0]][0].fix.group  # type: ignore[union-attr]
            if group is not None and len(members) != group.size:
                self._drop(findings, members, f"{group.what} is one fix over {group.size} findings, "
                                              "and not all of them can be fixed")
                continue
            missing = self.unbound_names([c for m in members for c in pairs[m][0].fix.changes])  # type: ignore[union-attr]
            if missing:
                self._drop(findings, members, _unbound_message(missing, self.notebook))
            elif group is not None:
                self._merge_group(group, members, findings)
        checked: dict[tuple, bool] = {}
        for i, finding in findings.items():
            if finding.fix is None:
                continue
            key = tuple((e.start, e.end, e.content) for e in finding.fix.edits)
            if key not in checked:
                checked[key] = self._still_compiles(finding.fix)
            if not checked[key]:
                self.broken.append(finding)
                findings[i] = without_fix(finding, "it would make the code invalid")
        return [findings[i] for i in range(len(pairs))]

    @staticmethod
    def _drop(findings: dict[int, Finding], members: list[int], why: str) -> None:
        for i in members:
            findings[i] = without_fix(findings[i], why)

    # -- groups ----------------------------------------------------------------------
    def _merge_group(self, group: FixGroup, members: list[int], findings: dict[int, Finding]) -> None:
        """Give every member the edits of the whole group."""
        fixes = [findings[i].fix for i in members]
        edits = sorted({(e.start, e.end, e.content): e for f in fixes for e in f.edits}.values(),  # type: ignore[union-attr]
                       key=lambda e: (e.start, e.end))
        for a, b in zip(edits, edits[1:]):
            if b.start < a.end or (a.start == b.start and a.start == a.end and b.start == b.end):
                self._drop(findings, members, f"the edits of {group.what} overlap")
                return
        unsafe = any(f.applicability is Applicability.UNSAFE for f in fixes)  # type: ignore[union-attr]
        applicability = Applicability.UNSAFE if unsafe else Applicability.SAFE
        key = f"group{members[0]}"  # unique in the file: the index of its first member
        for i, fix in zip(members, fixes):
            assert fix is not None
            message = fix.message if len(members) == 1 else f"{fix.message} (with {group.what}: {len(members)} findings)"
            findings[i] = dataclasses.replace(findings[i], fix=Fix(applicability, message, tuple(edits), key))

    # -- compiling ---------------------------------------------------------------------
    def _still_compiles(self, fix: Fix) -> bool:
        if self._original_compiles is None:
            self._original_compiles = compiles(self.doc, self.doc.text)
        if self._original_compiles and not any("__future__" in e.content for e in fix.edits):
            # Only the top-level statements a fix edits can stop compiling: compile those
            # (cost per fix: its statements, not the file; a 50,000-line file has
            # thousands of fixes).
            text = self.doc.text
            return all(compiles(self.doc, apply_edits(text[start:end], [dataclasses.replace(
                e, start=e.start - start, end=e.end - start) for e in edits]))
                for start, end, edits in self._regions(list(fix.edits)))
        text = apply_edits(self.doc.text, list(fix.edits))
        if self._original_compiles:  # a `from __future__` import must open the whole file
            return compiles(self.doc, text)
        try:  # the original does not compile (Python 2, `return` outside a function...): parse only
            ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            try:
                ast.parse(self.doc.text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return True  # nothing to compare with; the fix loop's own parse decides
            return False
        return True

    def _regions(self, edits: list[Edit]) -> list[tuple[int, int, list[Edit]]]:
        """The edits grouped by the runs of whole top-level statements they touch:
        (start, end, edits) with text[start:end] whole lines of complete statements.
        A top-level statement compiles alone exactly when it compiles in the file, but
        for `from __future__` imports, which must open the file: a region that reaches
        the file's first statement starts at 0, and a fix that writes one is compiled
        with the whole file."""
        starts, ends = self._statement_bounds()
        regions: list[list] = []
        for edit in sorted(edits, key=lambda e: (e.start, e.end)):
            at = bisect.bisect_right(starts, edit.start) - 1
            if edit.start == edit.end and at > 0 and starts[at] == edit.start:
                # an insertion where a statement starts may end the one before (the last
                # line of a `with` body, indented, with no blank line after it): both
                at -= 1
            start = starts[at] if at > 0 else 0  # from the file's start: `from __future__`
            # the statement after an insertion at a boundary too (the text must join it)
            after = bisect.bisect_right(ends, edit.end)
            end = ends[after] if after < len(ends) else len(self.doc.text)
            if regions and start < regions[-1][1]:
                regions[-1][1] = max(regions[-1][1], end)
                regions[-1][2].append(edit)
            else:
                regions.append([start, end, [edit]])
        return [(start, end, found) for start, end, found in regions]

    def _statement_bounds(self) -> tuple[list[int], list[int]]:
        """Start and end offsets of each top-level statement's lines (decorators
        included), both ascending; from the pre-filter's Python parse of the same text."""
        if self._bounds is None:
            from mplint.inputs.code_scan import top_level_statements

            text = self.doc.text
            line_starts = [0]
            for line in text.splitlines(keepends=True):
                line_starts.append(line_starts[-1] + len(line))
            last_line = len(line_starts) - 1
            statements = top_level_statements(text, self.doc.compile_flags()) or []
            self._bounds = ([line_starts[first - 1] for first, *_ in statements],
                            [line_starts[min(last, last_line)] for _, last, *_ in statements])
        return self._bounds

    # -- names ---------------------------------------------------------------------------
    @property
    def notebook(self) -> bool:
        return self.facts.path.endswith(".ipynb")

    @property
    def bound(self) -> BoundNames:
        return self.facts.bound_names

    def unbound_names(self, changes: list[Change]) -> list[str]:
        """Names the changes would use where they are not bound."""
        index = self.facts.index
        code_for = self.facts.module.code_for_node
        added: list[tuple[cst.CSTNode, str, Site]] = []
        uses: list[tuple[str, cst.CSTNode, bool]] = []
        for change in changes:
            if isinstance(change, (Replace, ReplaceText)):
                node = change.node
                if isinstance(node, cst.Name) and not names_a_variable(index, node):
                    continue  # an attribute's or keyword's name
                new_text = change.text if isinstance(change, ReplaceText) else code_for(change.new)
                target = self.bound.targets.get(id(node))
                if target is not None:  # a binding renamed: the new name is bound there instead
                    if new_text.isidentifier():
                        added.append((target[0], new_text, target[1]))
                    continue
                old = _names(code_for(node))
                new = _names(new_text)
                if old is None or new is None:
                    continue
                if any(self.bound.from_outside(name, node) for name in old[0] - old[1]):
                    continue  # the code here already relies on names from outside the module
                scope = index.scope_of(node)
                added += [(scope, name, Site(node, AFTER)) for name in new[1]]
                uses += [(name, node, False) for name in sorted(new[0] - old[0] - new[1])]
            elif isinstance(change, (InsertBefore, InsertAfter)):
                names = _names(change.code)
                if names is None:
                    continue
                after = isinstance(change, InsertAfter)
                scope = index.scope_of(change.statement)
                added += [(scope, name, Site(change.statement, AFTER if after else FROM)) for name in names[1]]
                uses += [(name, change.statement, after) for name in sorted(names[0] - names[1])]
        missing = []
        for name, at, after in uses:
            if name not in missing and not self.bound.is_bound(name, at, after=after, extra=added):
                missing.append(name)
        return missing


def _unbound_message(names: list[str], notebook: bool) -> str:
    spelled = ", ".join(f"`{n}`" for n in names)
    where = "in this cell or an earlier one" if notebook else "where the fix would use it"
    return f"it would use {spelled}, which is not bound {where}"


@functools.lru_cache(maxsize=4096)  # a large file's fixes repeat the same few texts
def _names(text: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """(names a piece of code reads, names it binds), or None if it is not code alone."""
    for candidate in (text.strip(), textwrap.dedent(text).strip("\r\n")):
        for mode in ("eval", "exec"):
            try:
                tree = ast.parse(candidate, mode=mode)
            except (SyntaxError, ValueError):
                continue
            loaded: set[str] = set()
            stored: set[str] = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.Name):
                    (loaded if isinstance(node.ctx, ast.Load) else stored).add(node.id)
                elif isinstance(node, ast.alias):
                    stored.add(node.asname or node.name.split(".")[0])
                elif isinstance(node, ast.arg):
                    stored.add(node.arg)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    stored.add(node.name)
            return frozenset(loaded), frozenset(stored)
    return None
