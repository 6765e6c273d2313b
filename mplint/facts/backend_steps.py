"""Keras 3 training steps written for JAX or torch: the gradients, what is differentiated,
and the optimizer that applies them.

    steps = facts.analysis(BackendSteps)
    for step in steps.steps:
        step.backend          # "jax" or "torch"
        step.function         # the function holding the step (a `train_step`, or any)
        step.gradient         # jax: the call of the gradient function (`grad_fn(...)`);
                              # torch: `loss.backward()` or `torch.autograd.grad(loss, ...)`
        step.transform        # jax: `jax.value_and_grad(f, ...)` / `jax.grad(f, ...)`
        step.differentiated   # jax: `f`, and `step.target`: the function it names, if in the module
        step.loss             # torch: the tensor the gradients are taken of
        step.apply            # `opt.stateless_apply(...)`, `opt.apply(...)`, `opt.apply_gradients(...)`
        step.optimizer        # what `opt` is (mplint.facts.training.OptimizerInfo)
        step.scaling          # how the loss is scaled on the way: Scaling, or None
        step.transformed      # the gradients are changed (clipped) before `apply`

JAX: a `jax.value_and_grad` / `jax.grad` transform, called right away, through a name
(`grad_fn = ...; grad_fn(...)`, also at module level) or a `self.` attribute set in
another method; its gradients are followed through assignments to the optimizer.
torch: `x.backward()` pairs with the next `apply` of an optimizer in the same function
(the gradients travel through the variables' `.grad`, not through names), or
`torch.autograd.grad(loss, ...)` with the apply its gradients reach.

Whether `compile()` wrapped the optimizer is `compile_wraps` (the one place that reads
the model's policy for these rules), and what kind of optimizer it wraps is
`optimizer_family`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from mplint.analysis.calls import arg_value, is_super_init
from mplint.analysis.names import dotted_name
from mplint.analysis.values import target_names
from mplint.facts.training import MODEL_BASES, SCALE_METHODS, OptimizerInfo, Scaling, TrainingLoops

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts

JAX_TRANSFORMS = {"jax.value_and_grad": "value_and_grad", "jax.grad": "grad"}
TORCH_GRAD = "torch.autograd.grad"
APPLY = frozenset({"stateless_apply", "apply", "apply_gradients"})
CLIP_PREFIXES = ("torch.nn.utils.clip_grad", "optax.clip")
# Keras's own JAX trainer method: it scales the loss itself when `training=True`.
KERAS_COMPUTE_LOSS_AND_UPDATES = "compute_loss_and_updates"
_MAX_DEPTH = 3


@dataclass
class BackendStep:
    backend: str  # "jax" or "torch"
    kind: str  # "value_and_grad", "grad" (jax); "backward", "autograd" (torch)
    function: cst.FunctionDef | cst.Module  # the module: a loop at module level
    gradient: cst.Call
    apply: cst.Call
    optimizer: OptimizerInfo
    transform: cst.Call | None = None
    differentiated: cst.BaseExpression | None = None
    target: cst.FunctionDef | cst.Lambda | None = None  # the differentiated function, when in the module
    inherited_keras_method: bool = False  # `self.compute_loss_and_updates` of Keras's JAX trainer
    loss: cst.BaseExpression | None = None  # torch
    scaling: Scaling | None = None
    transformed: bool = False

    @property
    def receiver(self) -> cst.BaseExpression:
        assert isinstance(self.apply.func, cst.Attribute)
        return self.apply.func.value

    @property
    def apply_method(self) -> str:
        assert isinstance(self.apply.func, cst.Attribute)
        return self.apply.func.attr.value

    @property
    def has_aux(self) -> bool:
        return self.transform is not None and _true(arg_value(self.transform, None, "has_aux"))


class BackendSteps:
    def __init__(self, facts: "ModuleFacts") -> None:
        self.facts = facts
        self.index = facts.index
        self.loops: TrainingLoops = facts.analysis(TrainingLoops)
        self.steps: list[BackendStep] = []
        for transform in self._transforms():
            for gradient in self.gradient_calls(transform):
                step = self._jax_step(transform, gradient)
                if step is not None:
                    self.steps.append(step)
        self.steps.extend(self._torch_steps())
        self.steps.sort(key=lambda s: self.index.position_in_order(s.gradient))

    # -- JAX ------------------------------------------------------------------------------
    def _transforms(self) -> Iterator[cst.Call]:
        for call in self.index.nodes(cst.Call):
            if self.facts.qualified(call.func) in JAX_TRANSFORMS:
                yield call

    def gradient_calls(self, transform: cst.Call) -> list[cst.Call]:
        """The calls of the function `transform` returns."""
        parent = self.index.parent_of(transform)
        if isinstance(parent, cst.Call) and parent.func is transform:
            return [parent]
        if not isinstance(parent, cst.Assign) or len(parent.targets) != 1:
            return []
        target = parent.targets[0].target
        found = []
        for call in self.index.nodes(cst.Call):
            func = call.func
            if isinstance(target, cst.Name) and isinstance(func, cst.Name) and func.value == target.value:
                binding = self.loops.binding_before(func, call)
                if binding is not None and binding.statement is parent:
                    found.append(call)
            elif isinstance(target, cst.Attribute) and isinstance(func, cst.Attribute) \
                    and func.attr.value == target.attr.value and _is_self(self.loops, func.value) \
                    and _is_self(self.loops, target.value) \
                    and self.index.class_of(call) is self.index.class_of(parent):
                found.append(call)
        return found

    def _jax_step(self, transform: cst.Call, gradient: cst.Call) -> BackendStep | None:
        function = scope_of(self.facts, gradient)
        kind = JAX_TRANSFORMS[self.facts.qualified(transform.func) or ""]
        statement = self.index.parent_of(gradient)
        names: set[str] = set()
        if isinstance(statement, cst.Assign) and statement.value is gradient and len(statement.targets) == 1:
            target = statement.targets[0].target
            has_aux = _true(arg_value(transform, None, "has_aux"))
            paired = kind == "value_and_grad" or has_aux
            if paired and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
                names = target_names(target.elements[1 if kind == "value_and_grad" else 0].value)
            else:
                names = target_names(target)  # the whole result: `result = grad_fn(...)`
        flow = self._follow(function, names, gradient) if names else self._enclosing_apply(gradient)
        if flow is None:
            return None
        apply, transformed = flow
        differentiated = arg_value(transform, 0, "fun")
        step = BackendStep("jax", kind, function, gradient, apply, self.loops.optimizer(apply.func.value, apply),  # type: ignore[union-attr]
                           transform=transform, differentiated=differentiated, transformed=transformed)
        if differentiated is not None:
            step.target = self._function_named(differentiated, function)
            step.inherited_keras_method = step.target is None and self._inherited_keras_method(differentiated, function)
        step.scaling = self._jax_scaling(step)
        return step

    def _enclosing_apply(self, gradient: cst.Call) -> tuple[cst.Call, bool] | None:
        for ancestor in self.index.ancestors(gradient):
            if isinstance(ancestor, cst.Call) and _method(ancestor) in APPLY:
                return ancestor, False
            if isinstance(ancestor, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return None
        return None

    def _follow(self, function: cst.FunctionDef | cst.Module, names: set[str], start: cst.CSTNode) -> tuple[cst.Call, bool] | None:
        """The first optimizer apply the gradients `names` reach after `start`, and
        whether they are changed on the way."""
        names = set(names)
        transformed = False
        start_statement = self.index.statement_of(start) or start
        for node in self.index.descendants(function):
            if not self.index.before(start_statement, node) or self.index.contains(start_statement, node):
                continue
            if scope_of(self.facts, node) is not function:
                continue
            if isinstance(node, cst.Assign) and self._mentions(node.value, names) \
                    and not (isinstance(node.value, cst.Call) and _method(node.value) in APPLY):
                if not _plain(node.value, names):
                    transformed = True
                for target in node.targets:
                    names |= target_names(target.target)
            elif isinstance(node, cst.Call) and _method(node) in APPLY:
                given = self._gradients_argument(node)
                if given is not None and self._mentions(given, names):
                    if not _plain(given, names):
                        transformed = True
                    return node, transformed
            elif isinstance(node, cst.Call) and (self.facts.qualified(node.func) or "").startswith(CLIP_PREFIXES):
                transformed = True
        return None

    def _gradients_argument(self, apply: cst.Call) -> cst.BaseExpression | None:
        method = _method(apply)
        if method == "stateless_apply":
            return arg_value(apply, 1, "grads")
        if method == "apply":
            return arg_value(apply, 0, "grads")
        return arg_value(apply, 0, "grads_and_vars")

    def _mentions(self, expr: cst.CSTNode, names: set[str]) -> bool:
        nodes = [expr, *self.index.descendants(expr)]
        for node in nodes:
            if isinstance(node, cst.Name) and node.value in names:
                parent = self.index.parent_of(node)
                if not (isinstance(parent, cst.Attribute) and parent.attr is node):
                    return True
        return False

    def _function_named(self, expr: cst.BaseExpression, at: cst.FunctionDef | cst.Module) -> cst.FunctionDef | cst.Lambda | None:
        """The function of this module an expression names (`self.method`, a nested or
        module-level `def`, a lambda, `functools.partial(f, ...)`)."""
        if isinstance(expr, cst.Lambda):
            return expr
        if isinstance(expr, cst.Call) and (self.facts.qualified(expr.func) or "").endswith("functools.partial"):
            inner = arg_value(expr, 0, "func")
            return self._function_named(inner, at) if inner is not None else None
        if isinstance(expr, cst.Attribute) and _is_self(self.loops, expr.value):
            for cls in self._class_chain(self.index.class_of(at)):
                for statement in cls.body.body:
                    if isinstance(statement, cst.FunctionDef) and statement.name.value == expr.attr.value:
                        return statement
            return None
        if isinstance(expr, cst.Name):
            scope: cst.FunctionDef | None = at if isinstance(at, cst.FunctionDef) else None
            while scope is not None:  # a nested def, in this function or one around it
                found = _def_named(scope.body.body, expr.value)
                if found is not None:
                    return found
                scope = self.index.enclosing(scope, cst.FunctionDef)
            return _def_named(self.index.module.body, expr.value)
        return None

    def _class_chain(self, cls: cst.ClassDef | None) -> list[cst.ClassDef]:
        chain: list[cst.ClassDef] = []
        while cls is not None and cls not in chain and len(chain) < _MAX_DEPTH + 2:
            chain.append(cls)
            bases = [b.value for b in cls.bases if isinstance(b.value, cst.Name)]
            cls = next((c for c in self.index.nodes(cst.ClassDef) for b in bases if c.name.value == b.value), None)
        return chain

    def _inherited_keras_method(self, expr: cst.BaseExpression, at: cst.FunctionDef | cst.Module) -> bool:
        """`self.compute_loss_and_updates` that no class of this module defines, in a
        class whose bases are Keras models or classes of this module (so the method is
        Keras's own)."""
        if not (isinstance(expr, cst.Attribute) and expr.attr.value == KERAS_COMPUTE_LOSS_AND_UPDATES
                and _is_self(self.loops, expr.value)):
            return False
        chain = self._class_chain(self.index.class_of(at))
        local = {c.name.value for c in chain}
        return bool(chain) and all(
            (isinstance(b.value, cst.Name) and b.value.value in local) or self.facts.qualified(b.value) in MODEL_BASES
            for cls in chain for b in cls.bases
        )

    def _jax_scaling(self, step: BackendStep) -> Scaling | None:
        if step.inherited_keras_method:
            training = arg_value(step.gradient, None, "training")
            if _true(training):
                return Scaling("keras")
        for function in (step.function, step.target):
            if function is not None:
                found = self._scaling_in(function, 0)
                if found is not None:
                    return found
        return None

    def _scaling_in(self, function: cst.FunctionDef | cst.Lambda, depth: int) -> Scaling | None:
        """A loss-scaling call in `function` or a function of the module it calls."""
        if depth > _MAX_DEPTH:
            return None
        for node in self.index.descendants(function):
            if not isinstance(node, cst.Call):
                continue
            if _method(node) in SCALE_METHODS:
                return Scaling(_method(node), node)  # type: ignore[arg-type]
            dotted = dotted_name(node.func)
            if dotted is not None and "scale" in dotted.rsplit(".", 1)[-1].lower():
                return Scaling("manual")
            if isinstance(function, cst.FunctionDef):
                callee = self._function_named(node.func, function) if isinstance(node.func, (cst.Name, cst.Attribute)) else None
                if callee is not None and callee is not function:
                    found = self._scaling_in(callee, depth + 1)
                    if found is not None:
                        return found
        return None

    # -- torch ----------------------------------------------------------------------------
    def _torch_steps(self) -> list[BackendStep]:
        steps = []
        backwards = [c for c in self.index.nodes(cst.Call) if _method(c) == "backward"]
        for call in self.index.nodes(cst.Call):
            function = scope_of(self.facts, call)
            if _method(call) == "backward" and not self._is_framework_call(call):
                loss = call.func.value  # type: ignore[union-attr]
                apply = self._next_apply(function, call, backwards)
                if apply is None:
                    continue
                step = BackendStep("torch", "backward", function, call, apply,
                                   self.loops.optimizer(apply.func.value, apply),  # type: ignore[union-attr]
                                   loss=loss, transformed=self._clipped_between(function, call, apply)
                                   or not self._plain_torch_gradients(function, apply))
            elif self.facts.qualified(call.func) == TORCH_GRAD:
                loss = arg_value(call, 0, "outputs")
                statement = self.index.parent_of(call)
                if loss is None or not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
                    continue
                names = target_names(statement.targets[0].target)
                flow = self._follow(function, names, call)
                if flow is None:
                    continue
                apply, transformed = flow
                step = BackendStep("torch", "autograd", function, call, apply,
                                   self.loops.optimizer(apply.func.value, apply),  # type: ignore[union-attr]
                                   loss=loss, transformed=transformed)
            else:
                continue
            if step.optimizer.origin == "unknown" and not _looks_like_optimizer(step.receiver):
                continue
            step.scaling = self.loops.scaling_of(loss, call)
            steps.append(step)
        return steps

    def _is_framework_call(self, call: cst.Call) -> bool:
        qualified = self.facts.qualified(call.func) or ""
        return qualified.split(".", 1)[0] in ("keras", "tensorflow", "jax")

    def _next_apply(self, function: cst.FunctionDef | cst.Module, backward: cst.Call, backwards: list[cst.Call]) -> cst.Call | None:
        """The first optimizer apply after `backward` in its function, before the next
        backward pass."""
        for node in self.index.descendants(function):
            if not isinstance(node, cst.Call) or not self.index.before(backward, node):
                continue
            if node is not backward and node in backwards and scope_of(self.facts, node) is function:
                return None
            if _method(node) in APPLY and scope_of(self.facts, node) is function:
                return node
        return None

    def _clipped_between(self, function: cst.FunctionDef | cst.Module, start: cst.CSTNode, end: cst.CSTNode) -> bool:
        return any(
            isinstance(n, cst.Call) and self.index.before(start, n) and self.index.before(n, end)
            and (self.facts.qualified(n.func) or "").startswith(CLIP_PREFIXES)
            for n in self.index.descendants(function)
        )

    def _plain_torch_gradients(self, function: cst.FunctionDef | cst.Module, apply: cst.Call) -> bool:
        """`[v.value.grad for v in weights]` (also through a name): the gradients as
        backward() left them."""
        given = self._gradients_argument(apply)
        if isinstance(given, cst.Call) and isinstance(given.func, cst.Name) and given.func.value == "zip" and given.args:
            given = given.args[0].value  # apply_gradients(zip(grads, variables))
        if isinstance(given, cst.Name):
            binding = self.loops.binding_before(given, apply)
            given = binding.value if binding is not None and binding.position is None else None
        if isinstance(given, (cst.ListComp, cst.GeneratorExp)):
            return isinstance(given.elt, cst.Attribute) and given.elt.attr.value == "grad"
        return given is None

    # -- queries ----------------------------------------------------------------------------
    def names_in(self, node: cst.CSTNode) -> set[str]:
        return {n.value for n in [node, *self.index.descendants(node)] if isinstance(n, cst.Name)}





def _method(call: cst.Call) -> str | None:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


def _true(value: cst.BaseExpression | None) -> bool:
    return isinstance(value, cst.Name) and value.value == "True"


def _is_self(loops: TrainingLoops, expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and loops.self_class(expr) is not None


def _plain(expr: cst.BaseExpression, names: set[str]) -> bool:
    """The gradients themselves, or only zipped with the variables."""
    if isinstance(expr, cst.Name):
        return True
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in ("zip", "list", "tuple"):
        return all(_plain(a.value, names) for a in expr.args)
    if isinstance(expr, (cst.Tuple, cst.List)):
        return all(_plain(e.value, names) for e in expr.elements)
    if isinstance(expr, cst.Subscript):  # `result[1]`: one part of what the call returned
        return _plain(expr.value, names)
    return isinstance(expr, cst.Attribute)


def _looks_like_optimizer(expr: cst.BaseExpression) -> bool:
    dotted = dotted_name(expr) or ""
    return "optim" in dotted.rsplit(".", 1)[-1].lower()


# -- what compile does ----------------------------------------------------------------------

SGD_STYLE = frozenset({"sgd"})
ADAPTIVE = frozenset({"adam", "adamw", "adamax", "nadam", "rmsprop", "adagrad", "adadelta", "adafactor", "lion", "lamb", "muon"})


def _model_class(facts: "ModuleFacts", step: BackendStep) -> cst.ClassDef | None:
    cls = facts.index.class_of(step.function)
    loops = facts.analysis(TrainingLoops)
    return cls if cls is not None and loops.is_model_class(cls) else None


def _instances(facts: "ModuleFacts", cls: cst.ClassDef) -> list[cst.Call]:
    """Calls that construct `cls` (`model = CustomModel(inputs, outputs)`)."""
    return [c for c in facts.index.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == cls.name.value]


def _compile_calls(facts: "ModuleFacts", cls: cst.ClassDef | None) -> list[cst.Call]:
    """`compile` calls on instances of `cls` (or `self.compile` inside it); every
    `compile` of the module when none is linked to the class."""
    loops = facts.analysis(TrainingLoops)
    every, linked = [], []
    for call in facts.index.nodes(cst.Call):
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "compile"):
            continue
        every.append(call)
        receiver = func.value
        if cls is None or not isinstance(receiver, cst.Name):
            continue
        if loops.self_class(receiver) is cls:
            linked.append(call)
            continue
        binding = loops.binding_before(receiver, call)
        if binding is not None and isinstance(binding.value, cst.Call) and isinstance(binding.value.func, cst.Name) \
                and binding.value.func.value == cls.name.value:
            linked.append(call)
    return linked or every


def _dtype_argument(facts: "ModuleFacts", cls: cst.ClassDef) -> frozenset[str] | None:
    """The policies the model object is given with `dtype=` (in its `super().__init__`
    or where it is constructed), None when it is given none."""
    found: set[str] = set()
    given = False
    calls = list(_instances(facts, cls))
    for node in facts.index.descendants(cls):
        if isinstance(node, cst.Call) and is_super_init(node):
            calls.append(node)
    for call in calls:
        value = arg_value(call, None, "dtype")
        if value is None:
            continue
        given = True
        names = facts.policy.policy_names(value)
        if names is None:
            return None  # unknown: it may be mixed_float16
        found |= names
    return frozenset(found) if given else None


def compile_wraps(facts: "ModuleFacts", step: BackendStep) -> bool:
    """Whether `compile()` wraps the step's optimizer in a LossScaleOptimizer: it is the
    compiled `self.optimizer` / `model.optimizer`, mixed_float16 can be the global policy
    where the step runs (the model takes it when constructed) unless the model object is
    given another `dtype=`, and no `compile(..., auto_scale_loss=False)` opts out."""
    if step.optimizer.origin != "compiled":
        return False
    if not facts.policy.loss_scaled_at(step.apply):
        return False
    cls = _model_class(facts, step)
    if cls is not None:
        dtypes = _dtype_argument(facts, cls)
        if dtypes is not None and "mixed_float16" not in dtypes:
            return False
    for call in _compile_calls(facts, cls):
        value = arg_value(call, None, "auto_scale_loss")
        if isinstance(value, cst.Name) and value.value == "False":
            return False
    return True


def is_loss_scale_optimizer(facts: "ModuleFacts", step: BackendStep) -> bool:
    """The step's optimizer divides gradients by a loss scale when it applies them."""
    return step.optimizer.generation == "current" or compile_wraps(facts, step)


def optimizer_family(facts: "ModuleFacts", step: BackendStep) -> str | None:
    """"sgd" or "adaptive" (Adam-style) when the code shows which optimizer the step
    applies (built in the module, or given to `compile`), else None."""
    loops = facts.analysis(TrainingLoops)
    kinds: set[str | None] = set()
    if step.optimizer.origin == "built":
        kinds.add(_family_of_constructor(facts, step.optimizer.built))
    elif step.optimizer.origin == "compiled":
        for call in _compile_calls(facts, _model_class(facts, step)):
            value = arg_value(call, 0, "optimizer")
            if value is None:
                continue
            text = value.evaluated_value if isinstance(value, cst.SimpleString) else None
            if isinstance(text, str):
                kinds.add(_family(text))
            elif isinstance(value, cst.Call) and loops.evaluate(value).built is not None:
                kinds.add(_family_of_constructor(facts, loops.evaluate(value).built))
            elif isinstance(value, (cst.Name, cst.Attribute)):
                kinds.add(_family_of_constructor(facts, loops.optimizer(value, call).built))
            else:
                kinds.add(None)
    return kinds.pop() if len(kinds) == 1 else None


def _family_of_constructor(facts: "ModuleFacts", built: cst.Call | None) -> str | None:
    if built is None:
        return None
    qualified = facts.qualified(built.func) or ""
    return _family(qualified.rsplit(".", 1)[-1])


def _family(name: str) -> str | None:
    name = name.lower()
    if name in SGD_STYLE:
        return "sgd"
    if name in ADAPTIVE:
        return "adaptive"
    return None


def _def_named(body, name: str) -> cst.FunctionDef | None:
    for statement in body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            return statement
    return None


def scope_of(facts: "ModuleFacts", node: cst.CSTNode) -> cst.FunctionDef | cst.Module:
    """The function whose code runs `node`, or the module."""
    return facts.index.enclosing(node, cst.FunctionDef) or facts.index.module


def binding_before(facts: "ModuleFacts", function: cst.FunctionDef | cst.Module, name: str,
                   at: cst.CSTNode) -> cst.CSTNode | None:
    """The last statement of `function` (not of a function nested in it) that binds
    `name` before `at`, in source order (nested tuple targets included), else None."""
    index = facts.index
    found = None
    for node in index.descendants(function):
        if not index.before(node, at):
            break
        if index.contains(node, at) or scope_of(facts, node) is not function:
            continue
        if name in _bound_names(node):
            found = node
    return found


def _bound_names(node: cst.CSTNode) -> set[str]:
    if isinstance(node, cst.Assign):
        return set().union(*(target_names(t.target) for t in node.targets))
    if isinstance(node, (cst.AnnAssign, cst.AugAssign)):
        return target_names(node.target)
    if isinstance(node, cst.For):
        return target_names(node.target)
    if isinstance(node, cst.WithItem) and node.asname is not None:
        return target_names(node.asname.name)
    if isinstance(node, cst.NamedExpr):
        return target_names(node.target)
    return set()
