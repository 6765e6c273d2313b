"""MP206, MP207: loss scaling in Keras 3 training steps written for JAX and torch, and
scaled losses that reach the logs (on every backend)."""

from __future__ import annotations

import libcst as cst

from mplint.analysis.calls import arg_value, with_keyword
from mplint.analysis.names import canonical
from mplint.analysis.positions import render
from mplint.core.diagnostics import FixAvailability, Severity
from mplint.facts.backend_steps import (
    BackendStep,
    BackendSteps,
    binding_before,
    compile_wraps,
    is_loss_scale_optimizer,
    optimizer_family,
    scope_of,
)
from mplint.facts.training import SCALE_METHODS, TrainingLoops
from mplint.catalogue.rule import Change, InsertAfter, InsertBefore, Replace, ReplaceText, Rule

from mplint.fixes.scaling_edits import code, fresh_name, method_call

_TEXT_HINTS = ("value_and_grad", "jax.grad", "grad(", "backward", "autograd")

_SGD = "with SGD every update is ~32768x too small"
_ADAPTIVE = (
    "Adam-style optimizers are scale-invariant up to epsilon, so the updates shrink (about 2x once epsilon "
    "dominates) rather than vanish, but the float16 backward pass of the unscaled loss underflows small "
    "gradients to zero"
)
_BOTH = (
    "with SGD-style optimizers every update is ~32768x too small; Adam-style ones are scale-invariant up "
    "to epsilon, but the float16 backward pass of the unscaled loss underflows small gradients to zero"
)


def consequence(family: str | None) -> str:
    """What an unscaled loss costs with this kind of optimizer (None: not known)."""
    if family == "sgd":
        return _SGD
    if family == "adaptive":
        return _ADAPTIVE
    return _BOTH


