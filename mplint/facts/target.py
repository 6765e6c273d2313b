"""Which Keras a file targets: Keras 2 (tf.keras <= 2.15, tf_keras) or Keras 3.

The same loss-scaling repair reads differently for each, so fixes are written for the
file's target. Decided per file, first match wins:

1. `--target` / `target` in config (unless "auto");
2. the file sets `TF_USE_LEGACY_KERAS` or imports `tf_keras` -> keras2; it uses
   TF 1.x-only top-level APIs (`tf.Session`, `tf.placeholder`, `tf.contrib`, ...) ->
   keras2 on a TensorFlow older than 2.4; a notebook says what it ran on (Colab's
   `%tensorflow_version 1.x`, a `!pip install tensorflow==X.Y` cell, the recorded
   output of printing `tf.__version__`);
3. the file imports standalone `keras` and uses Keras-3-only names -> keras3;
4. the rest of the project (`mplint.project.index`): another module sets
   `TF_USE_LEGACY_KERAS` (also in a helper such as `ensure_keras_v2()`), imports
   `tf_keras` or uses Keras-2-only APIs (`optimizers.legacy`, `tensorflow_addons`) ->
   keras2; uses Keras-3-only names -> keras3 (both kinds: no decision here);
5. the project's pinned versions (pyproject.toml, requirements*.txt, setup.cfg,
   setup.py): `tensorflow<2.16`, `keras<3`, a required `tf-keras` dependency -> keras2;
   `tensorflow>=2.16`, `keras>=3` -> keras3; required dependencies decide before
   optional extras;
6. the project's container image (`Dockerfile*`, `*.Dockerfile`, also in a `docker/`
   folder), the nearest from the file's folder up: `FROM tensorflow/tensorflow:2.N` by
   its version, NVIDIA's `nvcr.io/nvidia/tensorflow:YY.MM-tf2-py3` up to 23.xx and any
   `-tf1-` tag -> keras2; within two folders of the file, a README that names its
   TensorFlow (an image, `pip install tensorflow==X.Y`, "TensorFlow 2.0"; every version
   it names must agree);
7. Keras-2-era APIs in the file (the experimental mixed-precision API, TensorFlow's
   private `tensorflow.python.keras`, `lr=` in an optimizer, `experimental_run_v2`, ...)
   -> keras2, *assumed* (the code was written for Keras 2; which TensorFlow is unknown);
   then such code in another module of the project, where none has Keras-3-only code
   and the file does not import standalone `keras`;
8. the installed tensorflow / keras versions, read from package metadata (never
   imported): *assumed*, since the environment running mplint need not be the one the
   code runs in;
9. otherwise keras3 (what `pip install tensorflow` gives today), also assumed.

An assumed target (`Target.assumed`) makes fixes that depend on it unsafe, and their
messages say which Keras was assumed and how to set `target`.

A Keras 2 target decided by evidence that names no TensorFlow (steps 2-7) is bounded by the
TensorFlow of the day its repository was last committed to (`mplint.facts.file_history`):
code last committed to in July 2020 ran on TF 2.2 at most.
"""

from __future__ import annotations

import codecs
import os
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Iterator

from mplint.facts.file_history import checkout_top, last_change
from mplint.facts.file_history import forget as forget_history
from mplint.facts.job_scripts import (
    JOB_SCRIPT_SUFFIXES,
    forget_job_scripts,
    job_tensorflow,
)
from mplint.inputs import run_record

KERAS2 = "keras2"
KERAS3 = "keras3"

_TF_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-macos", "tensorflow-intel", "tf-nightly", "tf-nightly-cpu")
_LEGACY_ENV = re.compile(
    r"""TF_USE_LEGACY_KERAS['"]?\s*(?:\]\s*=|,|=)\s*['"]?(?:1|true|True|TRUE)\b"""
)
KERAS3_ONLY_PREFIXES = (
    "keras.ops", "keras.config", "keras.random", "keras.tree", "keras.DTypePolicy",
    "keras.dtype_policies", "keras.mixed_precision.set_dtype_policy", "keras.mixed_precision.DTypePolicy",
    "keras.Variable", "keras.distribution", "keras.export",
    # `keras.src` itself is Keras 2.13-2.15 too (`keras.src.backend.dtype`, `keras.src.engine`):
    # only the modules the keras 3.15 wheel has and the keras 2.13.1 and 2.15.0 wheels lack.
    "keras.src.ops", "keras.src.random", "keras.src.tree", "keras.src.trainers", "keras.src.dtype_policies",
    "keras.src.distribution", "keras.src.quantizers", "keras.src.legacy", "keras.src.api_export",
    "keras.src.version", "keras.src.testing", "keras.src.wrappers", "keras.src.visualization",
    "keras.src.distillation", "keras.src.backend.common", "keras.src.backend.jax", "keras.src.backend.tensorflow",
    "keras.src.backend.torch", "keras.src.backend.numpy", "keras.src.backend.openvino", "keras.src.layers.layer",
    "keras.src.models.model", "keras.src.models.functional", "keras.src.models.sequential",
)


_KERAS3_ONLY_NAME = re.compile(r"(?:%s)(?:\.|$)" % "|".join(re.escape(p) for p in KERAS3_ONLY_PREFIXES))


def keras3_only_name(used_names: set[str]) -> str | None:
    """The first (sorted) name used that only Keras 3 has (`keras.src.legacy...`, not
    Keras 2's `keras.src.legacy_tf_layers`)."""
    return min((n for n in used_names if _KERAS3_ONLY_NAME.match(n)), default=None)


_PROJECT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", "requirements.txt")
# Top-level names only TF 1.x has (TF 2 keeps them under tf.compat.v1): a file that uses
# them runs on TensorFlow 1.x.
TF1_ONLY_NAMES = frozenset({
    "tensorflow.Session", "tensorflow.InteractiveSession", "tensorflow.placeholder", "tensorflow.get_variable",
    "tensorflow.variable_scope", "tensorflow.get_collection", "tensorflow.global_variables",
    "tensorflow.trainable_variables", "tensorflow.global_variables_initializer", "tensorflow.train.get_global_step",
    "tensorflow.train.get_or_create_global_step", "tensorflow.train.Saver", "tensorflow.to_float",
    "tensorflow.random_normal", "tensorflow.truncated_normal", "tensorflow.layers.dense", "tensorflow.gfile.GFile",
    "tensorflow.gfile.Open", "tensorflow.app.run",
})
TF1_ONLY_PREFIXES = ("tensorflow.contrib.", "tensorflow.logging.", "tensorflow.layers.")
_TF1_OPTIMIZER = re.compile(r"^tensorflow\.train\.\w+Optimizer$")


def is_tf1_only_name(qualified: str) -> bool:
    """A top-level API that only TensorFlow 1.x has (`tf.Session`, `tf.contrib.*`, `tf.train.AdamOptimizer`)."""
    return qualified in TF1_ONLY_NAMES or qualified.startswith(TF1_ONLY_PREFIXES) or bool(_TF1_OPTIMIZER.match(qualified))


@dataclass(frozen=True)
class Target:
    keras: str  # KERAS2 or KERAS3
    reason: str
    assumed: bool = False  # no evidence in the code or the project: the environment's guess
    # The evidence says TensorFlow older than 2.4, which has only the experimental
    # mixed-precision API (a TF 2.2 image, `tensorflow==2.3.*`).
    before_stable_api: bool = False
    # Which kind of evidence decided it (mplint.facts.premises rates each): "config",
    # "file", "project", "pins", "job", "container", "era", "environment" or "default".
    source: str = ""
    # Evidence in the file for the other Keras ("it calls the Keras-3-only `scale_loss`").
    conflict: str | None = None
    # The project's own pins or image say TensorFlow 1.x: TF 1.x APIs are its current ones.
    tf1: bool = False
    # The evidence names TensorFlow's own version (a tensorflow pin, an image), not only
    # Keras's (`Keras==2.3.1`, a tf-keras dependency): where it does not, the project's
    # image may still say which TensorFlow runs (`project_tensorflow`).
    names_tensorflow: bool = False
    # The newest TensorFlow (major, minor) the evidence admits (`tensorflow==2.7.0`: 2.7; a
    # `tensorflow/tensorflow:2.4.1` image: 2.4; `>=2.6`: the newest there is), or None
    # where it does not say: an API removed later is still there.
    newest_tensorflow: tuple[int, int] | None = None
    # The day the repository last changed, where that (not a declaration) bounds its TensorFlow
    # (`mplint.facts.file_history`): configuring `target` says the code runs elsewhere now.
    dated: str | None = None
    # The file calls TF 1.x-only APIs outside any version check (`tf.Session`, `tf.contrib`):
    # it runs on TensorFlow 1.x, whatever the project declares elsewhere.
    tf1_code: bool = False

    def runs_before(self, version: tuple[int, int]) -> bool:
        """The evidence says the code runs on a TensorFlow older than `version`."""
        return self.newest_tensorflow is not None and self.newest_tensorflow < version

    @property
    def tensorflow_named(self) -> str:
        """How a message names the TensorFlow the evidence admits: a declared one by its
        version; one bounded only by the repository's last commit (`dated`) as that bound,
        since the code may have been written for an older one."""
        if self.newest_tensorflow is None:
            return ""
        major, minor = self.newest_tensorflow
        if self.dated is not None:
            return f"this project's TensorFlow, {major}.{minor} or older by its last commit,"
        return f"this project's TensorFlow {major}.{minor}"

    @property
    def predates_mixed_policies(self) -> bool:
        """TensorFlow 1.x or older than 2.1 (`mixed_float16` came with TF 2.1), or standalone
        Keras on such a TensorFlow: float16 variables with a loss scale were its only
        mixed precision."""
        return self.tf1 or self.tf1_code or self.runs_before((2, 1))

    @property
    def display(self) -> str:
        """"Keras 2" or "Keras 3", for messages."""
        return "Keras 2" if self.keras == KERAS2 else "Keras 3"

    @property
    def assumption(self) -> str:
        """What a message says about an assumed target."""
        return (f"the target is assumed to be {self.display} ({self.reason}): set `target = \"keras2\"` or "
                f"`\"keras3\"` in [tool.mplint] to say which Keras the code runs on")

    @property
    def is_keras2(self) -> bool:
        return self.keras == KERAS2

    @property
    def is_keras3(self) -> bool:
        return self.keras == KERAS3


