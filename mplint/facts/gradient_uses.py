"""What a training step does with its gradients besides applying them.

    uses = gradient_uses(loops, start)   # start: the call whose value is the gradients
    uses.consumers                       # each use that reads or changes their values
    uses.reaches_apply                   # they reach an optimizer's `apply`/`apply_gradients`
    uses.plain_clip                      # the only consumer, when it is a plain clip on the
                                         # way to the apply (an optimizer argument can do it)

Keras 3 unscales gradients only inside a LossScaleOptimizer's `apply`: whatever reads
them before (clipping, a logged norm, accumulation, an all-reduce, a return to the
caller) sees them multiplied by the loss scale. Fixes that leave the gradients scaled
until the apply (MP202/MP201 for Keras 3, MP404 dropping `get_unscaled_gradients`)
are safe only when nothing consumes them on the way.

Uses that pass the gradients on unchanged: a name (`g = grads`), zip/list/tuple/
enumerate, a `(g, v)` pair, a branch of `... if amp else ...`, a `for` loop or a comprehension that only repacks them,
`lst.append(g)`, `is None` tests, `len()`, and the apply itself. Every other use, in the
function after the gradients are computed, is a consumer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from mplint.analysis.bound_names import names_a_variable
from mplint.analysis.calls import arg_value, positional
from mplint.analysis.values import target_names

if TYPE_CHECKING:
    from mplint.facts.training import TrainingLoops

APPLY_METHODS = frozenset({"apply_gradients", "apply"})
COLLECTING_METHODS = frozenset({"append", "extend", "insert"})
_REPACKING = frozenset({"zip", "list", "tuple", "enumerate"})
# Clipping functions and the Keras optimizer argument that clips the same way (Keras 3
# unscales before the inner optimizer clips).
CLIPS = {
    "tensorflow.clip_by_global_norm": "global_clipnorm",
    "tensorflow.clip_by_norm": "clipnorm",
    "tensorflow.clip_by_value": "clipvalue",
}
_COMPREHENSIONS = (cst.ListComp, cst.GeneratorExp)


@dataclass
class Clip:
    """A clipping statement an optimizer argument can replace."""

    keyword: str  # "global_clipnorm", "clipnorm" or "clipvalue"
    threshold: cst.BaseExpression = field(repr=False)
    statement: cst.SimpleStatementLine = field(repr=False)  # `grads, _ = tf.clip_by_global_norm(grads, 5.0)`
    source: str  # the name of the gradients it clips
    result: str  # the name it binds the clipped gradients to
    function: str = ""  # the clipping function as spelled (`tf.clip_by_norm`)


@dataclass
class Consumer:
    node: cst.CSTNode
    what: str  # "clipped by `tf.clip_by_global_norm`", "returned to the caller", ...
    clip: Clip | None = None  # a plain clipping statement an optimizer argument can replace
    clip_keyword: str | None = None  # for any clipping: the optimizer argument that clips alike


@dataclass
class GradientUses:
    consumers: list[Consumer] = field(default_factory=list)
    applies: list[cst.Call] = field(default_factory=list)  # the apply/apply_gradients calls they reach

    @property
    def reaches_apply(self) -> bool:
        return bool(self.applies)

    @property
    def plain_clip(self) -> Clip | None:
        if self.reaches_apply and len(self.consumers) == 1:
            return self.consumers[0].clip
        return None

    @property
    def clip_keywords(self) -> list[str]:
        """When every consumer clips: the optimizer arguments that would do it."""
        keywords = [c.clip_keyword for c in self.consumers]
        return list(dict.fromkeys(keywords)) if all(keywords) else []  # type: ignore[arg-type]

    def describe(self) -> str:
        whats = list(dict.fromkeys(c.what for c in self.consumers))
        return ", ".join(whats[:3]) + (" and more" if len(whats) > 3 else "")


def gradient_uses(loops: "TrainingLoops", start: cst.Call) -> GradientUses:
    return _Tracer(loops, start).run()


_MAX_CALLERS_DEPTH = 2


class _Tracer:
    def __init__(self, loops: "TrainingLoops", start: cst.Call) -> None:
        self.loops = loops
        self.facts = loops.facts
        self.index = loops.index
        self.start = start
        self.names: set[str] = set()  # names holding the gradients in the function being traced
        self.uses = GradientUses()
        self.depth = 0

    def code(self, node: cst.CSTNode) -> str:
        return self.facts.module.code_for_node(node).strip()

    def run(self) -> GradientUses:
        self._trace(self.start, lambda: self._follow(self.start))
        return self.uses

    def _trace(self, start: cst.CSTNode, begin) -> None:
        """Trace the gradients through the function of `start`: `begin` follows the value
        at `start`, then every later use of a name that holds them."""
        outer, self.names = self.names, set()
        begin()
        scope = self.loops.scope_of(start)
        names = self.index.descendants(scope) if scope is not self.index.module else iter(self.index.nodes(cst.Name))
        for node in names:
            if not isinstance(node, cst.Name) or node.value not in self.names:
                continue
            if not self.index.before(start, node) or self.index.contains(start, node):
                continue
            if self._store(node):
                self._rebinding(node, start)
            elif self._read(node):
                self._follow(node)
        self.names = outer

    def _returned(self, value: cst.CSTNode, position: int | None) -> None:
        """The gradients are returned (as element `position` of a returned tuple): follow
        them into the callers that unpack them (`loss, grads = compute(x)`)."""
        function = self.index.enclosing(value, cst.FunctionDef)
        callers = self.loops.calls_of(function) if function is not None and self.depth < _MAX_CALLERS_DEPTH else []
        if not callers:
            self._consumer(value, "returned to the caller")
            return
        if self._importable(function):  # type: ignore[arg-type]
            self._consumer(value, f"returned by `{function.name.value}` (which other modules can call)")  # type: ignore[union-attr]
        for call in callers:
            assign = self.index.parent_of(call)
            target = assign.targets[0].target if isinstance(assign, cst.Assign) and assign.value is call \
                and len(assign.targets) == 1 else None
            if position is not None and isinstance(target, (cst.Tuple, cst.List)) and position < len(target.elements):
                target = target.elements[position].value
            elif position is not None:
                target = None
            if target is None:
                self._consumer(call, f"returned to the caller (`{self.code(call)}`)")
                continue
            self.depth += 1
            self._trace(call, lambda: self._track(target))
            self.depth -= 1

    # -- where a value of the gradients goes ---------------------------------------
    def _follow(self, node: cst.CSTNode) -> None:
        index = self.index
        while True:
            parent = index.parent_of(node)
            if isinstance(parent, cst.Arg) and parent.value is node:
                call = index.parent_of(parent)
                assert isinstance(call, cst.Call)
                self._argument(call, parent)
                return
            if isinstance(parent, cst.IfExp) and parent.test is not node:
                node = parent  # `grads if amp else other`: the value goes on
                continue
            if isinstance(parent, cst.Element):
                packed = index.parent_of(parent)  # the tuple/list it is in: `(g, v)`
                holder = index.parent_of(packed)
                if isinstance(holder, cst.Return) and isinstance(packed, cst.Tuple):
                    self._returned(packed, packed.elements.index(parent))
                    return
                node = packed
                continue
            if isinstance(parent, cst.Return):
                self._returned(node, None)
                return
            if isinstance(parent, cst.Assign) and parent.value is node:
                for target in parent.targets:
                    self._track(target.target)
                return
            if isinstance(parent, cst.For) and parent.iter is node:
                self._track(parent.target)
                return
            if isinstance(parent, cst.CompFor) and parent.iter is node:
                self._comprehension(parent)
                return
            if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)) and self._none_test(parent):
                return
            if isinstance(parent, cst.Attribute) and parent.value is node:
                call = index.parent_of(parent)
                if isinstance(call, cst.Call) and call.func is parent and parent.attr.value in COLLECTING_METHODS:
                    return  # adding to a list of gradients
            self._consumer(node, self._what(node, parent))
            return

    def _argument(self, call: cst.Call, arg: cst.Arg) -> None:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in APPLY_METHODS:
            self.uses.applies.append(call)
            return
        if isinstance(func, cst.Name) and func.value == "zip" and self._unpacked_zip(call, arg):
            return
        if isinstance(func, cst.Name) and func.value in _REPACKING:
            self._follow(call)
            return
        if isinstance(func, cst.Name) and func.value == "len":
            return
        if isinstance(func, cst.Attribute) and func.attr.value in COLLECTING_METHODS and isinstance(func.value, cst.Name):
            self.names.add(func.value.value)  # `clipped.append(g)`: the list holds gradients
            return
        qualified = self.facts.qualified(func) or ""
        keyword = CLIPS.get(qualified)
        if keyword is not None and positional(call)[:1] == [arg]:
            clip = self._clip_statement(call, keyword) if keyword == "global_clipnorm" else None
            self._consumer(call, f"clipped by `{self.code(func)}`", clip, keyword)
            if clip is not None:
                self.names.add(clip.result)
            return
        self._consumer(call, _describe_call(qualified, self.code(func)))

    def _unpacked_zip(self, call: cst.Call, arg: cst.Arg) -> bool:
        """`for v, g in zip(variables, grads):` (also in a comprehension): only the
        target at the gradients' position holds them."""
        loop = self.index.parent_of(call)
        if not isinstance(loop, (cst.For, cst.CompFor)) or loop.iter is not call or any(a.star for a in call.args):
            return False
        target = loop.target
        if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != len(call.args):
            return False
        element = target.elements[list(call.args).index(arg)].value
        if isinstance(loop, cst.For):
            self._track(element)
            return True
        comp = self.index.parent_of(loop)
        if isinstance(comp, _COMPREHENSIONS) and comp.for_in is loop and loop.inner_for_in is None:
            self._comprehension(loop, target_names(element))
            return True
        return False

    def _comprehension(self, comp_for: cst.CompFor, targets: set[str] | None = None) -> None:
        """`[g for g in grads]`, `[(g, v) for g, v in zip(grads, vs)]`: repacked;
        `[tf.clip_by_norm(g, 5.0) for g in grads]`: clipped; anything else: consumed."""
        comp = self.index.parent_of(comp_for)
        if not isinstance(comp, _COMPREHENSIONS) or comp.for_in is not comp_for or comp_for.inner_for_in is not None:
            self._consumer(comp_for, "used in a comprehension")
            return
        targets = target_names(comp_for.target) if targets is None else targets
        if comp_for.ifs and not all(self._none_test(i.test) for i in comp_for.ifs):
            self._consumer(comp, f"filtered (`{self.code(comp)}`)")
            return
        if _repacks(comp.elt, targets):
            self._follow(comp)
            return
        clip = self._clip_comprehension(comp, comp_for, targets)
        if clip is not None:
            self._consumer(comp, f"clipped by `{clip.function}`", clip, clip.keyword)
            self.names.add(clip.result)
            return
        self._consumer(comp, f"changed one by one (`{self.code(comp.elt)}`)")

    # -- plain clipping ------------------------------------------------------------------
    def _clip_statement(self, call: cst.Call, keyword: str) -> Clip | None:
        """`grads, _ = tf.clip_by_global_norm(grads, C)` (the norm unused), or
        `grads = tf.clip_by_global_norm(grads, C)[0]`."""
        source = positional(call)[0].value
        threshold = arg_value(call, 1, "clip_norm")
        if not isinstance(source, cst.Name) or threshold is None or arg_value(call, 2, "use_norm") is not None:
            return None
        parent = self.index.parent_of(call)
        if isinstance(parent, cst.Subscript):
            return self._clip_subscript(call, keyword, source, threshold)
        if not isinstance(parent, cst.Assign) or len(parent.targets) != 1:
            return None
        target = parent.targets[0].target
        if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != 2 \
                or not all(isinstance(e.value, cst.Name) for e in target.elements):
            return None
        first, norm = (e.value.value for e in target.elements)  # type: ignore[union-attr]
        if norm != "_" and self._read_later(norm, parent):
            return None  # the norm is used (logged): it would be the scaled one
        statement = self.index.parent_of(parent)
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        return Clip(keyword, threshold, statement, source.value, first)

    def _clip_subscript(self, call: cst.Call, keyword: str, source: cst.Name, threshold: cst.BaseExpression) -> Clip | None:
        index = self.index
        subscript = index.parent_of(call)
        assert isinstance(subscript, cst.Subscript)
        if subscript.value is not call or len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
            return None
        position = subscript.slice[0].slice.value
        if not (isinstance(position, cst.Integer) and position.evaluated_value == 0):
            return None
        assign = index.parent_of(subscript)
        if not isinstance(assign, cst.Assign) or assign.value is not subscript or len(assign.targets) != 1 \
                or not isinstance(assign.targets[0].target, cst.Name):
            return None
        statement = index.parent_of(assign)
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        return Clip(keyword, threshold, statement, source.value, assign.targets[0].target.value)

    def _clip_comprehension(self, comp: cst.BaseExpression, comp_for: cst.CompFor, targets: set[str]) -> Clip | None:
        """`grads = [tf.clip_by_norm(g, C) for g in grads]` (or clip_by_value(g, -C, C)),
        also `... if g is not None else None` (Keras skips missing gradients too)."""
        elt = comp.elt  # type: ignore[attr-defined]
        if isinstance(elt, cst.IfExp) and self._none_test(elt.test) and isinstance(elt.orelse, cst.Name) \
                and elt.orelse.value == "None":
            elt = elt.body
        if not isinstance(elt, cst.Call) or not isinstance(comp_for.target, cst.Name) \
                or not isinstance(comp_for.iter, cst.Name) or comp_for.ifs:
            return None
        keyword = CLIPS.get(self.facts.qualified(elt.func) or "")
        args = positional(elt)
        if keyword is None or keyword == "global_clipnorm" or not args or not isinstance(args[0].value, cst.Name) \
                or args[0].value.value != comp_for.target.value:
            return None
        if keyword == "clipnorm":
            threshold = arg_value(elt, 1, "clip_norm")
        else:
            low, high = arg_value(elt, 1, "clip_value_min"), arg_value(elt, 2, "clip_value_max")
            threshold = high
            if not (isinstance(low, cst.UnaryOperation) and isinstance(low.operator, cst.Minus) and high is not None
                    and self.code(low.expression) == self.code(high)):
                return None
        assign = self.index.parent_of(comp)
        if threshold is None or not isinstance(comp, cst.ListComp) or not isinstance(assign, cst.Assign) \
                or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            return None
        statement = self.index.parent_of(assign)
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        return Clip(keyword, threshold, statement, comp_for.iter.value, assign.targets[0].target.value, self.code(elt.func))

    def _importable(self, function: cst.FunctionDef) -> bool:
        """A public function or method of a module that is not a script (no `__main__`
        guard, not a notebook): other modules can call it and get the gradients too."""
        if function.name.value.startswith("_") or self.index.enclosing(function, cst.FunctionDef) is not None:
            return False
        if self.facts.path.endswith(".ipynb"):
            return False
        return not any(
            isinstance(s, cst.If) and "__main__" in self.facts.module.code_for_node(s.test) for s in self.facts.module.body
        )

    # -- names ---------------------------------------------------------------------------
    def _track(self, target: cst.BaseExpression) -> None:
        names = target_names(target)
        if names:
            self.names |= names
        else:  # `self.grads = grads`: stored where this analysis does not follow
            self._consumer(target, f"stored in `{self.code(target)}`")

    def _rebinding(self, name: cst.Name, start: cst.CSTNode) -> None:
        """`grads = something_else` on every path after `start` (in a block around it,
        not in another branch): that name no longer holds these gradients."""
        holder = self.index.enclosing(name, cst.Assign, cst.For)
        value = holder.value if isinstance(holder, cst.Assign) else holder.iter if isinstance(holder, cst.For) else None
        if value is None or self._mentions(value):
            return
        statement = self.index.statement_of(holder)
        block = self.index.parent_of(statement) if statement is not None else None
        if block is not None and self.index.contains(block, start):
            self.names.discard(name.value)

    def _mentions(self, expr: cst.CSTNode) -> bool:
        nodes = [expr, *self.index.descendants(expr)]
        return any(isinstance(n, cst.Name) and n.value in self.names and self._read(n) for n in nodes)

    def _read_later(self, name: str, after: cst.CSTNode) -> bool:
        scope = self.loops.scope_of(after)
        nodes = self.index.descendants(scope) if scope is not self.index.module else iter(self.index.nodes(cst.Name))
        return any(isinstance(n, cst.Name) and n.value == name and self.index.before(after, n)
                   and not self.index.contains(after, n) and self._read(n) for n in nodes)

    def _store(self, name: cst.Name) -> bool:
        node: cst.CSTNode = name
        parent = self.index.parent_of(node)
        while isinstance(parent, (cst.Element, cst.Tuple, cst.List, cst.StarredElement)):
            node, parent = parent, self.index.parent_of(parent)
        return isinstance(parent, cst.AssignTarget) or (
            isinstance(parent, (cst.For, cst.CompFor, cst.AugAssign, cst.AnnAssign, cst.NamedExpr)) and parent.target is node
        ) or (isinstance(parent, cst.AsName) and parent.name is node)

    def _read(self, name: cst.Name) -> bool:
        return names_a_variable(self.index, name) and not self._store(name)

    def _none_test(self, node: cst.CSTNode) -> bool:
        comparison = node if isinstance(node, cst.Comparison) else self.index.parent_of(node)
        return isinstance(comparison, cst.Comparison) and all(
            isinstance(t.operator, (cst.Is, cst.IsNot)) for t in comparison.comparisons
        ) and any(isinstance(t.comparator, cst.Name) and t.comparator.value == "None" for t in comparison.comparisons)

    # -- consumers -------------------------------------------------------------------------
    def _consumer(self, node: cst.CSTNode, what: str, clip: Clip | None = None, keyword: str | None = None) -> None:
        self.uses.consumers.append(Consumer(node, what, clip, keyword))

    def _what(self, node: cst.CSTNode, parent: cst.CSTNode | None) -> str:
        if isinstance(parent, cst.Return):
            return "returned to the caller"
        if isinstance(parent, (cst.Yield, cst.Await)):
            return "yielded"
        if isinstance(parent, cst.AugAssign):
            return f"accumulated (`{self.code(parent)}`)"
        if isinstance(parent, cst.BinaryOperation):
            return f"used in arithmetic (`{self.code(parent)}`)"
        if isinstance(parent, cst.Subscript):
            return f"indexed (`{self.code(parent)}`)"
        return f"used in `{self.code(parent)}`" if parent is not None else "used"


def _repacks(elt: cst.BaseExpression, targets: set[str]) -> bool:
    """The element of a comprehension is its loop variables, maybe in a tuple."""
    if isinstance(elt, cst.Name):
        return elt.value in targets or elt.value == "None"
    if isinstance(elt, (cst.Tuple, cst.List)):
        return all(_repacks(e.value, targets) or not _names_in(e.value, targets) for e in elt.elements)
    return False


def _names_in(expr: cst.CSTNode, names: set[str]) -> bool:
    if isinstance(expr, cst.Name):
        return expr.value in names
    return any(_names_in(c, names) for c in expr.children if isinstance(c, cst.CSTNode))


def _describe_call(qualified: str, spelled: str) -> str:
    last = qualified.rsplit(".", 1)[-1].lower() if qualified else spelled.rsplit(".", 1)[-1].lower()
    if "norm" in last:
        return f"reduced to a norm by `{spelled}`"
    if "reduce" in last:
        return f"all-reduced by `{spelled}`"
    if any(word in last for word in ("summary", "histogram", "scalar", "print", "log")):
        return f"logged by `{spelled}`"
    if any(word in last for word in ("accum", "add_gradients")):
        return f"accumulated by `{spelled}`"
    return f"passed to `{spelled}`"
