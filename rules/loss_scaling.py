"""MP2xx: loss scaling in custom training loops, for Keras 2 and Keras 3."""

from __future__ import annotations

import libcst as cst

from mplint.analysis.calls import arg_value, callee_name
from mplint.analysis.guards import exclusive
from mplint.fixes.removal import remove_statement
from mplint.core.diagnostics import FixAvailability, Severity
from mplint.facts.float32_networks import trains_only_float32_layers
from mplint.facts.gradient_uses import gradient_uses
from mplint.facts.training import (
    LSO_ATTRIBUTES,
    LSO_CURRENT,
    LSO_EXPERIMENTAL,
    SCALE_METHODS,
    UNSCALE_METHOD,
    GradientStep,
    OptimizerInfo,
    TrainingLoops,
)
from mplint.catalogue.rule import Change, Replace, Rule

from mplint.fixes.scaling_edits import (
    code,
    keras3_scaled_until_apply,
    moved_clip_note,
    scale_in_tape,
    scale_method,
    unscale_gradients,
    wrap_optimizer,
)


def loop_generation(facts, info: OptimizerInfo | None, at: cst.CSTNode) -> str | None:
    """The loss-scaling generation an optimizer has at run time (at the place `at`);
    `compile` wraps the optimizer of a model under mixed_float16 (Keras 2 and Keras 3)."""
    if info is None:
        return None
    if info.origin == "compiled":
        return "compile" if facts.policy.loss_scaled_at(at) and not _compile_without_loss_scaling(facts) else None
    return info.generation


def _compile_without_loss_scaling(facts) -> bool:
    """`compile(..., auto_scale_loss=False)` (Keras 3): compile does not wrap."""
    for call in facts.index.nodes(cst.Call):
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "compile":
            value = arg_value(call, None, "auto_scale_loss")
            if isinstance(value, cst.Name) and value.value == "False":
                return True
    return False


def _how_to_scale(facts) -> str:
    if facts.target.is_keras2:
        return "scale the loss with `get_scaled_loss` inside the tape and unscale the gradients with `get_unscaled_gradients`"
    return "scale the loss with `scale_loss` inside the tape (`apply_gradients`/`apply` unscale by themselves)"


def _scale_call(facts) -> str:
    """The call that scales the loss on the target's Keras, for one-sentence messages."""
    return "`get_scaled_loss`" if facts.target.is_keras2 else "`scale_loss`"


_UNDERFLOW = "float16 gradients of an unscaled loss underflow to zero"


def unkept_condition(facts, step, generation: str | None) -> str | None:
    """The condition the optimizer is a LossScaleOptimizer under (`if args.amp:` around
    its wrapper, or around every mixed policy setting for `compile`'s), where it does not
    also guard the step: an edit that calls the loss-scaling API there would raise on the
    path that skips it."""
    from mplint.analysis.guards import condition_text, guard_not_shared, guard_of

    index = facts.index
    if generation in ("current", "experimental") and step.optimizer is not None and step.optimizer.wrapper is not None:
        source = step.optimizer.wrapper
    elif generation == "compile":
        settings = [s.call for s in facts.policy.mixed_global_settings]
        if not settings:
            # the project brings the policy: where another one can hold at the step (a
            # flag that picks float32, mixed_bfloat16 or mixed_float16), compile wraps
            # the optimizer only under mixed_float16
            if facts.policy.global_at(step.call) - {"mixed_float16"}:
                return 'tf.keras.mixed_precision.global_policy().name == "mixed_float16"'
            return None
        if any(not guard_of(index, call) for call in settings):
            return None  # some mixed setting runs unconditionally: compile always wraps
        source = settings[0]
    else:
        return None
    missing = guard_not_shared(index, source, step.call)
    return condition_text(facts.module, missing) if missing else None