class UnscaledJaxTorchStep(Rule):
    """## What it does
    Finds Keras 3 training steps written for the JAX or torch backend that apply the
    gradients of a never-scaled loss with a `LossScaleOptimizer`: the one `compile()`
    wraps around `self.optimizer` when the model's policy is `mixed_float16`, or one
    built explicitly. JAX: `jax.value_and_grad(f)` / `jax.grad(f)` (any `f`: a
    `compute_loss_and_updates` method, a `loss_fn`, a lambda) whose gradients reach
    `optimizer.stateless_apply(...)` or `apply(...)`. torch: `loss.backward()` (or
    `torch.autograd.grad(loss, ...)`) followed by `optimizer.apply(...)` on
    `[v.value.grad for v in ...]`. With an optimizer that is no `LossScaleOptimizer`
    at all under `mixed_float16`, it reports the missing loss scaling, without a fix.

    This is MP202's mistake on the other backends. It has its own code because its fix
    is written differently (JAX scales inside the differentiated function, under a
    `StatelessScope`), because its cost depends on the optimizer (below), and so that
    a project that runs only on TensorFlow can leave it off.

    ## Why is this bad?
    `compile()` wraps the optimizer of a `mixed_float16` model in a
    `LossScaleOptimizer` on every backend, and its `apply` / `stateless_apply` divide
    the gradients by the loss scale (32768 at first). Keras's own `train_step` scales the
    loss first; the keras.io custom-step guides for JAX and torch do not, and neither
    does code copied from them. The never-scaled gradients are then divided by 32768:
    with SGD every update is ~32768x too small (training stalls silently). Adam-style
    optimizers (Adam, AdamW, RMSprop, Adagrad, ...) are scale-invariant up to epsilon:
    their updates shrink (about 2x once epsilon dominates) rather than vanish, but the
    float16 backward pass of the unscaled loss underflows small gradients to zero, which
    is what loss scaling exists to prevent. The message says which case applies when
    the code shows the optimizer (`compile(optimizer=...)`, a constructor), both
    otherwise. Nothing is reported under `mixed_bfloat16` or a float32 model policy:
    `compile()` does not wrap there.

    ## Example
    JAX, the keras.io guide's model (compiled under `mixed_float16`):
    ```python
    import jax
    import keras

    class CustomModel(keras.Model):
        def compute_loss_and_updates(self, trainable_variables, non_trainable_variables, x, y, training=False):
            y_pred, non_trainable_variables = self.stateless_call(
                trainable_variables, non_trainable_variables, x, training=training
            )
            return self.compute_loss(x, y, y_pred), (y_pred, non_trainable_variables)

        def train_step(self, state, data):
            trainable_variables, non_trainable_variables, optimizer_variables, metrics_variables = state
            x, y = data
            grad_fn = jax.value_and_grad(self.compute_loss_and_updates, has_aux=True)
            (loss, (y_pred, non_trainable_variables)), grads = grad_fn(
                trainable_variables, non_trainable_variables, x, y, training=True
            )
            trainable_variables, optimizer_variables = self.optimizer.stateless_apply(
                optimizer_variables, grads, trainable_variables
            )
            ...
    ```
    torch:
    ```python
            self.zero_grad()
            loss = self.compute_loss(y=y, y_pred=self(x, training=True))
            loss.backward()
            gradients = [v.value.grad for v in self.trainable_weights]
            with torch.no_grad():
                self.optimizer.apply(gradients, self.trainable_weights)
    ```

    ## Use instead
    JAX: scale inside the differentiated function, under a `StatelessScope` that maps
    the optimizer's variables to the `optimizer_variables` of the step (as Keras's own
    JAX `train_step` does: inside `jax.jit` the loss scale is a traced value, not the
    variable), and keep logging the unscaled loss, returned as auxiliary output:
    ```python
    import jax
    import keras

    class CustomModel(keras.Model):
        def compute_loss_and_updates(self, trainable_variables, non_trainable_variables, x, y, training=False):
            y_pred, non_trainable_variables = self.stateless_call(
                trainable_variables, non_trainable_variables, x, training=training
            )
            return self.compute_loss(x, y, y_pred), (y_pred, non_trainable_variables)

        def train_step(self, state, data):
            trainable_variables, non_trainable_variables, optimizer_variables, metrics_variables = state
            x, y = data

            def scaled_compute_loss_and_updates(*args, **kwargs):
                loss, aux = self.compute_loss_and_updates(*args, **kwargs)
                mapping = list(zip(self.optimizer.variables, optimizer_variables))
                with keras.StatelessScope(state_mapping=mapping):
                    scaled_loss = self.optimizer.scale_loss(loss)
                return scaled_loss, (loss, aux)

            grad_fn = jax.value_and_grad(scaled_compute_loss_and_updates, has_aux=True)
            (scaled_loss, (loss, (y_pred, non_trainable_variables))), grads = grad_fn(
                trainable_variables, non_trainable_variables, x, y, training=True
            )
            trainable_variables, optimizer_variables = self.optimizer.stateless_apply(
                optimizer_variables, grads, trainable_variables
            )
            ...
    ```
    (On JAX, a `LossScaleOptimizer`'s stateful `apply` raises `UnexpectedTracerError`:
    its `apply` assigns variables inside a traced `cond`. Steps that use it are reported
    without a fix: apply with `stateless_apply`.) torch: scale before `backward()`; the
    unscaled `loss` stays what the metrics see:
    ```python
            self.optimizer.scale_loss(loss).backward()
    ```

    ## Fix safety
    Safe: the step then does what its `LossScaleOptimizer` expects, the loss it logs and
    returns stays unscaled, and `scale_loss` of an optimizer that is not loss-scaled
    returns the loss unchanged. The JAX fix defines the scaling function next to the
    `jax.value_and_grad` call (or, when the gradient function is made elsewhere, next
    to the call and differentiates it there), so the differentiated function itself and
    its other callers are untouched. No fix, with the recipe above to apply by hand,
    when: the gradients are changed (clipped) before `apply` (they would be clipped
    while scaled: clip with the optimizer's `clipnorm` / `global_clipnorm` instead); the
    result of `value_and_grad` is not unpacked as `(loss, ...), grads = ...`; the
    optimizer variables given to `stateless_apply` are not known where the gradients
    are taken; the gradient function is called more than once; or the optimizer is no
    `LossScaleOptimizer` (wrap it first, as MP201 does for TensorFlow loops).
    """

    code = "MP206"
    premises = ("backend", "policy")
    name = "unscaled-jax-torch-step"
    severity = Severity.ERROR
    fix_availability = FixAvailability.SOMETIMES

    def check(self) -> None:
        facts = self.facts
        if not any(hint in facts.text for hint in _TEXT_HINTS):
            return
        steps = facts.analysis(BackendSteps)
        for step in steps.steps:
            if step.scaling is not None:
                continue
            here = facts.policy.global_at(step.apply)
            if is_loss_scale_optimizer(facts, step):
                if step.optimizer.generation == "current" and "mixed_bfloat16" in here and "mixed_float16" not in here:
                    continue  # MP205 removes the loss scaling bfloat16 does not need
                self._report_loss_scale_optimizer(steps, step)
            elif step.optimizer.is_plain and facts.policy.loss_scaled_at(step.apply):
                self.report(
                    step.gradient,
                    f"{_label(step)} under mixed_float16 with plain `{step.optimizer.label}`: wrap it in a "
                    f"LossScaleOptimizer and {_short_how(step)}",
                    detail=f"float16 gradients of an unscaled loss underflow to zero; wrap it, then {_how(step)}",
                )

    def _report_loss_scale_optimizer(self, steps: BackendSteps, step: BackendStep) -> None:
        facts = self.facts
        label = step.optimizer.label
        if compile_wraps(facts, step):
            what = f"`{label}` is the LossScaleOptimizer `compile()` wraps under mixed_float16"
        else:
            what = f"`{label}` is a LossScaleOptimizer"
        message = f"gradient of the unscaled loss in {_label(step)}, whose optimizer unscales: {_short_how(step)}"
        notes = [f"{what}, and its `{step.apply_method}` divides the gradients by the loss scale (32768 at first): "
                 f"{consequence(optimizer_family(facts, step))}; {_how(step)}"]
        if step.backend == "jax" and step.apply_method != "stateless_apply":
            # Keras's LossScaleOptimizer.apply runs a traced `cond` that assigns variables:
            # on JAX it raises UnexpectedTracerError whatever the loss.
            changes, reason = None, (
                f"on JAX a LossScaleOptimizer's stateful `{step.apply_method}` raises UnexpectedTracerError; "
                "use `stateless_apply` with the optimizer variables and scale as above"
            )
        else:
            changes, reason = self._jax_changes(steps, step) if step.backend == "jax" else self._torch_changes(step)
        if changes is None:
            notes.append(f"no fix: {reason} (see `mplint rule MP206`)")
        self.report(step.gradient, message,
                    fix=self.fix("Scale the loss with `scale_loss`", changes) if changes is not None else None,
                    detail="; ".join(notes))

    # -- torch ---------------------------------------------------------------------------
    def _torch_changes(self, step: BackendStep) -> tuple[list[Change] | None, str]:
        if step.transformed:
            return None, _CHANGED_GRADIENTS
        if not _visible(self.facts, step, step.receiver, step.gradient):
            return None, "the optimizer is not known where the gradients are taken"
        assert step.loss is not None
        scaled = method_call(code(self.facts, step.receiver), "scale_loss", step.loss)
        return [Replace(step.loss, scaled)], ""

    # -- JAX ------------------------------------------------------------------------------
    def _jax_changes(self, steps: BackendSteps, step: BackendStep) -> tuple[list[Change] | None, str]:
        facts = self.facts
        transform, gradient, differentiated = step.transform, step.gradient, step.differentiated
        assert transform is not None
        if step.transformed:
            return None, _CHANGED_GRADIENTS
        if differentiated is None:
            return None, "the differentiated function is not the first argument of the transform"
        statement = facts.index.parent_of(gradient)
        unpacked = isinstance(statement, cst.Assign) and len(statement.targets) == 1 \
            and isinstance(statement.targets[0].target, (cst.Tuple, cst.List)) \
            and len(statement.targets[0].target.elements) == 2  # type: ignore[union-attr]
        if step.kind == "value_and_grad" and not unpacked:
            return None, "the result of the gradient function is not unpacked as `(loss, ...), grads = ...`"
        if not _visible(facts, step, step.receiver, gradient):
            return None, "the optimizer is not known where the gradients are taken"
        optimizer_variables = arg_value(step.apply, 0, "optimizer_variables")
        if optimizer_variables is None or not _same_values_at(facts, steps, optimizer_variables, gradient, step.apply):
            return None, "the optimizer variables given to `stateless_apply` are not known where the gradients are taken"
        direct = facts.index.parent_of(transform) is gradient
        in_place = direct or (scope_of(facts, transform) is step.function
                              and len([s for s in steps.steps if s.transform is transform]) == 1
                              and _called_once(facts, steps, transform))
        if not in_place and not (direct or isinstance(gradient.func, (cst.Name, cst.Attribute))):
            return None, "the gradient function is called more than once"
        if not in_place and not _visible(facts, step, differentiated, gradient):
            return None, "the differentiated function is not known where the gradients are taken"
        keras = _keras_spelling(facts)
        if keras is None:
            return None, "the module has no import after which `import keras` can go"
        scope_name, import_changes = keras
        optimizer = code(facts, step.receiver)
        used = steps.names_in(differentiated) | steps.names_in(step.receiver) | steps.names_in(optimizer_variables)
        local = {n: _fresh_local(n, used) for n in ("loss", "aux", "scaled_loss", "args", "kwargs")}
        wrapper = fresh_name(steps.loops, step.function, "scaled_" + _function_word(facts, differentiated))
        function = code(facts, differentiated)
        if isinstance(differentiated, cst.Lambda):
            function = f"({function})"
        indent = facts.module.default_indent
        lines = [f"def {wrapper}(*{local['args']}, **{local['kwargs']}):"]
        call = f"{function}(*{local['args']}, **{local['kwargs']})"
        lines.append(indent + (f"{local['loss']}, {local['aux']} = {call}" if step.has_aux else f"{local['loss']} = {call}"))
        mapping = f"list(zip({optimizer}.variables, {code(facts, optimizer_variables)}))"
        lines.append(indent + f"with {scope_name}(state_mapping={mapping}):")
        lines.append(indent * 2 + f"{local['scaled_loss']} = {optimizer}.scale_loss({local['loss']})")
        if step.kind == "value_and_grad":
            value = f"({local['loss']}, {local['aux']})" if step.has_aux else local["loss"]
            lines.append(indent + f"return {local['scaled_loss']}, {value}")
        else:
            lines.append(indent + (f"return {local['scaled_loss']}, {local['aux']}" if step.has_aux else f"return {local['scaled_loss']}"))
        new_transform = transform.with_changes(
            args=[a.with_changes(value=cst.Name(wrapper)) if a.value is differentiated else a for a in transform.args]
        )
        if step.kind == "value_and_grad" and not step.has_aux:
            new_transform = with_keyword(new_transform, "has_aux", cst.Name("True"))
        replacements: list[tuple[cst.CSTNode, cst.CSTNode]] = [
            (transform, new_transform) if in_place else (gradient.func, new_transform)
        ]
        if step.kind == "value_and_grad":
            assert isinstance(statement, cst.Assign)
            value_element = statement.targets[0].target.elements[0]  # type: ignore[union-attr]
            pair = cst.Tuple([cst.Element(cst.Name(fresh_name(steps.loops, step.function, "scaled_loss"))),
                              cst.Element(value_element.value)])
            replacements.append((value_element.value, pair))
        wrapper_code = "\n".join(lines)
        anchor = facts.index.statement_of(transform if in_place else gradient)
        if anchor is not facts.index.statement_of(gradient):
            return [*import_changes, InsertBefore(anchor, wrapper_code), *(Replace(o, n) for o, n in replacements)], ""
        # The wrapper goes right before the statement it changes: one edit for both.
        line = facts.index.statement_of(gradient)
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return None, "the gradient call shares its line with another statement"
        small = line.body[0].visit(_Replacer(replacements))
        span = facts.positions.spans([line.body[0]])[id(line.body[0])]
        indent = "".join(span.indent)
        if facts.text[facts.text.rfind("\n", 0, span.start) + 1:span.start] != indent:
            return None, "the gradient call shares its line with another statement"
        newline = facts.module.default_newline
        text = wrapper_code.replace("\n", newline + indent) + newline + indent + render(facts.module, small, span.indent)
        return [*import_changes, ReplaceText(line.body[0], text)], ""


