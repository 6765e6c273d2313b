"""Rules that exist only for the engine's tests: a safe fix, a fix that breaks the code,
a rule that crashes, a fix that never converges, and a fix that enables another."""

from __future__ import annotations

import libcst as cst

from mplint.diagnostics import FixAvailability, Severity
from mplint.rule import Replace, ReplaceText, Rule

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
        for name in _names(self.facts, "old_name"):
            self.report(name, "`old_name` should be `new_name`",
                        fix=self.fix("Rename to new_name", [Replace(name, cst.Name("new_name"))]))


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
        for name in _names(self.facts, "lower_me"):
            self.report(name, "`lower_me` should be upper",
                        fix=self.fix("Upper-case", [Replace(name, cst.Name("LOWER_ME"))], unsafe=True))


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


TEST_RULES = {
    rule.code: (rule.name, "tests.support.rules")
    for rule in (RenameOld, BreakingFix, Crashes, NeverConverges, UnsafeUpper, ChainStart)
}