# What only Keras 2-era code uses (Keras 3 and TF 2.16+ have none of it): the file was
# written for Keras 2. It decides where nothing outside the file does, as an assumption
# (the TensorFlow version itself is still unknown: fixes that depend on it stay unsafe).
_KERAS2_ERA_NAMES = (
    ("mixed_precision.experimental", "the experimental mixed-precision API (TF 2.1-2.8)"),
    ("tensorflow.python.keras", "TensorFlow's private `tensorflow.python.keras`"),
    ("keras.utils.OrderedEnqueuer", "`OrderedEnqueuer`"),
    ("tensorflow_hub.KerasLayer", "TF Hub's `KerasLayer` (a Keras 2 layer: Keras 3 models refuse it)"),
    ("horovod.tensorflow.keras", "Horovod's Keras 2 integration `horovod.tensorflow.keras`"),
    ("keras.layers.experimental.preprocessing", "`keras.layers.experimental.preprocessing` (TF 2.3-2.15)"),
    ("keras.wrappers.scikit_learn", "`keras.wrappers.scikit_learn`"),
    ("official.vision.beta", "Model Garden's `official.vision.beta` (tf-models-official before 2.15)"),
    # tf-keras 2.21 has `optimizers.experimental` (AdamW among them); Keras 3.15 and TF 2.21's tf.keras have none.
    ("keras.optimizers.experimental", "`optimizers.experimental` (TF 2.9-2.15, tf-keras; AttributeError on Keras 3)"),
    ("keras.optimizers.legacy", "`optimizers.legacy` (TF 2.11-2.15, tf-keras)"),
    # TensorFlow Compression stopped at 2.14.1, which requires TensorFlow 2.14.
    ("tensorflow_compression", "TensorFlow Compression (its last release, 2.14.1, needs TF 2.14)"),
)
# Any `experimental` namespace of Keras (`tf.keras.callbacks.experimental`,
# `tf.keras.experimental.CosineDecay`, ...): Keras 2 only, checked on Keras 3.15 and TF
# 2.21's `tf.keras`, whose public modules have none.
_KERAS_EXPERIMENTAL = re.compile(r"(?:^|\.)keras(?:\.\w+)*?\.experimental(?=\.|$)")
_KERAS2_ERA_TEXT = re.compile(
    r"(?P<run_v2>\.experimental_run_v2\()|(?P<aggregate>\b_HAS_AGGREGATE_GRAD\b)"
    r"|(?P<lr>\b(?:SGD|Adam|AdamW|Adamax|Nadam|RMSprop|Adagrad|Adadelta|Ftrl)\((?:[^()\n]*,)?\s*lr\s*=)"
    r"|(?P<lr_attribute>\b\w*optimizer\.lr\b(?!\s*=[^=]))"
    r"|(?P<numpy_dataset>\.experimental_make_numpy_dataset\()"
    r"|(?P<batch_shape>\bbatch_input_shape\s*=)|(?P<run_tf_function>\bexperimental_run_tf_function\s*=)"
    r"|(?P<generator_methods>\.(?:fit|evaluate|predict)_generator\()"
    r"|(?P<loader_arguments>\.(?:fit|evaluate|predict)\((?:[^()]|\([^()]*\))*?\b(?:use_multiprocessing|workers|max_queue_size)\s*=)"
)
_KERAS2_ERA_WORDS = {
    "run_v2": "`strategy.experimental_run_v2` (TF 2.0-2.3; TF 2.4 has only `run`)",
    "aggregate": "the Keras 2 optimizer internal `_HAS_AGGREGATE_GRAD`",
    "lr": "`lr=` in an optimizer (Keras 3 raises ValueError)",
    "lr_attribute": "an optimizer's `.lr` (Keras 3 optimizers have only `learning_rate`: AttributeError)",
    "numpy_dataset": "`strategy.experimental_make_numpy_dataset` (a TF 2 strategy has it up to TF 2.3)",
    "batch_shape": "`batch_input_shape=` (Keras 3 raises TypeError)",
    "run_tf_function": "`compile(experimental_run_tf_function=...)` (Keras 3 raises TypeError)",
    "generator_methods": "`fit_generator`/`evaluate_generator`/`predict_generator` (gone from Keras 3)",
    "loader_arguments": "`use_multiprocessing=`/`workers=`/`max_queue_size=` in `fit`/`evaluate`/`predict` "
                        "(Keras 3 raises TypeError: they moved to `PyDataset`)",
}


# `tf.__version__` / `tf.version.VERSION`, and a line that reads it.
_VERSION_SOURCE = re.compile(r"\b(?:tf|tensorflow)\.(?:version\.VERSION|__version__)\b")
_TF_VERSION_LINE = re.compile(rf"^.*{_VERSION_SOURCE.pattern}.*$", re.M)
_VERSION_LITERAL = re.compile(r"""['"(\[ ,](\d)[.,]\s*(\d{1,2})\b""")


def _version_checks_before_keras3(text: str) -> str | None:
    """`if version(tf.__version__) >= version("2.4.0"):` with no version past 2.15
    checked anywhere: the file tells TensorFlow versions of the Keras 2 era apart."""
    if "__version__" not in text and "VERSION" not in text:
        return None
    versions = []
    for line in _TF_VERSION_LINE.findall(text):
        versions += [(int(a), int(b)) for a, b in _VERSION_LITERAL.findall(line) if a in ("1", "2")]
    if versions and max(versions) < (2, 16):
        return f"the file checks the TensorFlow version against {max(versions)[0]}.{max(versions)[1]} (Keras 2 era)"
    return None


# Keras-2-only code that also dates a file before TF 2.4 (a TF 2 strategy lost these in 2.4).
_BEFORE_TF_2_4 = {".experimental_run_v2(": "run_v2", ".experimental_make_numpy_dataset(": "numpy_dataset"}
# The policies TF 1.14-2.0 had before `mixed_float16` (TF 2.0 deprecated them, TF 2.1
# replaced them): code that names one was written for the experimental API's first years.
_FIRST_POLICY_NAMES = re.compile(r"""['"](?:infer|infer_with_float32_vars|infer_float32_vars)['"]""")


def keras2_era_evidence(text: str, used_names: set[str]) -> Target | None:
    """The assumed Keras 2 target of a file whose code was written for Keras 2 (what also
    dates it before TF 2.4 first), or None."""
    for spelling, word in _BEFORE_TF_2_4.items():
        if spelling in text:
            return _era_target(_KERAS2_ERA_WORDS[word], before_stable_api=True)
    if "float32_vars" in text and _FIRST_POLICY_NAMES.search(text):
        return _era_target("the `infer_float32_vars` policy (TF 1.14-2.0; TF 2.1 replaced it with `mixed_float16`)",
                           before_stable_api=True)
    for name in sorted(used_names):
        for marker, what in _KERAS2_ERA_NAMES:
            if marker in name:
                return _era_target(what)
    for name in sorted(used_names):
        namespace = _KERAS_EXPERIMENTAL.search(name)
        if namespace is not None:
            return _era_target(f"`{namespace.group(0).lstrip('.')}` (Keras 3, and TF 2.16+'s `tf.keras`, have no "
                               "`experimental` namespace: AttributeError)")
    match = _KERAS2_ERA_TEXT.search(text)
    if match:
        return _era_target(_KERAS2_ERA_WORDS[match.lastgroup])  # type: ignore[index]
    check = _version_checks_before_keras3(text)
    return Target(KERAS2, check, assumed=True) if check is not None else None


def _era_target(what: str, before_stable_api: bool = False) -> Target:
    return Target(KERAS2, f"Keras-2-only code in the file: {what}", assumed=True, before_stable_api=before_stable_api)


def sets_legacy_keras(text: str) -> bool:
    return "TF_USE_LEGACY_KERAS" in text and _LEGACY_ENV.search(text) is not None


def decide_target(
    configured: str,
    text: str,
    imported_modules: set[str],
    used_names: set[str],
    path: str,
    project: Target | None = None,
    notebook: dict | None = None,
    project_era: Target | None = None,
) -> Target:
    """The file's target, with the kind of evidence that decided it and any evidence in
    the file for the other Keras."""
    target, source = _decide_target(configured, text, imported_modules, used_names, path, project, notebook, project_era)
    target = replace(target, source=source)
    if source != "config":
        conflict = conflicting_evidence(target.keras, text, imported_modules, used_names)
        if conflict is not None:
            target = replace(target, conflict=conflict)
    return target


# Evidence that says which Keras a file targets but not which TensorFlow: the repository's
# last commit dates it (`mplint.facts.file_history`). Not the configuration (the user said what
# runs), nor the environment or the default (no evidence of Keras 2 to date).
_DATED_SOURCES = frozenset({"file", "project", "pins", "job", "container", "era", "project-era"})


def dated_target(target: Target, path: str) -> Target:
    """A Keras 2 target whose evidence names no TensorFlow, bounded by the TensorFlow of
    the day its repository last changed, where that predates Keras 3 (TF 2.16). Asked only by
    what depends on the TensorFlow version (`ModuleFacts.tensorflow_target`): it costs a
    `git log` per checkout and, in a project that predates Keras 3, a `git status` per file."""
    if not target.is_keras2 or target.source not in _DATED_SOURCES or target.names_tensorflow \
            or target.newest_tensorflow is not None or target.tf1 or target.before_stable_api or not path:
        return target
    change = last_change(path)
    if change is None:
        return target
    if path.endswith(".ipynb"):
        # the checkout's notebooks that recorded a run on an older TensorFlow bound it more closely
        top = checkout_top(os.path.dirname(os.path.abspath(path)))
        recorded = recorded_tensorflow(top) if top is not None else None
        if recorded is not None and recorded[0] < change.tensorflow:
            return replace(target, reason=f"{target.reason}; {recorded[1]}", newest_tensorflow=recorded[0],
                           before_stable_api=recorded[0] < (2, 4), dated=change.day)
    return replace(target, reason=f"{target.reason}; {change.reason}", newest_tensorflow=change.tensorflow,
                   before_stable_api=change.tensorflow < (2, 4), dated=change.day)