class _Replacer(cst.CSTTransformer):
    """Replaces nodes (by identity) in one pass."""

    def __init__(self, replacements: list[tuple[cst.CSTNode, cst.CSTNode]]) -> None:
        super().__init__()
        self._new = {id(old): new for old, new in replacements}

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        return self._new.get(id(original_node), updated_node)


_CHANGED_GRADIENTS = (
    "the gradients are changed (e.g. clipped) before the optimizer unscales them, so they would be changed "
    "while scaled (clip with the optimizer's `clipnorm`/`global_clipnorm` instead)"
)


def _label(step: BackendStep) -> str:
    backend = "JAX" if step.backend == "jax" else "torch"
    if isinstance(step.function, cst.Module):
        return f"the {backend} training loop at module level"
    return f"the {backend} training step `{step.function.name.value}`"


def _short_how(step: BackendStep) -> str:
    optimizer = step.optimizer.label
    if step.backend == "torch":
        return f"call `{optimizer}.scale_loss(loss).backward()`"
    return f"scale the loss with `{optimizer}.scale_loss` in the differentiated function"


def _how(step: BackendStep) -> str:
    optimizer = step.optimizer.label
    if step.backend == "torch":
        return f"scale the loss before the backward pass: `{optimizer}.scale_loss(loss).backward()`"
    return (f"scale the loss inside the differentiated function with `{optimizer}.scale_loss` under "
            "`keras.StatelessScope(state_mapping=...)` with the optimizer variables, as Keras's own JAX "
            "train_step does, and log the unscaled loss")


