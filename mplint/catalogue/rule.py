"""The rule base: a rule is a small class with its metadata, docs and `check`.

    class FloatSixteenOutput(Rule):
        '''## What it does ... ## Why is this bad? ... ## Example ... ## Use instead ...
        ## Fix safety ...'''
        code = "MP101"
        name = "float16-model-output"
        severity = Severity.ERROR
        fix_availability = FixAvailability.SOMETIMES
        requires_mixed_policy = True

        def check(self) -> None:
            for call in self.facts.index.nodes(cst.Call): ...
                self.report(call, "...", fix=self.fix("...", [Replace(old, new)], unsafe=True))

Every subclass with a `code` is registered (see `mplint.catalogue.registry`). Rules read the
shared module facts (`self.facts`: imports, policy, Keras target, values) and report
nodes; the engine turns nodes into positions and changes into text edits.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Sequence, Union

import libcst as cst

from mplint.core.diagnostics import Applicability, FixAvailability, Severity
from mplint.core.diagnostics import CALL_PATH, RULE_PRECISION, TARGET, Premise, Status, all_proved, unproved_note
from mplint.facts.premises import computed_premise, target_premise
from mplint.facts.reachability import never_runs
from mplint.facts.test_modules import is_test_file

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts

# -- changes a fix is made of --------------------------------------------------------

@dataclass(frozen=True)
class Replace:
    """Replace a node (with the whitespace it owns) by a new node, rendered in place."""

    node: cst.CSTNode
    new: cst.CSTNode


@dataclass(frozen=True)
class ReplaceText:
    """Replace the node's own text (not its surrounding whitespace) by `text`."""

    node: cst.CSTNode
    text: str


@dataclass(frozen=True)
class InsertBefore:
    """Insert statement(s) `code` on the line(s) before a statement, same indentation."""

    statement: cst.CSTNode
    code: str


@dataclass(frozen=True)
class InsertAfter:
    """Insert statement(s) `code` on the line(s) after a statement, same indentation."""

    statement: cst.CSTNode
    code: str


@dataclass(frozen=True)
class RemoveStatement:
    """Delete a whole statement line (with its leading comments kept)."""

    statement: cst.CSTNode


Change = Union[Replace, ReplaceText, InsertBefore, InsertAfter, RemoveStatement]


@dataclass(frozen=True, eq=False)
class FixGroup:
    """Fixes of several findings that only make sense together (`get_scaled_loss` ->
    `scale_loss` and dropping `get_unscaled_gradients` in one loop). The engine offers
    them all-or-nothing: each member's fix carries the edits of the whole group, and
    when one member has no fix (suppressed, not selected, withheld) none has."""

    size: int  # how many findings the group has
    what: str  # what the group does, for messages ("the Keras 3 migration of this loop")


@dataclass(frozen=True)
class FixPlan:
    applicability: Applicability
    message: str
    changes: tuple[Change, ...]
    group: FixGroup | None = None


@dataclass(frozen=True)
class Report:
    code: str
    name: str
    severity: Severity
    node: cst.CSTNode
    message: str
    fix: FixPlan | None
    premises: tuple[Premise, ...] = ()
    detail: str = ""


def _weak_words(premise: Premise) -> str:
    """How a message names a premise that is not proved, in a few words."""
    if premise.fact == CALL_PATH and premise.status is Status.CONFLICTING:
        return "never runs"  # a branch that never runs
    if premise.fact == RULE_PRECISION:
        return "extended suite"
    return f"{premise.fact} {premise.status.value}"


# -- the base class ----------------------------------------------------------------------

_SECTION = re.compile(r"^## (.+)$", re.M)
REQUIRED_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety")