_RECORDED_NOTEBOOKS = 50  # notebooks of a checkout read for their recorded runs, at most
_RECORDED_SIZE = 2_000_000  # larger notebooks are not read for it
_RECORDED_BUDGET = 20_000_000  # bytes read in all, at most


@lru_cache(maxsize=64)
def recorded_tensorflow(top: str) -> tuple[tuple[int, int], str] | None:
    """The newest TensorFlow that the notebooks of a checkout recorded running on (the
    output of printing `tf.__version__`), and how that is known; None where none did.
    For a notebook of the same checkout that records nothing itself: its author's
    notebooks ran there, which bounds its TensorFlow more closely than the day of the
    last commit (a notebook dated 2021 beside notebooks that printed 2.1.0)."""
    import json

    found: list[tuple[tuple[int, int], str]] = []
    read = size_read = 0
    for path in _checkout_files(top, lambda name: name.endswith(".ipynb")):
        if read >= _RECORDED_NOTEBOOKS or size_read >= _RECORDED_BUDGET:
            break
        try:
            size = os.path.getsize(path)
            if size > _RECORDED_SIZE:
                continue
            with open(path, encoding="utf-8", errors="replace") as handle:
                notebook = json.load(handle)
        except (OSError, ValueError, RecursionError):
            continue
        read += 1
        size_read += size
        ran = _recorded_run(notebook) if isinstance(notebook, dict) else None
        if ran is not None:
            found.append((ran, os.path.relpath(path, top)))
    if not found:
        return None
    newest = max(version for version, _ in found)
    where = next(name for version, name in found if version == newest)
    return newest, f"the checkout's notebooks recorded runs on TensorFlow {newest[0]}.{newest[1]} at newest ({where})"


def _checkout_files(top: str, wanted) -> Iterator[str]:
    """The paths of a checkout's files whose name is `wanted`, folder by folder in sorted
    order, hidden and vendored folders (`node_modules`, `site-packages`) skipped."""
    for folder, subfolders, names in os.walk(top):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d not in ("node_modules", "site-packages"))
        yield from (os.path.join(folder, name) for name in sorted(n for n in names if wanted(n)))


def object_keras(raw_origin: str | None, imported_modules: set[str]) -> str | None:
    """Which Keras an object is, from the module its class comes from (as imported, not
    canonicalised): `tf_keras.*` is Keras 2; standalone `keras.*` is Keras 3 in a file that
    also imports `tf_keras` (the two then name different packages). None: its module does
    not say (`tf.keras` follows TF_USE_LEGACY_KERAS; plain `keras` alone may be either)."""
    if raw_origin is None:
        return None
    if raw_origin == "tf_keras" or raw_origin.startswith("tf_keras."):
        return KERAS2
    if raw_origin.startswith("keras.") and any(m == "tf_keras" or m.startswith("tf_keras.") for m in imported_modules):
        return KERAS3
    if raw_origin.startswith("keras_core."):
        return KERAS3
    return None


_KERAS3_ONLY_METHODS = re.compile(r"\.(?P<name>scale_loss|stateless_apply|stateless_call)\(")


def conflicting_evidence(keras: str, text: str, imported_modules: set[str], used_names: set[str]) -> str | None:
    """Evidence in the file for the other Keras than `keras`: the file then runs on one of
    them only, and which one the decision cannot tell (no safe fix rests on it)."""
    if keras == KERAS2:
        name = keras3_only_name(used_names)
        if name is not None:
            return f"the file also uses Keras-3-only `{name}`"
        match = _KERAS3_ONLY_METHODS.search(text)
        if match is not None:
            return f"the file also calls `{match['name']}`, which only Keras 3 has"
        return None
    era = keras2_era_evidence(text, used_names | set(imported_modules))
    if era is not None and not era.reason.startswith("the file checks"):
        return f"the file also has {era.reason[0].lower()}{era.reason[1:]}"
    if any(m == "tf_keras" or m.startswith("tf_keras.") for m in imported_modules):
        return "the file also imports tf_keras (Keras 2)"
    return None


def _decide_target(
    configured: str,
    text: str,
    imported_modules: set[str],
    used_names: set[str],
    path: str,
    project: Target | None = None,
    notebook: dict | None = None,
    project_era: Target | None = None,
) -> tuple[Target, str]:
    if configured in (KERAS2, KERAS3):
        return Target(configured, "set by --target/config"), "config"
    if sets_legacy_keras(text):
        return Target(KERAS2, "the file sets TF_USE_LEGACY_KERAS"), "file"
    if any(m == "tf_keras" or m.startswith("tf_keras.") for m in imported_modules):
        return Target(KERAS2, "the file imports tf_keras"), "file"
    if any(m == "keras_core" or m.startswith("keras_core.") for m in imported_modules):
        return Target(KERAS3, "the file imports keras_core (Keras 3's preview)"), "file"
    tf1 = next((n for n in sorted(used_names) if is_tf1_only_name(n)), None)
    if tf1 is not None:
        return Target(KERAS2, f"the file uses TF 1.x-only `{tf1}`", before_stable_api=True, tf1_code=True), "file"
    if notebook is not None:
        ran_on = notebook_target(notebook)
        if ran_on is not None:
            return ran_on, "file"
    if any(m == "keras" or m.startswith("keras.") for m in imported_modules):
        name = keras3_only_name(used_names)
        if name is not None:
            return Target(KERAS3, f"the file imports keras and uses Keras-3-only {name}"), "file"
    folder = os.path.dirname(os.path.abspath(path))
    job = job_target(folder, path)
    pinned = job or project_tensorflow(folder)
    if project is not None:
        if pinned is not None and pinned.keras == project.keras and pinned.names_tensorflow:
            # the project's code says which Keras; its pins or image, which TensorFlow
            return _with_tensorflow_of(project, pinned), "project"
        return project, "project"
    if pinned is not None:
        return pinned, "job" if job is not None else "pins"
    era = keras2_era_evidence(text, used_names | set(imported_modules))
    if era is not None:
        return era, "era"
    if project_era is not None and not any(m == "keras" or m.startswith("keras.") for m in imported_modules):
        # a `tf.keras` module of a project written for Keras 2 (a standalone `import keras`
        # may be a later port: it takes no date from the other modules)
        return project_era, "project-era"
    installed = installed_target()
    if installed is not None:
        return Target(installed.keras, installed.reason, assumed=True), "environment"
    return Target(KERAS3, "default (no pins, no TensorFlow/Keras installed)", assumed=True), "default"


_FROM = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)", re.M | re.I)
_ARG = re.compile(r"^\s*(?:ARG|ENV)\s+(\w+)=(\S+)", re.M | re.I)


@lru_cache(maxsize=4096)  # per folder: each file of a folder asks for its cache key
def nearest_container_target(folder: str, root: str | None) -> Target | None:
    """The Keras of the TensorFlow image the nearest Dockerfile builds on, from the
    file's folder up to the top of its git checkout (else up to the project root): a
    repository of several projects, each with its own Dockerfile, runs each in its own
    image, and a Dockerfile at the top builds the packages below it. Within two folders
    of the file, a README that names the TensorFlow it runs on (an image, a `pip
    install tensorflow==X` line, "TensorFlow 2.0") decides where no Dockerfile does; so
    does, at any depth, the README of the nearest folder with its own requirements file
    or Dockerfile."""
    return _nearest(folder, root, container_target) or shipping_container_target(folder) \
        or _nearest(folder, root, _folder_notes, levels=3) or _subproject_notes_above(folder, root)


def _subproject_notes_above(folder: str, root: str | None) -> Target | None:
    """`_subproject_notes` of the nearest sub-project folder from the file's folder up to
    its project root, never above it (a model zoo's other projects speak for themselves)
    and never the checkout's top: the top's README is the repository's front page, not a
    note on every model deep inside it."""
    top = checkout_top(folder)
    current = folder
    while root is not None and current.startswith(root) and current != top:
        found = _subproject_notes(current)
        if found is not None or current == root:
            return found
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
    return None


@lru_cache(maxsize=1024)
def _subproject_notes(folder: str) -> Target | None:
    """The README of a folder with its own requirements file or Dockerfile (one model of a
    model zoo, `tensorflow/.../transformer_keras/`): it speaks for the code below it, however
    deep."""
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    if not any(is_requirements_file(n) or _is_dockerfile_name(n) for n in names):
        return None
    return _folder_notes(folder)


def project_tensorflow(folder: str) -> Target | None:
    """What the project of a folder declares it runs on: its pins, else its image. Pins
    that name only Keras (`Keras==2.3.1` beside a `FROM tensorflow/tensorflow:1.15.2`
    image) take the TensorFlow version facts from the image where both say the same
    Keras."""
    root = project_root(folder)
    pins = project_pins(root)
    container = nearest_container_target(folder, root)
    if pins is None:
        return container
    if container is not None and not pins.names_tensorflow and container.names_tensorflow and container.keras == pins.keras:
        return _with_tensorflow_of(pins, container)
    return pins


def job_target(folder: str, path: str) -> Target | None:
    """The TensorFlow of the cluster jobs that run the file at `path`: each job script of
    its project that runs it loads a TensorFlow module (`mplint.facts.job_scripts`). It
    decides the file's TensorFlow before the project's pins: the job runs it there."""
    root = project_root(folder)
    found = job_tensorflow(root, path) if root is not None else None
    return _target_of_versions(*found) if found is not None else None


def _with_tensorflow_of(target: Target, other: Target) -> Target:
    """`target`'s Keras with what `other` (which names TensorFlow) says of TensorFlow."""
    return replace(target, reason=f"{target.reason}; {other.reason}", before_stable_api=other.before_stable_api,
                   tf1=other.tf1, names_tensorflow=True, newest_tensorflow=other.newest_tensorflow,
                   conflict=target.conflict or other.conflict)


def _folder_notes(folder: str) -> Target | None:
    return readme_target(folder) or launcher_target(folder) or notebooks_declared_target(folder)