def _float16_here(facts, node: cst.CSTNode) -> str:
    """How a message names the policy the loop runs under: mixed_float16, and where the
    code picks mixed_bfloat16 there too (`'mixed_bfloat16' if tpu else 'mixed_float16'`),
    that the finding holds where it picks mixed_float16 (bfloat16 needs no loss scale)."""
    from mplint.facts.premises import policy_premise

    if "mixed_bfloat16" in policy_premise(facts, node).value.split("/"):
        return "mixed_float16 (where picked over mixed_bfloat16)"
    return "mixed_float16"


def models_built_before_the_policy(facts, step) -> bool:
    """Whether every model the step's tape runs (`model(x)` on a name bound to a model
    built in this module) was built where no float16 policy was in effect: its layers
    took the policy of their construction, so they compute in float32 and nothing of the
    backward pass is float16 (MP102 reports the late policy)."""
    if step.tape is None:
        return False
    index = facts.index
    built = []
    for node in index.descendants(step.tape.body):
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name)):
            continue
        values = facts.bindings.values_visible(node.func, index)
        constructions = [v for v in values if isinstance(v, cst.Call) and _builds_a_model(facts, v)]
        if constructions and len(constructions) == len(values):
            built += constructions
    return bool(built) and not any(facts.policy.global_float16_at(c) for c in built)


# Class methods that construct a model object (its layers take the global policy then):
# Hugging Face's `TFGPT2LMHeadModel.from_pretrained`, KerasHub's `from_preset`.
_PRETRAINED_CONSTRUCTORS = frozenset({"from_pretrained", "from_preset"})


def _builds_a_model(facts, call: cst.Call) -> bool:
    """A model construction: `Model(...)`/`Sequential(...)`, a Keras application, an
    instance of a class (a subclassed model: `Generator(out_dim=3)`), or a pretrained
    model's class method (`TFGPT2LMHeadModel.from_pretrained("gpt2")`)."""
    qualified = facts.qualified(call.func) or ""
    if qualified.startswith(("keras.", "tensorflow.keras.")):
        return qualified.rsplit(".", 1)[-1] in ("Model", "Sequential") or ".applications." in qualified
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in _PRETRAINED_CONSTRUCTORS:
        owner = call.func.value
        name = owner.attr.value if isinstance(owner, cst.Attribute) else owner.value if isinstance(owner, cst.Name) else ""
        return name[:1].isupper()
    return callee_name(call)[:1].isupper()


