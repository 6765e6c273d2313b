"""MP4xx: migrate old mixed-precision APIs to code that runs on TensorFlow 2.21."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import os

import libcst as cst

from mplint.analysis.calls import arg_value, get_arg, positional, string_value, with_keyword, without_arg
from mplint.analysis.names import canonical
from mplint.analysis.bound_names import names_a_variable
from mplint.analysis.guards import Guard, capability_tests, condition_text, guard_of
from mplint.fixes.removal import remove_statement, side_effect_free
from mplint.core.diagnostics import CALL_PATH, TARGET, FixAvailability, Premise, Severity, Status
from mplint.facts.gradient_uses import gradient_uses
from mplint.facts.policy import POLICY_CONSTRUCTORS, SET_GLOBAL_POLICY
from mplint.facts.target import KERAS2, KERAS3, Target, object_keras, project_tensorflow
from mplint.facts.training import (
    GRAPH_REWRITE,
    LSO_CURRENT,
    LSO_EXPERIMENTAL,
    TrainingLoops,
)
from mplint.catalogue.rule import Change, FixGroup, FixPlan, InsertAfter, InsertBefore, Replace, ReplaceText, Rule

from mplint.fixes.scaling_edits import (
    KERAS_BUILDERS,
    code,
    first_model_statement,
    moved_clip_note,
    keras3_scaled_until_apply,
    mixed_float16_policy,
    mixed_precision_module,
    set_mixed_float16,
    sets_mixed_float16,
    unscale_gradients,
)
from mplint.facts.late_policy import late_mixed_settings
from mplint.facts.tf1_code import KERAS, LEGACY, V1, is_tf1_graph_code, optimizer_family
from mplint.facts.premises import stock_tensorflow_premise, target_premise
from mplint.facts.version_guards import old_tensorflow_only, unevaluated_version_check

EXPERIMENTAL = "keras.mixed_precision.experimental"
RENAMED = {"set_policy": "set_global_policy"}
GLOBAL_POLICY = frozenset({"keras.mixed_precision.global_policy", f"{EXPERIMENTAL}.global_policy", "keras.config.dtype_policy"})
SET_POLICY_OLD = frozenset({f"{EXPERIMENTAL}.set_policy", "keras.mixed_precision.set_policy"})
# TF 2.1-2.3 loss-scale classes; the tf.* ones are gone in TF 2.21, compat.v1 ones remain
# (but no Keras optimizer or policy accepts them).
_LOSS_SCALE_MODULES_GONE = ("tensorflow.mixed_precision.experimental", "tensorflow.train.experimental", "tensorflow.mixed_precision")
_LOSS_SCALE_MODULES_V1 = ("tensorflow.compat.v1.mixed_precision.experimental", "tensorflow.compat.v1.mixed_precision",
                          "tensorflow.compat.v1.train.experimental")
_CLASSES = ("LossScale", "DynamicLossScale", "FixedLossScale")
LOSS_SCALES_GONE = {f"{m}.{c}": c for m in _LOSS_SCALE_MODULES_GONE for c in _CLASSES}
LOSS_SCALES = {**LOSS_SCALES_GONE, **{f"{m}.{c}": c for m in _LOSS_SCALE_MODULES_V1 for c in _CLASSES}}
AUTO_MIXED_PRECISION_ENV = "TF_ENABLE_AUTO_MIXED_PRECISION"
_ENV_DETAIL = ("stock TensorFlow (2.21 included) does not read the switch; `compile` and MP201 take care of loss "
               "scaling once the policy is set")

KERAS3_NO_FIXED = (
    "Keras 3 has no fixed loss scale: the closest equivalent is a dynamic one starting at {n} "
    "(a fixed factor needs `loss_scale_factor={n}` on the inner optimizer, without skipping non-finite steps)"
)


# -- loss scales ----------------------------------------------------------------------------

@dataclass
class LossScale:
    """A TF 2.1-era loss scale, as the arguments of a current LossScaleOptimizer."""

    kind: str  # "dynamic", "custom" (dynamic with settings) or "fixed"
    initial: cst.BaseExpression | None = None
    growth: cst.BaseExpression | None = None
    constructions: list[cst.Call] = field(default_factory=list)  # LossScale objects it came from

    def keywords(self, keras2: bool) -> list[tuple[str, cst.BaseExpression]]:
        if self.kind == "fixed":
            assert self.initial is not None
            fixed = [("dynamic", cst.Name("False"))] if keras2 else []
            return [*fixed, ("initial_scale", self.initial)]
        found = []
        if self.initial is not None:
            found.append(("initial_scale", self.initial))
        if self.growth is not None:
            found.append(("dynamic_growth_steps", self.growth))
        return found

    def note(self, facts, keras2: bool) -> str | None:
        if self.kind == "fixed" and not keras2:
            assert self.initial is not None
            return KERAS3_NO_FIXED.format(n=code(facts, self.initial))
        return None


def loss_scale_of(facts, expr: cst.BaseExpression | None, depth: int = 0) -> LossScale | None:
    """What a `loss_scale=` value means, or None when it cannot be mapped."""
    if expr is None or depth > 8:
        return None
    if string_value(expr) == "dynamic":
        return LossScale("dynamic")
    value = facts.values.resolve(expr)
    if value is not None and isinstance(value.value, (int, float)) and not isinstance(value.value, bool):
        return LossScale("fixed", initial=expr)
    if isinstance(expr, cst.Call):
        kind = LOSS_SCALES.get(facts.qualified(expr.func) or "")
        if kind == "FixedLossScale":
            initial = arg_value(expr, 0, "loss_scale_value")
            return LossScale("fixed", initial=initial, constructions=[expr]) if initial is not None else None
        if kind == "DynamicLossScale":
            initial = arg_value(expr, 0, "initial_loss_scale")
            growth = arg_value(expr, 1, "increment_period")
            multiplier = arg_value(expr, 2, "multiplier")
            if multiplier is not None:
                resolved = facts.values.resolve(multiplier)
                if resolved is None or resolved.value != 2:
                    return None  # current LossScaleOptimizers always double / halve
            if any(a.keyword is None and a.star for a in expr.args):
                return None
            return LossScale("custom" if initial is not None or growth is not None else "dynamic", initial, growth, [expr])
        return None
    if isinstance(expr, cst.Name):
        bound = facts.bindings.values_visible(expr, facts.index)
        if len(bound) == 1:
            return loss_scale_of(facts, bound[0], depth + 1)
    return None


def _keyword_arg(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(
        value=value, keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )


def _with_keywords(call: cst.Call, keywords: list[tuple[str, cst.BaseExpression]]) -> cst.Call:
    """The call with keyword arguments added, in the call's own layout."""
    for name, value in keywords:
        call = with_keyword(call, name, value)
    return call


def _replace_arg(call: cst.Call, arg: cst.Arg, keywords: list[tuple[str, cst.BaseExpression]]) -> cst.Call:
    """The call with `arg` replaced by keyword arguments, in the call's own layout."""
    if not keywords:
        return without_arg(call, arg)
    args = list(call.args)
    i = next(n for n, a in enumerate(args) if a is arg)
    before = args[i - 1].comma if i > 0 else None
    separator = before if isinstance(before, cst.Comma) else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    new = [_keyword_arg(name, value).with_changes(comma=separator) for name, value in keywords]
    new[-1] = new[-1].with_changes(comma=arg.comma)
    args[i:i + 1] = new
    return call.with_changes(args=args)


_SCALING_METHODS = frozenset({"scale_loss", "get_scaled_loss", "get_unscaled_gradients"})


class MigrationRule(Rule):
    """An MP4xx rule: nothing is reported in code that runs only on an older TensorFlow
    (a version check or an ImportError/AttributeError fallback keeps the old API there).

    Its messages are written as clauses: what is gone and what to use instead first, then
    the notes (mappings, what a fix cannot keep, why there is none). The message keeps the
    first two clauses; the notes go to the detail (`-v`, JSON, SARIF, the editor)."""

    fix_changes_numerics = False  # a migration keeps what the code computes

    def report(self, node: cst.CSTNode, message: str, fix: FixPlan | None = None, severity: Severity | None = None,
               premises=(), detail: str = "") -> None:
        if not old_tensorflow_only(self.facts, node):
            message, notes = message_and_notes(message)
            detail = "; ".join(p for p in (notes, detail) if p)
            if TARGET not in {p.fact for p in premises}:
                # the TensorFlow the code runs on, not only its Keras: what is removed where
                premises = (*premises, target_premise(self.facts, self.facts.tensorflow_target))
            check = unevaluated_version_check(self.facts, node)
            if check is not None and CALL_PATH not in {p.fact for p in premises}:
                shown = " ".join(self.facts.module.code_for_node(check).split())[:60]
                premises = (*premises, Premise(CALL_PATH, "runs on the TensorFlow in use", Status.ASSUMED,
                                               f"only where the version check `{shown}` selects it, which mplint "
                                               "cannot evaluate: likely compatibility code for another TensorFlow"))
            super().report(node, message, fix=fix, severity=severity, premises=premises, detail=detail)


def message_and_notes(text: str, limit: int = 170) -> tuple[str, str]:
    """(the first top-level `; ` clause of `text`, with the second where both fit in
    `limit` characters; the rest): a `;` inside parentheses or backticks does not split."""
    clauses, depth, tick, start = [], 0, False, 0
    for i, char in enumerate(text):
        if char == "`":
            tick = not tick
        elif not tick and char in "([":
            depth += 1
        elif not tick and char in ")]":
            depth = max(depth - 1, 0)
        elif not tick and depth == 0 and text.startswith("; ", i):
            clauses.append(text[start:i])
            start = i + 2
    clauses.append(text[start:])
    keep = 2 if len("; ".join(clauses[:2])) <= limit else 1
    return "; ".join(clauses[:keep]), "; ".join(clauses[keep:])


# -- names ----------------------------------------------------------------------------------