_NOTEBOOKS_READ = 20  # notebooks of a folder read at most
_NOTEBOOK_HEAD = 262_144  # the part of each notebook read (its raw JSON text)
# Colab's magic anywhere in the raw JSON text (in a parsed cell: `_TENSORFLOW_VERSION_MAGIC`)
_NOTEBOOK_MAGIC_1X = re.compile(r"%tensorflow_version\s+1(?:\.x)?\b")


@lru_cache(maxsize=1024)
def notebooks_declared_target(folder: str) -> Target | None:
    """The TensorFlow the folder's notebooks declare they run on (a `!pip install
    tensorflow==X.Y` cell, `%tensorflow_version 1.x`): the scripts beside them are the
    same project's. What a notebook records of a run (a printed version, a traceback)
    says where it ran once, not what the code beside it targets: it decides only for the
    notebook itself. Every notebook that declares must agree on the Keras."""
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".ipynb"))[:_NOTEBOOKS_READ]
    except OSError:
        return None
    versions: list[tuple[int, int]] = []
    said: list[str] = []
    for name in names:
        try:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as handle:
                head = handle.read(_NOTEBOOK_HEAD)  # installs open a notebook; outputs can be megabytes
        except OSError:
            continue
        declared = _declaration(head, _NOTEBOOK_MAGIC_1X)
        if declared is not None:
            versions.append(declared[0])
            said.append(f"{name} {declared[1]}")
    if not versions:
        return None
    shown = "; ".join(said[:2]) + ("; ..." if len(said) > 2 else "")
    return _target_of_versions(versions, f"the folder's notebooks declare it: {shown}")


_FRAMEWORK_VERSION = re.compile(r"""\bframework_version\s*=\s*['"](\d+)\.(\d+)""")


@lru_cache(maxsize=1024)
def launcher_target(folder: str) -> Target | None:
    """The TensorFlow a job launcher next to the code asks for: SageMaker's
    `TensorFlow(..., framework_version="2.1.0")` (every launcher of the folder must agree)."""
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".py"))[:200]
    except OSError:
        return None
    versions: list[tuple[int, int]] = []
    where = ""
    for name in names:
        try:
            with open(os.path.join(folder, name), "rb") as handle:
                data = handle.read(300_000)
        except OSError:
            continue
        if b"framework_version" not in data or b"TensorFlow" not in data:
            continue
        found = [(int(a), int(b)) for a, b in _FRAMEWORK_VERSION.findall(data.decode("utf-8", errors="replace"))]
        if found and not where:
            where = f"{name} launches TensorFlow {found[0][0]}.{found[0][1]} (`framework_version`)"
        versions += found
    return _target_of_versions(versions, where) if versions else None


def _nearest(folder: str, root: str | None, read, levels: int | None = None) -> Target | None:
    """The first answer of `read` from the file's folder up (at most `levels` folders)."""
    current = folder
    while True:
        found = read(current)
        if found is not None:
            return found
        if levels is not None:
            levels -= 1
            if levels <= 0:
                return None
        parent = os.path.dirname(current)
        if parent == current or run_record.isdir(os.path.join(current, ".git")) \
                or (current == root and checkout_top(current) is None):
            return None
        current = parent


_DOCKER_FOLDERS = ("docker", "dockerfile", "dockerfiles", "Docker", "Dockerfile", "Dockerfiles", ".devcontainer")


def _is_dockerfile_name(name: str) -> bool:
    lowered = name.lower()  # `Dockerfile.gpu`, `dockerfile_tf15_amp`, `train.Dockerfile`
    return lowered.startswith("dockerfile") or lowered.endswith(".dockerfile")


def _dockerfiles(root: str) -> list[str]:
    """A folder's Dockerfiles (`Dockerfile*`, `*.Dockerfile`), then those of its
    `docker/` (`dockerfile/`, `.devcontainer/`, ...) folder, as paths relative to it."""
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    found = [n for n in names if _is_dockerfile_name(n) and run_record.isfile(os.path.join(root, n))]
    for folder in _DOCKER_FOLDERS:
        if folder in names and run_record.isdir(os.path.join(root, folder)):
            try:
                found += [f"{folder}/{n}" for n in sorted(os.listdir(os.path.join(root, folder))) if _is_dockerfile_name(n)]
            except OSError:
                continue
    return found


@lru_cache(maxsize=1024)
def _dockerfile_images(root: str) -> tuple[tuple[str, str | None, tuple[int, int] | None], ...]:
    """(Dockerfile, image, None) for each `FROM` of a folder's Dockerfiles, with their
    `ARG`/`ENV` values substituted, and (Dockerfile, None, (X, Y)) for a `pip install
    tensorflow==X.Y` in one whose images name no TensorFlow."""
    found = []
    for name in _dockerfiles(root):
        found += [(name, image, installed) for image, installed in _images_of(os.path.join(root, name))]
    return tuple(found)


def _images_of(path: str) -> list[tuple[str | None, tuple[int, int] | None]]:
    """(image, None) for each `FROM` of one Dockerfile, with its `ARG`/`ENV` values
    substituted, and (None, (X, Y)) for a `pip install tensorflow==X.Y` where its images
    name no TensorFlow."""
    text = _dockerfile_text(path)
    if text is None:
        return []
    arguments = {name: value.strip("'\"") for name, value in _ARG.findall(text)}
    substitute = lambda t: re.sub(r"\$\{?(\w+)\}?", lambda m: arguments.get(m.group(1), m.group(0)), t)  # noqa: E731
    images = [substitute(image) for image in _FROM.findall(text)]
    found: list[tuple[str | None, tuple[int, int] | None]] = [(image, None) for image in images]
    # `RUN python3 -m pip --no-cache-dir install \` with the packages on the lines after it
    installed = next(pip_installed_tensorflow(re.sub(r"\\[ \t]*\r?\n", " ", substitute(text))), None)
    if installed and not any(_image_target(image) for image in images):
        # `RUN pip install ${TENSORFLOW_PIP}==${TENSORFLOW_VERSION}` on a CUDA image
        found.append((None, installed[1]))
    return found


def read_declaration(path: str, limit: int = -1) -> str:
    """A file a project declares its versions in (requirements, Dockerfile, README,
    setup.py), as text: UTF-8, or UTF-16 / UTF-8 with a byte-order mark (Windows editors
    and `pip freeze > requirements.txt` in PowerShell write UTF-16)."""
    with open(path, "rb") as handle:
        data = handle.read(limit)
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8-sig", errors="replace")


def _dockerfile_text(path: str) -> str | None:
    try:
        return read_declaration(path, 65536)
    except OSError:
        return None


def _target_of_images(images: list[tuple[str, str | None, tuple[int, int] | None]]) -> Target | None:
    """The Keras of the TensorFlow that Dockerfiles' images (or pip installs) give, the
    first TensorFlow of each Dockerfile: where they disagree on the Keras, none."""
    versions, said, seen = [], [], set()
    for name, image, installed in images:
        if name in seen:
            continue
        if image is None:
            version, what = installed, f"{name} installs tensorflow {installed[0]}.{installed[1]}"
        else:
            version, what = _image_target(image), f"{name} {_uses(name)} {image}"
        if version is None:
            continue
        seen.add(name)
        versions.append(version)
        said.append(what)
    if not versions:
        return None
    return _target_of_versions(versions, "; ".join(said[:2]) + ("; ..." if len(said) > 2 else ""))


# `COPY job/pkgs /app/job/pkgs`, `ADD ["src", "/app/src"]`: what an image ships.
_COPY = re.compile(r"^[ \t]*(?:COPY|ADD)[ \t]+((?:--\S+[ \t]+)*)(.+)$", re.M | re.I)
_SHIPPING_DOCKERFILES = 200  # Dockerfiles of a checkout read for what they copy, at most


@lru_cache(maxsize=64)
def _copied_sources(top: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(Dockerfile relative to the checkout, the folders and files its COPY/ADD lines
    take from the build context) for the checkout's Dockerfiles (hidden and vendored
    folders skipped). A copy from another build stage or of the whole context names
    nothing in particular."""
    found = []
    for path in _checkout_files(top, _is_dockerfile_name):
        if len(found) >= _SHIPPING_DOCKERFILES:
            break
        text = _dockerfile_text(path)
        if text is None:
            continue
        sources = []
        for options, rest in _COPY.findall(text):
            if "--from" in options:
                continue
            parts = _json_list(rest) if rest.lstrip().startswith("[") else rest.split()
            for source in parts[:-1]:
                source = source.strip().removeprefix("./").rstrip("/")
                if source and source != "." and not any(c in source for c in "*?$"):
                    sources.append(source)
        if sources:
            found.append((os.path.relpath(path, top).replace(os.sep, "/"), tuple(sources)))
    return tuple(found)


def _json_list(text: str) -> list[str]:
    import json

    try:
        value = json.loads(text)
    except ValueError:
        return []
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def shipping_container_target(folder: str) -> Target | None:
    """The Keras of the images whose Dockerfiles copy this folder into them (`COPY
    job/pkgs /app/job/pkgs` for job-template/job/pkgs/tf), anywhere in the checkout: the
    code runs in those images."""
    top = checkout_top(folder)
    if top is None:
        return None
    here = "/" + os.path.relpath(folder, top).replace(os.sep, "/").strip("/.") + "/"
    images = []
    for dockerfile, sources in _copied_sources(top):
        if any(f"/{source}/" in here for source in sources):
            images += [(dockerfile, image, installed)
                       for image, installed in _images_of(os.path.join(top, dockerfile))]
    return _target_of_images(images)


@lru_cache(maxsize=1024)
def container_target(root: str | None) -> Target | None:
    """The Keras of the TensorFlow images a folder's Dockerfiles build on (the first
    TensorFlow image of each): where they disagree on the Keras, none."""
    if root is None:
        return None
    return _target_of_images(list(_dockerfile_images(root)) + list(_script_images(root)))


def _ngc_image(root: str) -> str | None:
    for name, image, _ in _dockerfile_images(root) + _script_images(root):
        if image is None:
            continue
        repository = image.partition(":")[0]
        if repository.endswith("nvidia/tensorflow") or "nvidia/merlin/merlin-tensorflow" in repository:
            return f"{name} {_uses(name)} {image}"
    return None


def _uses(name: str) -> str:
    """How a declaration uses its image: a Dockerfile builds on it, a script runs in it."""
    return "runs in" if name.endswith(".sh") else "builds on"


@lru_cache(maxsize=1024)
def nearest_ngc_image(folder: str) -> str | None:
    """Where the project of a folder builds on NVIDIA's NGC TensorFlow (which honours
    `TF_ENABLE_AUTO_MIXED_PRECISION`): "docker/Dockerfile builds on nvcr.io/...", or None."""
    root = project_root(folder)
    return _nearest(folder, root, _ngc_image)


# NVIDIA's release notes: the newest TensorFlow each year's TF2 images ship (20.xx: 2.0 -
# 2.3, 2.4 came with 21.02; 21.12: 2.6; 22.12: 2.10; 23.xx: up to 2.14), and by month where
# the notes say (21.02-21.05: 2.4, with TensorBoard 2.4.1; 21.06-21.08: 2.5; 22.01-22.02:
# 2.7; 22.03-22.05: 2.8; 22.06-22.09: 2.9).
_NVIDIA_NEWEST = {20: (2, 3), 21: (2, 6), 22: (2, 10), 23: (2, 14)}
_NVIDIA_BY_MONTH = ((21, 5, (2, 4)), (21, 8, (2, 5)), (22, 2, (2, 7)), (22, 5, (2, 8)), (22, 9, (2, 9)))


def _nvidia_newest(year: int, month: int) -> tuple[int, int]:
    """The newest TensorFlow of NVIDIA's `YY.MM-tf2` image."""
    for last_year, last_month, version in _NVIDIA_BY_MONTH:
        if year == last_year and month <= last_month:
            return version
    return _NVIDIA_NEWEST.get(year, (2, 3))


