"""The conditions a statement runs under, so that a fix can keep them.

    guard = guard_of(index, node)   # [(test, negated), ...], outermost first
    condition_text(module, guard)   # "FLAGS.amp and not args.cpu"

Only `if`/`elif`/`else` and conditional expressions between the node and its function
(or the module) count: `if FLAGS.amp: opt = rewrite(opt)` runs under `FLAGS.amp`.
`branches_to_module(index, node)` gives the `if` statements' conditions up to the module.
"""

from __future__ import annotations

import libcst as cst

from mplint.analysis.index import ModuleIndex

Guard = list[tuple[cst.BaseExpression, bool]]


def guard_of(index: ModuleIndex, node: cst.CSTNode, to_module: bool = False) -> Guard:
    """`to_module`: also the conditions around the functions and classes that hold
    `node` (a `def` under `if amp:` exists only where `amp` held)."""
    found: Guard = []
    child = node
    for ancestor in index.ancestors(node):
        if isinstance(ancestor, cst.Module) or (
                not to_module and isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef))):
            break
        if isinstance(ancestor, cst.If):
            if child is ancestor.body:
                found.append((ancestor.test, False))
            elif child is ancestor.orelse:  # an `else:` block or an `elif` If
                found.append((ancestor.test, True))
        elif isinstance(ancestor, cst.IfExp) and child is not ancestor.test:
            found.append((ancestor.test, child is ancestor.orelse))
        child = ancestor
    found.reverse()
    return found


def branches_to_module(index: ModuleIndex, node: cst.CSTNode) -> Guard:
    """The conditions of the `if` statements (not conditional expressions) around `node`,
    across its functions and classes up to the module, innermost first."""
    return [(test, negated) for test, negated in reversed(guard_of(index, node, to_module=True))
            if isinstance(index.parent_of(test), cst.If)]


def name_tests(index: ModuleIndex, node: cst.CSTNode) -> list[tuple[cst.Name, bool]]:
    """The bare names `node` runs under (`if flag:`, `if not flag:`, their `else:`), each
    with the truth it needs there, outermost first."""
    found = []
    for test, negated in guard_of(index, node):
        needed = not negated
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, needed = test.expression, negated
        if isinstance(test, cst.Name):
            found.append((test, needed))
    return found


def guard_not_shared(index: ModuleIndex, node: cst.CSTNode, at: cst.CSTNode) -> Guard:
    """The conditions `node` runs under that do not also guard `at`: an edit at `at` that
    relies on what `node` did must keep them (`if amp: opt = LossScaleOptimizer(opt)`)."""
    at_guard = {id(test) for test, _ in guard_of(index, at)}
    return [(test, negated) for test, negated in guard_of(index, node) if id(test) not in at_guard]


def exclusive(index: ModuleIndex, node: cst.CSTNode, other: cst.CSTNode) -> bool:
    """Whether the two never run in the same pass: one is in the body of an `if` (or a
    conditional expression) and the other in its `else`/`elif` (`if amp: opt =
    rewrite(opt)` / `else: grads = tf.gradients(...)`)."""
    sides = {id(test): negated for test, negated in guard_of(index, node)}
    return any(id(test) in sides and sides[id(test)] != negated for test, negated in guard_of(index, other))


def condition_text(module: cst.Module, guard: Guard) -> str:
    terms = []
    for test, negated in guard:
        text = module.code_for_node(test).strip()
        simple = isinstance(test, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Comparison))
        if negated:
            terms.append(f"not {text}" if simple and not isinstance(test, cst.Comparison) else f"not ({text})")
        else:
            terms.append(text if simple or len(guard) == 1 else f"({text})")
    return " and ".join(terms)


def capability_tests(index: ModuleIndex, test: cst.BaseExpression) -> set[str]:
    """The attribute names `test` checks an object for, anywhere in it: `hasattr(opt, "m")`,
    `"m" in dir(opt)`, `getattr(opt, "m", None)` (the duck-typing spellings of "this
    object has m"). Code under such a test runs only where the attribute exists."""
    from mplint.analysis.calls import arg_value, string_value

    names: set[str] = set()
    for node in [test, *index.descendants(test)]:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("hasattr", "getattr"):
            name = string_value(arg_value(node, 1))
            if name is not None:
                names.add(name)
        elif isinstance(node, cst.Comparison) and len(node.comparisons) == 1 \
                and isinstance(node.comparisons[0].operator, cst.In):
            container = node.comparisons[0].comparator
            if isinstance(container, cst.Call) and isinstance(container.func, cst.Name) and container.func.value == "dir":
                name = string_value(node.left)
                if name is not None:
                    names.add(name)
    return names