def without_experimental(facts, expr: cst.BaseExpression) -> cst.BaseExpression:
    """`tf.keras.mixed_precision.experimental.set_policy` -> `tf.keras.mixed_precision.set_global_policy`."""
    if not isinstance(expr, cst.Attribute):
        return expr
    value = expr.value
    attr = expr.attr
    if facts.qualified(value) == EXPERIMENTAL and isinstance(value, cst.Attribute) and value.attr.value == "experimental":
        return expr.with_changes(value=value.value, attr=attr.with_changes(value=RENAMED.get(attr.value, attr.value)))
    return expr.with_changes(value=without_experimental(facts, value))


def _uses_experimental_chain(facts, expr: cst.BaseExpression) -> bool:
    node = expr
    while isinstance(node, cst.Attribute):
        if node.attr.value == "experimental" and facts.qualified(node) == EXPERIMENTAL:
            return True
        node = node.value
    return False


def _dated_note(target: Target) -> str:
    """How to move on, where only the file's age says which TensorFlow it was written for."""
    if target.dated is None:
        return ""
    return (f"its TensorFlow is dated by the repository's last commit ({target.dated}): to migrate it to the "
            "TensorFlow installed now, set `target = \"keras2\"` or `\"keras3\"` in [tool.mplint]")


class ExperimentalMixedPrecisionApi(MigrationRule):
    """## What it does
    Finds the TF 2.1–2.3 experimental Keras mixed-precision API: imports of
    `tf.keras.mixed_precision.experimental` (also `from ... import experimental as
    mixed_precision`), attribute chains through it, `set_policy`,
    `Policy(name, loss_scale=...)`, `LossScaleOptimizer(opt, loss_scale=...)`,
    `tf.mixed_precision.experimental.{LossScale,DynamicLossScale,FixedLossScale}` and
    reads of `policy.loss_scale`.

    ## Why is this bad?
    TensorFlow 2.4 made the API stable and deprecated the experimental one; TF 2.9 removed
    it: the import raises ImportError and `tf.keras.mixed_precision.experimental`
    AttributeError (also with tf-keras). A loss scale given to the stable API fails too:
    `Policy(name, loss_scale)` raises TypeError, `LossScaleOptimizer(opt, loss_scale=...)`
    TypeError in Keras 2 and ValueError in Keras 3. Messages name what the file's Keras
    target sees. Old tutorials and repositories are full of this API; code that uses it
    only where TensorFlow is older than 2.4 (`if version.parse(tf.__version__) < ...`,
    an `except ImportError` fallback) is left alone.

    ## Example
    ```python
    from tensorflow.keras.mixed_precision import experimental as mixed_precision

    policy = mixed_precision.Policy("mixed_float16", loss_scale="dynamic")
    mixed_precision.set_policy(policy)
    optimizer = mixed_precision.LossScaleOptimizer(optimizer, loss_scale=1024)
    ```

    ## Use instead
    ```python
    from tensorflow.keras import mixed_precision

    policy = mixed_precision.Policy("mixed_float16")
    mixed_precision.set_global_policy(policy)
    optimizer = mixed_precision.LossScaleOptimizer(optimizer, dynamic=False, initial_scale=1024)  # Keras 2
    optimizer = mixed_precision.LossScaleOptimizer(optimizer, initial_scale=1024)  # Keras 3
    ```

    ## Fix safety
    Renames and import rewrites are safe (an unused loss-scale object is removed, with
    an `if` it was alone in when the test has no side effects); so is mapping a
    dynamic loss scale (`"dynamic"`, `DynamicLossScale(initial_loss_scale=...,
    increment_period=...)` -> `initial_scale=`, `dynamic_growth_steps=`) and, for
    Keras 2, a fixed one (`dynamic=False, initial_scale=N`). Unsafe: a fixed scale under Keras 3, which has
    none (the fix keeps a dynamic scale starting at N and says so), and a policy's
    fixed loss scale, which only ever applied to `Model.fit`: it is carried to the
    optimizer passed to `compile` (wrapped in a `LossScaleOptimizer`), and reads of that
    policy's `loss_scale` become the number. Other `policy.loss_scale` reads become the
    loss scale of the one `LossScaleOptimizer` (or compiled model) in reach (Keras 2
    `opt.loss_scale`, Keras 3 `opt.scale_loss(1.0)`), else are reported without a fix.

    When the project says it runs TensorFlow older than 2.4 (a `tensorflow==2.3.*` pin,
    a `tensorflow/tensorflow:2.2` or NVIDIA 20.xx image in the nearest Dockerfile), the
    experimental API is the only one there: the finding is an info without a fix. When
    it says TensorFlow 2.4-2.8 (`tensorflow==2.7.0`, a `tensorflow/tensorflow:2.4.1`
    image), the experimental API is deprecated there, not removed: an info, with the fix
    (the stable API exists there too). Where nothing in the project names its TensorFlow,
    its git history does: a repository last committed to in July 2020 ran on TF 2.3 or
    older (the newest TensorFlow released by then), one last committed to in 2021 on TF
    2.7 or older. The date bounds the TensorFlow from above only, so the info names it as
    a bound, and its fix (which writes the stable API of TF 2.4) is unsafe there.
    To migrate such a project to the TensorFlow you run now, set `target` in
    `[tool.mplint]` (or commit to it: a project maintained today runs today's TensorFlow).

    A file's migration is applied whole or not at all: where one use of the experimental
    API has no fix (a policy's fixed loss scale beside a `LossScaleOptimizer` of its own)
    and no other fix takes care of it, no use in the file is fixed. Moving the import
    alone would turn that use into a TypeError on the TensorFlow where the file runs.
    """

    code = "MP401"
    premises = ("keras-target",)
    depends_on_target = True
    name = "experimental-mixed-precision-api"
    severity = Severity.ERROR
    fix_availability = FixAvailability.SOMETIMES

    @property
    def keras2(self) -> bool:
        """The file targets Keras 2 (decided only when a finding needs it)."""
        return self.facts.target.is_keras2

    def removed(self, error: str) -> str:
        """What happens to the experimental API on the file's target: Keras 3 code runs on
        TF 2.16+, Keras 2 code may still run on TF 2.4-2.8, where it was only deprecated,
        or on TF older than 2.4, where it is the only mixed-precision API."""
        target = self.facts.tensorflow_target
        if target.before_stable_api:
            # the evidence of the old TensorFlow is the keras-target premise's (`-v`, JSON)
            return f"is the only mixed-precision API of this project's TensorFlow (< 2.4), removed in TF 2.9 ({error})"
        if target.runs_before((2, 9)) and target.dated is not None:
            # the date bounds the TensorFlow from above: it may predate 2.4 (the only API there)
            return f"is removed in TF 2.9 ({error}, tf-keras included), but {target.tensorflow_named} still has it"
        if target.runs_before((2, 9)) and target.newest_tensorflow is not None:
            return f"is deprecated in {target.tensorflow_named} and removed in TF 2.9 ({error}, tf-keras included)"
        if self.keras2:
            return f"was removed in TF 2.9 ({error}, tf-keras included)"
        return f"was removed (TF 2.21: {error})"

    def report(self, node: cst.CSTNode, message: str, fix: FixPlan | None = None, severity: Severity | None = None,
               premises=(), detail: str = "", on_every_tensorflow: bool = False) -> None:
        """`on_every_tensorflow`: the use fails on every TensorFlow (`set_policy` of the stable
        module), so no version of the project's makes it deprecated-but-working."""
        target = self.facts.tensorflow_target
        if on_every_tensorflow:
            if target.before_stable_api:
                # its TensorFlow has no `set_global_policy` for the fix to write
                no_fix = "no fix before TF 2.4, whose only spelling is `mixed_precision.experimental.set_policy`"
                detail = "; ".join(p for p in (detail, no_fix) if p)
                fix = None
        elif target.before_stable_api:
            # Right where it runs now; the stable API the fix writes does not exist there.
            message += " when the project moves to TF 2.4 or newer"
            detail = "; ".join(p for p in (detail, "no fix before: its TensorFlow has no other API", _dated_note(target))
                               if p)
            fix, severity = None, Severity.INFO
        elif target.runs_before((2, 9)) and target.newest_tensorflow is not None:
            # Deprecated, not removed, where it runs: the stable API the fix writes is there too.
            if "this project's TensorFlow" not in message:
                head, rest = message_and_notes(message, limit=0)
                still = "still has it" if target.dated is not None else "still has it, deprecated"
                message = "; ".join(p for p in (f"{head} ({target.tensorflow_named} {still})", rest) if p)
            severity = Severity.INFO
            if target.dated is not None and fix is not None:
                # Only the date bounds it: the code may run on a TensorFlow before 2.4, which
                # has no stable API for the fix to write (unsafe, as the target is inferred).
                needs = ("the fix writes the stable API, which needs TF 2.4: only the repository's last commit "
                         "bounds this project's TensorFlow")
                detail = "; ".join(p for p in (detail, needs) if p)
            detail = "; ".join(p for p in (detail, _dated_note(target)) if p)
        super().report(node, message, fix=fix, severity=severity, premises=premises, detail=detail)

    def check(self) -> None:
        self._handled_reads: set[int] = set()
        self._handled_calls: set[int] = set()
        # uses without a fix of their own that do not hold the others' fixes back: a loss
        # scale object mapped where it is passed (then removed as unused), TF 1.x's
        # loss-scale classes in TF 1.x graph code (kept there)
        self._not_blocking: set[int] = set()
        first = len(self._sink)
        self._check_imports()
        self._check_calls()
        self._check_chains()
        self._check_loss_scale_objects()
        self._check_loss_scale_reads()
        self._whole_or_not_at_all(first)

    def _whole_or_not_at_all(self, first: int) -> None:
        """A file's migration is applied whole or not at all: where one use of the
        experimental API has no fix (`Policy('mixed_float16', loss_scale=1024)`) and the
        other fixes do not take care of it (`_not_blocking`), the others are not fixed
        either (also where the findings are infos: a project on TF 2.4-2.8). Moving the
        import alone would turn that use into a TypeError on a TensorFlow where the file
        ran."""
        reports = self._sink[first:]
        stuck = next((r for r in reports if r.fix is None and id(r.node) not in self._not_blocking), None)
        if stuck is None or all(r.fix is None for r in reports):
            return
        spelled = " ".join(code(self.facts, stuck.node).split())
        spelled = spelled if len(spelled) <= 60 else spelled[:57] + "..."
        note = f"no fix: `{spelled}` has none, and this file's migration is applied whole or not at all"
        for i in range(first, len(self._sink)):
            report = self._sink[i]
            if report.fix is not None:
                self._sink[i] = replace(report, fix=None, detail="; ".join(p for p in (report.detail, note) if p))

    # -- imports -----------------------------------------------------------------------
    def _check_imports(self) -> None:
        facts = self.facts
        for node in facts.index.nodes(cst.ImportFrom):
            if node.module is None or node.relative or isinstance(node.names, cst.ImportStar):
                continue
            module = code(facts, node.module)
            if canonical(module) == EXPERIMENTAL:
                if not self._private(node, module):
                    self._from_experimental(node, module)
                continue
            for alias in node.names:
                if canonical(f"{module}.{code(facts, alias.name)}") == EXPERIMENTAL:
                    if not self._private(node, f"{module}.{code(facts, alias.name)}"):
                        self._import_experimental_module(node, alias, module)
        for node in facts.index.nodes(cst.Import):
            for alias in node.names:
                module = code(facts, alias.name)
                if canonical(module) != EXPERIMENTAL or self._private(node, module):
                    continue
                fix = None
                parent, _, last = module.rpartition(".")[0].rpartition(".")
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name) and len(node.names) == 1 and parent:
                    # `import tensorflow.keras.mixed_precision.experimental as mp`
                    text = f"from {parent} import {last} as {alias.asname.name.value}"
                    fix = self.fix(f"Import `{parent}.{last}`", [ReplaceText(node, text)])
                self.report(node, f"`{module}` {self.removed('ImportError')}; use `{module.rpartition('.')[0]}`", fix=fix)

    def _private(self, node: cst.CSTNode, module: str) -> bool:
        """TensorFlow's private copy (`tensorflow.python.keras.mixed_precision.experimental`):
        it moved in TF 2.4 (the TF 2.4 wheel has no such package), and its other private
        paths are no public API to migrate to. Reported, without a fix."""
        if not module.startswith("tensorflow.python.keras."):
            return False
        target = self.facts.tensorflow_target
        if target.before_stable_api:
            message = (f"`{module}` is a private TensorFlow path, moved in TF 2.4 (ImportError): use the public "
                       "`tf.keras.mixed_precision` API when the project moves to TF 2.4 or newer")
            MigrationRule.report(self, node, message, severity=Severity.INFO)
        else:
            MigrationRule.report(
                self, node, f"`{module}` is a private TensorFlow path, gone from TF 2.4 on (ImportError); use the "
                "public `tf.keras.mixed_precision` API", detail="no fix: a private path is no API to migrate to")
        return True

    def _import_experimental_module(self, node: cst.ImportFrom, alias: cst.ImportAlias, module: str) -> None:
        """`from tensorflow.keras.mixed_precision import experimental as mixed_precision`."""
        local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else "experimental"
        parent, _, last = module.rpartition(".")
        fix = None
        if parent and len(node.names) == 1:
            text = f"from {parent} import {last}" + ("" if local == last else f" as {local}")
            fix = self.fix(f"Import `{module}`", [ReplaceText(node, text)])
        self.report(
            node,
            f"`{module}.experimental` {self.removed('ImportError')}; import `{module}` itself",
            fix=fix,
        )

    def _from_experimental(self, node: cst.ImportFrom, module: str) -> None:
        """`from tensorflow.keras.mixed_precision.experimental import Policy, set_policy`."""
        facts = self.facts
        parent = module.rpartition(".")[0]
        names = []
        renames: list[Change] = []
        for alias in node.names:  # type: ignore[union-attr]
            name = code(facts, alias.name)
            new = RENAMED.get(name, name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                names.append(f"{new} as {alias.asname.name.value}")
            else:
                names.append(new)
                if new != name:
                    renames += [
                        ReplaceText(n, new) for n in facts.index.nodes(cst.Name)
                        if n.value == name and n is not alias.name and facts.qualified(n) == f"{EXPERIMENTAL}.{name}"
                    ]
        text = f"from {parent} import {', '.join(names)}"
        self.report(
            node,
            f"`{module}` {self.removed('ImportError')}; import from `{parent}`"
            + (" (`set_policy` is `set_global_policy`)" if renames else ""),
            fix=self.fix(f"Import from `{parent}`", [ReplaceText(node, text), *renames]),
        )

    # -- calls: Policy / LossScaleOptimizer / set_policy -------------------------------------
    def _check_calls(self) -> None:
        facts = self.facts
        for call in facts.index.nodes(cst.Call):
            qualified = facts.qualified(call.func)
            if qualified is None:
                continue
            if qualified in POLICY_CONSTRUCTORS:
                self._policy_call(call)
            elif qualified in LSO_EXPERIMENTAL or qualified in LSO_CURRENT:
                self._lso_call(call, qualified in LSO_EXPERIMENTAL)

    def _new_func(self, call: cst.Call) -> cst.BaseExpression:
        return without_experimental(self.facts, call.func)

    def _loss_scale_argument(self, call: cst.Call, arg: cst.Arg, what: str, error: str) -> str:
        """Why a TF 2.1-2.3 loss scale given to `Policy` / `LossScaleOptimizer` fails, as the
        call is written: through the experimental module (which fails first, where it is
        named) or through the stable one (which refuses the argument with `error`)."""
        facts = self.facts
        written = "`loss_scale=`" if arg.keyword is not None else f"positional `{code(facts, arg.value)}`"
        if not (facts.qualified(call.func) or "").startswith(EXPERIMENTAL + "."):
            return f"`{what}` takes no loss scale since TF 2.4 ({written}: {error})"
        if _uses_experimental_chain(facts, call.func):
            return f"`{code(facts, call.func)}` {self.removed('AttributeError')}; a current `{what}` takes no loss scale ({written})"
        return f"the experimental `{what}` (TF 2.1-2.8) takes a loss scale ({written}); a current `{what}` does not"

    def _policy_call(self, call: cst.Call) -> None:
        facts = self.facts
        arg = get_arg(call, 1, "loss_scale")
        if arg is None:
            return  # a chain through `experimental` is reported by _check_chains
        self._handled_calls.add(id(call))
        new_call = without_arg(call, arg).with_changes(func=self._new_func(call))
        scale = loss_scale_of(facts, arg.value)
        message = self._loss_scale_argument(call, arg, "Policy", "TypeError")
        if scale is None:
            self.report(call, message + "; this loss scale cannot be mapped, set it on a LossScaleOptimizer")
            return
        if scale.kind == "dynamic" and scale.initial is None and scale.growth is None:
            self.report(call, message + "; dynamic loss scaling is the default",
                        fix=self.fix("Drop the dynamic `loss_scale`", [Replace(call, new_call)]))
            return
        # A fixed or customised scale: it only ever applied to Model.fit.
        changes: list[Change] = [Replace(call, new_call)]
        notes = []
        compiles = self._compile_optimizers() if self._is_global(call) else []
        if compiles is None:
            self.report(call, message + "; the policy's loss scale applied to Model.fit: set it on the optimizer "
                                        "passed to compile (cannot be done here)")
            return
        for optimizer in compiles:
            wrapped = self._wrap_for_compile(optimizer, scale)
            if wrapped is None:
                self.report(call, message + "; the policy's loss scale applied to Model.fit: wrap the optimizer "
                                            "passed to compile in a LossScaleOptimizer")
                return
            changes.append(wrapped)
        note = scale.note(facts, self.keras2)
        if note and compiles:
            notes.append(note)
        if scale.kind == "fixed":
            changes += self._fixed_reads(call, scale)
        where = "carried to the optimizer passed to compile" if compiles else "dropped (it only applied to Model.fit)"
        self.report(
            call,
            f"{message}; its loss scale is {where}" + "".join(f"; {n}" for n in notes),
            fix=self.fix("Move the loss scale off the policy", changes, unsafe=True),
        )

    def _is_global(self, call: cst.Call) -> bool:
        """Whether this Policy(...) becomes the global policy."""
        facts = self.facts
        parent = facts.index.parent_of(call)
        for setting in facts.policy.global_settings:
            argument = setting.argument
            if argument is call:
                return True
            if isinstance(argument, cst.Name):
                if any(v is call for v in facts.bindings.values_visible(argument, facts.index)):
                    return True
        owner = facts.index.parent_of(parent) if isinstance(parent, cst.Arg) else None
        return isinstance(owner, cst.Call) and facts.qualified(owner.func) in SET_GLOBAL_POLICY

    def _compile_optimizers(self) -> list[cst.BaseExpression] | None:
        """The optimizer arguments of every `compile(...)` call; None if one has none."""
        found = []
        for call in self.facts.index.nodes(cst.Call):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "compile":
                optimizer = arg_value(call, 0, "optimizer")
                if optimizer is None:
                    return None
                found.append(optimizer)
        return found

    def _wrap_for_compile(self, optimizer: cst.BaseExpression, scale: LossScale) -> Change | None:
        facts = self.facts
        loops = facts.analysis(TrainingLoops)
        if isinstance(optimizer, (cst.Name, cst.Attribute)):
            info = loops.optimizer(optimizer)
            if info.wrapper is not None:
                return None  # already a LossScaleOptimizer: compile does not wrap it again
        spelling = mixed_precision_module(facts)
        if spelling is None or spelling[1]:
            return None
        module = spelling[0]
        inner: cst.BaseExpression = optimizer
        if string_value(optimizer) is not None:
            if not module.endswith(".mixed_precision"):
                return None  # `mixed_precision` imported alone: no spelling of keras.optimizers at hand
            keras_module = module.rsplit(".", 1)[0]
            inner = cst.parse_expression(f"{keras_module}.optimizers.get({code(facts, optimizer)})")
        wrapped = cst.Call(func=cst.parse_expression(f"{module}.LossScaleOptimizer"), args=[cst.Arg(value=inner)])
        return Replace(optimizer, _with_keywords(wrapped, scale.keywords(self.keras2)))

    def _fixed_reads(self, call: cst.Call, scale: LossScale) -> list[Change]:
        """`policy.loss_scale` of a policy built with this fixed scale -> the number."""
        facts = self.facts
        changes: list[Change] = []
        for read in self._loss_scale_reads():
            policy = read.value
            if isinstance(policy, cst.Name):
                bound = facts.bindings.values_visible(policy, facts.index)
                if bound and all(b is call for b in bound):
                    assert scale.initial is not None
                    changes.append(ReplaceText(read, code(facts, scale.initial)))
                    self._handled_reads.add(id(read))
        return changes

    def _lso_call(self, call: cst.Call, experimental: bool) -> None:
        facts = self.facts
        arg = get_arg(call, 1, "loss_scale") if experimental else get_arg(call, None, "loss_scale")
        if arg is None:
            return  # the chain itself is reported by _check_chains
        if arg.keyword is None and self._current_dynamic_flag(arg.value):
            return
        self._handled_calls.add(id(call))
        message = self._loss_scale_argument(call, arg, "LossScaleOptimizer", "TypeError" if self.keras2 else "ValueError")
        scale = loss_scale_of(facts, arg.value)
        if scale is None:
            self.report(call, message + "; this loss scale cannot be mapped")
            return
        new_call = _replace_arg(call, arg, scale.keywords(self.keras2)).with_changes(func=self._new_func(call))
        note = scale.note(facts, self.keras2)
        mapped = {"dynamic": "dynamic loss scaling is the default", "custom": "mapped to `initial_scale`/`dynamic_growth_steps`",
                  "fixed": "mapped to `dynamic=False, initial_scale`" if self.keras2 else "mapped to `initial_scale`"}[scale.kind]
        self.report(
            call,
            f"{message}; {mapped}" + (f"; {note}" if note else ""),
            fix=self.fix("Use the current LossScaleOptimizer arguments", [Replace(call, new_call)], unsafe=note is not None),
        )

    def _current_dynamic_flag(self, value: cst.BaseExpression) -> bool:
        """A name that, where the code runs, holds `True`/`False`: the current
        LossScaleOptimizer's `dynamic` flag (`dynamic = True` for TF >= 2.4, `'dynamic'`
        only in the branch a version check keeps for older TensorFlow)."""
        facts = self.facts
        if not isinstance(value, cst.Name):
            return False
        live = [v for v in facts.bindings.values_visible(value, facts.index) if not old_tensorflow_only(facts, v)]
        return bool(live) and all(isinstance(v, cst.Name) and v.value in ("True", "False") for v in live)

    # -- attribute chains --------------------------------------------------------------------
    def _check_chains(self) -> None:
        facts = self.facts
        for node in facts.index.nodes(cst.Attribute):
            if node.attr.value != "experimental" and node.attr.value not in RENAMED:
                continue
            if facts.index.enclosing(node, cst.Import, cst.ImportFrom) is not None:
                continue  # imports are rewritten as a whole
            if node.attr.value == "experimental" and facts.qualified(node) == EXPERIMENTAL:
                parent = facts.index.parent_of(node)
                if isinstance(parent, cst.Attribute) and parent.value is node:
                    call = facts.index.parent_of(parent)
                    if isinstance(call, cst.Call) and call.func is parent and id(call) in self._handled_calls:
                        continue
                    target = parent
                    new = without_experimental(facts, parent)
                else:
                    target, new = node, node.value
                self.report(
                    target,
                    f"`{code(facts, target)}` {self.removed('AttributeError')}; use `{code(facts, new)}`",
                    fix=self.fix(f"Use `{code(facts, new)}`", [Replace(target, new)]),
                )
            elif node.attr.value in RENAMED and facts.qualified(node) in SET_POLICY_OLD and not _uses_experimental_chain(facts, node):
                new_name = RENAMED[node.attr.value]
                experimental = (facts.qualified(node) or "").startswith(EXPERIMENTAL + ".")
                self.report(
                    node,
                    f"`{node.attr.value}` is `{new_name}` since TF 2.4" + ("" if experimental else
                    f" (the stable `mixed_precision` module never had `{node.attr.value}`: AttributeError)"),
                    fix=self.fix(f"Use `{new_name}`", [ReplaceText(node.attr, new_name)]),
                    on_every_tensorflow=not experimental,
                )

    # -- tf.mixed_precision.experimental loss-scale objects ------------------------------------
    def _check_loss_scale_objects(self) -> None:
        facts = self.facts
        for node in facts.index.nodes(cst.Attribute):
            qualified = facts.qualified(node)
            if qualified not in LOSS_SCALES_GONE:
                continue
            parent = facts.index.parent_of(node)
            call = parent if isinstance(parent, cst.Call) and parent.func is node else None
            if call is not None:
                holder = facts.index.parent_of(call)
                if isinstance(holder, cst.Arg):
                    owner = facts.index.parent_of(holder)
                    if isinstance(owner, cst.Call) and id(owner) in self._handled_calls:
                        continue  # mapped with the Policy / LossScaleOptimizer it is passed to
            if is_tf1_graph_code(facts):
                self._not_blocking.add(id(node))
                same = "tf.compat.v1." + qualified.removeprefix("tensorflow.")
                self.report(node, f"`{code(facts, node)}` is TF 1.x's loss-scale class: TF 2.21 keeps it only under "
                                  f"`tf.compat.v1` (`{same}`)", severity=Severity.INFO)
                continue
            message = f"`{code(facts, node)}` is gone from TF 2.21 (AttributeError)"
            fix = None
            statement = facts.index.statement_of(node)
            assign = facts.index.enclosing(node, cst.Assign)
            if call is not None and assign is not None and assign.value is call and len(assign.targets) == 1 \
                    and isinstance(assign.targets[0].target, cst.Name) and isinstance(statement, cst.SimpleStatementLine) \
                    and len(statement.body) == 1:
                name = assign.targets[0].target.value
                uses = [n for n in facts.index.names(name) if n is not assign.targets[0].target]
                if uses:
                    message += "; its arguments are mapped where it is passed to a LossScaleOptimizer"
                    self._not_blocking.add(id(node))
                else:
                    message += "; unused now"
                    fix = self.fix("Remove the unused loss-scale object", [remove_statement(facts.index, statement)])
            else:
                message += "; LossScaleOptimizer takes `initial_scale` / `dynamic_growth_steps` instead"
            self.report(node, message, fix=fix)

    # -- policy.loss_scale reads -----------------------------------------------------------------
    def _loss_scale_reads(self) -> list[cst.Attribute]:
        facts = self.facts
        found = []
        for node in facts.index.nodes(cst.Attribute):
            if node.attr.value != "loss_scale":
                continue
            value = node.value
            if isinstance(value, cst.Call) and facts.qualified(value.func) in GLOBAL_POLICY:
                found.append(node)
            elif isinstance(value, cst.Name):
                bound = facts.bindings.values_visible(value, facts.index)
                if bound and all(isinstance(b, cst.Call) and facts.qualified(b.func) in POLICY_CONSTRUCTORS for b in bound):
                    found.append(node)
        return found

    def _check_loss_scale_reads(self) -> None:
        for read in self._loss_scale_reads():
            if id(read) in self._handled_reads:
                continue
            message = "policies have no `loss_scale` since TF 2.4 (" + (
                "AttributeError on a stable policy; experimental ones had it until TF 2.9)" if self.keras2
                else "TF 2.21: AttributeError)")
            holder = self._loss_scale_holder(read) if self._reads_global_policy(read) else None
            if holder is None:
                self.report(read, message + "; read it from the LossScaleOptimizer")
                continue
            text = f"{holder}.loss_scale" if self.keras2 else f"{holder}.scale_loss(1.0)"
            self.report(
                read,
                f"{message}; the loss scale in use is `{text}`",
                fix=self.fix(f"Read `{text}`", [ReplaceText(read, text)], unsafe=True),
            )

    def _reads_global_policy(self, read: cst.Attribute) -> bool:
        facts = self.facts
        value = read.value
        if isinstance(value, cst.Call):
            return True
        assert isinstance(value, cst.Name)
        bound = facts.bindings.values_visible(value, facts.index)
        for policy in bound:
            assert isinstance(policy, cst.Call)
            scale = arg_value(policy, 1, "loss_scale")
            if scale is not None and (loss_scale_of(facts, scale) or LossScale("fixed")).kind != "dynamic":
                return False
            if not self._is_global(policy):
                return False
        return True

    def _loss_scale_holder(self, read: cst.Attribute) -> str | None:
        """The one LossScaleOptimizer (or compiled model's optimizer) in reach of a read."""
        facts = self.facts
        loops = facts.analysis(TrainingLoops)
        module = facts.index.module
        at_module_level = loops.scope_of(read) is module
        candidates: set[str] = set()
        for binding, info in loops.optimizer_bindings():
            if info.generation not in ("current", "experimental") or loops.scope_of(binding.statement) is not module:
                continue
            if at_module_level and not facts.index.before(binding.statement, read):
                continue
            targets = binding.statement.targets if isinstance(binding.statement, cst.Assign) else []
            for target in targets:
                if isinstance(target.target, cst.Name):
                    candidates.add(target.target.value)
        if facts.policy.float16:
            for call in facts.index.nodes(cst.Call):
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value == "compile" and isinstance(func.value, cst.Name) \
                        and loops.scope_of(call) is module and (not at_module_level or facts.index.before(call, read)):
                    candidates.add(f"{func.value.value}.optimizer")
        return candidates.pop() if len(candidates) == 1 else None


def _tf1_rewrite_message(spelled: str, compat: bool, family: str | None) -> str:
    """MP403 in TF 1.x graph code: deprecated, still running where it can, no drop-in change."""
    optimizers = "this TF 1.x optimizer" if family == V1 else "TF 1.x (`tf.compat.v1.train`) optimizers"
    if compat:
        where = f"{spelled} is deprecated TF 1.x mixed precision, but TF 2.21 still runs it with {optimizers}"
    else:
        where = f"{spelled} is deprecated TF 1.x mixed precision, kept in TF 2.21 only under `tf.compat.v1`"
    return (f"{where}; moving off it means moving the model to Keras layers and a Keras optimizer (a mixed_float16 "
            "policy and a LossScaleOptimizer): there is no drop-in change for TF 1.x graph code")


def _keras_rewrite_message(spelled: str, compat: bool, family: str | None, target: Target) -> tuple[str, Severity]:
    """MP403 outside TF 1.x graph code: what TF 2.21 does with this call, and how bad it
    is; where the project says it runs an older TensorFlow that still takes the call,
    what changes when it moves on."""
    keras2 = target.is_keras2
    here = target.tensorflow_named
    if not compat:
        if keras2 and target.runs_before((2, 6)):
            return (f"{spelled} is deprecated since TF 2.4 ({here} still has it); TF 2.6 removed it from the TF 2 API "
                    "(AttributeError; only `tf.compat.v1` keeps it)"), Severity.INFO
        if keras2:
            return (f"{spelled} was removed from the TF 2 API in TF 2.6 (AttributeError; only `tf.compat.v1` "
                    "keeps it)"), Severity.ERROR
        return f"{spelled} is gone from TF 2.21 (AttributeError)", Severity.ERROR
    if family == LEGACY:
        return (f"{spelled} is deprecated: it still runs with this Keras 2 legacy optimizer, but not under a Keras "
                "mixed policy (ValueError); Keras 3 has no legacy optimizers"), Severity.WARNING
    if keras2 and target.runs_before((2, 11)):
        # TF 2.11 made the new optimizers Keras's default; before, Keras optimizers pass
        return (f"{spelled} is deprecated: {here} still takes Keras optimizers, TF 2.11+ reject them (ValueError; "
                "only `tf.keras.optimizers.legacy` ones pass); it raises ValueError under a Keras mixed policy"), \
            Severity.INFO if family is None else Severity.WARNING
    if family == KERAS:
        if keras2:
            return (f"{spelled} rejects TF 2.11+ Keras optimizers but `optimizers.legacy` ones, and any under a Keras "
                    "mixed policy (ValueError)"), Severity.ERROR
        return f"{spelled} rejects Keras 3 optimizers (ValueError)", Severity.ERROR
    return (f"{spelled} is deprecated: it accepts only TF 1.x and Keras 2 legacy optimizers (ValueError for other "
            "Keras optimizers)"), Severity.WARNING


class GraphRewriteApi(MigrationRule):
    """## What it does
    Finds `enable_mixed_precision_graph_rewrite` under every spelling
    (`tf.train.experimental`, `tf.compat.v1.train.experimental`,
    `tf.compat.v1.mixed_precision`, TF 1.x `tf.mixed_precision`) and
    `TF_ENABLE_AUTO_MIXED_PRECISION` set in code.

    ## Why is this bad?
    The graph rewrite is TF 1.x-era mixed precision, deprecated since TF 2.4. What
    TensorFlow 2.21 does with it depends on the code:

    * Keras code: `tf.train.experimental.enable_mixed_precision_graph_rewrite` is gone
      (AttributeError; deprecated in TF 2.4, removed from the TF 2 API in TF 2.6, leaving
      only `tf.compat.v1`'s (`mixed_precision` and `train.experimental`), as the API files of the 2.4-2.6
      wheels show; where the project runs on TF 2.0-2.3 it is that TensorFlow's own API:
      an info, without a fix); the `tf.compat.v1` one rejects Keras 3 optimizers and tf-keras's
      current ones (ValueError; only `tf.keras.optimizers.legacy` ones pass) and, under
      Keras 2, a Keras mixed policy (ValueError). The Keras mixed-precision API replaces
      it: a `mixed_float16` policy set before the model is built, and a
      `LossScaleOptimizer`. Reported as an error.
    * TF 1.x graph code (estimators, sessions, `tf.compat.v1`), whose optimizer is a
      `tf.compat.v1.train` optimizer, a subclass of one or a Horovod/TPU-wrapped one: the
      `tf.compat.v1` rewrite still runs. It is deprecated, not broken, and there is no
      drop-in replacement: Keras optimizers have no TF 1.x `minimize(global_step=...)`,
      and a Keras policy does nothing for `tf.layers`/`tf.compat.v1` ops. Reported as
      info, without a fix.
    * `TF_ENABLE_AUTO_MIXED_PRECISION` is a switch of NVIDIA's NGC TensorFlow
      containers; TensorFlow 2.21 ignores it, so Keras code that relies on it trains in
      float32 (a warning, with the policy as fix). In TF 1.x graph code it is reported
      as info. Beside a graph rewrite that the file, or a project module it imports,
      applies, it is an info that the switch can go. Where the project builds on an NGC image (a Dockerfile `FROM
      nvcr.io/nvidia/tensorflow:...`, also `docker/dockerfile_*`), the premise that stock
      TensorFlow runs the code conflicts with it: the extended tier.
    * Where the project says it runs an older TensorFlow that still takes the call (its
      pins or image: `tensorflow==2.5.0`, `tf-nightly==2.8.0.dev...`), the message says so
      and it is an info: the TF 2 spelling before TF 2.6, the `tf.compat.v1` one with
      Keras optimizers before TF 2.11 (the new optimizers became Keras's default there).
    * A project whose pins or container image say TensorFlow 1.x (`tensorflow==1.15`, a
      `FROM tensorflow/tensorflow:1.15.2-gpu-py3` image beside a `Keras==2.3.1` pin) runs
      the rewrite where it is the current API: not reported.

    ## Example
    ```python
    model = tf.keras.Sequential([...])
    opt = tf.keras.optimizers.SGD()
    opt = tf.train.experimental.enable_mixed_precision_graph_rewrite(opt)
    ```

    ## Use instead
    ```python
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    model = tf.keras.Sequential([...])
    opt = tf.keras.optimizers.SGD()
    opt = tf.keras.mixed_precision.LossScaleOptimizer(opt)
    ```

    ## Fix safety
    Unsafe: layers then compute in float16 under the Keras policy rather than under the
    graph rewrite's op lists, so outputs must be float32 (MP101 then fixes them) and
    custom loops must scale the loss (MP201/MP202 then fix them). The rewrite call
    becomes a `LossScaleOptimizer` in place, keeping whatever condition it ran under
    (`loss_scale=N` mapped as for MP401). The policy is set after the imports that
    precede the first model or layer of the module.

    The policy keeps the rewrite's condition too: under `if FLAGS.amp:` (or an `else`,
    or `... if amp else ...`) the fix sets it under the same condition, after the
    imports (after the statements that set the condition's names) when the rewrite
    runs at module level, else at the start of the function that runs the rewrite when
    that function builds the model (or right after the statement that binds the
    condition's names, when that comes before the model is built). No fix when the condition has side effects, when
    its names are not set yet where the policy must go, or when the function does not
    build the model (an optimizer factory): the message says so. An environment switch
    (`os.environ["TF_ENABLE_AUTO_MIXED_PRECISION"] = "1"`) becomes the policy in its
    place, so its own `if` stays around it; a conditional value (`"1" if args.amp else
    "0"`) becomes `if args.amp:` around the policy. TF 1.x optimizers
    (`tf.compat.v1.train.*Optimizer`) and TF 1.x graph code are
    reported without a fix.
    """

    code = "MP403"
    premises = ("keras-target",)
    depends_on_target = True
    name = "graph-rewrite-api"
    severity = Severity.ERROR
    fix_availability = FixAvailability.SOMETIMES

    def check(self) -> None:
        facts = self.facts
        for call in facts.calls_to(GRAPH_REWRITE):
            self._rewrite_call(call)
        self._environment()

    def _rewrite_call(self, call: cst.Call) -> None:
        facts = self.facts
        loops = facts.analysis(TrainingLoops)
        keras2 = facts.target.is_keras2
        qualified = facts.qualified(call.func) or ""
        spelled = f"`{qualified.replace('tensorflow.', 'tf.', 1)}`"
        compat = qualified.startswith("tensorflow.compat.v1.")
        optimizer = arg_value(call, 0, "opt")
        family = optimizer_family(facts, optimizer)
        declared = project_tensorflow(os.path.dirname(os.path.abspath(facts.path)))
        if (declared is not None and declared.tf1) or facts.target.tf1_code:
            # the project runs TF 1.x (its pins or image), or the file can run nowhere else (it
            # calls `tf.Session`, `tf.contrib`): this is that TensorFlow's mixed-precision API
            return
        if family == V1 or (family is None and is_tf1_graph_code(facts)):
            self.report(call, _tf1_rewrite_message(spelled, compat, family), severity=Severity.INFO)
            return
        if not compat and facts.tensorflow_target.before_stable_api:
            # TF 2.0-2.3: this spelling is that TensorFlow's own graph rewrite API
            self.report(call, f"{spelled} is the graph rewrite API of the TensorFlow older than 2.4 this project runs "
                        f"on ({facts.tensorflow_target.reason}); TF 2.6 removed this spelling (AttributeError from then "
                        "on): use the Keras mixed-precision API when the project moves to TF 2.4 or newer",
                        severity=Severity.INFO)
            return
        message, severity = _keras_rewrite_message(spelled, compat, family, facts.tensorflow_target)
        scale = loss_scale_of(facts, arg_value(call, 1, "loss_scale")) if get_arg(call, 1, "loss_scale") else LossScale("dynamic")
        info = loops.evaluate(optimizer) if optimizer is not None else None
        if optimizer is None or scale is None or (info is not None and info.kind == "v1"):
            why = "a TF 1.x optimizer" if info is not None and info.kind == "v1" else "these arguments"
            self.report(call, f"{message}; use the Keras mixed-precision API (no automatic fix for {why})", severity=severity)
            return
        hint = optimizer if isinstance(optimizer, cst.Call) else call
        # the rewrite cast the graph wherever it ran: the policy must be in effect there
        policy = set_mixed_float16(facts, hint, at=call)
        spelling = mixed_precision_module(facts, hint, at=call)
        if policy is None or spelling is None:
            self.report(call, f"{message}; use the Keras mixed-precision API", severity=severity)
            return
        importers = facts.project.importers() if facts.project is not None else ()
        if policy and importers and facts.analysis(TrainingLoops).scope_of(call) is not facts.index.module:
            # the rewrite runs when a function is called; a policy at the module's top
            # would run whenever another module imports it (and change that program)
            self.report(call, f"{message}; use the Keras mixed-precision API (no fix: `{importers[0]}` imports this "
                        "module, and a policy set at its top would apply there too: set the mixed_float16 policy "
                        "where the model is built)", severity=severity)
            return
        module, extra = spelling
        guard = guard_of(facts.index, call)
        if policy and guard:
            policy, why = self._guarded_policy(call, guard, hint)
            if policy is None:
                self.report(call, f"{message}; use the Keras mixed-precision API (no fix: {why})", severity=severity)
                return
            extra = [c for c in extra if c not in policy]
        parent = facts.index.parent_of(call)
        changes: list[Change] = list(policy)
        if isinstance(parent, cst.Expr):
            statement = facts.index.statement_of(call)
            if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
                self.report(call, f"{message}; use the Keras mixed-precision API", severity=severity)
                return
            changes.append(remove_statement(facts.index, statement))  # the returned optimizer was not used
        else:
            wrapped = cst.Call(func=cst.parse_expression(f"{module}.LossScaleOptimizer"), args=[cst.Arg(value=optimizer)])
            changes.append(Replace(call, _with_keywords(wrapped, scale.keywords(keras2))))
            if extra and not any(isinstance(c, InsertAfter) and "import" in c.code for c in policy):
                changes += extra  # (a policy set after the imports brings the import along)
        note = scale.note(facts, keras2)
        self.report(
            call,
            f"{message}; use the mixed_float16 policy and a LossScaleOptimizer"
            + "; set the policy before the model is built" + (f"; {note}" if note else ""),
            fix=self.fix("Use the Keras mixed-precision API", changes, unsafe=True),
            severity=severity,
        )

    def _guarded_policy(self, call: cst.Call, guard: Guard, hint: cst.BaseExpression) -> tuple[list[Change] | None, str]:
        """Set the policy under the condition the graph rewrite ran under (`if FLAGS.amp:`):
        after the imports when the rewrite is at module level, else at the start of its
        function, when that function builds the model. (None, why) when it cannot be."""
        facts = self.facts
        condition = condition_text(facts.module, guard)
        if not all(side_effect_free(test) for test, _ in guard):
            return None, f"the graph rewrite runs only when `{condition}`, which has side effects"
        placed = mixed_float16_policy(facts, hint)
        if placed is None:
            return None, "no place to set the policy"
        scope = facts.analysis(TrainingLoops).scope_of(call)
        first = scope.body.body[0] if isinstance(scope, cst.FunctionDef) and isinstance(scope.body, cst.IndentedBlock) else None
        spelling = mixed_precision_module(facts, hint, at=first)
        if spelling is None:
            return None, "no place to set the policy"
        module, extra = spelling
        block = f'if {condition}:\n{facts.module.default_indent}{module}.set_global_policy("mixed_float16")'
        names = {n.value for test, _ in guard for n in [test, *facts.index.descendants(test)]
                 if isinstance(n, cst.Name) and names_a_variable(facts.index, n)}
        if scope is facts.index.module:
            text, anchor = placed
            rewrite = facts.index.top_level_statement(call)
            for name in sorted(names):  # after the statements that set the condition's names
                for site in facts.bound_names.sites.get((id(scope), name), []):
                    top = facts.index.top_level_statement(site.node)
                    if top is not None and rewrite is not None and facts.index.before(top, rewrite) \
                            and facts.index.before(anchor, top):
                        anchor = top
            build = first_model_statement(facts)
            if build is not None and not facts.index.before(anchor, build):
                return None, (f"the graph rewrite runs only when `{condition}`, which is decided after the model is "
                              "built: set the mixed_float16 policy under that condition before the model is built")
            change: Change = InsertAfter(anchor, "\n".join([*text.split("\n")[:-1], block]))
            at, after = anchor, True
        elif isinstance(scope, cst.FunctionDef) and first is not None:
            if not _builds_model(facts, scope):
                return None, (f"the graph rewrite runs only when `{condition}`, in `{scope.name.value}`, which builds no "
                              "Keras model itself: set the mixed_float16 policy under that condition before the model "
                              "is built")
            binder = _last_binding_before_the_model(facts, scope, names)
            if binder is not None:  # `FLAGS = parser.parse_args()` first: the policy goes right after it
                change = InsertAfter(binder, block)
                at, after = binder, True
            else:
                docstring = isinstance(first, cst.SimpleStatementLine) and isinstance(first.body[0], cst.Expr) \
                    and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
                change = InsertAfter(first, block) if docstring else InsertBefore(first, block)
                at, after = first, docstring
            change = [change, *extra]  # type: ignore[assignment]
        else:
            return None, "no place to set the policy"
        unbound = sorted(n for n in names if not facts.bound_names.is_bound(n, at, after=after))
        if unbound:
            return None, (f"the graph rewrite runs only when `{condition}`, and `{unbound[0]}` is not set yet where the policy "
                          "must be set: set the mixed_float16 policy under that condition before the model is built")
        return (change if isinstance(change, list) else [change]), ""

    def _environment(self) -> None:
        facts = self.facts
        for node in facts.index.nodes(cst.Assign):
            for target in node.targets:
                subscript = target.target
                if isinstance(subscript, cst.Subscript) and facts.qualified(subscript.value) == "os.environ" \
                        and len(subscript.slice) == 1 and isinstance(subscript.slice[0].slice, cst.Index) \
                        and string_value(subscript.slice[0].slice.value) == AUTO_MIXED_PRECISION_ENV:
                    self._env_setting(node, node.value)
        for call in facts.calls_to("os.environ.setdefault", "os.putenv"):
            if string_value(arg_value(call, 0)) == AUTO_MIXED_PRECISION_ENV:
                self._env_setting(call, arg_value(call, 1))

    def _ngc_declared(self) -> tuple:
        """The build premise where the project's image is NGC's (it contradicts the advice
        to keep the switch "for NGC" or port): the advice itself holds on any TensorFlow."""
        build = stock_tensorflow_premise(self.facts)
        return (build,) if build.status is Status.CONFLICTING else ()

    def _env_setting(self, node: cst.CSTNode, value: cst.BaseExpression | None) -> None:
        facts = self.facts
        text = string_value(value) if value is not None else None
        if text is not None and text.strip().lower() in ("0", "false", ""):
            return
        keras = _uses_keras(facts)
        if not keras or (is_tf1_graph_code(facts) and not facts.policy.global_settings):
            if self._graph_rewrite_counts(node):
                return
            what = "this TF 1.x graph code" if is_tf1_graph_code(facts) else "this code"
            self.report(node, f"`{AUTO_MIXED_PRECISION_ENV}` works only in NVIDIA's NGC containers: keep it for them, "
                              "or port the model to Keras",
                        severity=Severity.INFO, premises=self._ngc_declared(),
                        detail=f"TensorFlow 2.21 ignores it; {what} has no Keras model to move to a mixed_float16 policy")
            return
        if sets_mixed_float16(facts) and late_mixed_settings(facts):
            self.report(node, f"`{AUTO_MIXED_PRECISION_ENV}` is ignored outside NGC containers and the policy comes "
                              "after the model: set the policy before the model is built", severity=Severity.WARNING,
                        detail="TensorFlow 2.21 ignores the switch, and the mixed_float16 policy this code sets comes "
                               "after its model is built (MP102), so this code trains in float32")
            return
        if sets_mixed_float16(facts):
            # the policy this code sets is what enables mixed precision outside NGC
            statement = facts.index.statement_of(node)
            fix = None
            if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and not isinstance(value, cst.IfExp):
                fix = self.fix("Remove the switch", [remove_statement(facts.index, statement)], unsafe=True)
            self.report(node, f"`{AUTO_MIXED_PRECISION_ENV}` is ignored outside NGC containers, where the Keras policy "
                              "this code sets counts: the switch can go", fix=fix, severity=Severity.INFO)
            return
        if self._graph_rewrite_counts(node):
            return
        # "trains in float32" holds only on stock TensorFlow: in an NGC container the switch works.
        build = stock_tensorflow_premise(facts)
        message = (f"`{AUTO_MIXED_PRECISION_ENV}` is ignored outside NVIDIA's NGC containers, so this trains in "
                   "float32: set the mixed_float16 policy instead")
        statement = facts.index.statement_of(node)
        fix = None
        guard: Guard = []
        if isinstance(value, cst.IfExp):  # `= "1" if args.amp else "0"`: the policy goes under that condition
            on, off = string_value(value.body), string_value(value.orelse)
            if on is None or off is None or _switches_on(on) == _switches_on(off) or not side_effect_free(value.test):
                self.report(node, message, premises=(build,), detail=_ENV_DETAIL)
                return
            guard = [(value.test, not _switches_on(on))]
        if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
            changes = self._policy_instead_of(statement, guard)
            if changes is not None:
                fix = self.fix("Set the mixed_float16 policy instead", changes, unsafe=True)
        self.report(node, message, fix=fix, severity=Severity.WARNING, premises=(build,), detail=_ENV_DETAIL)

    def _graph_rewrite_counts(self, node: cst.CSTNode) -> bool:
        """Report the switch as redundant where the graph rewrite gives the code its mixed
        precision outside NGC: called here, or by a project module imported here (the
        model code a script loads). Whether it was reported."""
        facts = self.facts
        rewrite = next((c for c in facts.calls_by_name if c in GRAPH_REWRITE), None)
        if rewrite is not None:
            where = f"this code calls (`{rewrite.rsplit('.', 1)[-1]}`)"
        else:
            imported = facts.project.graph_rewrite_imported() if facts.project is not None else None
            if imported is None:
                return False
            where = f"that {imported} (imported here) calls"
        self.report(node, f"`{AUTO_MIXED_PRECISION_ENV}` is ignored outside NGC containers, where the graph rewrite "
                          f"{where} counts: the switch can go",
                    severity=Severity.INFO, premises=self._ngc_declared(),
                    detail="TensorFlow 2.21 ignores the switch; MP403 reports the graph rewrite where it is called")
        return True

    def _policy_instead_of(self, statement: cst.SimpleStatementLine, guard: Guard) -> list[Change] | None:
        """Replace the statement that sets the environment variable by the policy (under
        the variable's own condition, if any), where the names the policy needs are
        imported; else remove it and set the policy after the imports."""
        facts = self.facts
        if sets_mixed_float16(facts):
            return [remove_statement(facts.index, statement)]
        placed = mixed_float16_policy(facts)
        if placed is None:
            return None
        text, anchor = placed
        top_level = facts.index.parent_of(statement) is facts.index.module
        if guard:
            if "\n" in text or not facts.index.before(anchor, statement):
                return None
            block = f"if {condition_text(facts.module, guard)}:\n{facts.module.default_indent}{text}\n"
            return [Replace(statement, cst.parse_statement(block).with_changes(leading_lines=statement.leading_lines))]
        if facts.index.before(anchor, statement) and (top_level or "\n" not in text):
            return [ReplaceText(statement.body[0], text)]
        if not top_level:
            return None
        return [remove_statement(facts.index, statement), InsertAfter(anchor, text)]


def _uses_keras(facts) -> bool:
    """Whether the module builds or uses Keras objects (models, layers, optimizers, a
    Keras policy): a Keras mixed policy can replace the environment switch there."""
    return bool(facts.policy.global_settings) or any(
        name.startswith(("keras.", "tensorflow.keras.", "tf_keras.")) for name in facts.calls_by_name)


class LossScaleApiMismatch(MigrationRule):
    """## What it does
    Finds the other Keras generation's `LossScaleOptimizer` API for the file's target:
    Keras 2 `get_scaled_loss` / `get_unscaled_gradients` and `dynamic=False` under Keras
    3, Keras 3 `scale_loss` under Keras 2. Calls on an experimental `LossScaleOptimizer`
    (TF 2.1-2.8, or the one TF 2.x's graph rewrite returns) are not reported: that
    optimizer has these methods, MP401/MP403 report its constructor, and the calls are
    reported once it has been migrated. Keras 2 calls on an optimizer built plain (never
    wrapped in a `LossScaleOptimizer`) are reported as what they are, without a fix: no
    Keras has them there, and `scale_loss` would scale nothing; the wrap is missing.

    ## Why is this bad?
    A Keras 3 `LossScaleOptimizer` has no `get_scaled_loss` / `get_unscaled_gradients`
    (AttributeError) and refuses `dynamic=False` (ValueError); a Keras 2 one has no
    `scale_loss` (AttributeError). Code written for one breaks on the other, typically
    after upgrading to TensorFlow 2.16+.

    ## Example
    ```python
    # Keras 3
    with tf.GradientTape() as tape:
        scaled_loss = optimizer.get_scaled_loss(loss)
    grads = optimizer.get_unscaled_gradients(tape.gradient(scaled_loss, variables))
    ```

    ## Use instead
    ```python
    # Keras 3: apply()/apply_gradients() unscale by themselves
    with tf.GradientTape() as tape:
        scaled_loss = optimizer.scale_loss(loss)
    grads = tape.gradient(scaled_loss, variables)
    ```

    ## Fix safety
    Under Keras 3, a loop's `get_scaled_loss` -> `scale_loss` and its
    `get_unscaled_gradients(g)` -> `g` are one fix over both findings, applied
    together or not at all (either alone fails on both Kerases; a `# noqa` on one keeps
    the other unfixed too). Calls whose partner is in another function are all one
    group. `grads = opt.get_unscaled_gradients(grads)` is removed; when it is the only
    statement of an `if` whose test has no side effects (`if amp:`, `if
    isinstance(opt, LossScaleOptimizer):`) and holds no comment, the `if` goes too,
    else it becomes `pass`.

    Keras 3 unscales only inside `apply`, so dropping the unscale leaves the gradients
    multiplied by the loss scale until then. The fix is safe when they reach the
    LossScaleOptimizer's `apply` and nothing else reads them. A plain clip on the way
    (`tf.clip_by_global_norm(grads, C)` with its norm unused, `clip_by_norm` or
    symmetric `clip_by_value` per gradient) makes the fix unsafe: the clip moves onto
    the inner optimizer built in this module (`global_clipnorm`, `clipnorm`,
    `clipvalue`), which Keras 3 runs on unscaled gradients, but then wherever that
    optimizer is used. No fix, with the use named in the message, when anything else
    reads them (a logged norm, accumulation, an all-reduce, a public function or
    method returning them to other modules), when another optimizer applies some of
    them, when the loop also divides them by the loss scale by hand, or when the clip's
    optimizer is not built here. A `get_scaled_loss` whose gradients leave the function
    with no `get_unscaled_gradients` in sight gets an unsafe fix (they must reach the
    LossScaleOptimizer's `apply` unchanged).

    Under Keras 2, `scale_loss` becomes `get_scaled_loss` and the gradients of that
    loss are unscaled where they are computed (no fix when that loop is not found):
    safe. Dropping `dynamic=False` under Keras 3 is unsafe: the scale becomes dynamic.
    """

    code = "MP404"
    premises = ("keras-target",)
    depends_on_target = True
    name = "loss-scale-api-mismatch"
    severity = Severity.ERROR
    fix_availability = FixAvailability.SOMETIMES

    def check(self) -> None:
        facts = self.facts
        loops = facts.analysis(TrainingLoops)
        if facts.target.is_keras3:
            calls = [call for call in loops.method_calls("get_scaled_loss", "get_unscaled_gradients")
                     if self._keras2_method_call(loops, call)]
            receivers = {id(call): loops.optimizer(call.func.value, call) for call in calls}  # type: ignore[union-attr]
            for call in calls:
                if receivers[id(call)].is_plain:
                    self._plain_optimizer(call, receivers[id(call)].label)
            calls = [call for call in calls if not receivers[id(call)].is_plain]
            for together in _migrated_together(loops, calls):
                self._keras2_methods(loops, together)
            for call in facts.calls_to(LSO_CURRENT):
                self._dynamic_false(call)
        else:
            for call in loops.method_calls("scale_loss"):
                self._keras3_method(loops, call)

    def _receiver_is_optimizer(self, loops: TrainingLoops, call: cst.Call, method: str) -> bool:
        """`get_scaled_loss` / `get_unscaled_gradients` are LossScaleOptimizer methods, unless
        the module defines its own; they count on a known optimizer in any case."""
        receiver = call.func.value  # type: ignore[union-attr]
        return loops.optimizer(receiver, call).origin != "unknown" or not loops.defines(method)

    def _guarded(self, call: cst.Call, method: str) -> bool:
        """Under `if hasattr(opt, "get_scaled_loss"):` (either Keras 2 method, or `... if
        hasattr(...) else ...`; `"get_scaled_loss" in dir(opt)` alike: analysis.guards.capability_tests), or `if isinstance(opt, <an experimental or
        tensorflow.python.keras LossScaleOptimizer>):`: code that runs only where the
        Keras 2 methods exist."""
        facts = self.facts
        methods = {method, "get_scaled_loss", "get_unscaled_gradients"} if method != "scale_loss" else {method}
        for ancestor in facts.index.ancestors(call):
            test = ancestor.test if isinstance(ancestor, (cst.If, cst.IfExp)) else None
            if test is None:
                continue
            if capability_tests(facts.index, test) & _SCALING_METHODS:
                # code that asks the optimizer which loss-scaling API it has adapts to
                # either Keras, in both branches
                return True
            for node in [test, *facts.index.descendants(test)]:
                if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name)):
                    continue
                classes = arg_value(node, 1)  # `isinstance(opt, (A, B))` too
                if node.func.value == "isinstance" and method != "scale_loss" and classes is not None:
                    for klass in [classes, *facts.index.descendants(classes)]:
                        qualified = facts.qualified(klass) if isinstance(klass, (cst.Name, cst.Attribute)) else None
                        if qualified and qualified.endswith("LossScaleOptimizer") \
                                and ("experimental" in qualified or "tensorflow.python.keras" in qualified):
                            return True
        return False

    def _object_keras(self, info) -> str | None:
        """The Keras the optimizer's class comes from (mplint.facts.target.object_keras)."""
        wrapper = getattr(info, "wrapper", None)
        if wrapper is None:
            return None
        return object_keras(self.facts.names.raw(wrapper.func), self.facts.imports.imported_modules)

    def _plain_optimizer(self, call: cst.Call, label: str) -> None:
        """`get_scaled_loss` on an optimizer built plain (never wrapped): no Keras has it
        there, and `scale_loss` would not scale anything; the wrap is what is missing."""
        method = call.func.attr.value  # type: ignore[union-attr]
        self.report(call, f"`{label}` is a plain optimizer, not a LossScaleOptimizer: it has no `{method}` "
                    "(AttributeError on Keras 2 and 3); wrap it in a LossScaleOptimizer where it is built",
                    detail="no fix: renaming the call would leave the loss unscaled")

    def _keras2_method_call(self, loops: TrainingLoops, call: cst.Call) -> bool:
        method = call.func.attr.value  # type: ignore[union-attr]
        if self._object_keras(loops.optimizer(call.func.value, call)) == KERAS2:  # type: ignore[union-attr]
            return False  # a tf_keras LossScaleOptimizer: its Keras 2 methods are right
        receiver = loops.optimizer(call.func.value, call)  # type: ignore[union-attr]
        held = [receiver.generation] + [o.generation for o in loops.alternatives(call.func.value, call)]  # type: ignore[union-attr]
        if any(generation in ("experimental", "graph_rewrite") for generation in held):
            # the TF 2.1-2.8 experimental LossScaleOptimizer (also what TF 2.x's graph
            # rewrite returns for a Keras optimizer) has these methods: MP401/MP403 report
            # its constructor, and this call becomes a mismatch only once that migrates.
            # Also where it is one of what the attribute can hold (the others being plain
            # optimizers, which have no loss-scaling method at all): the call is written for it
            return False
        return self._receiver_is_optimizer(loops, call, method) and len(positional(call)) == 1 \
            and not self._guarded(call, method)

    def _keras2_methods(self, loops: TrainingLoops, calls: list[cst.Call]) -> None:
        """Migrate the Keras 2 scaling calls of one loop together (a fix group): renaming
        `get_scaled_loss` without dropping `get_unscaled_gradients`, or the reverse, fails
        on both Kerases. Dropping the unscale leaves the gradients scaled until `apply`:
        nothing may read them on the way (a plain clip moves onto the inner optimizer,
        unsafely); otherwise neither call is fixed."""
        facts = self.facts
        changes: dict[int, list[Change]] = {}
        blocked: str | None = None
        notes: list[str] = []
        steps = [s for s in loops.steps if (s.scaling is not None and s.scaling.call in calls) or s.unscale in calls]
        for call in calls:
            if call.func.attr.value == "get_scaled_loss":  # type: ignore[union-attr]
                changes[id(call)] = [ReplaceText(call.func.attr, "scale_loss")]  # type: ignore[union-attr]
                continue
            step = next((s for s in steps if s.unscale is call), None)
            info = step.optimizer if step is not None and step.optimizer is not None \
                else loops.optimizer(call.func.value, call)  # type: ignore[union-attr]
            clipping, inner, why = keras3_scaled_until_apply(facts, loops, gradient_uses(loops, call), call.func.value, info)  # type: ignore[union-attr]
            if why:
                blocked = blocked or f"dropping `get_unscaled_gradients` is not safe here: {why}"
                continue
            changes[id(call)] = [self._drop_unscale(call), *clipping]
            if inner is not None:
                assert info is not None and info.built is not None
                changes[id(call)].append(Replace(info.built, inner))
                notes.append(moved_clip_note(inner))
        if any(s.manual_unscale for s in steps):
            blocked = "the gradients are also divided by the loss scale by hand, and Keras 3's `apply` would divide them again"
        if not any(c.func.attr.value == "get_unscaled_gradients" for c in calls) \
                and not any(s.apply is not None for s in steps if s.scaling is not None and s.scaling.call in calls):
            notes.append("where the gradients go is not in this function: they must reach the LossScaleOptimizer's "
                         "`apply` unchanged, which unscales them")
        group = FixGroup(len(calls), "the Keras 3 migration of this loop's loss scaling") if len(calls) > 1 else None
        for call in calls:
            if call.func.attr.value == "get_scaled_loss":  # type: ignore[union-attr]
                message = "Keras 3 LossScaleOptimizers have no `get_scaled_loss` (AttributeError): use `scale_loss`"
                title = "Use `scale_loss`"
            else:
                message = ("Keras 3 LossScaleOptimizers have no `get_unscaled_gradients` (AttributeError): "
                           "`apply`/`apply_gradients` unscale the gradients themselves")
                title = "Drop `get_unscaled_gradients`"
            fix = None
            if blocked:
                message += f"; no fix: {blocked}"
            else:
                message += "".join(f"; {note}" for note in notes)
                fix = self.fix(title, changes[id(call)], unsafe=bool(notes), group=group)
            self.report(call, message, fix=fix)

    def _drop_unscale(self, call: cst.Call) -> Change:
        """`g = opt.get_unscaled_gradients(h)` -> `g = h`; the statement goes when `g` is `h`
        (also for `g = opt.get_unscaled_gradients(g) if amp else g`)."""
        facts = self.facts
        argument = positional(call)[0].value
        dropped: cst.BaseExpression = call
        parent = facts.index.parent_of(call)
        if isinstance(parent, cst.IfExp) and parent.test is not call \
                and code(facts, parent.orelse if parent.body is call else parent.body) == code(facts, argument):
            dropped, parent = parent, facts.index.parent_of(parent)
        statement = facts.index.statement_of(call)
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(argument, cst.Name) \
                and isinstance(parent.targets[0].target, cst.Name) and parent.targets[0].target.value == argument.value \
                and isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
            return remove_statement(facts.index, statement)
        return Replace(dropped, argument)

    def _dynamic_false(self, call: cst.Call) -> None:
        facts = self.facts
        arg = get_arg(call, 1, "dynamic")
        if arg is None:
            return
        value = facts.values.resolve(arg.value)
        if value is None or value.value is not False:
            return
        initial = arg_value(call, 2, "initial_scale")
        n = code(facts, initial) if initial is not None else "32768"
        self.report(
            call,
            "Keras 3 LossScaleOptimizers refuse `dynamic=False` (ValueError): drop it for a dynamic scale "
            f"starting at {n}; " + KERAS3_NO_FIXED.format(n=n),
            fix=self.fix("Drop `dynamic=False`", [Replace(call, without_arg(call, arg))], unsafe=True)
            if arg.keyword is not None else None,
        )

    def _keras3_method(self, loops: TrainingLoops, call: cst.Call) -> None:
        facts = self.facts
        receiver = call.func.value  # type: ignore[union-attr]
        if self._guarded(call, "scale_loss"):
            return
        info = loops.optimizer(receiver, call)
        step = loops.step_scaled_by(call)
        applied_by_it = step is not None and step.receiver is not None and code(facts, step.receiver) == code(facts, receiver)
        if info.origin == "unknown" and not applied_by_it:
            return  # `scale_loss` of something that may not be an optimizer at all
        if self._object_keras(info) == KERAS3:
            return  # the optimizer's own module makes it a Keras 3 one: `scale_loss` is right
        message = "Keras 2 LossScaleOptimizers have no `scale_loss` (AttributeError): use `get_scaled_loss` and unscale the gradients with `get_unscaled_gradients`"
        fix = None
        if step is not None and step.kind == "tape":
            changes: list[Change] = [ReplaceText(call.func.attr, "get_scaled_loss")]  # type: ignore[union-attr]
            if step.unscale is None and not step.manual_unscale:
                changes += unscale_gradients(facts, step, code(facts, receiver))
            fix = self.fix("Use `get_scaled_loss` and `get_unscaled_gradients`", changes)
        self.report(call, message, fix=fix)