def _image_target(image: str) -> tuple[int, int] | None:
    """The newest TensorFlow (major, minor) a TensorFlow image can hold."""
    repository, _, tag = image.partition(":")
    if repository.endswith("nvidia/tensorflow") or "nvidia/merlin/merlin-tensorflow" in repository:
        if "-tf1" in tag:
            return (1, 15)
        match = re.match(r"(\d\d)\.(\d\d)", tag)
        if match and int(match.group(1)) <= 23:
            return _nvidia_newest(int(match.group(1)), int(match.group(2)))
        return None
    version = None
    if repository.endswith(("tensorflow/tensorflow", "/tensorflow-training", "/tensorflow-inference")):
        # Docker Hub's images, and AWS Deep Learning Containers (`...dkr.ecr...amazonaws.com/tensorflow-training:2.2.0-gpu-py37`)
        match = re.match(r"(\d+)\.(\d+)", tag)
        if match:
            version = (int(match.group(1)), int(match.group(2)))
        elif re.fullmatch(r"latest(?:-[\w]+)*-py3(?:-[\w]+)*", tag) and repository.endswith("tensorflow/tensorflow"):
            # Docker Hub's `-py3` tags ended with TF 2.1 (images are Python 3 only since
            # 2.2): `latest-gpu-py3` is TF 2.1.0 to this day
            version = (2, 1)
    else:  # Google Cloud's Deep Learning Containers: `gcr.io/deeplearning-platform-release/tf2-gpu.2-3`
        match = re.search(r"deeplearning-platform-release/tf2?-(?:cpu|gpu)\.(\d+)-(\d+)$", repository)
        if match:
            version = (int(match.group(1)), int(match.group(2)))
    return version


_README_NAMES = ("README.md", "README.rst", "README.txt", "README", "Readme.md", "readme.md")
_IMAGE_REFERENCE = re.compile(r"\b((?:[\w.-]+/)*(?:tensorflow/tensorflow|nvidia/tensorflow|merlin-tensorflow[\w-]*)):([\w.-]+)")
# `pip install tensorflow==2.3.0`, `pip install "tensorflow<2.11"`, `tensorflow-gpu>=2.4,<2.6`
_PIP_TENSORFLOW = re.compile(
    r"pip3?(?:\s+--?[\w-]+)*\s+install\b[^\n]*?(?<![\w-])[\"']?((?:tensorflow|tensorflow-gpu|tensorflow-cpu)"
    r"(?:[ \t]*(?:===?|~=|<=?|>=?|!=)[ \t]*[\w.*]+[ \t]*,?)+)")


def pip_installed_tensorflow(text: str) -> Iterator[tuple[str, tuple[int, int]]]:
    """Each `pip install` of TensorFlow in `text` whose version is bounded from above (an
    exact pin, `<2.11`, `~=2.8.0`), spelled as written, with the newest TensorFlow it
    admits; an install that admits today's TensorFlow (`>=2.4`) says nothing."""
    from packaging.requirements import InvalidRequirement, Requirement

    for match in _PIP_TENSORFLOW.finditer(text):
        spelled = match.group(1).rstrip(" \t,")
        try:
            spec = Requirement(re.sub(r"\s+", "", spelled)).specifier
        except InvalidRequirement:
            continue
        admitted = _admitted_minors(spec, _TF_VERSIONS)
        if admitted and max(admitted) < _NEWEST_TRIED:
            yield spelled, max(admitted)
# A requirement listed on a line of its own (a "Requirements" section: `tensorflow==1.8.0`).
_LISTED_TENSORFLOW = re.compile(r"^[ \t>*+-]*`?(?:tensorflow|tensorflow-gpu|tensorflow-cpu)\s*==\s*(\d+)\.(\d+)[\w.]*`?[ \t]*$",
                                re.M)
# "TensorFlow 2.0", "TF 1.15", "TensorFlow2.1.0+Python3.6" (a pairing, not "or later"), not
# "TensorFlow 2.4+", "TF 2.x", "TensorFlow 2.0 or later". Words are ASCII: in Chinese or
# Japanese prose the version sits between ideographs ("使用tensorflow1.14，").
_PROSE_VERSION = re.compile(
    r"(?<![>=A-Za-z0-9_])(?:TensorFlow|Tensorflow|tensorflow|TF)[ -]?v?(\d)\.(\d{1,2})(?:\.\d+)?(?![\d.]*[A-Za-z0-9_])"
    r"(?!\s*(?:\+(?![A-Za-z])|or\s+(?:later|newer|above|higher|greater)|and\s+(?:later|newer|above|higher|up)))"
)

# A major version alone: "TensorFlow1", "基于TensorFlow1框架", "TensorFlow 1.x", an image
# named `tensorflow1-1.15.0-...`; not "TF1" (TF1 checkpoints, TF1-style code are named so in
# TF 2 projects too), not a folder of a path (`../tensorflow2/tools`), not a version with a
# minor ("TensorFlow 1.15": `_PROSE_VERSION`).
_MAJOR_ONLY = re.compile(r"(?<![A-Za-z0-9_/.])(?:TensorFlow|Tensorflow|tensorflow)[ -]?([12])(?:\.[xX])?(?![\d.]*\d)(?![A-Za-z0-9_/])")
# Any mention of TF 2 ("TF2 environments", "TensorFlow 2.x"): then "TensorFlow 1.x" names a
# style or a port ("TF1-style execution in TF2"), not what the code runs on.
_TENSORFLOW2_MENTION = re.compile(r"(?<![A-Za-z0-9_/.])(?:TensorFlow|Tensorflow|tensorflow|TF|tf)[ -]?v?2(?![A-Za-z0-9_/])")

# A Markdown link (`[Transformers: ... for TensorFlow 2.0 and PyTorch](https://...)`): a
# title names another work (a reference list, a citation), not what this code runs on. A
# badge (`![TensorFlow 1.10](https://img.shields.io/...)`), a link whose text is only the
# version (`[TensorFlow v2.5.0](...)`) or one to TensorFlow itself declares it: those stay.
_LINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\(([^)\n]*)\)")


def _without_cited_titles(text: str) -> str:
    def cited(match: "re.Match[str]") -> str:
        words, target = match.group(1), match.group(2)
        if words.lstrip().startswith("!") or _PROSE_VERSION.fullmatch(words.strip()) \
                or "tensorflow/tensorflow" in target or "tensorflow.org" in target:  # a badge in a link: `[![...
            return match.group(0)
        return " "
    return _LINK.sub(cited, text)


def _readme(folder: str) -> tuple[str, str] | None:
    """(name, text) of a folder's README (the first of `_README_NAMES` there), or None."""
    for name in _README_NAMES:
        path = os.path.join(folder, name)
        if run_record.isfile(path):
            try:
                return name, read_declaration(path, 200_000)
            except OSError:
                return None
    return None


@lru_cache(maxsize=1024)
def readme_target(folder: str) -> Target | None:
    """What a folder's README says the code runs on: a TensorFlow image, a `pip install
    tensorflow==X.Y` line, or "TensorFlow X.Y" in its prose. Every version it names must
    agree on the Keras (and on TensorFlow before 2.4, for the experimental API);
    otherwise it decides nothing."""
    readme = _readme(folder)
    if readme is None:
        return None
    name, text = readme
    versions: list[tuple[int, int]] = []
    named: list[str] = []
    for image, tag in _IMAGE_REFERENCE.findall(text):
        found = _image_target(f"{image}:{tag}")
        if found is not None:
            versions.append(found)
            named.append(f"the image {image}:{tag}")
    for spelled, version in pip_installed_tensorflow(text):
        versions.append(version)
        named.append(f"`pip install {spelled}`")
    for match in _LISTED_TENSORFLOW.finditer(text):
        versions.append((int(match.group(1)), int(match.group(2))))
        named.append(f"`{match.group(0).strip(' `*+->')}`")
    prose = _without_cited_titles(text)
    for match in _PROSE_VERSION.finditer(prose):
        if int(match.group(1)) in (1, 2):
            versions.append((int(match.group(1)), int(match.group(2))))
            named.append(f'"{match.group(0)}"')
    majors = [m.group(0) for m in _MAJOR_ONLY.finditer(prose) if m.group(1) == "1"]
    if _TENSORFLOW2_MENTION.search(prose) is not None:
        if all(v < (2, 0) for v in versions):
            versions = []  # TF 1.x beside "TF2": the README decides nothing
    elif majors and all(v < (2, 0) for v in versions):  # "TensorFlow1" and nothing of TF 2
        versions.append((1, 15))
        named.append(f'"{majors[0]}"')
    if not versions:
        return None
    shown = list(dict.fromkeys(named))
    return _target_of_versions(versions, f"{name} names {', '.join(shown[:2])}" + (" ..." if len(shown) > 2 else ""))