class UnscaledCustomLoop(Rule):
    """## What it does
    Finds custom training loops (`tf.GradientTape` + `apply_gradients`/`apply`, also in
    `@tf.function`s and in Keras 2 `minimize(..., tape=tape)` steps) under the
    `mixed_float16` policy whose optimizer is not a `LossScaleOptimizer`.

    ## Why is this bad?
    `Model.fit` scales the loss by itself under `mixed_float16`; a custom loop does not.
    float16 gradients smaller than about 6e-8 round to zero in the backward pass, and
    the model silently stops learning. The loss must be multiplied by a loss scale
    before the gradients are taken, and the gradients divided by it again, which a
    `LossScaleOptimizer` does.

    ## Example
    ```python
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    optimizer = tf.keras.optimizers.Adam()

    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    ```

    ## Use instead
    Keras 3 (`apply_gradients`/`apply` unscale the gradients themselves):
    ```python
    optimizer = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.Adam())

    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x))
        scaled_loss = optimizer.scale_loss(loss)
    grads = tape.gradient(scaled_loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    ```
    Keras 2 (tf-keras, TensorFlow < 2.16):
    ```python
    optimizer = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.Adam())

    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x))
        scaled_loss = optimizer.get_scaled_loss(loss)
    grads = optimizer.get_unscaled_gradients(tape.gradient(scaled_loss, model.trainable_variables))
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    ```

    ## Fix safety
    Unsafe: training numerics change (that is the point), and the optimizer becomes a
    `LossScaleOptimizer` everywhere it is used, also outside this loop (checkpoints
    then hold its loss-scale variables). The optimizer is wrapped where it is built
    (also in another function of the module, or `self.opt = ...` in `__init__`), the
    loss is scaled inside the tape and, for Keras 2, the gradients are unscaled where
    they are computed, so clipping or logging after that sees the true gradients.

    Keras 3 unscales only inside `apply`: between `tape.gradient` and `apply` the
    gradients are then multiplied by the loss scale. When nothing reads them on the way
    the fix is as above. When the only thing on the way is a plain clip
    (`tf.clip_by_global_norm(grads, C)` with its norm unused, `[tf.clip_by_norm(g, C)
    for g in grads]`, `[tf.clip_by_value(g, -C, C) ...]`), the fix also moves it onto
    the inner optimizer (`global_clipnorm=C`, `clipnorm=C`, `clipvalue=C`), which clips
    the unscaled gradients (it then clips wherever that optimizer is used). Anything
    else on the way (a logged norm, accumulation, an all-reduce, a return to a caller
    other modules can reach, another optimizer's apply) gets no fix, and the message
    names it.

    The optimizer is wrapped unconditionally, also where the mixed policy is set only
    under a condition (`if use_amp:`): with a float32 policy a `LossScaleOptimizer`
    multiplies and divides by a power of two, which leaves the update as it was (it
    only skips a step whose gradients overflow).

    No fix either for an optimizer built outside the module (a parameter, an import),
    a loop whose loss is not computed inside its tape, or where a name the fix would
    use is not bound there (an `optimizer` assigned only after the loop; in a notebook,
    one defined in a later cell). A module needing `tf` for the wrapper gets
    `import tensorflow as tf` before the optimizer (in its own cell in a notebook).
    """

    code = "MP201"
    premises = ("policy",)
    depends_on_target = True
    name = "unscaled-custom-loop"
    severity = Severity.ERROR
    fix_availability = FixAvailability.SOMETIMES
    requires_mixed_policy = True

    def check(self) -> None:
        facts = self.facts
        if not facts.policy.float16:
            return
        loops = facts.analysis(TrainingLoops)
        for step in loops.steps:
            if step.kind == "tf.gradients" or step.apply is None or step.optimizer is None:
                continue
            info = step.optimizer
            if not facts.policy.loss_scaled_at(step.call) or models_built_before_the_policy(facts, step) \
                    or trains_only_float32_layers(facts, step):
                continue  # runs before mixed_float16 is set, or after it is reset
            if info.kind == "v1" or loop_generation(facts, info, step.call) is not None or info.origin == "compiled":
                continue
            if step.scaling is not None and step.scaling.method in ("manual", "conditional"):
                continue
            if step.kind == "minimize":
                if facts.target.is_keras2 and info.is_plain:
                    self._report_minimize(step, info)
                continue
            if not info.is_plain:
                if step.scaling is None:
                    self.report(
                        step.call,
                        f"custom training loop under {_float16_here(facts, step.call)} never scales its loss: wrap "
                        f"`{info.label}` in a "
                        f"LossScaleOptimizer and scale the loss with {_scale_call(facts)}",
                        detail=f"{_UNDERFLOW}; `{info.label}` must be a LossScaleOptimizer (mplint does not see it "
                               f"built as one) and the loop must {_how_to_scale(facts)}",
                    )
                continue
            self._report(loops, step, info)

    def _report(self, loops: TrainingLoops, step: GradientStep, info: OptimizerInfo) -> None:
        facts = self.facts
        assert info.built is not None and step.receiver is not None
        message = (f"custom training loop under {_float16_here(facts, step.call)} with plain `{info.label}`: wrap it in a "
                   f"LossScaleOptimizer and scale the loss with {_scale_call(facts)}")
        notes = [f"{_UNDERFLOW}; wrap it and {_how_to_scale(facts)}"]
        clipping: list[Change] = []
        inner: cst.Call | None = None
        why = None
        if facts.target.is_keras3 and step.scaling is None:
            clipping, inner, why = keras3_scaled_until_apply(facts, loops, gradient_uses(loops, step.call), step.receiver, info)
            if why:
                notes.append(f"no fix: {why}")
        wrap = wrap_optimizer(facts, info.built, inner) if why is None else None
        changes: list[Change] | None = None
        if wrap is not None:
            receiver = code(facts, step.receiver)
            if step.scaling is None:
                scaling = scale_in_tape(facts, loops, step, receiver, unscale=facts.target.is_keras2)
                changes = None if scaling is None else [*wrap, *scaling, *clipping]
            elif SCALE_METHODS.get(step.scaling.method) == facts.target.keras:
                # Already scaled with the target's own API: only the wrapping is missing.
                unscale = facts.target.is_keras2 and step.unscale is None and not step.manual_unscale
                changes = [*wrap, *(unscale_gradients(facts, step, receiver) if unscale else [])]
        fix = None
        if changes is not None and inner is not None:
            notes.append(moved_clip_note(inner))
        if changes is not None:
            also = f"; clip with the optimizer's `{inner.args[-1].keyword.value}`" if inner is not None else ""  # type: ignore[union-attr]
            fix = self.fix(
                f"Wrap `{info.label}` in a LossScaleOptimizer and scale the loss ({facts.target.keras}){also}", changes,
                unsafe=True,
            )
        self.report(step.call, message, fix=fix, detail="; ".join(notes))

    def _report_minimize(self, step: GradientStep, info: OptimizerInfo) -> None:
        assert info.built is not None
        wrap = wrap_optimizer(self.facts, info.built)
        self.report(
            step.call,
            f"`{info.label}.minimize` under mixed_float16 without loss scaling: wrap `{info.label}` in a "
            "LossScaleOptimizer (its `minimize` scales the loss)",
            detail=_UNDERFLOW,
            fix=self.fix(f"Wrap `{info.label}` in a LossScaleOptimizer", wrap, unsafe=True) if wrap else None,
        )