def _migrated_together(loops: TrainingLoops, calls: list[cst.Call]) -> list[list[cst.Call]]:
    """The calls in groups that one loop's loss scaling ties together: a step's
    `get_scaled_loss` and its `get_unscaled_gradients` (also across the branches of
    `if amp:` that share one scaled loss). Calls whose partner is not found (the
    gradients go to another function) are all migrated together, or not at all."""
    parent = list(range(len(calls)))
    position = {id(c): i for i, c in enumerate(calls)}

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for step in loops.steps:
        scaling = step.scaling.call if step.scaling is not None else None
        members = [position[id(c)] for c in (scaling, step.unscale) if c is not None and id(c) in position]
        for other in members[1:]:
            parent[root(other)] = root(members[0])
    groups: dict[int, list[cst.Call]] = {}
    for i, call in enumerate(calls):
        groups.setdefault(root(i), []).append(call)
    paired, unpaired = [], []
    for group in groups.values():
        methods = {c.func.attr.value for c in group}  # type: ignore[union-attr]
        (paired if len(methods) == 2 else unpaired).append(group)
    if len(unpaired) > 1 and {c.func.attr.value for g in unpaired for c in g} == {"get_scaled_loss", "get_unscaled_gradients"}:  # type: ignore[union-attr]
        unpaired = [[c for g in unpaired for c in g]]
    return paired + unpaired