def _target_of_versions(versions: list[tuple[int, int]], reason: str) -> Target | None:
    if all(v < (2, 16) for v in versions):
        return Target(KERAS2, reason, before_stable_api=all(v < (2, 4) for v in versions),
                      tf1=all(v < (2, 0) for v in versions), names_tensorflow=True, newest_tensorflow=max(versions))
    if all(v >= (2, 16) for v in versions):
        return Target(KERAS3, reason, names_tensorflow=True, newest_tensorflow=max(versions))
    return None


_VERSION_TEXT = re.compile(r"\b(\d+)\.(\d+)\.\d+")
_TENSORFLOW_VERSION_MAGIC = re.compile(r"^\s*%tensorflow_version\s+1(?:\.x)?\b", re.M)


def _code_cells(notebook: dict) -> Iterator[tuple[dict, str]]:
    cells = notebook.get("cells")
    for cell in cells if isinstance(cells, list) else []:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            yield cell, "".join(source) if isinstance(source, list) else str(source)


def notebook_declared_target(notebook: dict) -> Target | None:
    """The TensorFlow a notebook declares it runs on: Colab's `%tensorflow_version 1.x`,
    or a `!pip install tensorflow==X.Y` cell."""
    for _, source in _code_cells(notebook):
        declared = _declaration(source, _TENSORFLOW_VERSION_MAGIC)
        if declared is not None:
            return _target_of_versions([declared[0]], f"the notebook {declared[1]}")
    return None


def _declaration(text: str, magic: re.Pattern) -> tuple[tuple[int, int], str] | None:
    """The TensorFlow (major, minor) a notebook's text declares, and how it says so:
    Colab's `%tensorflow_version 1.x` (TF 1.15), else a `pip install tensorflow==X.Y`."""
    if magic.search(text):
        return (1, 15), "selects TensorFlow 1.x (`%tensorflow_version 1.x`)"
    pinned = next(pip_installed_tensorflow(text), None)
    if pinned:
        return pinned[1], f"installs {pinned[0]}"
    return None


def notebook_target(notebook: dict) -> Target | None:
    """The TensorFlow a notebook (its parsed JSON, as the engine loaded it) says it runs
    on: what it declares (`notebook_declared_target`), or the recorded output of printing
    `tf.__version__` (the notebook itself was run on that version)."""
    declared = notebook_declared_target(notebook)
    if declared is not None:
        return declared
    ran = _recorded_version(notebook)
    if ran is not None:
        return _target_of_versions([(int(ran.group(1)), int(ran.group(2)))],
                                   f"the notebook ran on TensorFlow {ran.group(0)} (its output)")
    return None


def _recorded_run(notebook: dict) -> tuple[int, int] | None:
    """The TensorFlow (major, minor) a notebook's output of `tf.__version__` records."""
    ran = _recorded_version(notebook)
    return (int(ran.group(1)), int(ran.group(2))) if ran is not None else None


def _recorded_version(notebook: dict) -> "re.Match[str] | None":
    for cell, source in _code_cells(notebook):
        if _VERSION_SOURCE.search(source) and source.count("__version__") + source.count("VERSION") == 1:
            for output in cell.get("outputs", []) or []:
                if not isinstance(output, dict):
                    continue
                text = output.get("text") or (output.get("data") or {}).get("text/plain") or ""
                text = "".join(text) if isinstance(text, list) else str(text)
                match = _VERSION_TEXT.search(text)
                if match:
                    return match
    return None


# `requirements.txt`, `requirements-dev.txt`, and the spellings projects really use
# (`requirement.txt`, `requirments.txt`, `reqs.txt`): a text file named for requirements.
_REQUIREMENTS_NAME = re.compile(r"^(?:requi?re?m?e?n?ts?|reqs?)(?:[-_.][\w.-]*)?\.txt$", re.IGNORECASE)


def is_requirements_file(name: str) -> bool:
    """`requirements.txt`, `requirements-dev.txt`, `requirments.txt`, `reqs.txt`, ... (a
    file name in a project root)."""
    return name.endswith(".txt") and _REQUIREMENTS_NAME.match(name) is not None


@lru_cache(maxsize=1024)
def project_root(folder: str) -> str | None:
    """The nearest folder (upwards) with packaging metadata or requirements, or None.
    Memoised per folder, so the files of one tree list each ancestor once."""
    try:
        names = os.listdir(folder)
    except OSError:
        names = []
    if any(n in names and (n != "setup.py" or is_packaging_script(os.path.join(folder, n))) for n in _PROJECT_MARKERS) \
            or any(is_requirements_file(n) for n in names) \
            or ("requirements" in names and run_record.isdir(os.path.join(folder, "requirements"))):
        return folder
    if ".git" in names:
        return folder  # the repository's top: its Dockerfile and CI files may say
    parent = os.path.dirname(folder)
    return None if parent == folder else project_root(parent)


_SETUP_CALL = re.compile(r"\b(?:setuptools|distutils|setup\s*\()")


