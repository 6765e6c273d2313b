"""Premises: the facts a finding rests on, each with how sure mplint is of it.

A finding is only true where the code runs: under the policy, the Keras and the backend
in effect there, for a tensor of the dtype and an object of the role the rule assumes.
Each rule declares which of these facts its findings rest on (`Rule.premises`); the base
class computes them here for the place reported, and a rule can state one itself where
its own analysis knows better (a dtype it followed, a role it checked).

Each premise has a status:

- **proved**: seen in code that runs on the path to the line (or declared by the user:
  `target`, `assume-policy`);
- **inferred**: read from the project: another module, the pinned versions, a container
  image, the era of the APIs the file uses, the day the repository last changed (git);
- **assumed**: only the environment running mplint, or a default, says so;
- **conflicting**: the evidence disagrees (the file imports `tf_keras` and calls the
  Keras-3-only `scale_loss`).

Tiers follow from the statuses (CodeQL's default and extended suites, Infer Pulse's
manifest and latent issues): a finding whose premises are all proved or inferred is in
the **default** tier; one with an assumed or conflicting premise is **extended** (shown
with `--extended`). A fix is safe only on premises that are all proved (see
`Rule.report`). Tiers say how sure mplint is; severity says how bad the problem is.
"""

from __future__ import annotations

import os

from typing import TYPE_CHECKING

from mplint.core.diagnostics import BACKEND, POLICY, TARGET, TENSORFLOW_BUILD, Premise, Status
from mplint.facts.project_context import off_in_every_configuration
from mplint.facts.target import nearest_ngc_image

if TYPE_CHECKING:
    import libcst as cst

    from mplint.facts.module import ModuleFacts
    from mplint.facts.target import Target


# -- the premises computed from the module's facts ----------------------------------------

def _short(facts: "ModuleFacts", node: cst.CSTNode, limit: int = 60) -> str:
    code = " ".join(facts.module.code_for_node(node).split())
    return code if len(code) <= limit else code[: limit - 3] + "..."


class _LocalPolicy:
    """The mixed policies this file sets itself, and the first place it does (computed
    once per module: every finding of a large file asks)."""

    def __init__(self, facts: "ModuleFacts") -> None:
        from mplint.facts.selected_policy import never_mixed

        # not a setting whose every caller passes a constant that picks float32
        local = [s for s in facts.policy.settings if s.is_mixed and not never_mixed(facts, s)]
        self.names = sorted({n for s in local for n in (s.names or ()) if n.startswith("mixed_")})
        self.where = f"`{_short(facts, local[0].call)}` in this file" if local else None


class _SwitchedOffByConfiguration:
    """Whether every mixed setting that reaches this module runs only where a key of the
    project's configuration files is true, and every configuration that names it sets it
    false: `if config["training"].get("use_mixed_precision"):` with `use_mixed_precision =
    false` in `config.toml`. The policy is then a user's option, not what the project
    runs (computed once per module). A key that is also a command-line flag (`--amp`) is
    left as a flag: the command line turns it on."""

    def __init__(self, facts: ModuleFacts) -> None:
        self.reason: str | None = None
        project = facts.project
        if project is None:
            return
        for flag, required in sorted(facts.policy.mixed_flag_guards.items()):
            if required is not True or "::" in flag:
                continue
            where = off_in_every_configuration(project.configured_values(flag))
            if where is not None and not project.names_command_line_flag(flag):
                self.reason = (f"set only where the configuration key `{flag}` is true, and the project's "
                               f"configuration sets it false ({where})")
                return


