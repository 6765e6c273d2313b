"""MP1xx: the dtype policy and float16 model outputs."""

from __future__ import annotations

import libcst as cst

from mplint.analysis.calls import arg_value, get_arg, quote_like, string_value
from mplint.catalogue.rule import Replace, Rule
from mplint.core.diagnostics import ROLE, FixAvailability, Premise, Severity, Status
from mplint.facts.late_policy import late_mixed_settings
from mplint.facts.layer_variables import (
    never_built,
    owns_no_float_variables,
    restored_before_training,
    run_only_forward,
    training_premise,
    under_variable_creator,
    untrained_entry_point,
)
from mplint.facts.model_graph import ModelGraph, is_preprocessing_only
from mplint.facts.model_roles import output_role
from mplint.facts.policy import PolicySetting, is_global_setter, is_policy_constructor
from mplint.facts.test_modules import is_test_file
from mplint.fixes.output_fix import OutputFix, half_dtype

PURE_HALF = {"float16": "mixed_float16", "bfloat16": "mixed_bfloat16"}
# Keras names whose `dtype=` is a data dtype, not a dtype policy.
_DATA_DTYPE_LAYERS = frozenset({"keras.Input", "keras.layers.Input", "keras.layers.InputLayer"})

TPU_SETUP = frozenset(
    {
        "tensorflow.distribute.TPUStrategy",
        "tensorflow.distribute.experimental.TPUStrategy",
        "tensorflow.distribute.cluster_resolver.TPUClusterResolver",
        "tensorflow.tpu.experimental.initialize_tpu_system",
        "tensorflow.contrib.cluster_resolver.TPUClusterResolver",
    }
)


def _is_keras_layer_call(facts, call: cst.Call) -> bool:
    qualified = facts.qualified(call.func)
    if qualified is None or qualified in _DATA_DTYPE_LAYERS:
        return False
    return qualified.startswith("keras.layers.") and qualified.rsplit(".", 1)[-1][:1].isupper()


def _policy_literal(facts, expr: cst.BaseExpression | None):
    """The string literal that spells a policy expression, following a Policy(...) call
    or a constant bound once; None if there is not exactly one."""
    if expr is None:
        return None
    if isinstance(expr, cst.Call) and is_policy_constructor(facts.qualified(expr.func)):
        arg = get_arg(expr, 0, "name")
        return _policy_literal(facts, arg.value if arg else None)
    if isinstance(expr, cst.Name):
        bound = facts.bindings.values_visible(expr, facts.index)
        if len(bound) == 1 and isinstance(bound[0], cst.Call):
            return _policy_literal(facts, bound[0])
    value = facts.values.resolve(expr)
    if value is not None and isinstance(value.value, str) and value.single_source is not None:
        literal = value.single_source.literal
        if isinstance(literal, cst.SimpleString):
            return literal
    return None


def _read_only_as_policies(facts, expr: cst.BaseExpression | None, literal: cst.SimpleString) -> bool:
    """Rewriting `literal` changes policies only: it is written at `expr` (or in its
    `Policy(...)`), or bound to names the module reads only as a layer's `dtype=` or a
    policy. A parameter's default is not: callers pass their own, and the function may
    also give it to `Input(dtype=...)`, which takes no policy."""
    if isinstance(facts.index.parent_of(literal), cst.Param):
        return False
    if isinstance(expr, cst.Call):
        arg = get_arg(expr, 0, "name")
        expr = arg.value if arg is not None else None
    if expr is literal:
        return True
    if not isinstance(expr, cst.Name):
        return False
    for node in facts.index.names(expr.value):
        holder = facts.index.parent_of(node)
        if isinstance(holder, (cst.AssignTarget, cst.Param)):
            continue
        call = facts.index.parent_of(holder) if isinstance(holder, cst.Arg) else None
        if not isinstance(call, cst.Call):
            return False
        qualified = facts.qualified(call.func)
        if is_policy_constructor(qualified) or is_global_setter(qualified):
            continue
        if not (holder.keyword is not None and holder.keyword.value == "dtype" and _is_keras_layer_call(facts, call)):
            return False
    return True