def is_packaging_script(path: str) -> bool:
    """Whether a `setup.py` packages a project: a module of that name that only sets
    flags (`runtime/setup.py` of a training script) says nothing about where the
    project's top is."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return _SETUP_CALL.search(handle.read(200_000)) is not None
    except OSError:
        return False


# Packages whose pins say which TensorFlow/Keras a project runs on (lock files list every
# package: only these are read from them).
_PINNED_NAMES = re.compile(r"^(tensorflow[\w-]*|tf-nightly|tf[-_]keras|keras|keras[-_]cv|keras[-_]hub|tf[-_]models[-_]official)$", re.I)


_TOML_LOCK_FILES = ("poetry.lock", "uv.lock")  # `[[package]]` tables
_LOCK_FILES = (*_TOML_LOCK_FILES, "Pipfile.lock")


def _lock_lines(root: str) -> list[tuple[str, str]]:
    """Exact versions a lock file records (`poetry.lock`, `uv.lock`: `[[package]]` name and
    version; `Pipfile.lock`: JSON `"version": "==X"`): what an install of the project gets,
    so they come before the ranges of its metadata."""
    found: list[tuple[str, str]] = []
    for name in _TOML_LOCK_FILES:
        path = os.path.join(root, name)
        if not run_record.isfile(path):
            continue
        try:
            import tomllib

            with open(path, "rb") as handle:
                data = tomllib.load(handle)
        except Exception:
            continue
        for package in data.get("package", []) or []:
            if isinstance(package, dict) and _PINNED_NAMES.match(str(package.get("name", ""))) and package.get("version"):
                found.append((f"{package['name']}=={package['version']}", name))
    path = os.path.join(root, "Pipfile.lock")
    if run_record.isfile(path):
        try:
            import json

            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
            for section in ("default", "develop"):
                for package, entry in (data.get(section) or {}).items():
                    version = entry.get("version") if isinstance(entry, dict) else None
                    if _PINNED_NAMES.match(package) and isinstance(version, str) and version.startswith("=="):
                        found.append((f"{package}{version}", "Pipfile.lock"))
        except (OSError, ValueError, AttributeError):
            pass
    return found


def _poetry_requirement(name: str, constraint: object) -> str | None:
    """A Poetry dependency (`tensorflow = "^2.2"`, `{version = "~2.3", optional = true}`)
    as a PEP 508 requirement: `^2.2` is `>=2.2,<3.0`, `~2.3` is `>=2.3,<2.4`."""
    if isinstance(constraint, dict):
        constraint = constraint.get("version")
    if not isinstance(constraint, str) or not constraint.strip() or constraint.strip() == "*":
        return None
    parts = []
    for piece in constraint.split(","):
        piece = piece.strip()
        match = re.fullmatch(r"([\^~])\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?", piece)
        if match:
            kind, major, minor, patch = match.group(1), int(match.group(2)), match.group(3), match.group(4)
            lower = ".".join(p for p in (str(major), minor, patch) if p is not None)
            if kind == "^":
                upper = f"{major + 1}.0" if major > 0 or minor is None else f"0.{int(minor) + 1}"
            else:
                upper = f"{major}.{int(minor) + 1}" if minor is not None else f"{major + 1}.0"
            parts += [f">={lower}", f"<{upper}"]
        elif re.fullmatch(r"\d[\w.*]*", piece):
            parts.append(f"=={piece}")
        else:
            parts.append(piece)
    return f"{name}{','.join(parts)}"


def _requirement_lines(root: str) -> list[tuple[str, str]]:
    """(requirement string, file) pairs declared in a project root (lock files first)."""
    found: list[tuple[str, str]] = _lock_lines(root)
    candidates = [os.path.join(root, n) for n in sorted(os.listdir(root)) if is_requirements_file(n)]
    req_dir = os.path.join(root, "requirements")
    if run_record.isdir(req_dir):
        candidates += [os.path.join(req_dir, n) for n in sorted(os.listdir(req_dir)) if n.endswith(".txt")]
    candidates += [p for p in _installed_requirement_files(root) if p not in candidates]
    for path in candidates:
        try:
            for line in read_declaration(path).splitlines():
                line = line.split("#", 1)[0].strip()
                if line and not line.startswith("-"):
                    found.append((line, os.path.basename(path)))
        except OSError:
            continue
    pyproject = os.path.join(root, "pyproject.toml")
    if run_record.isfile(pyproject):
        try:
            import tomllib
            with open(pyproject, "rb") as handle:
                data = tomllib.load(handle)
            project = data.get("project", {})
            for item in project.get("dependencies", []) or []:
                found.append((str(item), "pyproject.toml"))
            for extra, group in (project.get("optional-dependencies", {}) or {}).items():
                for item in group:
                    found.append((str(item), f"pyproject.toml [{extra}] extra"))
            poetry = data.get("tool", {}).get("poetry", {}) or {}
            for name, constraint in (poetry.get("dependencies", {}) or {}).items():
                requirement = _poetry_requirement(name, constraint) if _PINNED_NAMES.match(name) else None
                if requirement is not None:
                    optional = isinstance(constraint, dict) and constraint.get("optional")
                    found.append((requirement, "pyproject.toml [optional] extra" if optional else "pyproject.toml"))
        except Exception:
            pass
    setup_cfg = os.path.join(root, "setup.cfg")
    if run_record.isfile(setup_cfg):
        import configparser

        parser = configparser.ConfigParser()
        try:
            parser.read(setup_cfg, encoding="utf-8")
            requires = parser.get("options", "install_requires", fallback="")
            found += [(line.strip(), "setup.cfg") for line in requires.splitlines() if line.strip()]
        except (configparser.Error, UnicodeDecodeError):
            pass
    found += _install_script_lines(root)
    found += _tpu_runtime_lines(root)
    setup_py = os.path.join(root, "setup.py")
    if run_record.isfile(setup_py):
        try:
            text = read_declaration(setup_py)
            for match in re.finditer(r"""['"]((?:tensorflow|tf-nightly|tf[-_]keras|keras|tf[-_]models[-_]official)[\w-]*\s*[<>=!~][^'"]*)['"]""", text):
                found.append((match.group(1), "setup.py"))
        except OSError:
            pass
    return found


# `pip install tensorflow==2.3.1` in a set-up script or CI step; `- tensorflow=2.3` in a
# conda environment file (conda's single `=`).
_INSTALL_PIN = re.compile(r"(?<![\w.-])(tensorflow(?:-gpu|-cpu)?|tf-keras|tf_keras|keras)\s*(==|>=|<=|~=|=(?!=)|<|>)\s*(\d[\w.*]*)")
_CONDA_DEPENDENCIES = re.compile(r"^dependencies\s*:", re.M)
_INSTALL_LINE = re.compile(r"pip3?\s+install|^\s*-\s|^\s*deps\s*=|^\s+\S", re.M)


# A Cloud TPU created with its TensorFlow runtime: `ctpu up --tf-version=2.2`, `gcloud compute
# tpus create NAME --version=2.3.1`, `gcloud compute tpus tpu-vm create NAME --version=tpu-vm-tf-2.8.0`.
_TPU_CREATE = re.compile(r"\bctpu\s+up\b|\bgcloud\b[^\n]*\btpus\b[^\n]*\bcreate\b")
_TPU_VERSION = re.compile(r"--(?:tf-version|version|runtime-version)[= ]+['\"]?(?:tpu-vm-tf-)?(\d+)\.(\d+)(?:\.(\d+))?")
_SCRIPT_FOLDERS = ("tools", "scripts", "bin")


def _shell_scripts(root: str) -> list[str]:
    """A folder's shell scripts: at its top, and in `tools/`, `scripts/`, `bin/` or a
    folder named like them (`submit_scripts/`, `job-scripts/`)."""
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    paths = [os.path.join(root, n) for n in names if n.endswith(".sh")]
    for folder in names:
        if folder in _SCRIPT_FOLDERS or folder.lower().endswith(("_scripts", "-scripts")):
            path = os.path.join(root, folder)
            if run_record.isdir(path):
                paths += [os.path.join(path, n) for n in sorted(os.listdir(path)) if n.endswith(".sh")]
    return paths


# An image a job script runs the code in: `docker run nvcr.io/nvidia/tensorflow:20.08-tf2-py3`,
# `singularity exec docker://tensorflow/tensorflow:2.4.1-gpu`, or a Singularity image built
# from NGC and named after its tag (`CONTAINER=$HOME/tensorflow-20.08-tf2-py3.simg`).
_NGC_IMAGE_FILE = re.compile(r"\btensorflow[-_:](\d\d\.\d\d-tf[12](?:-py3)?)[\w.-]*?\.(?:simg|sif|sqsh)\b")


@lru_cache(maxsize=1024)
def _script_images(root: str) -> tuple[tuple[str, str | None, tuple[int, int] | None], ...]:
    """(script, image, None) for each TensorFlow image a folder's shell scripts run code in
    (lines that are not comments)."""
    found = []
    for path, text in _script_texts(_shell_scripts(root)):
        if "tensorflow" not in text:
            continue
        name = os.path.relpath(path, root).replace(os.sep, "/")
        for line in text.splitlines():
            if line.lstrip().startswith("#"):
                continue
            images = [f"{repository}:{tag}" for repository, tag in _IMAGE_REFERENCE.findall(line)]
            images += [f"nvcr.io/nvidia/tensorflow:{tag}" for tag in _NGC_IMAGE_FILE.findall(line)]
            found += [(name, image, None) for image in images]
    return tuple(found)


def _tpu_runtime_lines(root: str) -> list[tuple[str, str]]:
    """The TensorFlow of the Cloud TPUs a project's shell scripts create (at the root, or in
    `tools/`, `scripts/`, `bin/`): the code runs on that TensorFlow."""
    paths = _shell_scripts(root)
    found = []
    for path, text in _script_texts(paths):
        if "tpu" not in text:
            continue
        for command in re.sub(r"\\\n", " ", text).splitlines():  # continuation lines joined
            if command.lstrip().startswith("#") or not _TPU_CREATE.search(command):
                continue
            version = _TPU_VERSION.search(command)
            if version is not None:
                pin = f"{version.group(1)}.{version.group(2)}" + (f".{version.group(3)}" if version.group(3) else ".*")
                found.append((f"tensorflow=={pin}", os.path.relpath(path, root)))
    return found


def _script_texts(paths: list[str]) -> Iterator[tuple[str, str]]:
    """(path, its first 200 kB) of each script that can be read."""
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                yield path, handle.read(200_000)
        except OSError:
            continue


def _install_script_lines(root: str) -> list[tuple[str, str]]:
    """Pins in the places a project installs its TensorFlow outside its package metadata:
    set-up scripts at the root (`*.sh`), conda environment files (`environment.yml`, or
    any root `*.yml` with a top-level `dependencies:` list: `conda env create -f
    project.yml`), `tox.ini` and CI workflows (`.github/workflows/*.yml`)."""
    paths = [os.path.join(root, n) for n in sorted(os.listdir(root))
             if n.endswith((".sh", ".yml", ".yaml")) or n == "tox.ini"]
    workflows = os.path.join(root, ".github", "workflows")
    if run_record.isdir(workflows):
        paths += [os.path.join(workflows, n) for n in sorted(os.listdir(workflows)) if n.endswith((".yml", ".yaml"))]
    found = []
    for path, text in _script_texts(paths):
        name = os.path.relpath(path, root)
        if os.path.dirname(name) == "" and name.endswith((".yml", ".yaml")) and not _CONDA_DEPENDENCIES.search(text):
            continue  # a root YAML file that is not a conda environment (a config, a CI file of another service)
        for line in text.splitlines():
            if line.lstrip().startswith("#") or not _INSTALL_LINE.search(line):
                continue
            for package, operator, version in _INSTALL_PIN.findall(line):
                found.append((f"{package}{'==' if operator == '=' else operator}{version}", name))
    return found


# Versions a specifier is tried against: every TensorFlow 1.x/2.x minor and patch, and
# Keras 2.x/3.x, so that exact pins (`==2.4.1`) and ranges are both decided.
_TF_VERSIONS = tuple(f"{major}.{minor}.{patch}" for major in (1, 2) for minor in range(0, 31) for patch in range(0, 10))
_NEWEST_TRIED = (2, 30)  # a specifier that admits it has no upper bound
_KERAS_VERSIONS = tuple(f"{major}.{minor}.{patch}" for major in (2, 3) for minor in range(0, 31) for patch in range(0, 10))
_TFP_VERSIONS = tuple(f"0.{minor}.{patch}" for minor in range(0, 31) for patch in range(0, 10))


def _admitted_minors(spec, versions: tuple[str, ...]) -> list[tuple[int, int]]:
    """(major, minor) of each version `spec` admits (`_admitted`)."""
    return [_major_minor(v) for v in _admitted(spec, versions)]


def _admitted(spec, versions: tuple[str, ...]) -> list[str]:
    """The versions a specifier admits; a pin of a pre-release or nightly
    (`tf-nightly==2.8.0.dev20211104`, `==2.5.0rc1`) stands for its release."""
    admitted = list(spec.filter(versions, prereleases=True))
    if not admitted and len(spec) == 1:
        (only,) = spec
        if only.operator in ("==", "==="):
            match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", only.version)
            if match:
                admitted = [f"{match.group(1)}.{match.group(2)}.{match.group(3) or 0}"]
    return admitted


def _eras(spec, versions: tuple[str, ...], first_new: tuple[int, int]) -> tuple[bool, bool]:
    """(allows a Keras 2 era version, allows a Keras 3 era version)."""
    old = new = False
    for version in _admitted(spec, versions):
        if _major_minor(version) >= first_new:
            new = True
        else:
            old = True
        if old and new:
            break
    return old, new


# `pip install -r library.txt` in a README: that file is a requirements file, whatever its name
_PIP_REQUIREMENTS_FILE = re.compile(r"pip3?(?:\s+--?[\w-]+)*\s+install\b[^\n]*?\s-r\s*([\w./-]+\.txt)\b")


def _installed_requirement_files(root: str) -> list[str]:
    """The `.txt` files of the project root that its README installs with `pip install -r`."""
    found: list[str] = []
    readme = _readme(root)
    for match in _PIP_REQUIREMENTS_FILE.finditer(readme[1] if readme is not None else ""):
        listed = os.path.normpath(os.path.join(root, match.group(1)))
        if os.path.dirname(listed) == os.path.normpath(root) and run_record.isfile(listed) and listed not in found:
            found.append(listed)
    return found


@lru_cache(maxsize=64)
def pins_fingerprint(root: str | None) -> str:
    """What a project declares that `project_pins` decides from (its requirement lines,
    not parsed): a cache key needs no packaging import."""
    if root is None:
        return ""
    try:
        return repr(_requirement_lines(root))
    except OSError:
        return ""


@lru_cache(maxsize=64)
def project_pins(root: str | None) -> Target | None:
    if root is None:
        return None
    try:
        lines = _requirement_lines(root)
    except OSError:
        return None
    if not lines:
        return None
    from packaging.requirements import InvalidRequirement, Requirement

    requirements = []
    for line, source in lines:
        try:
            requirements.append((Requirement(line), line, source))
        except InvalidRequirement:
            continue
    required = [r for r in requirements if not r[2].endswith(" extra")]
    optional = [r for r in requirements if r[2].endswith(" extra")]
    # Required dependencies decide first; an optional extra only when they do not. A
    # required tf-keras means Keras 2 whatever TensorFlow is pinned to (TF >= 2.16 with
    # TF_USE_LEGACY_KERAS=1 runs tf-keras); in an extra it is an optional
    # compatibility package and decides nothing.
    # A lock file lists every package an install gets, tf-keras among them where another
    # package needs it (tensorflow-hub): that says nothing of the Keras the code runs on.
    for requirement, line, source in required:
        if _requirement_name(requirement) == "tf-keras" and source not in _LOCK_FILES:
            return Target(KERAS2, f"{source} depends on tf-keras")
    return _self_contradicting_pins(required) or _decided_by_pins(required) or _decided_by_pins(optional)


def _requirement_name(requirement) -> str:
    """A requirement's project name as compared here (`tensorflow_gpu` is `tensorflow-gpu`)."""
    return requirement.name.lower().replace("_", "-")


