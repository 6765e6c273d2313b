"""Rules that exist only for the engine's tests: a safe fix (a rename: one fix group
over every use), a fix that breaks the code, a rule that crashes, a fix that never
converges, a fix that enables another, and independent fixes."""

from __future__ import annotations

import libcst as cst

from mplint.core.diagnostics import FixAvailability, Severity
from mplint.catalogue.rule import FixGroup, Replace, ReplaceText, Rule

_DOC = """## What it does
Test rule.

## Why is this bad?
Test rule.

## Example
```python
x = 1
```

## Use instead
```python
x = 1
```

## Fix safety
Test rule.
"""


def _names(facts, value: str) -> list[cst.Name]:
    return [n for n in facts.index.nodes(cst.Name) if n.value == value]


class RenameOld(Rule):
    __doc__ = _DOC
    code = "MP990"
    name = "test-rename-old"
    severity = Severity.ERROR
    fix_availability = FixAvailability.ALWAYS

    def check(self) -> None:
        # A variable is renamed everywhere or nowhere: one fix group over its names.
        names = _names(self.facts, "old_name")
        group = FixGroup(len(names), "the rename of `old_name`")
        for name in names:
            self.report(name, "`old_name` should be `new_name`",
                        fix=self.fix("Rename to new_name", [Replace(name, cst.Name("new_name"))], group=group))


class BreakingFix(Rule):
    __doc__ = _DOC
    code = "MP991"
    name = "test-breaking-fix"
    severity = Severity.WARNING
    fix_availability = FixAvailability.ALWAYS

    def check(self) -> None:
        for name in _names(self.facts, "breakme"):
            self.report(name, "`breakme` found",
                        fix=self.fix("Break the code", [ReplaceText(name, "breakme (")]))


class Crashes(Rule):
    __doc__ = _DOC
    code = "MP992"
    name = "test-crashes"
    severity = Severity.ERROR

    def check(self) -> None:
        if _names(self.facts, "crash_here"):
            raise ZeroDivisionError("the rule divided by zero")


class NeverConverges(Rule):
    __doc__ = _DOC
    code = "MP993"
    name = "test-never-converges"
    severity = Severity.ERROR
    fix_availability = FixAvailability.ALWAYS

    def check(self) -> None:
        for name in self.facts.index.nodes(cst.Name):
            if name.value.startswith("grow"):
                self.report(name, "grows", fix=self.fix("Grow", [Replace(name, cst.Name(name.value + "x"))]))


class UnsafeUpper(Rule):
    __doc__ = _DOC
    code = "MP994"
    name = "test-unsafe-upper"
    severity = Severity.INFO
    fix_availability = FixAvailability.ALWAYS

    def check(self) -> None:
        names = _names(self.facts, "lower_me")
        group = FixGroup(len(names), "the rename of `lower_me`")
        for name in names:
            self.report(name, "`lower_me` should be upper",
                        fix=self.fix("Upper-case", [Replace(name, cst.Name("LOWER_ME"))], unsafe=True, group=group))


class ChainStart(Rule):
    """A fix whose output is the input of MP990: the loop must run a second round."""

    __doc__ = _DOC
    code = "MP995"
    name = "test-chain-start"
    severity = Severity.ERROR
    fix_availability = FixAvailability.ALWAYS

    def check(self) -> None:
        for name in _names(self.facts, "older_name"):
            self.report(name, "`older_name` is older still",
                        fix=self.fix("Rename to old_name", [Replace(name, cst.Name("old_name"))]))


class FixLiteral(Rule):
    """Independent fixes (no names involved): each applies on its own."""

    __doc__ = _DOC
    code = "MP996"
    name = "test-fix-literal"
    severity = Severity.WARNING
    fix_availability = FixAvailability.ALWAYS

    def check(self) -> None:
        for node in self.facts.index.nodes(cst.SimpleString):
            if node.value == "'fix me'":
                self.report(node, "'fix me' found", fix=self.fix("Fix it", [ReplaceText(node, "'fixed'")]))


TEST_RULES = {
    rule.code: (rule.name, "tests.support.rules")
    for rule in (RenameOld, BreakingFix, Crashes, NeverConverges, UnsafeUpper, ChainStart, FixLiteral)
}