class Float16Variables(Rule):
    """## What it does
    Finds a pure `"float16"` or `"bfloat16"` dtype policy, set globally
    (`set_global_policy`, `set_dtype_policy`, `set_policy`, `set_floatx`) or on a
    layer (`Dense(..., dtype="float16")`).

    Not reported where no float16 variable exists: layers that own no float variables
    (activations, dropout, reshaping, pooling, merging, `Rescaling`, random augmentation,
    `Normalization` given its `mean` and `variance`, `Attention` without `use_scale`:
    the list is checked against Keras 3 and tf-keras), a layer that is only constructed
    and serialized (never built), and `set_floatx("float16")` inside a
    `tf.variable_creator_scope` / custom-getter scope (manual mixed precision: float32
    master variables cast to float16), nor in test modules (a test picks its dtypes on
    purpose: a float16 reference, the dtype under test). Nor is `set_floatx("float16")`
    where a mixed policy is set after it, in the file or by the scripts that run the
    module's code: an explicitly set global policy, not floatx, gives layers their
    variables' dtype.

    A global policy gives float16 variables only to the Keras layers built under it
    (hand-made `tf.Variable`s keep their initial value's dtype): the finding is proved
    where a layer of the module is built under it, and only assumed (extended tier, no
    fix) where nothing that can run after it builds one: no later construction here, no
    module that imports this one, no function of a module it imports that builds a layer
    (module-level layers are built at import, before it).

    The finding rests on a role premise: that something trains the variables. It is
    proved where the module itself trains (fits, applies gradients, records a tape,
    calls an estimator's or a framework's `train`), inferred where a module that imports
    it (directly or through others) trains, and only assumed otherwise: layer code that
    nothing in the project trains (an inference port with float16 weights) is in the
    extended tier, without a fix. Where nothing trains the variables for sure (a
    non-trainable layer, a script that never fits, applies gradients or compiles with an
    optimizer: inference and checkpoint conversion keep float16 weights on purpose; a
    layer that stays inside one function that trains nothing, only built and run forward
    there on concrete data such as `tf.random.normal(...)`: a benchmark), and
    where `set_floatx("float16")` holds only inside a function that restores float32
    before it returns and trains nothing in between (an export that rebuilds the model in
    float16 and saves it), the finding is an info in the extended tier, without a fix.

    Not reported where the code runs on TensorFlow 1.x or one older than 2.1 (the file
    calls TF 1.x-only APIs, or the project's pins, image, README or last commit say so):
    the `mixed_` policies came with TF 2.1, and float16 variables with a loss scale were
    the only mixed precision before them.

    ## Why is this bad?
    Under a pure float16 policy the layer's *variables* are float16 too, not only its
    computations. Weight updates smaller than float16's resolution (about 1e-3 relative)
    are lost, so training stalls or diverges. The `mixed_` policies compute in
    float16/bfloat16 but keep variables in float32, which is what the mixed-precision
    guide recommends.

    ## Example
    ```python
    tf.keras.mixed_precision.set_global_policy("float16")
    model = tf.keras.Sequential([tf.keras.layers.Dense(64, dtype="float16")])
    model.compile(optimizer="adam", loss="mse")
    model.fit(x, y)
    ```

    ## Use instead
    ```python
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    model = tf.keras.Sequential([tf.keras.layers.Dense(64, dtype="mixed_float16")])
    model.compile(optimizer="adam", loss="mse")
    model.fit(x, y)
    ```

    ## Fix safety
    Unsafe: variables become float32, so a checkpoint saved with float16 variables may
    no longer load as it did, and numerics change. The fix rewrites the policy string
    where it is written (also a constant or a `Policy(...)` argument); a
    `set_floatx("float16")` call is reported without a fix, since the replacement is a
    different API. No fix where the role premise is only assumed, nor where the string
    is read as more than a policy: a parameter's default (callers pass their own) or a
    name that also gives `Input` its dtype (which takes no policy).
    """

    code = "MP103"
    name = "float16-variables"
    precision = "medium"
    precision_evidence = "0 of its 10 judged findings in the fresh audits were true (10 false, 6 debatable)"
    severity = Severity.WARNING
    fix_availability = FixAvailability.SOMETIMES
    premises = (ROLE,)  # that something trains the variables

    def check(self) -> None:
        if is_test_file(self.facts.path):
            return  # a test picks its dtypes on purpose (a float16 reference, a dtype under test)
        if self.facts.tensorflow_target.predates_mixed_policies:
            return  # TF 1.x / TF < 2.1: no mixed policy to advise, float16 variables were the way
        policy = self.facts.policy
        for setting in policy.global_settings:
            self._check_setting(setting, "global policy")
        for call in self.facts.index.nodes(cst.Call):
            arg = get_arg(call, None, "dtype")
            if arg is None or not _is_keras_layer_call(self.facts, call):
                continue
            names = policy.policy_names(arg.value)
            if not names or len(names) != 1 or next(iter(names)) not in PURE_HALF:
                continue
            if owns_no_float_variables(self.facts, call) or never_built(self.facts, call):
                continue  # nothing to keep in float16
            frozen = self.facts.values.resolve(arg_value(call, None, "trainable"))
            untrained = "this layer is not trainable" if frozen is not None and frozen.value is False else None
            self._report(call, arg.value, next(iter(names)), "layer dtype",
                         untrained=untrained or run_only_forward(self.facts, call))

    def _untrained(self) -> str | None:
        """Why nothing here trains the variables, if nothing does."""
        what = self.facts.analysis(untrained_entry_point)  # once per module, not per finding
        return f"{what} trains nothing" if what else None

    def _check_setting(self, setting: PolicySetting, what: str) -> None:
        if not setting.names or len(setting.names) != 1:
            return
        (name,) = setting.names
        if name not in PURE_HALF:
            return
        if setting.kind == "floatx":
            if under_variable_creator(self.facts, setting.call):
                return  # the creator decides the variables' dtype (float32 masters, cast to float16)
            if any(s.is_mixed and self.facts.index.before(setting.call, s.call)
                   for s in self.facts.policy.mixed_global_settings):
                return  # a mixed policy set afterwards decides the layers' dtypes: float32 variables
            if self.facts.policy.from_project[0]:
                # the scripts that run this module's code set a mixed policy first: an
                # explicitly set policy, not floatx, gives the layers their dtypes
                return
            untrained = self._untrained() or restored_before_training(self.facts, setting.call)
            self.report(
                setting.call,
                f"`set_floatx({name!r})` makes every variable {name}; " + (
                    f"{untrained}: fine for inference, but train with `{PURE_HALF[name]}`"
                    if untrained else
                    f"use the `{PURE_HALF[name]}` policy (set_global_policy) to keep variables in float32"),
                severity=Severity.INFO if untrained else None,
                premises=(training_premise(self.facts, untrained),),
            )
            return
        self._report(setting.call, setting.argument, name, what, built=self._layers_built_under(setting))

    def _layers_built_under(self, setting: PolicySetting) -> Premise | None:
        """That a Keras layer is built under a global half policy (only its layers get
        float16 variables; hand-made `tf.Variable`s keep their own dtype): proved by a
        construction here that runs under it; assumed where nothing that can run after it
        builds one (this module's later code, a module that imports it, a function of a
        module it imports); None where something may."""
        facts = self.facts
        if facts.project is None or not setting.names:
            return None
        graph = facts.analysis(ModelGraph)
        for call in graph.constructions():
            if setting.names & facts.policy.global_at(call):
                return Premise(ROLE, "layers built under it", Status.PROVED,
                               f"`{facts.module.code_for_node(call.func)}(...)` is built under it here")
        if self._project_imports_after(setting) or facts.project.may_build_layers_later():
            return None
        return Premise(ROLE, "layers built under it", Status.ASSUMED,
                       "nothing that runs after it builds a Keras layer: this module's layers (and its imports') are "
                       "built before it, and hand-made tf.Variables keep their own dtype")

    def _project_imports_after(self, setting: PolicySetting) -> bool:
        """A module-level import of a project module after the setting (its import-time
        code runs under it)."""
        facts = self.facts
        top = facts.index.top_level_statement(setting.call)
        if top is None:
            return False
        for statement in facts.module.body:
            if not facts.index.before(top, statement) or not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if isinstance(small, cst.Import):
                    names = [facts.module.code_for_node(a.name) for a in small.names]
                elif isinstance(small, cst.ImportFrom):
                    dots = "." * len(small.relative)
                    names = [dots + (facts.module.code_for_node(small.module) if small.module is not None else "")]
                else:
                    continue
                if any(facts.project.is_project_module(n) for n in names):
                    return True
        return False

    def _report(self, node: cst.CSTNode, expr: cst.BaseExpression | None, name: str, what: str,
                untrained: str | None = None, built: Premise | None = None) -> None:
        mixed = PURE_HALF[name]
        untrained = untrained or self._untrained()
        message = f"{what} {name!r} keeps the variables in {name}; " + (
            f"{untrained}: fine for inference, but train with {mixed!r}"
            if untrained else f"use {mixed!r} (float32 variables, {name} compute)")
        literal = _policy_literal(self.facts, expr)
        fix = None
        trained = training_premise(self.facts, untrained)
        premises = (trained,) if built is None else (trained, built)
        if any(p.status is Status.ASSUMED for p in premises):  # also wherever nothing here trains (`untrained`)
            pass  # kept in float16 on purpose as often as not, or no layer has it: no fix to apply blindly
        elif literal is not None and string_value(literal) == name and _read_only_as_policies(self.facts, expr, literal):
            fix = self.fix(f"Use the {mixed!r} policy", [Replace(literal, quote_like(literal, mixed))], unsafe=True)
        elif isinstance(expr, cst.Attribute) and self.facts.qualified(expr) in (
            f"tensorflow.{name}", f"tensorflow.dtypes.{name}"
        ):
            fix = self.fix(f"Use the {mixed!r} policy", [Replace(expr, cst.SimpleString(f'"{mixed}"'))], unsafe=True)
        self.report(node, message, fix=fix, severity=Severity.INFO if untrained else None, premises=premises)