def _switches_on(value: str) -> bool:
    return value.strip().lower() not in ("0", "false", "")


def _last_binding_before_the_model(facts, function: cst.FunctionDef, names: set[str]) -> cst.CSTNode | None:
    """The last statement of the function's body that binds one of `names` (the
    condition's), when it comes before the first statement that builds the model: the
    policy can go right after it."""
    if not names or not isinstance(function.body, cst.IndentedBlock):
        return None
    body = list(function.body.body)
    first_build = next((i for i, statement in enumerate(body) if _builds_model(facts, statement)), None)
    if first_build is None:
        return None
    last = None
    for statement in body[:first_build]:
        for node in [statement, *facts.index.descendants(statement)]:
            if isinstance(node, (cst.AssignTarget, cst.AnnAssign)):
                target = node.target
                bound = {n.value for n in [target, *facts.index.descendants(target)] if isinstance(n, cst.Name)}
                if bound & names:
                    last = statement
    return last


def _builds_model(facts, function: cst.CSTNode, depth: int = 0) -> bool:
    """Whether the function (or statement) builds Keras layers or models (itself or
    through functions of the module it calls)."""
    for node in facts.index.descendants(function):
        if not isinstance(node, cst.Call):
            continue
        if (facts.qualified(node.func) or "").startswith(KERAS_BUILDERS):
            return True
        if depth < 2 and isinstance(node.func, cst.Name):
            called = next((f for f in facts.module.body if isinstance(f, cst.FunctionDef) and f.name.value == node.func.value), None)
            if called is not None and called is not function and _builds_model(facts, called, depth + 1):
                return True
    return False
