"""What the rest of the project tells the facts of one module (the project index's side).

The facts of a module ask the project only through this interface, so they work the
same without one (a snippet, a file outside any project): every answer is then "nothing
known". `mplint.project.index` implements it from the summaries of the other modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol

from mplint.facts.entries import External
from mplint.facts.target import Target

if TYPE_CHECKING:
    from mplint.facts.policy_flow import TruthOf


@dataclass(frozen=True)
class ExternalValue:
    """A constant defined in another module of the project (read, never edited)."""

    value: object
    where: str  # "config.py:3"
    label: str  # "constant HIDDEN", "flag --hidden_size default", "argument `hidden` of `build(...)`"
    name: str | None = None
    written_in_code: bool = False  # an argument: a literal or constant at the call, not a flag's default


@dataclass(frozen=True)
class ConfigValue:
    """The value one of the project's configuration files gives a key."""

    where: str  # "config.toml:21", relative to the working directory
    value: bool | None  # its truth; None: not a literal mplint reads (`${oc.env:AMP}`, a list)


def off_in_every_configuration(values: list[ConfigValue]) -> str | None:
    """Where the configurations set a key, if each sets it false (`config.toml:21`); None
    where one sets it true or to a value mplint cannot read, or none names it."""
    if not values or any(v.value is not False for v in values):
        return None
    return ", ".join(v.where for v in values[:2]) + (" ..." if len(values) > 2 else "")


@dataclass(frozen=True)
class ExternalOptimizer:
    """An optimizer passed in from another module: what it was built as there."""

    origin: str  # "built" or "compiled"
    generation: str | None  # None (plain), "current", "experimental", "v1", "graph_rewrite"
    kind: str  # "keras", "v1" or "unknown"
    where: str


