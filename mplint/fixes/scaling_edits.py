"""Edits shared by the loss-scaling (MP2xx) and migration (MP4xx) fixes.

How a file spells `keras.mixed_precision`, wrapping an optimizer in a
`LossScaleOptimizer`, scaling a gradient target inside its tape and unscaling the
gradients, each written for the file's Keras target.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mplint.analysis.calls import get_arg, has_star_args, keyword_names, with_keyword
from mplint.analysis.names import canonical
from mplint.fixes.removal import remove_statement
from mplint.facts.gradient_uses import Clip, GradientUses
from mplint.facts.training import GradientStep, OptimizerInfo, TrainingLoops
from mplint.catalogue.rule import Change, InsertAfter, InsertBefore, Replace, ReplaceText

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts


def code(facts: "ModuleFacts", node: cst.CSTNode) -> str:
    return facts.module.code_for_node(node)


def scale_method(facts: "ModuleFacts") -> str:
    return "get_scaled_loss" if facts.target.is_keras2 else "scale_loss"


def method_call(receiver: str, method: str, argument: cst.BaseExpression) -> cst.Call:
    """`receiver.method(argument)`, keeping the argument node (and its formatting)."""
    return cst.Call(
        func=cst.Attribute(value=cst.parse_expression(receiver), attr=cst.Name(method)),
        args=[cst.Arg(value=argument)],
    )


# -- spelling keras.mixed_precision ------------------------------------------------------

def mixed_precision_module(facts: "ModuleFacts", hint: cst.BaseExpression | None = None,
                           at: cst.CSTNode | None = None) -> tuple[str, list[Change]] | None:
    """How this file can name `keras.mixed_precision` (e.g. `tf.keras.mixed_precision`),
    plus an import to add when it cannot yet. `hint` is a Keras call of the file whose
    spelling is followed (`tf.keras.optimizers.Adam` -> `tf.keras.mixed_precision`);
    `at`, where the name is used: an imported name must be bound there (in a notebook,
    imported in that cell or an earlier one), and an added import goes before it."""
    node = hint.func if isinstance(hint, cst.Call) else hint
    while isinstance(node, cst.Attribute):
        node = node.value
        qualified = facts.qualified(node)
        if qualified == "keras":
            return code(facts, node) + ".mixed_precision", []
        if qualified == "keras.mixed_precision":
            return code(facts, node), []
    aliases = facts.imports.aliases
    shadowed = set(facts.bindings.module_values)
    for wanted, suffix in (("keras.mixed_precision", ""), ("keras", ".mixed_precision"), ("tensorflow", ".keras.mixed_precision")):
        for local, full in aliases.items():
            if local not in shadowed and "." not in local and canonical(full) == wanted \
                    and (at is None or facts.bound_names.is_bound(local, at)):
                return local + suffix, []
    imports = [s for s in facts.module.body if _is_import_line(s)]
    if "tf" in shadowed or aliases.get("tf", "tensorflow") != "tensorflow":
        return None
    top = facts.index.top_level_statement(at) if at is not None else None
    earlier = [s for s in imports if top is None or facts.index.before(s, top)]
    if earlier:
        return "tf.keras.mixed_precision", [InsertAfter(earlier[-1], "import tensorflow as tf")]
    if top is not None:
        return "tf.keras.mixed_precision", [InsertBefore(top, "import tensorflow as tf")]
    return None


def _is_import_line(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body
    )


def wrap_optimizer(facts: "ModuleFacts", built: cst.Call, inner: cst.Call | None = None) -> list[Change] | None:
    """Wrap the optimizer constructor call `built` in a LossScaleOptimizer, in place
    (`inner`: the constructor as it should read inside, e.g. with a clipping argument).
    None on a project whose TensorFlow predates 2.4: its only LossScaleOptimizer is the
    experimental one, with another signature, and the current name does not exist there."""
    if facts.tensorflow_target.before_stable_api:
        return None
    spelling = mixed_precision_module(facts, built, at=built)
    if spelling is None:
        return None
    module, extra = spelling
    wrapped = cst.Call(func=cst.parse_expression(f"{module}.LossScaleOptimizer"), args=[cst.Arg(value=inner or built)])
    return [Replace(built, wrapped), *extra]


# -- clipping by the optimizer ----------------------------------------------------------

CLIP_KEYWORDS = ("clipnorm", "clipvalue", "global_clipnorm")


def clipping_optimizer(facts: "ModuleFacts", info: OptimizerInfo | None, clip: Clip) -> cst.Call | None:
    """The (inner) optimizer's constructor with the clipping argument that does what
    `clip` did; None when the optimizer is not built here as a Keras 3 optimizer that
    can take it."""
    if info is None or info.built is None or info.kind != "keras":
        return None
    built = info.built
    qualified = facts.qualified(built.func) or ""
    if not qualified.startswith("keras.optimizers.") or qualified.startswith("keras.optimizers.legacy.") \
            or qualified == "keras.optimizers.get" or has_star_args(built) or keyword_names(built) & set(CLIP_KEYWORDS):
        return None
    return with_keyword(built, clip.keyword, clip.threshold)


def drop_clip(facts: "ModuleFacts", clip: Clip) -> Change:
    """Remove the clipping statement (or keep its name: `clipped = grads`)."""
    if clip.result == clip.source:
        return remove_statement(facts.index, clip.statement)
    return ReplaceText(clip.statement.body[0], f"{clip.result} = {clip.source}")


def moved_clip_note(optimizer: cst.Call) -> str:
    keyword = optimizer.args[-1].keyword
    assert keyword is not None
    return f"the fix moves the clipping to the inner optimizer's `{keyword.value}`, which then clips wherever it is used"


def keras3_scaled_until_apply(facts: "ModuleFacts", loops: TrainingLoops, uses: GradientUses,
                              scaler: cst.BaseExpression | None, info: OptimizerInfo | None,
                              ) -> tuple[list[Change], cst.Call | None, str | None]:
    """For a Keras 3 fix that leaves the gradients scaled until the `apply` of the
    LossScaleOptimizer `scaler` (which unscales them): (changes that move a plain clip
    onto its inner optimizer, that optimizer's new constructor or None, why there is no
    fix or None). No changes and no reason: nothing in the way."""
    others = [
        code(facts, a.func.value) for a in uses.applies  # type: ignore[union-attr]
        if scaler is None or code(facts, a.func.value) != code(facts, scaler)  # type: ignore[union-attr]
        and not loops.optimizer(a.func.value, a).is_loss_scale_optimizer  # type: ignore[union-attr]
    ]
    if others:
        return [], None, (f"Keras 3 unscales gradients only inside a LossScaleOptimizer's `apply`, and some of them are "
                          f"applied by `{others[0]}`, which would get them multiplied by the loss scale")
    if not uses.consumers:
        return [], None, None
    clip = uses.plain_clip
    why = (f"Keras 3 unscales gradients only inside `apply`, and on the way they are {uses.describe()}: "
           "there they would still be multiplied by the loss scale")
    keywords = uses.clip_keywords
    instead = (f"; clip with the (inner) optimizer's {' / '.join(f'`{k}`' for k in keywords)} instead" if keywords
               else "; apply them unchanged, or divide them by the loss scale where they are used")
    if clip is None:
        return [], None, why + instead
    new = clipping_optimizer(facts, info, clip)
    if new is None:
        return [], None, why + instead + " (the optimizer is not built in this module as a Keras 3 optimizer that takes it)"
    assert info is not None and info.built is not None
    return [drop_clip(facts, clip)], new, None


# -- scaling inside the tape ---------------------------------------------------------------

def fresh_name(loops: TrainingLoops, scope: cst.CSTNode, base: str) -> str:
    used = loops.names_in_scope(scope) | loops.names_in_scope(loops.index.module)
    name, n = base, 2
    while name in used:
        name, n = f"{base}_{n}", n + 1
    return name


def scale_in_tape(
    facts: "ModuleFacts", loops: TrainingLoops, step: GradientStep, optimizer: str, *, unscale: bool
) -> list[Change] | None:
    """Changes that make `step` take the gradient of the scaled loss (scaled inside the
    tape) and, with `unscale`, unscale the gradients right where they are computed.
    None when the loop is not in a shape that can be rewritten safely."""
    call, target, tape = step.call, step.target, step.tape
    if step.kind != "tape" or target is None or tape is None:
        return None
    target_arg = get_arg(call, 0, "target")
    if target_arg is None:
        return None
    if not _visible_at(loops, step, optimizer):
        return None
    method = scale_method(facts)
    changes: list[Change] = []
    if facts.index.contains(tape.body, call):
        new_target: cst.BaseExpression = method_call(optimizer, method, target)
    else:
        if not isinstance(target, cst.Name) or not isinstance(tape.body, cst.IndentedBlock):
            return None
        binding = loops.binding_before(target, call)
        if binding is None or not facts.index.contains(tape.body, binding.statement):
            return None
        scaled = fresh_name(loops, step.scope, "scaled_loss" if target.value == "loss" else f"scaled_{target.value}")
        changes.append(InsertAfter(tape.body.body[-1], f"{scaled} = {optimizer}.{method}({target.value})"))
        new_target = cst.Name(scaled)
    new_call: cst.BaseExpression = call.with_changes(
        args=[a.with_changes(value=new_target) if a is target_arg else a for a in call.args]
    )
    if unscale and step.unscale is None:
        new_call = method_call(optimizer, "get_unscaled_gradients", new_call)
    changes.append(Replace(call, new_call))
    return changes


def _visible_at(loops: TrainingLoops, step: GradientStep, optimizer: str) -> bool:
    """Whether the optimizer expression of the apply call also names the optimizer where
    the gradients are computed (they can be in different functions)."""
    receiver = step.receiver
    if receiver is None or step.apply is None:
        return False
    apply_scope = loops.scope_of(step.apply)
    if apply_scope is step.scope:
        return True
    if isinstance(receiver, cst.Name):
        scope, _ = loops.name_bindings(receiver)
        return scope is loops.index.module
    if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name):
        owner = loops.self_class(receiver.value)
        function = step.function
        params = function.params.params if function is not None else ()
        return owner is not None and function is not None and bool(params) \
            and params[0].name.value == receiver.value.value and loops.index.class_of(function) is owner
    return False


def unscale_gradients(facts: "ModuleFacts", step: GradientStep, optimizer: str) -> list[Change]:
    """Wrap the gradient call in `optimizer.get_unscaled_gradients(...)`."""
    return [Replace(step.call, method_call(optimizer, "get_unscaled_gradients", step.call))]


# -- setting the policy -------------------------------------------------------------------

KERAS_BUILDERS = ("keras.layers.", "keras.models.", "keras.applications.", "keras.Sequential", "keras.Model", "keras.Input")


def policy_anchor(facts: "ModuleFacts", spelling: str) -> cst.CSTNode | None:
    """The top-level import statement after which a global policy can be set: after the
    imports that precede the first statement building a Keras model or layer, and after
    the import of the name the policy call is spelled with."""
    imports = [s for s in facts.module.body if _is_import_line(s)]
    if not imports:
        return None
    first_build = first_model_statement(facts)
    before = [s for s in imports if first_build is None or facts.index.before(s, first_build)]
    anchor = before[-1] if before else imports[0]
    root = spelling.split(".", 1)[0]
    for statement in imports:
        binds = {
            (a.asname.name.value if a.asname is not None and isinstance(a.asname.name, cst.Name)
             else (code(facts, a.name).split(".", 1)[0] if isinstance(s, cst.Import) else code(facts, a.name)))
            for s in statement.body for a in (s.names if not isinstance(s.names, cst.ImportStar) else [])
        }
        if root in binds and facts.index.before(anchor, statement):
            anchor = statement
    return anchor


def first_model_statement(facts: "ModuleFacts") -> cst.CSTNode | None:
    """The first top-level statement (not an import) that builds a Keras model or layer."""
    for statement in facts.module.body:
        if not _is_import_line(statement) and any(
            isinstance(n, cst.Call) and (facts.qualified(n.func) or "").startswith(KERAS_BUILDERS)
            for n in facts.index.descendants(statement)
        ):
            return statement
    return None


def sets_mixed_float16(facts: "ModuleFacts") -> bool:
    return any(s.kind == "global" and s.names == frozenset({"mixed_float16"}) for s in facts.policy.global_settings)


def mixed_float16_policy(facts: "ModuleFacts", hint: cst.BaseExpression | None = None) -> tuple[str, cst.CSTNode] | None:
    """(code that sets the mixed_float16 global policy, with an import when the module
    needs one; the top-level statement after which it goes), or None."""
    spelling = mixed_precision_module(facts, hint)
    if spelling is None:
        return None
    module, extra = spelling
    line = f'{module}.set_global_policy("mixed_float16")'
    if extra:  # the import is added after the last import: the policy goes with it
        inserted = extra[0]
        assert isinstance(inserted, InsertAfter)
        return inserted.code + "\n" + line, inserted.statement
    anchor = policy_anchor(facts, module)
    return (line, anchor) if anchor is not None else None


def set_mixed_float16(facts: "ModuleFacts", hint: cst.BaseExpression | None = None,
                      at: cst.CSTNode | None = None) -> list[Change] | None:
    """Changes that set the mixed_float16 global policy near the top of the module (none
    if the module sets it already: with `at`, where it is the only policy in effect at
    `at`, not only somewhere in the module); None if there is no good place."""
    if sets_mixed_float16(facts) and (at is None or facts.policy.global_at(at) == frozenset({"mixed_float16"})):
        return []
    placed = mixed_float16_policy(facts, hint)
    if placed is None:
        return None
    code_text, anchor = placed
    return [InsertAfter(anchor, code_text)]