class Float16OnTpu(Rule):
    """## What it does
    Finds the `mixed_float16` policy in code that sets up a TPU (`TPUStrategy`,
    `TPUClusterResolver`, `initialize_tpu_system`) unconditionally.

    ## Why is this bad?
    TPUs compute in bfloat16, not float16: the guide says to use `mixed_bfloat16` on
    TPUs. bfloat16 has float32's exponent range, so it also needs no loss scaling.

    ## Example
    ```python
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
    strategy = tf.distribute.TPUStrategy(resolver)
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    ```

    ## Use instead
    ```python
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
    strategy = tf.distribute.TPUStrategy(resolver)
    tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")
    ```

    ## Fix safety
    Unsafe: it changes the compute dtype. Code that picks TPU or GPU at run time (a
    TPU setup inside `try`/`if`, or a policy that is already conditional) is not
    reported.
    """

    code = "MP104"
    name = "float16-on-tpu"
    severity = Severity.WARNING
    fix_availability = FixAvailability.SOMETIMES
    requires_mixed_policy = True

    def check(self) -> None:
        facts = self.facts
        tpu_calls = [c for c in facts.calls_to(TPU_SETUP) if not self._conditional(c)]
        if not tpu_calls:
            return
        for setting in facts.policy.settings:
            if setting.names != frozenset({"mixed_float16"}):
                continue
            literal = _policy_literal(facts, setting.argument)
            fix = None
            if literal is not None and string_value(literal) == "mixed_float16":
                fix = self.fix(
                    "Use the 'mixed_bfloat16' policy",
                    [Replace(literal, quote_like(literal, "mixed_bfloat16"))],
                    unsafe=True,
                )
            self.report(
                setting.call,
                "'mixed_float16' in code that runs on a TPU: TPUs compute in bfloat16, use 'mixed_bfloat16'",
                fix=fix,
            )

    def _conditional(self, call: cst.Call) -> bool:
        for ancestor in self.facts.index.ancestors(call):
            if isinstance(ancestor, (cst.If, cst.Try, cst.ExceptHandler, cst.IfExp, cst.TryStar)):
                return True
        return False