def _visible(facts, step: BackendStep, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """Whether the names `expr` reads mean the same in the step's function, where the
    fix puts it: `self` is the step's own, other names are the module's or bound in the
    step's function (or a function around it)."""
    loops = facts.analysis(TrainingLoops)
    first = _first_param(step.function) if isinstance(step.function, cst.FunctionDef) else None
    for node in _names_read(facts, expr):
        owner = loops.self_class(node)
        if owner is not None:
            if first is None or node.value != first.value or facts.index.class_of(step.function) is not owner:
                return False
            continue
        scope, _ = loops.name_bindings(node)
        if scope is not facts.index.module and not facts.index.contains(scope, step.function):
            return False
    return True


def _names_read(facts, expr: cst.BaseExpression) -> list[cst.Name]:
    """The names an expression reads (not attribute names, not a lambda's parameters)."""
    found = []
    for node in [expr, *facts.index.descendants(expr)]:
        if not isinstance(node, cst.Name):
            continue
        parent = facts.index.parent_of(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            continue
        if isinstance(parent, (cst.Param, cst.Arg)) and getattr(parent, "keyword", None) is node:
            continue
        if isinstance(parent, cst.Param):
            continue
        found.append(node)
    return found


def _first_param(function: cst.FunctionDef) -> cst.Name | None:
    params = function.params.posonly_params or function.params.params
    return params[0].name if params else None


def _same_values_at(facts, steps: BackendSteps, expr: cst.BaseExpression, start: cst.CSTNode, end: cst.CSTNode) -> bool:
    """Whether every name `expr` reads at `end` (in the same function) is a parameter, or
    bound before `start` and not bound again before `end`."""
    loops = steps.loops
    start_statement = facts.index.statement_of(start)
    for node in _names_read(facts, expr):
        if loops.self_class(node) is not None:
            continue
        scope, bindings = loops.name_bindings(node)
        if scope is facts.index.module:
            continue
        binding = loops.binding_before(node, end)
        if binding is None:
            if bindings:
                return False
            continue  # a parameter
        if not facts.index.before(binding.statement, start_statement) or facts.index.contains(binding.statement, start):
            return False
    return True


def _called_once(facts, steps: BackendSteps, transform: cst.Call) -> bool:
    parent = facts.index.parent_of(transform)
    if isinstance(parent, cst.Call) and parent.func is transform:
        return True
    return len(steps.gradient_calls(transform)) == 1


def _function_word(facts, expr: cst.BaseExpression) -> str:
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Name):
        return expr.value
    return "loss_fn"


def _fresh_local(name: str, used: set[str]) -> str:
    candidate, n = name, 2
    while candidate in used:
        candidate, n = f"{name}_{n}", n + 1
    return candidate


def _keras_spelling(facts) -> tuple[str, list[Change]] | None:
    """How the module can name `keras.StatelessScope`, with an import to add if needed."""
    aliases = facts.imports.aliases
    shadowed = set(facts.bindings.module_values)
    for local, full in aliases.items():
        if local not in shadowed and "." not in local and canonical(full) == "keras.StatelessScope":
            return local, []
    for local, full in aliases.items():
        if local not in shadowed and "." not in local and canonical(full) == "keras" and full != "tf_keras":
            return f"{local}.StatelessScope", []
    imports = [s for s in facts.module.body if isinstance(s, cst.SimpleStatementLine)
               and all(isinstance(b, (cst.Import, cst.ImportFrom)) for b in s.body)]
    if not imports or "keras" in shadowed:
        return None
    return "keras.StatelessScope", [InsertAfter(imports[-1], "import keras")]


class ScaledLossReported(Rule):
    """## What it does
    Finds training steps, on any backend, that put the *scaled* loss into their metrics
    or logs: `metric.update_state(scaled_loss)`, `stateless_update_state(vars,
    scaled_loss)`, or a `train_step` that returns it. Also the JAX value of
    `jax.value_and_grad` over a function that returns the scaled loss (Keras's own
    `compute_loss_and_updates(..., training=True)` does; its unscaled loss is the first
    auxiliary output).

    ## Why is this bad?
    The scaled loss is the loss times the loss scale (32768 at first, then changing as
    the dynamic scale adapts): the progress bar, the History and callbacks such as
    `EarlyStopping` or `ReduceLROnPlateau` then see a number that is neither the loss
    nor comparable from step to step.

    ## Example
    ```python
    class Model(keras.Model):
        def train_step(self, data):
            x, y = data
            self.zero_grad()
            loss = self.compute_loss(y=y, y_pred=self(x, training=True))
            scaled_loss = self.optimizer.scale_loss(loss)
            scaled_loss.backward()
            with torch.no_grad():
                self.optimizer.apply([v.value.grad for v in self.trainable_weights], self.trainable_weights)
            self.loss_tracker.update_state(scaled_loss)
            return {"loss": self.loss_tracker.result()}
    ```

    ## Use instead
    ```python
    class Model(keras.Model):
        def train_step(self, data):
            ...
            self.loss_tracker.update_state(loss)
            return {"loss": self.loss_tracker.result()}
    ```

    ## Fix safety
    Safe: only what is logged changes, and it becomes the unscaled loss, which the
    scaling call's argument (or, for Keras's JAX `compute_loss_and_updates`, its first
    auxiliary output) still holds. No fix when that value has no name of its own at
    that point (`loss = opt.scale_loss(loss)` re-binds it).
    """

    code = "MP207"
    premises = ("policy",)
    name = "scaled-loss-reported"
    severity = Severity.WARNING
    fix_availability = FixAvailability.SOMETIMES

    def check(self) -> None:
        facts = self.facts
        if not any(method in facts.text for method in SCALE_METHODS) and "compute_loss_and_updates" not in facts.text:
            return
        loops = facts.analysis(TrainingLoops)
        for call in loops.method_calls(*SCALE_METHODS):
            self._check_scaled_name(loops, call)
        if any(hint in facts.text for hint in _TEXT_HINTS):
            for step in facts.analysis(BackendSteps).steps:
                self._check_jax_value(loops, step)

    def _check_scaled_name(self, loops: TrainingLoops, scale: cst.Call) -> None:
        """`name = opt.scale_loss(loss)`, then `name` logged."""
        facts = self.facts
        assign = facts.index.parent_of(scale)
        if not (isinstance(assign, cst.Assign) and assign.value is scale and len(assign.targets) == 1
                and isinstance(assign.targets[0].target, cst.Name)):
            return
        function = scope_of(facts, scale)
        name = assign.targets[0].target.value
        unscaled = arg_value(scale, 0, "loss")
        for sink in self._sinks(function, {name}, assign):
            if binding_before(facts, function, name, sink) is not assign:
                continue
            fix = None
            if isinstance(unscaled, cst.Name) and unscaled.value != name \
                    and _same_binding(facts, function, unscaled.value, scale, sink):
                fix = self.fix(f"Log the unscaled `{unscaled.value}`", [Replace(sink, cst.Name(unscaled.value))])
            self.report(sink, f"the scaled loss `{name}` is logged: it is the loss times the loss scale (32768 "
                        f"at first, changing as the scale adapts); log the unscaled loss"
                        + (f" `{unscaled.value}`" if fix else " (keep it under its own name)"), fix=fix)

    def _check_jax_value(self, loops: TrainingLoops, step: BackendStep) -> None:
        """The value of `value_and_grad` over a function that returns the scaled loss."""
        facts = self.facts
        if step.kind != "value_and_grad" or step.scaling is None:
            return
        statement = facts.index.parent_of(step.gradient)
        if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0].target, (cst.Tuple, cst.List))):
            return
        first = statement.targets[0].target.elements[0].value  # type: ignore[union-attr]
        value, aux = (first.elements[0].value, first.elements[1].value) \
            if step.has_aux and isinstance(first, (cst.Tuple, cst.List)) and len(first.elements) == 2 else (first, None)
        if not isinstance(value, cst.Name) or not self._returns_scaled(step):
            return
        unscaled = self._unscaled_from_aux(loops, step, aux)
        for sink in self._sinks(step.function, {value.value}, statement):
            if binding_before(facts, step.function, value.value, sink) is not statement:
                continue
            fix = None
            if unscaled is not None and _same_binding(facts, step.function, unscaled.value, unscaled, sink):
                fix = self.fix(f"Log the unscaled `{unscaled.value}`", [Replace(sink, cst.Name(unscaled.value))])
            where = "its first auxiliary output" if step.inherited_keras_method else "return it as auxiliary output"
            self.report(sink, f"the scaled loss `{value.value}` is logged: the differentiated function returns the "
                        f"loss times the loss scale; log the unscaled loss ({where})", fix=fix)

    def _returns_scaled(self, step: BackendStep) -> bool:
        if step.inherited_keras_method:
            return step.scaling is not None and step.scaling.method == "keras"
        target = step.target
        if target is None:
            return False
        if isinstance(target, cst.Lambda):
            values = [target.body]
        else:
            values = [n.value for n in self.facts.index.descendants(target)
                      if isinstance(n, cst.Return) and n.value is not None
                      and self.facts.index.enclosing(n, cst.FunctionDef) is target]
        loops = self.facts.analysis(TrainingLoops)
        for value in values:
            first = value.elements[0].value if isinstance(value, cst.Tuple) and value.elements else value
            scaling = loops.scaling_of(first, value)
            if scaling is not None and scaling.call is not None:
                return True
        return False

    def _unscaled_from_aux(self, loops: TrainingLoops, step: BackendStep, aux) -> cst.Name | None:
        """Keras's `compute_loss_and_updates` returns `(unscaled_loss, y_pred, ...)` as aux."""
        if not step.inherited_keras_method or aux is None:
            return None
        if isinstance(aux, (cst.Tuple, cst.List)) and aux.elements and isinstance(aux.elements[0].value, cst.Name):
            return aux.elements[0].value
        if isinstance(aux, cst.Name):
            for node in self.facts.index.descendants(step.function):
                if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value == aux.value \
                        and len(node.targets) == 1 and isinstance(node.targets[0].target, (cst.Tuple, cst.List)):
                    elements = node.targets[0].target.elements
                    if elements and isinstance(elements[0].value, cst.Name):
                        return elements[0].value
        return None

    def _sinks(self, function: cst.FunctionDef | cst.Module, names: set[str], after: cst.CSTNode) -> list[cst.Name]:
        """Names among `names` passed as they are to a metric update, or returned (as
        they are, or as a value of a returned dict) by a model's training step method,
        after `after`."""
        facts = self.facts
        found = []
        for node in facts.index.descendants(function):
            if not facts.index.before(after, node) or facts.index.contains(after, node):
                continue
            if scope_of(facts, node) is not function:
                continue
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                    and node.func.attr.value in ("update_state", "stateless_update_state"):
                found += [a.value for a in node.args if isinstance(a.value, cst.Name) and a.value.value in names]
            elif isinstance(node, cst.Return) and node.value is not None and _is_model_step_override(facts, function):
                # a model's train/test step override: `fit` and `evaluate` log what it
                # returns (a plain step function's caller decides what it logs)
                found += [v for v in _returned(node.value) if isinstance(v, cst.Name) and v.value in names]
        return found