class ProjectContext(Protocol):
    module: str  # this module's dotted name in its project ("pkg.model")

    def resolve(self, raw: str) -> str | None:
        """A name as this module imports it (maybe relative: `.model.build`), as the
        absolute name of a function, class or constant of a project module (re-exports
        followed), or None if it is not the project's."""

    def canonical(self, raw: str) -> str | None:
        """A project name that re-exports a framework name (`pkg.utils.keras` ->
        `tensorflow.keras`), or None."""

    def exit_of(self, callee: str, truth_of: "TruthOf | None" = None) -> frozenset | None:
        """The symbolic policy state at the end of a project function (its effect); with
        `truth_of`, under what the call gives the parameters that guard its settings
        (`setup(fp16=False)` where the callee sets the policy only `if fp16:`)."""

    def import_effect(self, module: str) -> frozenset | None:
        """The effect on the policy of importing a project module (its top-level code),
        symbolic; None if it is not the project's or has none."""

    def external_flow(self) -> External | None:
        """Concrete policy states of the places in other modules that run this
        module's functions and instantiate its classes; None if there are none."""

    def constant(self, name: str) -> ExternalValue | None:
        """The value of a project constant (`pkg.config.HIDDEN`)."""

    def used_elsewhere(self, name: str) -> bool:
        """Whether another module of the project (tests aside) that imports this one
        names `name` (a class it may construct)."""

    def version_flag(self, name: str) -> dict[str, bool] | None:
        """A project flag of TensorFlow's version (`compat.IS_PREV_TF_2_4_0`): its truth
        at each TensorFlow version checks are evaluated at; None otherwise."""

    def version_check(self, name: str) -> Callable[[list[object], str], bool | None] | None:
        """For a project function that checks TensorFlow's version from its arguments
        (`utils.tf_minor_version_geq`): the truth of a call of it, given the argument
        values and the version; None for any other name."""

    def flag_default(self, name: str) -> ExternalValue | None:
        """The default of an absl flag defined in another module of the project."""

    def configured_values(self, key: str) -> list[ConfigValue]:
        """The values the project's configuration files (TOML, YAML, JSON, INI) give
        `key`, each with its file and line."""

    def names_command_line_flag(self, name: str) -> bool:
        """Whether some module of the project defines a command-line flag `name`."""

    def float32_returns(self, name: str) -> tuple[list[str], list[str], bool] | None:
        """For a function of another project module whose every return casts to
        float32/float64 (`tf.cast(x, dtype)` with `dtype=tf.float32` by default): (its
        parameters, those whose argument could choose another dtype, whether it is
        bound to an object); None otherwise."""

    def target(self) -> "Target | None":
        """The Keras the rest of the project targets, when its code says so."""

    def mixed_policies(self) -> tuple[frozenset[str], tuple[str, ...]]:
        """(the mixed policies the rest of the project can bring into this module, the
        files that set them)."""

    def policy_flag_guards(self, float16: bool = False) -> dict[str, bool]:
        """The command-line flags every module that brings a mixed policy here requires of
        its settings (`{"fp16": True}` where each sets it only `if args.fp16:`); with
        `float16`, of the settings that can set mixed_float16, with the flags choosing it."""

    def calls_passing(self, function: str, param: str) -> int | None:
        """How many calls of this module's `function` other modules make, where each
        gives `param` an argument; None where one does not, or cannot be read (`*args`)."""

    def used_as_part(self, key: str) -> bool:
        """Whether a call in another module uses the model this module's function (or
        class) builds as a part of another model."""

    def final_use_elsewhere(self, key: str, item: int | None = None) -> str | None:
        """The file of another module that trains, evaluates, predicts with or exports the
        model this module's function (or class) builds (the `item`th of the tuple it
        returns), or None."""

    def mentions_mixed_precision(self) -> bool:
        """Whether any file of the project names a mixed-precision API or policy (its
        code, tests, examples): a library that never does is not used so by itself."""

    def mentions_float16(self) -> bool:
        """False only where the project names bfloat16 and never the float16 side of mixed
        precision (`mixed_float16`, `float16`, a LossScaleOptimizer)."""

    def names_float16_policy(self) -> bool:
        """Whether some file of the project names a float16 Keras policy in its code
        (`"mixed_float16"`, `set_floatx("float16")`; tests and notebooks count)."""

    def float16_only_from_the_graph_rewrite(self) -> bool:
        """Whether the project's float16 is the graph rewrite (`auto_mixed_precision`): some
        file turns it on and none names a float16 Keras policy (`mixed_float16`,
        `set_floatx("float16")`) in its code."""

    def imported_only_on_tensorflow1(self) -> str | None:
        """Where the project imports this module only in branches no TensorFlow 2 takes
        (a TF 1.x backend beside a TF 2 one), the path of an importer; else None."""

    def graph_rewrite_imported(self) -> str | None:
        """The path of a project module this one imports whose code calls the float16
        graph rewrite (`enable_mixed_precision_graph_rewrite`): the model code this
        script runs may get its mixed precision there."""

    def trainer(self) -> str | None:
        """A module of the project (not a test) that imports this one, directly or through
        others, and trains something (fits, applies gradients, records a tape)."""

    def float16_policy_on_path(self) -> bool | None:
        """Whether a module that uses this one (imports it, directly or through others)
        names a float16 Keras policy or imports a module that does; None where no module
        of the project uses it."""

    def may_build_layers_later(self) -> bool:
        """Whether code that can run after this module's import-time code may build a
        Keras layer or model (a module that imports it; a function of one it imports)."""

    def is_project_module(self, raw: str) -> bool:
        """Whether a module name as this module imports it (`pkg.mod`, `.mod`) is the
        project's own."""

    def importers(self) -> tuple[str, ...]:
        """The project's modules (tests aside) that import this one: code at this
        module's top runs in their programs too."""

    def arguments(self, function: str, param: str, under_mixed: bool = False
                  ) -> list[ExternalValue | ExternalOptimizer | None]:
        """What the calls of this module's `function` in other modules give `param`
        (None for a call whose argument is not known); with `under_mixed`, only the calls
        where a mixed policy can be in effect (a notebook that sets none passes its
        sizes to no float16 layer)."""
