"""Who runs each function of a module: its call sites, and the entry points nobody calls.

    graph = facts.call_graph
    graph.sites_of(function)       # calls (and references, `tf.function(step)`) that run it
    graph.callees(call)            # the module's functions a call runs
    graph.constructions(classdef)  # `Cls(...)` calls, also of its subclasses in the module
    graph.entry(function)          # how an uncalled function is run: Entry

Only what the module shows is resolved, by name: module-level functions, functions
nested in the caller's scope, `self.method()`/`cls.method()`/`Class.method()` in a class
of the module (methods inherited from a base class of the module too), `Class(...)` (its
`__init__`), `super().method()`. A function passed as a value (`tf.function(step)`,
`strategy.run(step_fn)`, `app.run(main)`, `Lambda(fn)`) is run where it is passed.

Entry points that nothing in the module calls:
- unittest-style test methods (`test*` in a class whose base is a `...TestCase` or
  that defines `setUp`): run after `setUpClass` and `setUp`, each test on its own;
- pytest tests (`test_*` functions, `test*` methods of `Test*` classes): after
  `setup_module`/`setup_method`/`setup_function` and the fixtures they request
  (parameters named like a fixture of the module) and the module's autouse fixtures,
  each fixture up to its `yield`;
- other methods (`build`, `call`, `train_step`): run by the framework on an instance,
  so with the policy in effect where the class is instantiated;
- anything else: after the module has run (imported, or the script's code finished).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import libcst as cst

from mplint.analysis.names import dotted_name
from mplint.analysis.node_types import kinds
from mplint.facts.test_modules import is_test_file

# Where a function's name is a value passed on (an argument, an element, a returned value...).
_VALUE_PARENTS = kinds(cst.Arg, cst.Element, cst.Assign, cst.Return, cst.DictElement, cst.IfExp)

# ModuleFacts (mplint.facts.module) builds this fact and hands itself in: its type is
# named, not imported, so that module.py -> this module is the only import between them.
ModuleFacts = Any

_UNITTEST_SETUP = ("setUpClass", "setUp")
_PYTEST_SETUP_FUNCTION = ("setup_module", "setup_function")
_PYTEST_SETUP_METHOD = ("setup_module", "setup_class", "setup_method")
_FIXTURE_DECORATORS = frozenset({"pytest.fixture", "fixture", "pytest.yield_fixture"})
@dataclass
class Entry:
    """How a function nobody calls in the module is run."""

    kind: str  # "test", "method", "nested", "module"
    # Functions whose effect applies first, in order (setUpClass, setUp, fixtures).
    setup: list[cst.FunctionDef] = field(default_factory=list)
    # For fixtures that yield: the effect is the state at their `yield`.
    classdef: cst.ClassDef | None = None  # for "method": the class whose instances run it


class CallGraph:
    def __init__(self, facts: "ModuleFacts") -> None:
        self.facts = facts
        index = facts.index
        self.index = index
        self.module = index.module
        self.functions: list[cst.FunctionDef] = index.nodes(cst.FunctionDef)
        self.classes: list[cst.ClassDef] = index.nodes(cst.ClassDef)
        # Where each function and class is defined: its scope (function/class/module).
        self._module_functions: dict[str, cst.FunctionDef] = {}
        self._module_redefinitions: dict[str, list[cst.FunctionDef]] = {}  # in order, where a name has several
        self._module_classes: dict[str, cst.ClassDef] = {}
        self._nested: dict[tuple[int, str], cst.FunctionDef] = {}  # (enclosing function, name)
        self._methods: dict[int, dict[str, cst.FunctionDef]] = {}  # class -> name -> method
        self._owner: dict[int, cst.ClassDef] = {}  # method -> class
        for function in self.functions:
            parent = index.parent_of(function)
            holder = index.parent_of(parent) if parent is not None else None
            if isinstance(holder, cst.ClassDef):
                self._methods.setdefault(id(holder), {})[function.name.value] = function
                self._owner[id(function)] = holder
                continue
            scope = index.enclosing(function, cst.FunctionDef)
            if scope is None:
                if index.enclosing(function, cst.ClassDef) is None:
                    self._module_functions[function.name.value] = function
                    self._module_redefinitions.setdefault(function.name.value, []).append(function)
            else:
                self._nested[(id(scope), function.name.value)] = function
        for classdef in self.classes:
            if index.enclosing(classdef, cst.FunctionDef, cst.ClassDef) is None:
                self._module_classes[classdef.name.value] = classdef
        self._bases: dict[int, list[cst.ClassDef]] = {
            id(c): [b for b in (self._local_class(a.value) for a in c.bases if a.keyword is None) if b is not None]
            for c in self.classes
        }
        self._sites: dict[int, list[cst.CSTNode]] = {}
        self._callees: dict[int, list[cst.FunctionDef]] = {}
        self._constructions: dict[int, list[cst.Call]] = {}
        self._keys: dict[int, str] = {}
        self.by_key: dict[str, cst.FunctionDef] = {}
        defined: dict[str, int] = {}  # qualified name -> how many functions have it so far
        for function in self.functions:
            key = self._qualname(function)
            seen = defined.get(key, 0)
            defined[key] = seen + 1
            if seen:  # the same name defined twice (`if` branches): number them
                key = f"{key}#{seen}"
            self._keys[id(function)] = key
            self.by_key[key] = function
        self.class_keys: dict[int, str] = {id(c): self._qualname(c) for c in self.classes}
        self._fixtures: dict[str, cst.FunctionDef] = {
            f.name.value: f for f in self._module_functions.values() if self._is_fixture(f)
        }
        self._resolve_sites()

    # -- public ------------------------------------------------------------------
    def key_of(self, function: cst.FunctionDef) -> str:
        """The function's qualified name in its module (`Trainer.train_step`,
        `main.<locals>.step`): how other modules and the project index name it."""
        return self._keys[id(function)]

    def module_function(self, name: str) -> cst.FunctionDef | None:
        return self._module_functions.get(name)

    def module_class(self, name: str) -> cst.ClassDef | None:
        return self._module_classes.get(name)

    def sites_of(self, function: cst.FunctionDef) -> list[cst.CSTNode]:
        """Calls and value references in the module that run `function`."""
        return self._sites.get(id(function), [])

    def callees(self, call: cst.Call) -> list[cst.FunctionDef]:
        """The module's functions a call runs (a class's `__init__` for `Cls(...)`)."""
        return self._callees.get(id(call), [])

    def constructions(self, classdef: cst.ClassDef) -> list[cst.Call]:
        """`Cls(...)` calls of the class or of a subclass of it in the module."""
        found = list(self._constructions.get(id(classdef), []))
        for other in self._subclasses.get(id(classdef), ()):
            found += self._constructions.get(id(other), [])
        found.sort(key=self.index.position_in_order)
        return found

    def owner(self, function: cst.FunctionDef) -> cst.ClassDef | None:
        """The class whose body defines `function`."""
        return self._owner.get(id(function))

    def method(self, classdef: cst.ClassDef, name: str) -> cst.FunctionDef | None:
        """`classdef.name`, also inherited from a base class of the module."""
        for cls in (classdef, *self._ancestors(classdef)):
            found = self._methods.get(id(cls), {}).get(name)
            if found is not None:
                return found
        return None

    def entry(self, function: cst.FunctionDef) -> Entry:
        name = function.name.value
        classdef = self.owner(function)
        if classdef is not None:
            if self._is_unittest_class(classdef):
                if name.startswith("test"):
                    setup = [m for m in (self.method(classdef, s) for s in _UNITTEST_SETUP) if m is not None]
                    return Entry("test", setup)
                if name in ("setUp", "tearDown"):
                    setup = [m for m in (self.method(classdef, "setUpClass"),) if m is not None and m is not function]
                    return Entry("test", setup)
                if name in ("setUpClass", "tearDownClass"):
                    return Entry("test")
            elif classdef.name.value.startswith("Test") and name.startswith("test"):
                setup = [m for m in (self._module_functions.get("setup_module"), self.method(classdef, "setup_class"),
                                     self.method(classdef, "setup_method")) if m is not None]
                return Entry("test", setup + self._fixtures_for(function))
            return Entry("method", classdef=classdef)
        if self.index.enclosing(function, cst.FunctionDef) is not None:
            return Entry("nested")
        if name.startswith("test") and is_test_file(self.facts.path):
            setup = [f for f in (self._module_functions.get(s) for s in _PYTEST_SETUP_FUNCTION) if f is not None]
            return Entry("test", setup + self._fixtures_for(function))
        if id(function) in {id(f) for f in self._fixtures.values()}:
            return Entry("test", self._fixtures_for(function))
        return Entry("module")

    def is_fixture(self, function: cst.FunctionDef) -> bool:
        return self._fixtures.get(function.name.value) is function

    def parameter_names(self, function: cst.FunctionDef) -> list[str]:
        params = function.params
        return [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]

    def _qualname(self, node: cst.FunctionDef | cst.ClassDef) -> str:
        parts = [node.name.value]
        for ancestor in self.index.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef):
                parts += ["<locals>", ancestor.name.value]
            elif isinstance(ancestor, cst.ClassDef):
                parts.append(ancestor.name.value)
        return ".".join(reversed(parts))

    # -- resolution ----------------------------------------------------------------
    def _resolve_sites(self) -> None:
        index = self.index
        called_funcs: set[int] = set()
        for call in index.nodes(cst.Call):
            called_funcs.add(id(call.func))
            targets = self._resolve_call(call)
            if targets:
                self._callees[id(call)] = targets
                for target in targets:
                    self._sites.setdefault(id(target), []).append(call)
        # A function passed as a value runs where it is passed (or later, from there).
        for name in index.nodes(cst.Name):
            if id(name) in called_funcs:
                continue
            parent = index.parent_of(name)
            if type(parent) not in _VALUE_PARENTS:
                continue
            if isinstance(parent, cst.Assign) and name is not parent.value:
                continue
            if isinstance(parent, cst.IfExp) and name is parent.test:
                continue  # `step = train_mp if mp else train`: an arm is a value, the test is not
            target = self._function_named(name)
            if target is not None:
                self._sites.setdefault(id(target), []).append(name)
        for sites in self._sites.values():
            sites.sort(key=index.position_in_order)

    def _resolve_call(self, call: cst.Call) -> list[cst.FunctionDef]:
        func = call.func
        if isinstance(func, cst.Name):
            function = self._function_named(func)
            if function is not None:
                return [function]
            classdef = self._class_named(func)
            if classdef is not None:
                self._constructions.setdefault(id(classdef), []).append(call)
                init = self.method(classdef, "__init__")
                return [init] if init is not None else []
            return []
        if not isinstance(func, cst.Attribute):
            return []
        attr = func.attr.value
        receiver = func.value
        if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name) and receiver.func.value == "super":
            classdef = self._enclosing_class(call)
            if classdef is None:
                return []
            for base in self._ancestors(classdef):
                found = self._methods.get(id(base), {}).get(attr)
                if found is not None:
                    return [found]
            return []
        if not isinstance(receiver, cst.Name):
            return []
        classdef = self._class_named(receiver)
        if classdef is None and receiver.value in ("self", "cls"):
            classdef = self._enclosing_class(call)
        if classdef is None:
            return []
        found = self.method(classdef, attr)
        return [found] if found is not None else []

    def _function_named(self, name: cst.Name) -> cst.FunctionDef | None:
        """The function a plain name means where it is used: a nested def of an
        enclosing function, else a module-level def that nothing else rebinds."""
        scope = self.index.enclosing(name, cst.FunctionDef)
        while scope is not None:
            nested = self._nested.get((id(scope), name.value))
            if nested is not None:
                return nested
            if self.facts.bindings.is_bound(scope, name.value) or name.value in self.parameter_names(scope):
                return None
            scope = self.index.enclosing(scope, cst.FunctionDef)
        function = self._module_functions.get(name.value)
        if function is None or self._rebound(name.value):
            return None
        defined = self._module_redefinitions[name.value]
        if len(defined) > 1 and self.index.enclosing(name, cst.FunctionDef, cst.ClassDef) is None:
            # module-level code (a notebook's sections each define their own `train`)
            # runs the definition it follows, not the last one
            before = [d for d in defined if self.index.before(d, name)]
            return before[-1] if before else None
        return function

    def _class_named(self, name: cst.Name) -> cst.ClassDef | None:
        classdef = self._module_classes.get(name.value)
        if classdef is None or self._rebound(name.value):
            return None
        scope = self.index.enclosing(name, cst.FunctionDef)
        while scope is not None:
            if self.facts.bindings.is_bound(scope, name.value) or name.value in self.parameter_names(scope):
                return None
            scope = self.index.enclosing(scope, cst.FunctionDef)
        return classdef

    def _rebound(self, name: str) -> bool:
        """A module-level name also bound by an assignment or import."""
        return self.facts.bindings.is_bound(self.module, name)

    def _local_class(self, expr: cst.BaseExpression) -> cst.ClassDef | None:
        if isinstance(expr, cst.Name) and expr.value not in self.facts.imports.aliases:
            return self._module_classes.get(expr.value)
        return None

    @cached_property
    def _subclasses(self) -> dict[int, list[cst.ClassDef]]:
        """The module's classes that derive from each class (by id), in module order:
        found once, not per class asked about (a module of a thousand classes)."""
        found: dict[int, list[cst.ClassDef]] = {}
        for other in self.classes:
            for base in self._ancestors(other):  # never `other` itself
                found.setdefault(id(base), []).append(other)
        return found

    def _ancestors(self, classdef: cst.ClassDef) -> list[cst.ClassDef]:
        found: list[cst.ClassDef] = []
        stack = list(self._bases.get(id(classdef), []))
        while stack:
            base = stack.pop(0)
            if base is classdef or base in found:
                continue
            found.append(base)
            stack.extend(self._bases.get(id(base), []))
        return found

    def _enclosing_class(self, node: cst.CSTNode) -> cst.ClassDef | None:
        function = self.index.enclosing(node, cst.FunctionDef)
        while function is not None:
            owner = self._owner.get(id(function))
            if owner is not None:
                return owner
            function = self.index.enclosing(function, cst.FunctionDef)
        return None

    # -- tests -----------------------------------------------------------------------
    def _is_unittest_class(self, classdef: cst.ClassDef) -> bool:
        for cls in (classdef, *self._ancestors(classdef)):
            if "setUp" in self._methods.get(id(cls), {}) or "setUpClass" in self._methods.get(id(cls), {}):
                return True
            for base in cls.bases:
                dotted = dotted_name(base.value) or ""
                if dotted.endswith("TestCase"):
                    return True
        return False

    def _is_fixture(self, function: cst.FunctionDef) -> bool:
        for decorator in function.decorators:
            expr = decorator.decorator
            if isinstance(expr, cst.Call):
                expr = expr.func
            if (dotted_name(expr) or "") in _FIXTURE_DECORATORS:
                return True
        return False

    def _autouse(self, function: cst.FunctionDef) -> bool:
        for decorator in function.decorators:
            expr = decorator.decorator
            if isinstance(expr, cst.Call):
                for arg in expr.args:
                    if arg.keyword is not None and arg.keyword.value == "autouse" and \
                            isinstance(arg.value, cst.Name) and arg.value.value == "True":
                        return True
        return False

    def _fixtures_for(self, function: cst.FunctionDef, seen: frozenset[int] = frozenset()) -> list[cst.FunctionDef]:
        """The module's fixtures a test (or fixture) runs after: autouse ones, then the
        ones it requests, each after the fixtures it requests itself."""
        if id(function) in seen:
            return []
        seen = seen | {id(function)}
        wanted = [f for f in self._fixtures.values() if self._autouse(f) and f is not function]
        wanted += [self._fixtures[n] for n in self.parameter_names(function) if n in self._fixtures]
        ordered: list[cst.FunctionDef] = []
        for fixture in wanted:
            for inner in (*self._fixtures_for(fixture, seen), fixture):
                if inner not in ordered and inner is not function:
                    ordered.append(inner)
        return ordered