def _is_model_step_override(facts, function: cst.FunctionDef | cst.Module) -> bool:
    """`train_step` / `test_step` of a class that subclasses something (a Keras model):
    the methods `fit` and `evaluate` call and log. A `_step` of a plain `Trainer` class
    returns to a caller of its own."""
    if not isinstance(function, cst.FunctionDef) or function.name.value not in ("train_step", "test_step"):
        return False
    owner = facts.index.parent_of(facts.index.parent_of(function))
    return isinstance(owner, cst.ClassDef) and any(
        not (isinstance(base.value, cst.Name) and base.value.value == "object") for base in owner.bases)


def _returned(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(value, cst.Dict):
        return [e.value for e in value.elements if isinstance(e, cst.DictElement)]
    if isinstance(value, (cst.Tuple, cst.List)):
        return [r for e in value.elements for r in _returned(e.value)]
    return [value]


def _same_binding(facts, function: cst.FunctionDef | cst.Module, name: str, at: cst.CSTNode, later: cst.CSTNode) -> bool:
    """Whether `name` still means at `later` what it meant at `at` (bound before `at`,
    or by the statement holding `at`, and not bound again in between)."""
    before = binding_before(facts, function, name, later)
    if before is None:
        return False
    return facts.index.contains(before, at) or before is binding_before(facts, function, name, at)