class GradientOfUnscaledLoss(Rule):
    """## What it does
    Finds custom training loops under `mixed_float16` whose optimizer is a
    `LossScaleOptimizer` (built so, or wrapped by `compile`, as `self.optimizer` is in a
    `train_step` override) but whose `tape.gradient` is taken of the unscaled loss.

    ## Why is this bad?
    The optimizer only scales what it is given. In Keras 3, `apply`/`apply_gradients`
    divide the gradients by the loss scale (32768 at the start), so gradients of an
    unscaled loss make SGD-style updates ~32768x too small (Adam-style optimizers are
    nearly scale-invariant, but the unscaled float16 backward pass still underflows,
    which is what loss scaling prevents). In Keras 2 the
    gradients are not divided, but the unscaled float16 backward pass underflows, as
    without any loss scaling.

    ## Example
    ```python
    class Model(tf.keras.Model):
        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                loss = self.compute_loss(y=y, y_pred=self(x, training=True))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            return {"loss": loss}
    ```

    ## Use instead
    Keras 3:
    ```python
            with tf.GradientTape() as tape:
                loss = self.compute_loss(y=y, y_pred=self(x, training=True))
                scaled_loss = self.optimizer.scale_loss(loss)
            grads = tape.gradient(scaled_loss, self.trainable_variables)
    ```
    Keras 2: `scaled_loss = self.optimizer.get_scaled_loss(loss)` inside the tape and
    `grads = self.optimizer.get_unscaled_gradients(tape.gradient(scaled_loss, ...))`.

    ## Fix safety
    Safe: the loop then does what its `LossScaleOptimizer` expects. The scaling call is
    inserted at the end of the tape block (or around the target when the gradient is
    taken inside the block); for Keras 2 the gradients are also unscaled where they are
    computed.

    Keras 3 unscales only inside `apply`, so after the fix the gradients are multiplied
    by the loss scale until then. The fix is safe only when nothing reads them on the
    way. A plain clip on the way (`tf.clip_by_global_norm(grads, C)` with its norm
    unused, `clip_by_norm`/`clip_by_value(g, -C, C)` per gradient) makes the fix
    unsafe: it moves the clip onto the inner optimizer built in this module
    (`global_clipnorm`/`clipnorm`/`clipvalue`), which clips the unscaled gradients but
    also wherever else the optimizer is used. Any other use on the way (a logged norm,
    accumulation, an all-reduce, a return to a public function's callers, another
    optimizer's apply), or a clip with `compile`'s optimizer, gets no fix, and the
    message says which use and what to do. A loop whose loss is not computed inside
    the tape is reported without a fix. Where the optimizer is a LossScaleOptimizer only
    under a condition the loop does not share (`if args.amp:` around the wrapper, in the
    loop's function or its caller; for `compile`'s wrapper, a policy that another module
    picks by a flag, `set_global_policy(args.precision_policy)`), the Keras 3 fix is unsafe (every Keras 3 optimizer
    has `scale_loss`, a plain one returns the loss unchanged, so the edit holds on both
    paths) and Keras 2 gets no fix: `get_scaled_loss` without that condition would raise
    AttributeError on the path that skips it.
    """

    code = "MP202"
    premises = ("policy",)
    depends_on_target = True
    name = "gradient-of-unscaled-loss"
    severity = Severity.ERROR
    fix_availability = FixAvailability.SOMETIMES
    requires_mixed_policy = True

    def check(self) -> None:
        facts = self.facts
        if not facts.policy.float16:
            return
        loops = facts.analysis(TrainingLoops)
        for step in loops.steps:
            if step.kind != "tape" or step.apply is None or step.scaling is not None or step.receiver is None:
                continue
            if not facts.policy.loss_scaled_at(step.call) or models_built_before_the_policy(facts, step) \
                    or trains_only_float32_layers(facts, step):
                continue
            generation = loop_generation(facts, step.optimizer, step.call)
            if generation not in ("current", "experimental", "compile"):
                continue
            assert step.optimizer is not None
            label = step.optimizer.label
            if facts.target.is_keras3:
                why = (f"`{label}` is a LossScaleOptimizer whose `{step.apply.func.attr.value}` divides the gradients "  # type: ignore[union-attr]
                       "by the loss scale (32768 at first): an SGD-style optimizer then updates ~32768x too little, "
                       "and the unscaled float16 backward pass can underflow to zero")
            else:
                why = f"`{label}` is a LossScaleOptimizer, but an unscaled float16 backward pass can underflow to zero"
            if generation == "compile":
                why += " (`compile` wraps the optimizer under mixed_float16)"
            method = scale_method(facts)
            advice = f"scale it with `{method}` inside the tape"
            if facts.target.is_keras2:
                advice += " and unscale the gradients with `get_unscaled_gradients`"
            notes = [why]
            changes = scale_in_tape(facts, loops, step, code(facts, step.receiver), unscale=facts.target.is_keras2)
            title = f"Scale the loss with `{method}`"
            unsafe = False
            if facts.target.is_keras3:
                clipping, inner, blocked = keras3_scaled_until_apply(
                    facts, loops, gradient_uses(loops, step.call), step.receiver, step.optimizer
                )
                if blocked:
                    changes = None
                    notes.append(f"no fix: {blocked}")
                elif inner is not None and changes is not None:
                    assert step.optimizer is not None and step.optimizer.built is not None
                    changes += [*clipping, Replace(step.optimizer.built, inner)]
                    title += f" and clip with the optimizer's `{inner.args[-1].keyword.value}`"  # type: ignore[union-attr]
                    notes.append(moved_clip_note(inner))
                    unsafe = True  # the optimizer then clips wherever it is used
            condition = unkept_condition(facts, step, generation)
            if condition is not None and facts.target.is_keras3:
                # Every Keras 3 optimizer has `scale_loss` (a plain one returns the loss
                # as it is): the edit holds on the path that skips the condition too.
                if changes:
                    unsafe = True
                    notes.append(f"the optimizer is a LossScaleOptimizer only if `{condition}`; elsewhere "
                                 "`scale_loss` of a plain Keras 3 optimizer returns the loss unchanged")
            elif condition is not None:
                # Keras 2's `get_scaled_loss` is a LossScaleOptimizer's only: an edit that
                # calls it without the condition raises on the path that skips it.
                changes = None
                notes.append(f"no fix: the optimizer is a LossScaleOptimizer only if `{condition}`: "
                             "scale the loss under that condition")
            self.report(
                step.call,
                f"gradient of the unscaled loss, but `{label}` is a LossScaleOptimizer: {advice}",
                fix=self.fix(title, changes, unsafe=unsafe) if changes else None,
                detail="; ".join(notes),
            )