class Rule:
    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    severity: ClassVar[Severity] = Severity.WARNING
    fix_availability: ClassVar[FixAvailability] = FixAvailability.NONE
    # Skip the rule (cheaply) unless a mixed policy is in force in the module.
    requires_mixed_policy: ClassVar[bool] = False
    # The finding or its fix is written for the file's Keras target (Keras 2 or 3): when
    # the target is only assumed, the fix is unsafe and the message says so.
    depends_on_target: ClassVar[bool] = False
    # The facts a finding rests on (mplint.facts.premises.FACTS): computed for the place
    # reported unless the rule states them (`report(..., premises=...)`). They decide the
    # finding's tier; a fix is safe only where they (and the target, for a fix written for
    # one Keras) are all proved.
    premises: ClassVar[tuple[str, ...]] = ()
    # The fix changes what the code computes (a dtype, a size, an epsilon, loss scaling),
    # not only how it spells it (the MP4xx migrations): in a test module that may be what
    # the test exercises (a float16 output built on purpose), so the fix is unsafe there.
    fix_changes_numerics: ClassVar[bool] = True
    # How often the rule's findings were worth acting on in the labelled audits of public
    # repositories (bench/README.md), as CodeQL's `@precision`: "high" rules report in the
    # default suite; every finding of a "medium" rule rests on an assumed premise
    # (`rule-precision`), so it is in the extended tier (`--extended`) and its fix unsafe.
    precision: ClassVar[str] = "high"
    # The audit figures behind a "medium" precision, in a few words.
    precision_evidence: ClassVar[str] = ""

    def __init__(self, facts: "ModuleFacts", sink: list[Report]) -> None:
        self.facts = facts
        self._sink = sink

    def check(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- helpers for subclasses -------------------------------------------------
    def report(
        self,
        node: cst.CSTNode,
        message: str,
        fix: FixPlan | None = None,
        severity: Severity | None = None,
        premises: Sequence[Premise] = (),
        detail: str = "",
    ) -> None:
        """Report `message` (one sentence: what is wrong here and what to do) at `node`;
        `detail` carries the why (shown by -v, JSON, SARIF and the editor). The message
        names each premise that is not proved in a few words; its evidence goes to the
        detail."""
        stated = {p.fact: p for p in premises}
        found: list[Premise] = []
        for fact in self.premises:
            premise = stated.pop(fact, None) or computed_premise(fact, self.facts, node)
            if premise is not None:
                found.append(premise)
        found += stated.values()
        dead = never_runs(self.facts, node)
        if dead is not None:
            found.append(Premise(CALL_PATH, "runs", Status.CONFLICTING, f"this code never runs: {dead}"))
        if self.precision != "high":
            found.append(Premise(RULE_PRECISION, self.precision, Status.ASSUMED,
                                 f"{self.code} is in the extended suite: {self.precision_evidence}"))
        fix_rests_on = list(found)
        short: list[str] = []  # what the message says of the premises
        why = [detail] if detail else []
        target = next((p for p in found if p.fact == TARGET), None)
        if target is None and self.depends_on_target:
            # The finding holds on either Keras; its fix is written for one of them.
            target = target_premise(self.facts)
            fix_rests_on.append(target)
            if target.status is Status.ASSUMED:
                # The message's advice names that Keras's API too (`scale_loss` or
                # `get_scaled_loss`): say which Keras it was written for.
                short.append(f"{'fix' if fix is not None else 'advice'} for {self.facts.target.display}, assumed: "
                             "set `target`")
                why.append(self.facts.target.assumption)
            elif target.status is Status.CONFLICTING:
                short.append("fix withheld: the Keras evidence conflicts")
                why.append(f"fix withheld: {target.evidence}")
        if target is not None and target.status is Status.CONFLICTING:
            fix = None  # no fix written for a Keras the evidence disagrees on
        weak = [p for p in found if p.status in (Status.ASSUMED, Status.CONFLICTING)]
        if weak:
            short.append(", ".join(_weak_words(p) for p in weak))
            why.append(unproved_note(tuple(weak)))
        if short:
            message = f"{message} ({'; '.join(short)})"
        if fix is not None and fix.applicability is Applicability.SAFE and not all_proved(tuple(fix_rests_on)):
            fix = FixPlan(Applicability.UNSAFE, fix.message, fix.changes, fix.group)
        if fix is not None and fix.applicability is Applicability.SAFE and self.fix_changes_numerics \
                and is_test_file(self.facts.path):
            fix = FixPlan(Applicability.UNSAFE, fix.message, fix.changes, fix.group)
            why.append("fix unsafe in a test module: what the code computes there may be what the test checks")
        self._sink.append(Report(self.code, self.name, severity or self.severity, node, message, fix, tuple(found),
                                 "; ".join(why)))

    @staticmethod
    def fix(message: str, changes: Sequence[Change], unsafe: bool = False, group: FixGroup | None = None) -> FixPlan:
        applicability = Applicability.UNSAFE if unsafe else Applicability.SAFE
        return FixPlan(applicability, message, tuple(changes), group)

    # -- documentation --------------------------------------------------------------
    @classmethod
    def doc(cls) -> str:
        import textwrap

        return textwrap.dedent(inspect.getdoc(cls) or "").strip()

    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        text = cls.doc()
        parts = _SECTION.split(text)
        return {parts[i].strip(): parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}

    @classmethod
    def summary(cls) -> str:
        """First sentence of 'What it does'."""
        what = cls.doc_sections().get("What it does", "")
        return what.split("\n\n")[0].replace("\n", " ").strip()

    @classmethod
    def family(cls) -> str:
        return cls.__module__.rsplit(".", 1)[-1]
