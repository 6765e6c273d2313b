"""MP101's decisions: whether a model's last layer computes in float16/bfloat16, and the
fix that makes the output float32.

Two fixes, both keeping every variable (names and shapes) so existing checkpoints load:

- *split*: `Dense(10, activation="softmax")` -> `Dense(10)` followed by
  `Activation("softmax", dtype="float32")`; the matmul stays in float16. Used where it is
  simple: a layer whose activation is applied last (Dense, Conv*, ...), written as a
  string or an imported function, no `name=` (the output keeps its layer name
  otherwise), a single-output model, the layer referenced once, and a place to put the
  new layer (a list element or `.add()` after it for Sequential; a statement after the
  assignment or a wrapping call for Functional; an attribute next to it in `__init__`
  for subclassed models).
- *dtype*: `dtype="float32"` on the last layer (replacing a mixed `dtype=`).

The new `Activation` is spelled like the file's layers (`layers.Activation`,
`tf.keras.layers.Activation`, or added to the `from ... import Dense` line).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import libcst as cst

from mplint.analysis.calls import get_arg, positional, quote_like, string_value, with_keyword, without_arg
from mplint.facts.policy import HALF_DTYPES, compute_dtype, scope_of
from mplint.catalogue.rule import Change, FixPlan, InsertAfter, Replace

from mplint.facts.model_graph import SPLITTABLE_ACTIVATION, WRAPPERS, LayerRef, ModelDef, ModelGraph, Output

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts
    from mplint.catalogue.rule import Rule

_ACTIVATION_MODULES = ("keras.activations.", "tensorflow.nn.", "tensorflow.math.", "keras.ops.", "tensorflow.keras.activations.")
_NO_ACTIVATION = ("linear", "")


def half_dtype(facts: "ModuleFacts", graph: ModelGraph, layer: LayerRef) -> str | None:
    """"float16"/"bfloat16" when the layer's output is computed in half precision, else
    None (float32, or not known)."""
    ctor = layer.constructor
    if layer.qualified in WRAPPERS and facts.target.is_keras2:
        # Keras 2 wrappers return what the wrapped layer computes; Keras 3 wrappers
        # return their own compute dtype (checked with TF 2.21).
        inner = graph.wrapped_layer(ctor)
        if inner is None:
            return None
        ctor = inner.constructor
    return _constructor_half_dtype(facts, ctor)


def _constructor_half_dtype(facts: "ModuleFacts", ctor: cst.Call) -> str | None:
    policy = facts.policy
    names = policy.layer_policy_names(ctor)
    if names is None:
        return None
    if names:
        dtypes = {compute_dtype(n) for n in names}
    else:
        dtypes = set(policy.global_compute_dtypes_at(ctor))
    halves = sorted(d for d in dtypes if d in HALF_DTYPES)
    return " or ".join(halves) if halves else None


class OutputFix:
    """Builds MP101's fix for one final layer (used as the output of `uses`)."""

    def __init__(self, rule: "Rule", graph: ModelGraph, uses: Sequence[tuple[ModelDef, Output]]) -> None:
        self.rule = rule
        self.facts = rule.facts
        self.graph = graph
        self.uses = list(uses)
        self.model, self.output = uses[0]
        assert self.output.layer is not None
        self.layer: LayerRef = self.output.layer
        self._kept_alive: list[cst.CSTNode] = []  # temporary nodes given to the name resolver

    def build(self) -> FixPlan | None:
        split = self._split()
        if split is not None:
            activation, changes = split
            return self.rule.fix(
                f"Apply the {activation} activation in a float32 `Activation` layer after `{self.layer.short_name}`",
                changes,
            )
        only = self._only_layer()
        if only:
            # `dtype="float32"` on the model's only layer would leave nothing in float16:
            # the output is cast in a float32 linear Activation after it instead.
            linear = self._split(linear=True)
            if linear is not None:
                return self.rule.fix(
                    f"Cast the output to float32 in a float32 linear `Activation` after `{self.layer.short_name}` "
                    "(the model's only layer keeps the mixed policy)", linear[1])
        changes = self._dtype()
        if changes:
            return self.rule.fix(f'Compute `{self.layer.short_name}` in float32 (`dtype="float32"`)'
                                 + (": it is the model's only layer, so nothing would compute in float16" if only else ""),
                                 changes, unsafe=only)
        return None

    def _only_layer(self) -> bool:
        """Whether the output layer is the model's only layer (an Input aside): a Sequential
        list of one layer, or a functional output applied to the model's own input."""
        slot, application = self.output.slot, self.output.application
        if slot is not None and slot.container is not None:
            layers = [e for e in slot.container.elements
                      if not (isinstance(e.value, cst.Call) and (self.facts.qualified(e.value.func) or "").endswith(
                          (".Input", ".InputLayer")))]
            return len(layers) == 1
        if slot is None and application is not None and application.args and isinstance(self.model.node, cst.Call):
            given = get_arg(self.model.node, 0, "inputs")
            return given is not None and self._code(given.value) == self._code(application.args[0].value) \
                and isinstance(given.value, cst.Name)
        return False

    # -- dtype="float32" on the last layer -----------------------------------------------------
    def _dtype(self) -> list[Change]:
        ctor = self.layer.constructor
        if self.layer.qualified in WRAPPERS and self.facts.target.is_keras2:
            inner = self.graph.wrapped_layer(ctor)
            if inner is None:
                return []
            ctor = inner.constructor
        return [Replace(ctor, self._with_float32(ctor))]

    def _with_float32(self, ctor: cst.Call) -> cst.Call:
        return with_keyword(ctor, "dtype", quote_like(self._string_argument(ctor), "float32"))

    @staticmethod
    def _string_argument(ctor: cst.Call) -> cst.BaseExpression | None:
        for arg in ctor.args:
            if isinstance(arg.value, cst.SimpleString):
                return arg.value
        return None

    # -- split the activation off ------------------------------------------------------------
    def _split(self, linear: bool = False) -> tuple[str, list[Change]] | None:
        """The activation split off into a float32 `Activation`; with `linear`, a float32
        linear `Activation` added after a layer that keeps its own activation."""
        layer, ctor = self.layer, self.layer.constructor
        if len(self.uses) != 1 or not self.model.single_output:
            return None
        if (not linear and layer.qualified not in SPLITTABLE_ACTIVATION) or get_arg(ctor, None, "name") is not None:
            return None  # a named layer names the model's output: a layer after it would rename it
        arg = activation = None
        if not linear:
            arg = get_arg(ctor, 1 if layer.short_name == "Dense" else None, "activation")
            if arg is None or (arg.keyword is None and positional(ctor)[-1] is not arg):
                return None  # removing it would shift the positional arguments after it
            activation = self._activation_text(arg.value)
            if activation is None:
                return None
        if not self._referenced_once():
            return None
        spelling = self._activation_class()
        if spelling is None:
            return None
        activation_class, import_changes = spelling
        quoted = arg.value if arg is not None and isinstance(arg.value, cst.SimpleString) else self._string_argument(ctor)
        quote = quote_like(quoted, "float32")
        if activation is None:
            activation = quote_like(quoted, "linear").value
        new_ctor = ctor if arg is None else without_arg(ctor, arg)
        carried = ""
        # An activity regulariser regularises the layer's output, the activation's: it moves
        # with the activation. (Passed by keyword: a positional one comes after a positional
        # activation, which is then not the last positional argument, and there is no split.)
        regularizer = get_arg(ctor, None, "activity_regularizer") if arg is not None else None
        if regularizer is not None:
            carried = f", activity_regularizer={self._code(regularizer.value)}"
            new_ctor = without_arg(new_ctor, get_arg(new_ctor, None, "activity_regularizer"))
        new_layer = f"{activation_class}({activation}, dtype={quote.value}{carried})"
        if self.output.slot is not None:
            placed = self._sequential(new_layer, new_ctor)
        elif layer.via == "attribute":
            placed = self._attribute(new_layer, new_ctor)
        else:
            placed = self._functional(new_layer, new_ctor)
        if placed is None:
            return None
        label = "linear" if arg is None else (string_value(arg.value) or activation)
        return label, import_changes + placed

    def _activation_text(self, expr: cst.BaseExpression) -> str | None:
        literal = string_value(expr)
        if literal is not None:
            return None if literal in _NO_ACTIVATION else self._code(expr)
        if isinstance(expr, (cst.Name, cst.Attribute)):
            qualified = self.facts.qualified(expr)
            if qualified and qualified.startswith(_ACTIVATION_MODULES) and not qualified.endswith(".linear"):
                return self._code(expr)
        return None

    def _referenced_once(self) -> bool:
        layer = self.layer
        if layer.via == "inline":
            return True
        if layer.via == "name" and layer.name and layer.statement is not None:
            scope = scope_of(self.facts, layer.statement)
            return len(self.graph.name_loads(scope, layer.name)) == 1
        if layer.via == "attribute" and layer.owner is not None and layer.name:
            return len(self.graph.attribute_uses(layer.owner, layer.name)) == 1
        return False

    def _sequential(self, new_layer: str, new_ctor: cst.Call) -> list[Change] | None:
        slot, layer = self.output.slot, self.layer
        assert slot is not None
        ctor_change: list[Change] = [] if layer.via == "inline" else [Replace(layer.constructor, new_ctor)]
        if slot.add_call is not None:
            statement = self._own_statement(slot.add_call)
            if statement is None or not isinstance(slot.add_call.func, cst.Attribute):
                return None
            receiver = self._code(slot.add_call.func.value)
            return [Replace(layer.constructor, new_ctor), InsertAfter(statement, f"{receiver}.add({new_layer})")]
        if slot.container is None or slot.element is None:
            return None
        value = new_ctor if layer.via == "inline" else slot.element.value
        new_container = _insert_after_last(slot.container, value, cst.parse_expression(new_layer))
        if new_container is None:
            return None
        return ctor_change + [Replace(slot.container, new_container)]

    def _functional(self, new_layer: str, new_ctor: cst.Call) -> list[Change] | None:
        application, layer = self.output.application, self.layer
        if application is None:
            return None
        ctor_change: list[Change] = []
        applied = application
        if layer.via == "inline":
            applied = application.with_changes(func=new_ctor)
        else:
            ctor_change = [Replace(layer.constructor, new_ctor)]
        assigned = self._assignment_of(application)
        if assigned is not None:  # `out = Dense(...)(x)`: a statement after it
            name, statement = assigned
            return [Replace(layer.constructor, new_ctor), InsertAfter(statement, f"{name} = {new_layer}({name})")]
        wrapped = cst.Call(func=cst.parse_expression(new_layer), args=[cst.Arg(value=applied)])
        return ctor_change + [Replace(application, wrapped)]

    def _attribute(self, new_layer: str, new_ctor: cst.Call) -> list[Change] | None:
        layer, application = self.layer, self.output.application
        if application is None or layer.owner is None or layer.statement is None or not layer.name:
            return None
        if not isinstance(layer.statement, cst.SimpleStatementLine) or not self._in_block(layer.statement):
            return None
        attribute = next(
            (
                candidate
                for candidate in (f"{layer.name}_activation", f"{layer.name}_float32")
                if not self.graph.attribute_bindings(layer.owner, candidate)
                and not self.graph.attribute_uses(layer.owner, candidate)
            ),
            None,
        )
        if attribute is None:
            return None
        wrapped = cst.Call(func=cst.parse_expression(f"self.{attribute}"), args=[cst.Arg(value=application)])
        return [
            Replace(layer.constructor, new_ctor),
            InsertAfter(layer.statement, f"self.{attribute} = {new_layer}"),
            Replace(application, wrapped),
        ]

    # -- where the new layer goes ------------------------------------------------------------
    def _assignment_of(self, node: cst.CSTNode) -> tuple[str, cst.SimpleStatementLine] | None:
        """(`name`, statement) when `node` is the whole value of a statement `name = node`."""
        parent = self.facts.index.parent_of(node)
        if not isinstance(parent, cst.Assign) or parent.value is not node or len(parent.targets) != 1:
            return None
        target = parent.targets[0].target
        statement = self.facts.index.parent_of(parent)
        if not isinstance(target, cst.Name) or not isinstance(statement, cst.SimpleStatementLine):
            return None
        if len(statement.body) != 1 or not self._in_block(statement):
            return None
        return target.value, statement

    def _own_statement(self, call: cst.Call) -> cst.SimpleStatementLine | None:
        """The statement line that is just `call` (an expression statement)."""
        expr = self.facts.index.parent_of(call)
        statement = self.facts.index.parent_of(expr) if isinstance(expr, cst.Expr) else None
        if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and self._in_block(statement):
            return statement
        return None

    def _in_block(self, statement: cst.CSTNode) -> bool:
        return isinstance(self.facts.index.parent_of(statement), (cst.IndentedBlock, cst.Module))

    # -- how to spell Activation in this file ------------------------------------------------
    def _activation_class(self) -> tuple[str, list[Change]] | None:
        func = self.layer.constructor.func
        if isinstance(func, cst.Attribute):
            return f"{self._code(func.value)}.Activation", []
        if not isinstance(func, cst.Name):
            return None
        raw = self.facts.names.raw(func)
        if raw is None or "." not in raw:
            return None
        module = raw.rsplit(".", 1)[0]
        if self._raw("Activation") == f"{module}.Activation":
            return "Activation", []
        aliases = sorted(self.facts.imports.aliases.items(), key=lambda item: -len(item[1]))
        for alias, full in aliases:  # `from tensorflow.keras import layers`: layers.Activation
            if module == full and self._raw(alias) == full:
                return f"{alias}.Activation", []
        imported = self._import_activation(func, module)  # from ... import Dense, Activation
        if imported is not None:
            return imported
        for alias, full in aliases:  # `import tensorflow as tf`: tf.keras.layers.Activation
            if module.startswith(full + ".") and self._raw(alias) == full:
                return f"{alias}{module[len(full):]}.Activation", []
        return None

    def _import_activation(self, func: cst.Name, module: str) -> tuple[str, list[Change]] | None:
        """Add `Activation` to the `from <module> import Dense` line."""
        if "Activation" in self.facts.imports.aliases or self.graph.bindings.by_scope.get(
            (id(self.facts.index.module), "Activation")
        ) or any(n.value == "Activation" for n in self.facts.index.nodes(cst.Name)):
            return None
        for node in self.facts.index.nodes(cst.ImportFrom):
            if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
                continue
            if self._code(node.module) != module:
                continue
            if not any(self._local_name(alias) == func.value for alias in node.names):
                continue
            names = list(node.names)
            last = names[-1]
            addition = cst.ImportAlias(name=cst.Name("Activation"), comma=last.comma)
            names[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            return "Activation", [Replace(node, node.with_changes(names=[*names, addition]))]
        return None

    @staticmethod
    def _local_name(alias: cst.ImportAlias) -> str | None:
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            return alias.asname.name.value
        return alias.name.value if isinstance(alias.name, cst.Name) else None

    def _raw(self, dotted: str) -> str | None:
        node = cst.Name(dotted)
        self._kept_alive.append(node)  # the resolver caches by id(): keep ids unique
        return self.facts.names.raw(node)

    def _code(self, node: cst.CSTNode) -> str:
        return self.facts.module.code_for_node(node)


def _insert_after_last(
    container: cst.List | cst.Tuple, last_value: cst.BaseExpression, new: cst.BaseExpression
) -> cst.List | cst.Tuple | None:
    """The list/tuple with its last element's value replaced and `new` appended after it,
    in the container's own layout (one element per line stays that way)."""
    elements = list(container.elements)
    last = elements[-1]
    if not isinstance(last, cst.Element):
        return None
    separator = _separator(container)
    closer = container.rbracket if isinstance(container, cst.List) else None
    if isinstance(last.comma, cst.Comma):
        before_closer = closer.whitespace_before if closer is not None else None
        if isinstance(before_closer, cst.ParenthesizedWhitespace) and isinstance(
            separator.whitespace_after, cst.ParenthesizedWhitespace
        ):
            # One element per line with a trailing comma: the old last element keeps its
            # line and comment; the new one gets the next line.
            keep = last.comma.with_changes(
                whitespace_after=before_closer.with_changes(last_line=separator.whitespace_after.last_line)
            )
            elements[-1] = last.with_changes(value=last_value, comma=keep)
            elements.append(cst.Element(value=new, comma=cst.Comma()))
            closing = before_closer.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
            return container.with_changes(elements=elements, rbracket=closer.with_changes(whitespace_before=closing))
        elements[-1] = last.with_changes(value=last_value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        elements.append(cst.Element(value=new, comma=last.comma))
    else:
        elements[-1] = last.with_changes(value=last_value, comma=separator)
        elements.append(cst.Element(value=new))
    return container.with_changes(elements=elements)


def _separator(container: cst.List | cst.Tuple) -> cst.Comma:
    """A comma laid out like the ones between the container's elements (no comments)."""
    elements = container.elements
    if len(elements) >= 2 and isinstance(elements[-2].comma, cst.Comma):
        whitespace = elements[-2].comma.whitespace_after
    else:
        opener = container.lbracket if isinstance(container, cst.List) else (container.lpar[0] if container.lpar else None)
        whitespace = opener.whitespace_after if opener is not None else cst.SimpleWhitespace(" ")
    if isinstance(whitespace, cst.ParenthesizedWhitespace):
        return cst.Comma(
            whitespace_after=cst.ParenthesizedWhitespace(
                first_line=cst.TrailingWhitespace(), indent=whitespace.indent, last_line=whitespace.last_line
            )
        )
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
