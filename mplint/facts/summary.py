"""What one module's code tells the rest of the project about where it runs things.

Built from the module's facts (the same analysis the rules read) for the modules whose
calls matter to others, kept by the project index on disk (keyed by the file's content),
and read when *other* modules are checked:

- `flow`: the policy flow (`mplint.facts.entries.ModuleFlow`): where the module runs its
  functions and under what symbolic policy, and its calls of other project modules;
- `calls`: those calls' arguments (constants, optimizers), in the order of
  `flow.outgoing`, and whether the call's result (a model) is used as a part of another
  model there, or consumed as a model's result (trained, predicted, exported: `final`).

What any module *defines* (imports, constants, flags, signatures) is read without
libcst, by `mplint.project.module_table`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mplint.facts.entries import FunctionFlow, ModuleFlow

if TYPE_CHECKING:
    import libcst as cst

    from mplint.facts.module import ModuleFacts

SUMMARY_VERSION = 6  # 6: calls of methods of known receivers (`Builder(...).build()`); 5: calls say whether the module consumes the model a call returns (final)
_LITERALS = (int, float, str, bool, type(None))


def build_summary(facts: "ModuleFacts") -> dict[str, Any]:
    """The module's summary (JSON-able)."""
    flow = facts.policy.flow.summary
    calls = _calls(facts)
    rows: dict[int, int] = {}
    if calls and not facts.path.endswith(".ipynb"):
        from mplint.core.textpos import LineIndex

        lines = LineIndex(facts.text)
        rows = {key: lines.row_col(span.start)[0] for key, span in facts.positions.spans([c for c, _ in calls]).items()}
    return {
        "version": SUMMARY_VERSION,
        "flow": flow_to_json(flow),
        "calls": [dict(arguments, row=rows.get(id(call), 0)) for call, arguments in calls],
    }


# -- calls of other modules -------------------------------------------------------------------

def _calls(facts: "ModuleFacts") -> list[tuple[cst.Call, dict[str, Any]]]:
    """The arguments of the module's calls of other project modules (flow.outgoing order)."""
    from mplint.facts.model_graph import ModelGraph
    from mplint.facts.model_roles import final_uses

    flow = facts.policy.flow
    graph = facts.analysis(ModelGraph) if flow.outgoing_calls else None
    found = []
    for call, _ in flow.outgoing_calls:
        positional, keywords = [], {}
        for arg in call.args:
            if arg.star:
                positional = None  # `*args`/`**kwargs`: nothing can be said
                break
            value = _argument(facts, arg.value, call)
            if arg.keyword is None:
                positional.append(value)
            else:
                keywords[arg.keyword.value] = value
        found.append((call, {
            "args": positional,
            "kwargs": keywords if positional is not None else {},
            "part": graph is not None and graph.is_part_of_a_model(call),  # the result goes into another model
            "final": final_uses(graph, call) if graph is not None else [],  # ... or is trained, predicted, exported
        }))
    return found


def _argument(facts: "ModuleFacts", expr: cst.BaseExpression, call: cst.Call) -> Any:
    """A JSON description of an argument: a constant, an optimizer, or None."""
    import libcst as cst  # not at the top: reading a stored summary (flow_from_json) needs no parser

    value = facts.values.resolve(expr)
    if value is not None and isinstance(value.value, _LITERALS):
        found: dict[str, Any] = {"value": value.value}
        source = value.single_source
        if source is not None and source.name:  # `Linear(c, num_classes)`: what the value is here
            found["name"] = source.name
        if value.written_in_code:  # a literal or a constant, not a flag's default
            found["code"] = True
        return found
    from mplint.facts.training import TrainingLoops

    loops = facts.analysis(TrainingLoops)
    info = loops.optimizer(expr, call) if isinstance(expr, (cst.Name, cst.Attribute)) else loops.evaluate(expr)
    if info.origin != "unknown":
        return {"optimizer": [info.origin, info.generation, info.kind]}
    return None


# -- flows as JSON ---------------------------------------------------------------------------

def _state(state: frozenset) -> list[str]:
    return sorted(state)


def flow_to_json(flow: ModuleFlow) -> dict[str, Any]:
    return {
        "functions": {
            key: {
                "kind": f.kind,
                "sites": [[c, _state(s)] for c, s in f.sites],
                "setup": list(f.setup),
                "owner": f.owner,
                "effect": _state(f.effect),
                "defined": [f.defined[0], _state(f.defined[1])] if f.defined else None,
                "conditions": {p: [pos, default, _state(no), _state(yes)]
                               for p, (pos, default, no, yes) in f.conditions.items()},
            }
            for key, f in flow.functions.items()
        },
        "constructions": {k: [[c, _state(s)] for c, s in sites] for k, sites in flow.constructions.items()},
        "exit": _state(flow.exit),
        "outgoing": [[c, callee, _state(s)] for c, callee, s in flow.outgoing],
        "changes_policy": flow.changes_policy,
        "policy_flags": flow.policy_flags,
        "float16_flags": flow.float16_flags,
    }


def flow_from_json(data: dict[str, Any]) -> ModuleFlow:
    return ModuleFlow(
        functions={
            key: FunctionFlow(
                f["kind"],
                [(c, frozenset(s)) for c, s in f["sites"]],
                tuple(f["setup"]),
                f["owner"],
                frozenset(f["effect"]),
                (f["defined"][0], frozenset(f["defined"][1])) if f["defined"] else None,
                {p: (pos, default, frozenset(no), frozenset(yes)) for p, (pos, default, no, yes) in f["conditions"].items()},
            )
            for key, f in data["functions"].items()
        },
        constructions={k: [(c, frozenset(s)) for c, s in sites] for k, sites in data["constructions"].items()},
        exit=frozenset(data["exit"]),
        outgoing=[(c, callee, frozenset(s)) for c, callee, s in data["outgoing"]],
        changes_policy=data["changes_policy"],
        policy_flags=data.get("policy_flags"),
        float16_flags=data.get("float16_flags"),
    )