class GradientsNotUnscaled(Rule):
    """## What it does
    Keras 2: finds loops that scale the loss with `get_scaled_loss` but pass the
    gradients to `apply_gradients` without `get_unscaled_gradients`.

    ## Why is this bad?
    A Keras 2 `LossScaleOptimizer.apply_gradients` does not unscale: the gradients of a
    scaled loss are the real gradients times the loss scale (32768 at the start), so
    every step is that much too large and training diverges.

    ## Example
    ```python
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x))
        scaled_loss = optimizer.get_scaled_loss(loss)
    grads = tape.gradient(scaled_loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    ```

    ## Use instead
    ```python
    scaled_grads = tape.gradient(scaled_loss, model.trainable_variables)
    grads = optimizer.get_unscaled_gradients(scaled_grads)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    ```

    ## Fix safety
    Safe: the fix wraps the gradient call in `get_unscaled_gradients` of the optimizer
    that scaled the loss, right where the gradients are computed, so whatever reads
    them afterwards (clipping, logging, accumulation) sees the true gradients, as the
    code intends. Loops that divide the gradients themselves are not reported, nor
    loops that accumulate the scaled gradients (`acc.assign_add(g)`) and unscale the sums
    with the same optimizer's `get_unscaled_gradients` before applying them. Under
    Keras 3 this is MP404's business (there is no `get_scaled_loss`). Where the loss is
    scaled only under a condition the apply step does not share (`if amp:`), there is no
    fix: unscaling unconditionally would raise on the path that skips the scaling.
    """

    code = "MP203"
    premises = ("keras-target",)
    depends_on_target = True
    name = "gradients-not-unscaled"
    severity = Severity.ERROR
    fix_availability = FixAvailability.ALWAYS

    def check(self) -> None:
        facts = self.facts
        if not facts.target.is_keras2:
            return
        loops = facts.analysis(TrainingLoops)
        for step in loops.steps:
            scaling = step.scaling
            if step.kind != "tape" or step.apply is None or scaling is None or scaling.method != "get_scaled_loss":
                continue
            if step.unscale is not None or step.manual_unscale or step.apply.func.attr.value == "minimize":  # type: ignore[union-attr]
                continue
            if step.optimizer is not None and step.optimizer.is_plain:
                continue  # not a LossScaleOptimizer at all: MP201 reports (and fixes) the loop
            assert scaling.call is not None and isinstance(scaling.call.func, cst.Attribute)
            receiver = code(facts, scaling.call.func.value)
            if _unscales_later(facts, step, receiver):
                continue  # accumulated first (`acc.assign_add(g)`), unscaled where they are applied
            from mplint.analysis.guards import condition_text, guard_not_shared

            missing = guard_not_shared(facts.index, scaling.call, step.call)
            # Scaled only `if amp:`: unscaling unconditionally would raise on the other path.
            fix = None if missing else self.fix(f"Unscale with `{receiver}.get_unscaled_gradients`",
                                                unscale_gradients(facts, step, receiver))
            self.report(
                step.call,
                f"gradients of the scaled loss reach `{code(facts, step.apply.func)}` without "  # type: ignore[union-attr]
                f"`{receiver}.get_unscaled_gradients`: Keras 2 applies them multiplied by the loss scale",
                fix=fix,
                detail=(f"no fix: the loss is scaled only if `{condition_text(facts.module, missing)}`: unscale under "
                        "that condition") if missing else "",
            )