class Float16ModelOutput(Rule):
    """## What it does
    Finds models built under a mixed policy whose outputs are computed in float16 or
    bfloat16: the last layer of a Functional model (`Model(inputs, outputs)`, with one
    or several outputs), of a Sequential model (the last list element or `.add()`), or
    the layer whose result a subclassed model's `call` returns, when that layer takes
    the mixed policy.

    ## Why is this bad?
    Under `mixed_float16`/`mixed_bfloat16` every layer outputs its compute dtype. A
    softmax (or any output) computed in half precision feeds the loss with float16
    numbers, which is numerically unstable. The mixed-precision guide's rule: whatever a
    model ends in, its outputs must be float32. A float16 softmax in the middle of a
    model is fine.

    Only outputs traced to a Keras layer call are reported (inline `Dense(...)(x)`, a
    layer bound to a name and called later, `self.head = Dense(...)` in `__init__`).
    Outputs made by other operations, custom layers, `Lambda` layers or nested models,
    and models used as parts of other models, are not reported. Outputs cast to float32
    (`tf.cast`, `keras.ops.cast`) and last layers with `dtype="float32"`,
    `dtype=tf.float32` or `dtype=Policy("float32")` are fine.

    The finding rests on a role premise: that the outputs are the model's result. It is
    proved where the module compiles, fits, evaluates, predicts with, saves or exports
    the model (through names, attributes, the functions that return it, also as an item
    of a returned tuple, and the functions it is handed to), puts its call's result into
    a loss (`loss_fn(y, model(x))`, `loss = ...`), where the model class has its own
    `train_step`, or where the output is a softmax or sigmoid; inferred where another
    module of the project does so with what this module's function or class returns;
    assumed otherwise (a block whose output feeds other layers of a trainer, a model
    only summarized): those findings are in the extended tier, without a safe fix. A
    model used as a part of another one is not reported: listed in a `Sequential`, handed
    to a layer or model constructor (the towers of Keras 2's `WideDeepModel(linear_model,
    dnn_model)`, which adds their outputs), or applied to another model's tensors.

    ## Example
    ```python
    keras.mixed_precision.set_global_policy("mixed_float16")
    inputs = keras.Input((784,))
    x = keras.layers.Dense(256, activation="relu")(inputs)
    outputs = keras.layers.Dense(10, activation="softmax")(x)
    model = keras.Model(inputs, outputs)
    ```

    ## Use instead
    ```python
    keras.mixed_precision.set_global_policy("mixed_float16")
    inputs = keras.Input((784,))
    x = keras.layers.Dense(256, activation="relu")(inputs)
    outputs = keras.layers.Dense(10)(x)
    outputs = keras.layers.Activation("softmax", dtype="float32")(outputs)
    model = keras.Model(inputs, outputs)
    ```

    ## Fix safety
    Safe. Where simple, the fix splits the activation off the last layer into a
    following `Activation(act, dtype="float32")` (a list element or `.add()` call in a
    Sequential model; a statement or a wrapping call in a Functional model; an
    attribute created next to the layer in a subclassed model's `__init__`), so the
    matmul stays in float16; an `activity_regularizer=` of the layer moves with the
    activation (it regularises the layer's output, the activation's), and a positional
    one prevents the split. Where the last layer is the model's only layer (an `Input`
    aside), `dtype="float32"` on it would leave nothing in float16, so a float32
    `Activation("linear")` is added after it instead (unsafe `dtype="float32"` where it
    cannot be placed). Otherwise it adds `dtype="float32"` to the last layer
    (for `TimeDistributed`/`Bidirectional` under Keras 2: to the wrapped layer). Both
    keep every variable (names and shapes: existing checkpoints load, tested with
    TensorFlow in Keras 2 and 3) and change only the output dtype, as the guide
    prescribes. The split is not used for a last layer with an explicit `name=`, a
    model with several outputs, or a layer used in more than one place, so output
    names and shared layers stay as they are; it does change the auto-generated name
    of a Sequential/Functional model's output layer (`dense_1` -> `activation`).
    """

    code = "MP101"
    premises = ("policy", ROLE)  # role: the outputs are the model's result (`model_roles`)
    name = "float16-model-output"
    severity = Severity.ERROR
    fix_availability = FixAvailability.SOMETIMES
    requires_mixed_policy = True

    def check(self) -> None:
        graph = self.facts.analysis(ModelGraph)
        finals: dict[int, list] = {}
        for model in graph.models:
            if model.component or is_preprocessing_only(graph, model):
                continue
            for output in model.outputs:
                if output.status == "layer" and output.layer is not None:
                    finals.setdefault(id(output.layer.constructor), []).append((model, output))
        for uses in finals.values():
            model, output = uses[0]
            layer = output.layer
            if _passes_non_float_input_through(self.facts, output):
                continue
            half = half_dtype(self.facts, graph, layer)
            if half is None:
                continue
            own = self.facts.policy.layer_policy_names(layer.constructor)
            where = f"with `dtype={sorted(own)[0]!r}`" if own and len(own) == 1 else "under the mixed policy"
            message = (
                f"the output of {model.label} is {half} (last layer `{layer.short_name}` {where}): model outputs "
                "must be float32"
            )
            self.report(layer.constructor, message, fix=OutputFix(self, graph, uses).build(),
                        premises=(output_role(graph, model),))