def _self_contradicting_pins(requirements: list) -> Target | None:
    """A file that pins TensorFlows no one version satisfies (`tensorflow==2.12.0` beside
    `tensorflow_gpu==2.1.0`): which one runs depends on the order pip installs them, so
    the TensorFlow version is conflicting (the Keras too, where the pins span Keras 3).
    Pins under environment markers are for different platforms and contradict nothing."""
    pins: dict[str, list[tuple[set, str]]] = {}
    for requirement, line, source in requirements:
        name = _requirement_name(requirement)
        if name in _TF_DISTRIBUTIONS and str(requirement.specifier) and requirement.marker is None:
            admitted = set(_admitted_minors(requirement.specifier, _TF_VERSIONS))
            if admitted:
                pins.setdefault(source, []).append((admitted, line))
    for source, found in pins.items():
        if len(found) < 2 or set.intersection(*(admitted for admitted, _ in found)):
            continue
        (first, line), *others = found
        eras = {KERAS2 if minor < (2, 16) else KERAS3 for admitted, _ in found for minor in admitted}
        keras = eras.pop() if len(eras) == 1 else (KERAS2 if max(first) < (2, 16) else KERAS3)
        also = ", ".join(f"`{other}`" for _, other in others)
        return Target(keras, f"{source} pins {line}", names_tensorflow=True,
                      conflict=f"it also pins {also}: which TensorFlow runs depends on the order pip installs them")
    return None


# Packages released in lockstep with TensorFlow: their version pins TensorFlow's
# (tensorflow-probability 0.N needs TensorFlow 2.(N-8); 0.24 needs tf-keras on 2.16).
_COMPANIONS = {
    "tf-models-official": lambda major, minor: (major, minor),
    "tensorflow-text": lambda major, minor: (major, minor),
    "tensorflow-probability": lambda major, minor: (2, minor - 8) if major == 0 else None,
}


# KerasCV 0.8.0 was its first release on Keras 3; every earlier one needs tf.keras (Keras 2).
_KERAS_CV_VERSIONS = tuple(f"0.{minor}.{patch}" for minor in range(1, 10) for patch in range(0, 4))


def _decided_by_pins(requirements: list) -> Target | None:
    return _decided_by(requirements, companions=False) or _decided_by(requirements, companions=True)


def _decided_by(requirements: list, companions: bool) -> Target | None:
    """TensorFlow and Keras pins first; then the pins of packages released with
    TensorFlow (which say its version indirectly). A TensorFlow pin decides before a Keras
    one wherever either is listed (`keras==2.6.0` above `tensorflow==2.6.1` in a conda
    file): only it says which TensorFlow runs."""
    if not companions:
        requirements = sorted(requirements, key=lambda r: _requirement_name(r[0]) not in _TF_DISTRIBUTIONS)
    for requirement, line, source in requirements:
        name = _requirement_name(requirement)
        spec = requirement.specifier
        if companions and name == "keras-hub":
            # every KerasHub release calls Keras-3-only APIs (`keras.config`, `keras.version()`)
            return Target(KERAS3, f"{source} requires {line} (KerasHub runs on Keras 3 only)")
        if not str(spec):
            continue
        if companions:
            if name == "tensorflow-addons":
                return Target(KERAS2, f"{source} requires {line} (TensorFlow Addons supports Keras 2 only)")
            if name == "keras-cv":
                admitted = list(spec.filter(_KERAS_CV_VERSIONS, prereleases=True))
                if admitted and all(_major_minor(v) < (0, 8) for v in admitted):
                    return Target(KERAS2, f"{source} pins {line} (KerasCV before 0.8 runs on Keras 2 only)")
                continue
            to_tf = _COMPANIONS.get(name)
            if to_tf is None:
                continue
            eras = set()
            for version in spec.filter(_KERAS_VERSIONS + _TFP_VERSIONS, prereleases=True):
                tf = to_tf(*_major_minor(version))
                if tf is not None:
                    eras.add(KERAS2 if tf < (2, 16) else KERAS3)
            if eras == {KERAS2}:
                return Target(KERAS2, f"{source} pins {line} (a Keras 2 era TensorFlow)", names_tensorflow=True)
            if name != "tensorflow-probability" and eras == {KERAS3}:
                return Target(KERAS3, f"{source} pins {line} (a Keras 3 era TensorFlow)", names_tensorflow=True)
            continue
        if name in _TF_DISTRIBUTIONS:
            # every TensorFlow the pin admits, read once: the newest decides the era and
            # whether the stable mixed-precision API (2.4) or TF 2 itself is there yet
            admitted = _admitted_minors(spec, _TF_VERSIONS)
            if admitted and max(admitted) < (2, 16):
                newest = max(admitted)
                return Target(KERAS2, f"{source} pins {line} (Keras 2 era)", before_stable_api=newest < (2, 4),
                              tf1=newest < (2, 0), names_tensorflow=True, newest_tensorflow=newest)
            if admitted and min(admitted) >= (2, 16):
                return Target(KERAS3, f"{source} pins {line} (Keras 3 era)", names_tensorflow=True,
                              newest_tensorflow=max(admitted))
        elif name == "keras":
            old, new = _eras(spec, _KERAS_VERSIONS, (3, 0))
            admitted = _admitted_minors(spec, _KERAS_VERSIONS)
            if admitted and max(admitted) < (2, 4):
                # multi-backend Keras (2.3.1 was its last release) ran on TF 1.x to 2.2; Keras
                # 2.4 was the first to need TF 2.2 and become a front for tf.keras
                return Target(KERAS2, f"{source} pins {line} (multi-backend Keras: TensorFlow before 2.4)",
                              before_stable_api=True)
            if old and not new:
                return Target(KERAS2, f"{source} pins {line}")
            if new and not old:
                return Target(KERAS3, f"{source} pins {line}")
    return None


@lru_cache(maxsize=1)
def installed_versions() -> dict[str, str]:
    """Installed tensorflow / keras / tf-keras versions, from package metadata only.

    Read from the names of the `*.dist-info` folders on `sys.path` (one directory
    listing per entry, as `importlib.metadata` finds them), without importing anything
    or reading METADATA files; the first match on the path wins, as for imports."""
    import sys

    wanted = {_normalise(d): d for d in (*_TF_DISTRIBUTIONS, "keras", "tf-keras")}
    versions: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if not name.endswith(".dist-info"):
                continue
            project, _, version = name[: -len(".dist-info")].partition("-")
            dist = wanted.get(_normalise(project))
            if dist is not None and version and dist not in versions:
                versions[dist] = version
    return versions


def _normalise(project: str) -> str:
    return re.sub(r"[-_.]+", "-", project).lower()


def _major_minor(version: str) -> tuple[int, int]:
    numbers = re.findall(r"\d+", version)
    return (int(numbers[0]) if numbers else 0, int(numbers[1]) if len(numbers) > 1 else 0)


@lru_cache(maxsize=1)
def installed_target() -> Target | None:
    versions = installed_versions()
    for dist in _TF_DISTRIBUTIONS:
        if dist in versions:
            if _major_minor(versions[dist]) < (2, 16):
                return Target(KERAS2, f"installed {dist} {versions[dist]} (Keras 2)")
            return Target(KERAS3, f"installed {dist} {versions[dist]} (Keras 3)")
    if "keras" in versions:
        if _major_minor(versions["keras"]) < (3, 0):
            return Target(KERAS2, f"installed keras {versions['keras']}")
        return Target(KERAS3, f"installed keras {versions['keras']}")
    return None


def is_project_file(path: str) -> bool:
    """Whether editing `path` can change a project's pins (or where its root is), or the
    TensorFlow of the jobs that run its files (a job script)."""
    name = os.path.basename(path)
    if name in _PROJECT_MARKERS or is_requirements_file(name) or name in ("poetry.lock", "uv.lock", "Pipfile.lock"):
        return True
    if name.endswith(JOB_SCRIPT_SUFFIXES):
        return True
    return name.endswith(".txt") and os.path.basename(os.path.dirname(path)) == "requirements"


def forget_project_files() -> None:
    """Forget the project roots and pins read so far (they are cached for the life of
    the process): a long-running process calls this when a project file changes."""
    project_root.cache_clear()
    project_pins.cache_clear()
    pins_fingerprint.cache_clear()
    container_target.cache_clear()
    _dockerfile_images.cache_clear()
    nearest_ngc_image.cache_clear()
    nearest_container_target.cache_clear()
    _copied_sources.cache_clear()
    readme_target.cache_clear()
    _subproject_notes.cache_clear()
    launcher_target.cache_clear()
    notebooks_declared_target.cache_clear()
    recorded_tensorflow.cache_clear()
    forget_job_scripts()
    forget_history()


def environment_fingerprint() -> str:
    """What outside a file can change a target decision (for the cache key)."""
    return ",".join(f"{k}={v}" for k, v in sorted(installed_versions().items()))