def _unscales_later(facts, step: GradientStep, receiver: str) -> bool:
    """The function that takes the gradients also calls `<receiver>.get_unscaled_gradients`
    after them, on a value the gradient path does not reach directly (gradient
    accumulation: the sums are unscaled before they are applied)."""
    function = facts.index.enclosing(step.call, cst.FunctionDef) or facts.index.module
    return any(
        isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == UNSCALE_METHOD
        and code(facts, node.func.value) == receiver and facts.index.before(step.call, node)
        for node in facts.index.descendants(function)
    )


class GraphRewriteWithTape(Rule):
    """## What it does
    Finds `tf.GradientTape` or `tf.gradients` gradients applied with an optimizer
    returned by `enable_mixed_precision_graph_rewrite`.

    ## Why is this bad?
    The graph rewrite's optimizer scales the loss only in its own `minimize` /
    `compute_gradients`. Gradients from a tape or `tf.gradients` bypass that, so the
    float16 parts of the graph train without loss scaling, as the TF 1.15 API page
    warns. (TensorFlow 2.21 also no longer has `tf.train.experimental`'s rewrite: see
    MP403, which migrates it.)

    ## Example
    ```python
    opt = tf.train.experimental.enable_mixed_precision_graph_rewrite(opt)
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    ```

    ## Use instead
    ```python
    opt = opt.minimize(loss_fn_closure, var_list=model.trainable_variables)  # TF 1.x
    ```
    or, better, the Keras mixed-precision API (MP403's fix).

    Not reported where the loop scales the loss with the returned optimizer's own
    `get_scaled_loss` (TF 2.x returns a Keras `LossScaleOptimizer` for a Keras optimizer,
    and its `get_scaled_loss`/`get_unscaled_gradients` are how tape gradients are scaled).

    ## Fix safety
    No fix: MP403 replaces the graph rewrite, after which MP202 scales the loop.
    """

    code = "MP204"
    name = "graph-rewrite-with-tape"
    severity = Severity.WARNING
    fix_availability = FixAvailability.NONE

    def check(self) -> None:
        loops = self.facts.analysis(TrainingLoops)
        for step in loops.steps:
            if step.kind == "minimize" or step.optimizer is None or step.optimizer.generation != "graph_rewrite":
                continue
            if step.scaling is not None:
                # the loop scales the loss itself (`opt.get_scaled_loss`): given a Keras
                # optimizer, TF 2.x's rewrite returns a Keras LossScaleOptimizer, whose
                # get_scaled_loss/get_unscaled_gradients serve tape gradients
                continue
            wrapper = step.optimizer.wrapper
            if wrapper is not None and exclusive(self.facts.index, wrapper, step.call):
                continue  # the gradients are taken only where the rewrite is off (`if amp: ... else:`)
            how = "`tf.gradients`" if step.kind == "tf.gradients" else "`GradientTape`"
            self.report(
                step.call,
                f"{how} gradients bypass the loss scaling of `{step.optimizer.label}` from the graph rewrite: "
                "use its `minimize`, or the Keras mixed-precision API",
                detail="only the rewrite optimizer's own minimize/compute_gradients scale the loss",
            )