# Layers whose output has their input's dtype when the input is not a float.
_DTYPE_PRESERVING = frozenset(
    f"keras.layers.{name}"
    for name in ("Identity", "Reshape", "Flatten", "Permute", "RepeatVector", "Cropping1D", "Cropping2D",
                 "Cropping3D", "ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D", "Masking")
)
_INPUTS = frozenset({"keras.Input", "keras.layers.Input"})


def _passes_non_float_input_through(facts, output) -> bool:
    """`Identity()(keras.Input(..., dtype="string"))`: a layer that only moves data
    outputs its input's dtype; mixed precision only changes float inputs."""
    if output.layer.qualified not in _DTYPE_PRESERVING or output.application is None:
        return False
    argument = get_arg(output.application, 0, "inputs")
    value = argument.value if argument is not None else None
    if isinstance(value, cst.Name):
        bound = facts.bindings.values_visible(value, facts.index)
        value = bound[0] if len(bound) == 1 else None
    if not isinstance(value, cst.Call) or facts.qualified(value.func) not in _INPUTS:
        return False
    names = facts.policy.policy_names(arg_value(value, None, "dtype"))
    return bool(names) and not any("float" in name or name == "half" for name in names)


class PolicySetAfterLayers(Rule):
    """## What it does
    Finds layers and models created before the global dtype policy is set to a mixed
    policy in the same scope (module level, or the same function body), in source
    order. The finding is on the policy call and names the first such layer.

    ## Why is this bad?
    A layer reads the global policy when it is created. Layers and models built before
    `set_global_policy("mixed_float16")` keep the policy in force before it (float32),
    so they silently run without mixed precision. The guide: set the policy before
    building layers.

    Layers created inside functions (which may run after the policy is set), `Input`s
    and preprocessing layers (best kept in float32 anyway) are not reported; nor are
    layers created after an earlier global policy call in the same or an enclosing
    scope, nor layers and models that nothing uses after the policy is set (the names
    their statement binds are not read there before being rebound: a notebook's
    float32 baselines, built and trained in earlier sections).

    ## Example
    ```python
    encoder = keras.layers.Dense(64)
    keras.mixed_precision.set_global_policy("mixed_float16")
    outputs = encoder(inputs)
    ```

    ## Use instead
    ```python
    keras.mixed_precision.set_global_policy("mixed_float16")
    encoder = keras.layers.Dense(64)
    outputs = encoder(inputs)
    ```

    ## Fix safety
    No fix: moving the policy call (or the layers) changes what runs first.
    """

    code = "MP102"
    premises = ("policy",)
    name = "policy-set-after-layers"
    severity = Severity.WARNING
    fix_availability = FixAvailability.NONE
    requires_mixed_policy = True

    def check(self) -> None:
        facts = self.facts
        for setting, early in late_mixed_settings(facts):
            first = f"`{facts.module.code_for_node(early[0].func)}(...)`"
            names = "/".join(sorted(setting.names or ()))
            if len(early) == 1:
                what, them = f"{first} was", "it keeps"
            else:
                what, them = f"{len(early)} layers/models (first {first}) were", "they keep"
            self.report(
                setting.call,
                f"{names} is set after {what} built here: set the policy before building layers",
                detail=f"{them} the policy in effect when built (float32 by default)",
            )