def policy_premise(facts: "ModuleFacts", node: cst.CSTNode) -> Premise:
    """The mixed policy the code at `node` runs under, and how that is known."""
    policy = facts.policy
    if facts.assumed_policy:
        return Premise(POLICY, facts.assumed_policy, Status.PROVED, "assume-policy in the configuration")
    at_node = sorted(n for n in policy.global_at(node) if n.startswith("mixed_"))
    local = facts.analysis(_LocalPolicy)
    project_policies, setters = policy.from_project
    if local.where is not None or project_policies:
        switched_off = facts.analysis(_SwitchedOffByConfiguration).reason
        if switched_off is not None:
            return Premise(POLICY, "/".join(at_node or local.names or sorted(project_policies)), Status.ASSUMED,
                           switched_off)
    if local.where is not None:
        return Premise(POLICY, "/".join(at_node or local.names), Status.PROVED, local.where)
    if project_policies:
        where = ", ".join(setters[:2]) + (" ..." if len(setters) > 2 else "") if setters else "another module"
        names = at_node or sorted(project_policies)
        selectors, only_selected = facts.project.policy_selectors() if facts.project is not None else ([], frozenset())
        if only_selected and set(names) <= only_selected:
            return Premise(POLICY, "/".join(names), Status.ASSUMED,
                           f"only {selectors[0]} sets it, which sets float32 too: the argument decides")
        return Premise(POLICY, "/".join(names), Status.INFERRED, f"set in {where}, on the path that runs this code")
    if at_node:
        return Premise(POLICY, "/".join(at_node), Status.INFERRED, "set by the code that runs this one")
    from mplint.facts.float16_code import is_library_module

    project = facts.project
    library = is_library_module(facts.path)
    if library and project is not None and project.float16_only_from_the_graph_rewrite():
        return Premise(POLICY, "mixed_float16", Status.ASSUMED,
                       "library code of a project whose float16 is the graph rewrite, not a Keras policy (the "
                       "rewrite keeps exp, log and softmax in float32)")
    if library and (project is None or project.names_float16_policy()):
        if project is not None and project.float16_policy_on_path() is False:
            return Premise(POLICY, "mixed_float16", Status.ASSUMED,
                           "its project names a float16 Keras policy only in files that do not use this module")
        return Premise(POLICY, "mixed_float16", Status.INFERRED,
                       "a library's layer code runs under its users' policy, and its project uses mixed_float16")
    if library and project.mentions_mixed_precision():
        if project.mentions_float16():
            return Premise(POLICY, "mixed_float16", Status.ASSUMED,
                           "library code of a project that never sets a float16 Keras policy (its code, tests and "
                           "notebooks): its layers compute in float16 only under a user's mixed_float16")
        return Premise(POLICY, "mixed_float16", Status.ASSUMED,
                       "library code of a project that uses only bfloat16 mixed precision")
    return Premise(POLICY, "mixed_float16", Status.ASSUMED, "no mixed policy is set in the project")


_TARGET_STATUS = {
    "config": Status.PROVED, "file": Status.PROVED, "object": Status.PROVED,
    "project": Status.INFERRED, "pins": Status.INFERRED, "job": Status.INFERRED, "container": Status.INFERRED,
    "era": Status.INFERRED,
    "project-era": Status.INFERRED,
    "environment": Status.ASSUMED, "default": Status.ASSUMED,
}


def target_premise(facts: "ModuleFacts", target: "Target | None" = None) -> Premise:
    """Which Keras the module targets (`target`: that decision with its TensorFlow dated,
    `ModuleFacts.tensorflow_target`), and how that is known."""
    target = target or facts.target
    if target.conflict:
        return Premise(TARGET, target.keras, Status.CONFLICTING, f"{target.reason}, but {target.conflict}")
    status = _TARGET_STATUS.get(target.source, Status.ASSUMED if target.assumed else Status.INFERRED)
    return Premise(TARGET, target.keras, status, target.reason)


_BACKEND_STATUS = {"file": Status.PROVED, "code": Status.PROVED, "project": Status.INFERRED,
                   "environment": Status.ASSUMED, "default": Status.ASSUMED}


def backend_premise(facts: "ModuleFacts") -> Premise:
    backend = facts.backend
    return Premise(BACKEND, backend.name, _BACKEND_STATUS.get(backend.source, Status.ASSUMED), backend.reason)


def stock_tensorflow_premise(facts: "ModuleFacts") -> Premise:
    """That the code runs on stock TensorFlow (not an NGC container): proved by Keras 3
    code (TensorFlow >= 2.16 from PyPI), inferred from the project's pins; otherwise only
    assumed. Keras-2-era code with nothing pinned may well be NGC container code."""
    target = facts.target
    if target.is_keras3 and target.source in ("config", "file", "object"):
        return Premise(TENSORFLOW_BUILD, "stock", Status.PROVED, f"Keras 3 code ({target.reason}) runs on TensorFlow >= 2.16")
    ngc = nearest_ngc_image(os.path.dirname(os.path.abspath(facts.path)))
    if ngc is not None:
        return Premise(TENSORFLOW_BUILD, "stock", Status.CONFLICTING, f"the project also runs in NGC: {ngc}")
    if target.source in ("pins", "job"):
        return Premise(TENSORFLOW_BUILD, "stock", Status.INFERRED, target.reason)
    return Premise(TENSORFLOW_BUILD, "stock", Status.ASSUMED,
                   "nothing in the project says whether stock TensorFlow or an NGC container runs this code")


def computed_premise(fact: str, facts: "ModuleFacts", node: cst.CSTNode) -> Premise | None:
    """The premise `fact` for a finding at `node`, where the module's facts say it."""
    if fact == POLICY:
        return policy_premise(facts, node)
    if fact == TARGET:
        return target_premise(facts)
    if fact == BACKEND:
        return backend_premise(facts)
    return None