class LossScalingWithBfloat16(Rule):
    """## What it does
    Finds a `LossScaleOptimizer` in code whose policy is `mixed_bfloat16` (and never
    `mixed_float16`).

    ## Why is this bad?
    bfloat16 has float32's exponent range: its gradients do not underflow, so loss
    scaling only costs time (and, when dynamic, skipped steps). `compile` does not wrap
    the optimizer under `mixed_bfloat16` for that reason.

    ## Example
    ```python
    tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")
    optimizer = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.Adam())
    ```

    ## Use instead
    ```python
    tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")
    optimizer = tf.keras.optimizers.Adam()
    ```

    ## Fix safety
    Unsafe: checkpoints of the optimizer change shape. The fix unwraps the optimizer
    (an `opt = LossScaleOptimizer(opt)` line is removed, together with an `if` it was
    the only statement of when that `if`'s test has no side effects; else it becomes
    `pass`) and replaces its `get_scaled_loss(x)`, `scale_loss(x)` and
    `get_unscaled_gradients(g)` calls by their argument. Code that reads other
    loss-scale attributes (`loss_scale`, `inner_optimizer`, ...) is reported without a
    fix.
    """

    code = "MP205"
    premises = ("policy",)
    name = "loss-scaling-with-bfloat16"
    severity = Severity.INFO
    fix_availability = FixAvailability.SOMETIMES
    requires_mixed_policy = True

    def check(self) -> None:
        facts = self.facts
        policy = facts.policy
        if not policy.bfloat16 or policy.float16:
            return
        loops = facts.analysis(TrainingLoops)
        for wrapper in facts.calls_to(LSO_CURRENT, LSO_EXPERIMENTAL):
            here = policy.global_at(wrapper)
            if "mixed_bfloat16" not in here or "mixed_float16" in here:
                continue
            changes = self._unwrap(loops, wrapper)
            self.report(
                wrapper,
                "LossScaleOptimizer under mixed_bfloat16: bfloat16 has float32's range and needs no loss scaling",
                fix=self.fix("Unwrap the optimizer and drop the loss-scaling calls", changes, unsafe=True) if changes else None,
            )

    def _unwrap(self, loops: TrainingLoops, wrapper: cst.Call) -> list[Change] | None:
        facts = self.facts
        inner = arg_value(wrapper, 0, "inner_optimizer", "opt", "optimizer")
        if inner is None:
            return None
        changes: list[Change] = []
        parent = facts.index.parent_of(wrapper)
        assign = parent if isinstance(parent, cst.Assign) else None
        if assign is not None and len(assign.targets) == 1 and _same_reference(facts, assign.targets[0].target, inner):
            statement = facts.index.statement_of(assign)
            if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
                return None
            changes.append(remove_statement(facts.index, statement))
        else:
            changes.append(Replace(wrapper, inner))
        # Every use of this optimizer's loss-scaling API goes too. A call on an optimizer
        # that cannot be resolved (`ctx.optimizer.get_scaled_loss(...)`) may be this one:
        # it goes where it names the wrapper's target, else nothing is fixed (unwrapping
        # would leave a plain optimizer's missing method behind).
        target = assign.targets[0].target if assign is not None and len(assign.targets) == 1 else None
        for call in loops.method_calls(*SCALE_METHODS, UNSCALE_METHOD):
            receiver = call.func.value  # type: ignore[union-attr]
            resolved = loops.optimizer(receiver, call)
            if resolved.wrapper is not wrapper:
                if resolved.origin != "unknown":
                    continue
                if target is None or not _same_reference(facts, receiver, target):
                    return None
            argument = arg_value(call, 0, "loss", "grads", "gradients")
            if argument is None:
                return None
            changes.append(Replace(call, argument))
        for attribute in facts.index.nodes(cst.Attribute):
            if attribute.attr.value in LSO_ATTRIBUTES and isinstance(attribute.value, (cst.Name, cst.Attribute)):
                if loops.optimizer(attribute.value, attribute).wrapper is wrapper or (
                        target is not None and _same_reference(facts, attribute.value, target)):
                    return None
        return changes


def _same_reference(facts, a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    return isinstance(a, (cst.Name, cst.Attribute)) and code(facts, a) == code(facts, b)
