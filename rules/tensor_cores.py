"""MP3xx: sizes that keep float16 matmuls and convolutions off the Tensor Cores.

NVIDIA Tensor Cores run float16 matmuls and convolutions only when the sizes involved
are multiples of 8 (`tensor-core-multiple` in config). The four rules share one
analysis (`mplint/facts/size_sites.py` finds the sizes and the output layers;
`TensorCoreFindings` here decides what to report and how to fix it).

Decisions (also in docs/tensor-cores.md):
- Only float16 compute is checked: a `mixed_float16` (or `float16`) policy set globally
  or assumed, or a layer's own `dtype=`. Under `mixed_bfloat16` alone nothing is
  reported: TPUs prefer multiples of 128, but the guide says that applies to float32 as
  much as to mixed precision, so it is not a mixed-precision finding.
- Sizes below the multiple are not reported (the TF 1.15 page calls powers of two below
  256 fine, and 1, 2, 4 are the ones that are not multiples of 8; other tiny sizes do
  too little work to matter and are nearly always fixed by the data: RGB channels,
  coordinates). Multiples of 8 are fine at any size (the TF 2.x guides' rule: their own
  example is `filters=48`).
- A model's output layers (their size is the task's) are not reported, and a value they
  share is reported without a fix; a vocabulary-sized output layer is reported (MP304):
  the vocabulary size is a free choice (pad it with unused ids).
- Code that hides every GPU (`CUDA_VISIBLE_DEVICES` set to "-1" or "" in the same
  function or at module level, `tf.config.set_visible_devices([], "GPU")`, a
  `with tf.device("/cpu:0")` block) runs on the CPU, which has no Tensor Cores: nothing
  is reported there (`mplint/facts/cpu_only.py`). A setting under an `if` keeps the findings.
- Test modules are not checked: a test's sizes are toy sizes picked to run fast (and
  the sizes a layer test exercises), never a throughput the user pays for.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from mplint.analysis.calls import arg_value, callee_name
from mplint.analysis.values import Source, Value, literal_number
from mplint.core.diagnostics import CALL_PATH, ROLE, FixAvailability, Premise, Severity, Status
from mplint.catalogue.rule import FixPlan, Replace, Rule
from mplint.core.textpos import LineIndex

from mplint.facts.size_sites import (
    AT_MOST, LINEAR, MP301, MP302, MP303, MP304, RECURRENT, TASK_SIZE_NAME, VOCABULARY_NAME,
    SizeSite, TensorCoreSites,
)

from mplint.facts.cpu_only import CpuOnly
from mplint.facts.test_modules import is_test_file
from mplint.facts.width_ties import reshaped_output, width_tie

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts

_FLOAT16 = frozenset({"mixed_float16", "float16"})
_WORK = {
    MP301: "matmuls",
    MP302: "convolutions",
    MP303: "matmuls and convolutions",
    MP304: "matmuls",
}


@dataclass
class _Pending:
    """A finding whose message waits for line numbers."""

    site: SizeSite
    rounded: int  # the size rounded up
    edit_rounded: int  # the edited value rounded up (== rounded unless edit is a factor)
    source: Source | None  # the literal a fix rewrites (None: no fix)
    reason: str = ""  # why there is no fix
    shared_with: cst.Call | None = None  # the output layer that shares the value
    note: str = ""
    code: str = ""
    premises: tuple[Premise, ...] = ()


@dataclass(frozen=True)
class TensorCoreFinding:
    code: str
    node: cst.Call
    message: str
    fix: FixPlan | None
    detail: str = ""
    premises: tuple[Premise, ...] = ()


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def _percent(fraction: float) -> str:
    """`~4.0%`, `~12%`, `<0.1%`."""
    percent = fraction * 100
    if percent < 0.1:
        return "<0.1%"
    return f"~{percent:.1f}%" if percent < 10 else f"~{percent:.0f}%"


def growth_text(growth: str, old: int, new: int, shared: bool = False) -> str:
    """What rounding `old` up to `new` costs, for the message. A size written as a name
    (`n = 100`, `Conv2D(n)`) may size other layers too, this one's input among them:
    then its growth is a lower bound."""
    ratio = new / old
    if growth == LINEAR:
        # a lower bound under 0.1% says no more than "<0.1%"
        bound = "at least " if shared and _percent(ratio - 1) != "<0.1%" else ""
        return f"adds {bound}{_percent(ratio - 1)} parameters"
    if growth == AT_MOST:
        return f"adds at most {_percent(ratio - 1)} parameters"
    if growth == RECURRENT:
        return (
            f"adds {_percent(ratio - 1)} to {_percent(ratio * ratio - 1)} parameters "
            "(depending on its input width)"
        )
    return f"makes each step {_percent(ratio - 1)} larger"


def integer_text(literal: cst.Integer, value: int) -> str:
    """`value` spelled like the literal it replaces (digit grouping kept)."""
    return f"{value:_}" if "_" in literal.value else str(value)


def rows_of(facts: "ModuleFacts", nodes: list[cst.CSTNode]) -> dict[int, int]:
    """1-based rows of nodes (by id), for messages."""
    lines = LineIndex(facts.text)
    return {key: lines.row_col(span.start)[0] for key, span in facts.positions.spans(nodes).items()}


class TensorCoreFindings:
    """Every MP301-MP304 finding of a module, decided once for the four rules."""

    def __init__(self, facts: "ModuleFacts") -> None:
        self.facts = facts
        self.sites: TensorCoreSites = facts.analysis(TensorCoreSites)
        self.multiple = max(1, int(facts.tensor_core_multiple))
        policy = facts.policy
        self.global_float16 = policy.global_float16_somewhere
        self.by_code: dict[str, list[TensorCoreFinding]] = {}
        if is_test_file(facts.path):
            return  # toy sizes picked to run fast: no throughput to win
        if self.global_float16 or policy.float16:
            self._decide()

    # -- which sites count --------------------------------------------------------------
    def _computes_float16(self, layer: cst.Call) -> bool:
        """The layer's own `dtype=` policy, else the global policy where it is built."""
        dtype = arg_value(layer, None, "dtype")
        if dtype is not None:
            names = self.facts.policy.policy_names(dtype)
            if names:
                return bool(names & _FLOAT16)
        return self.global_float16 and self.facts.policy.global_float16_at(layer)

    @staticmethod
    def _task_named(value: Value) -> bool:
        return any(s.name is not None and TASK_SIZE_NAME.search(s.name) for s in value.sources)

    def _decide(self) -> None:
        sites = self.sites
        embeddings = [s for s in sites.layer_sites if s.code == MP304 and s.label == "input_dim"]
        vocabulary_literals = {id(src.literal) for s in embeddings for src in s.value.sources}
        vocabulary_values = {s.value.value for s in embeddings}
        output_literals: dict[int, cst.Call] = {}  # literal -> the output layer using it
        candidates: list[tuple[SizeSite, str, str]] = []  # (site, code, note)
        for site in sites.layer_sites:
            layer = site.layer
            assert layer is not None
            float16 = self._computes_float16(layer)
            if site.code != MP304 and sites.is_output_layer(layer):
                if self._vocabulary_sized(site, vocabulary_literals, vocabulary_values):
                    if float16:
                        candidates.append((site, MP304, "a vocabulary-sized output layer"))
                else:
                    # The task's size (also of a float32 output layer): never rounded.
                    for source in site.value.sources:
                        output_literals.setdefault(id(source.literal), layer)
                continue
            if float16 and not self._task_named(site.value):
                candidates.append((site, site.code, site.note))
        if self.global_float16:
            policy = self.facts.policy
            candidates.extend((site, MP303, "") for site in sites.batch_sites if policy.global_float16_at(site.call))
        pending = [p for p in (self._pending(s, c, n, output_literals) for s, c, n in candidates) if p is not None]
        for item in pending:
            if item.site.code == MP304 and item.site.label == "input_dim":
                item.premises = (self._vocabulary_premise(item.site),)
            elif item.code == MP304 and item.site.label == "output_dim" and item.site.layer is not None:
                reshaped = reshaped_output(self.facts, item.site.layer)
                if reshaped is not None:
                    item.premises = (Premise(ROLE, "the width is a matmul's", Status.ASSUMED, reshaped),)
            elif item.code in (MP301, MP302) and item.site.layer is not None:
                tie = width_tie(self.facts, item.site.layer)
                if tie is not None:  # rounding this layer alone breaks the model
                    item.premises = (Premise(ROLE, "the width is a free choice", Status.ASSUMED, tie),)
                    item.reason, item.source = "round the tied widths together", None
            if item.code == MP303:
                split = self._split_over_replicas
                if split is not None:
                    item.premises = (*item.premises, Premise(
                        ROLE, "one device's batch", Status.ASSUMED,
                        f"`{split}` splits each batch over its replicas: a GPU sees batch/replicas, a multiple of 8 "
                        "only where the batch is one of 8 x replicas"))
            overridden = next((s for s in item.site.value.sources if s.overridden), None)
            if overridden is not None:
                item.premises = (*item.premises, Premise(
                    CALL_PATH, "the default is used", Status.ASSUMED,
                    f"every call in the project passes its own `{overridden.name}`: the {overridden.via} "
                    "serves only callers outside the project"))
        self._emit(pending)

    @functools.cached_property
    def _split_over_replicas(self) -> str | None:
        """The strategy that divides the module's batches among several GPUs
        (`tf.distribute.MirroredStrategy()` over every visible GPU, a multi-worker or
        central-storage strategy), or None: under it, a batch size is the global one."""
        for call in self.facts.calls_to(_SPLITTING_STRATEGIES):
            devices = arg_value(call, 0, "devices")
            if isinstance(devices, (cst.List, cst.Tuple)) and len(devices.elements) == 1:
                continue  # one GPU: one replica
            return self.facts.module.code_for_node(call.func)
        return None

    def _vocabulary_premise(self, embedding: SizeSite) -> Premise:
        """That the vocabulary is the width of a matmul: a lookup is a gather, so an
        embedding's `input_dim` costs Tensor Core work only where a layer projects onto
        the vocabulary (a layer of the same size, from the same value) or the table's
        weights are read (tied to an output projection)."""
        by_value, by_literal = self._projection_sites
        found = [by_value.get(embedding.value.value)]  # an int: `_pending` keeps no other
        found.extend(by_literal.get(id(s.literal)) for s in embedding.value.sources)
        first = min((i for i in found if i is not None), default=None)
        if first is not None:
            site = self.sites.layer_sites[first]
            layer = callee_name(site.layer if site.layer is not None else site.call) or "layer"
            return Premise(ROLE, "the vocabulary is a matmul's width", Status.PROVED,
                           f"a `{layer}` of this module has the vocabulary's size")
        if self._reads_embedding_weights:
            return Premise(ROLE, "the vocabulary is a matmul's width", Status.PROVED,
                           "the module reads an embedding table's weights (`.embeddings`: tied to a projection)")
        return Premise(ROLE, "the vocabulary is a matmul's width", Status.ASSUMED,
                       "no layer of this module projects onto the vocabulary, and a lookup is a gather, not a matmul")

    @functools.cached_property
    def _projection_sites(self) -> tuple[dict[object, int], dict[int, int]]:
        """The first layer site (not an embedding's `input_dim`) of each size value and of
        each literal: what `_vocabulary_premise` asks of every embedding, built once."""
        by_value: dict[object, int] = {}
        by_literal: dict[int, int] = {}
        for i, site in enumerate(self.sites.layer_sites):
            if site.code == MP304 and site.label == "input_dim":
                continue
            if isinstance(site.value.value, (int, float)):  # only a number can equal an int
                by_value.setdefault(site.value.value, i)
            for source in site.value.sources:
                by_literal.setdefault(id(source.literal), i)
        return by_value, by_literal

    @functools.cached_property
    def _reads_embedding_weights(self) -> bool:
        return any(a.attr.value == "embeddings" for a in self.facts.index.nodes(cst.Attribute))

    @staticmethod
    def _vocabulary_sized(site: SizeSite, literals: set[int], values: set[object]) -> bool:
        if any(s.name is not None and VOCABULARY_NAME.search(s.name) for s in site.value.sources):
            return True
        return any(id(s.literal) in literals for s in site.value.sources) or site.value.value in values

    def _pending(self, site: SizeSite, code: str, note: str, output_literals: dict[int, cst.Call]) -> _Pending | None:
        size = site.value.value
        m = self.multiple
        if not isinstance(size, int) or size < m or size % m == 0:
            return None
        edit = site.edit
        if edit is not None and (not isinstance(edit.value, int) or edit.value <= 0):
            return None
        edit_rounded = round_up(edit.value, m) if edit is not None and isinstance(edit.value, int) else round_up(size, m)
        found = _Pending(site, round_up(size, m), edit_rounded, None, note=note, code=code)
        source = edit.single_source if edit is not None else None
        if source is None:
            found.reason = "computed from several values, so the place to round is a choice"
        elif source.external:
            found.reason = f"it is defined in {source.where}: round it there"
        elif not isinstance(source.literal, cst.Integer) or literal_number(source.literal) != edit.value:  # type: ignore[union-attr]
            found.reason = "the value is not written as an integer literal"
        elif id(source.literal) in output_literals:
            found.reason = "the value is shared with an output layer"
            found.shared_with = output_literals[id(source.literal)]
        elif note == "a vocabulary-sized output layer" and source.via == "literal":
            found.reason = "round the vocabulary size where it is defined, not at the output layer"
        else:
            found.source = source
        return found

    # -- messages ---------------------------------------------------------------------------
    def _emit(self, pending: list[_Pending]) -> None:
        index = self.facts.index
        wanted: list[cst.CSTNode] = []
        for item in pending:
            wanted.extend(
                s.literal for s in item.site.value.sources
                if not s.external and not index.contains(item.site.call, s.literal)
            )
            if item.shared_with is not None:
                wanted.append(item.shared_with)
        rows: dict[int, int] = {}
        if wanted and not self.facts.path.endswith(".ipynb"):
            rows = rows_of(self.facts, wanted)
        for item in pending:
            message, detail = self._message(item, rows)
            finding = TensorCoreFinding(item.code, item.site.call, message, self._fix(item), detail, item.premises)
            self.by_code.setdefault(item.code, []).append(finding)

    @staticmethod
    def _at(node: cst.CSTNode, rows: dict[int, int]) -> str:
        row = rows.get(id(node))
        return f", line {row}" if row is not None else ""

    def _origin(self, item: _Pending, rows: dict[int, int]) -> str:
        site = item.site
        parts: list[str] = [item.note] if item.note else []
        expr = site.expr
        if expr is not None and len(site.value.sources) > 1 and not site.shown:
            text = " ".join(cst.Module([]).code_for_node(expr).split())
            if len(text) <= 40:
                parts.append(text)
        seen: set[str] = set()
        for source in site.value.sources:
            if self.facts.index.contains(site.call, source.literal):
                continue
            where = f"{source.via}, {source.where}" if source.external else f"{source.via}{self._at(source.literal, rows)}"
            if where not in seen:
                seen.add(where)
                parts.append(where)
        return f" ({'; '.join(parts)})" if parts else ""

    def _message(self, item: _Pending, rows: dict[int, int]) -> tuple[str, str]:
        """(the message, its detail)."""
        site = item.site
        m = self.multiple
        shown = f"{site.label} = {site.shown}" if site.shown else f"{site.label}={site.value.value}"
        message = f"{shown}{self._origin(item, rows)} is not a multiple of {m} for Tensor Cores: "
        detail = [f"float16 {'convolutions' if site.label == 'filters' else _WORK[item.code]} need sizes that are "
                  f"multiples of {m} to run on Tensor Cores"]
        if site.edit_label and site.edit is not None:
            old, new = site.edit.value, item.edit_rounded
            message += f"round {site.edit_label} {old} -> {new} "
        else:
            old, new = site.value.value, item.rounded
            message += f"round {old} -> {new} "
        shared = any(s.via != "literal" for s in site.value.sources)
        message += f"({growth_text(site.growth, old, new, shared)})"  # type: ignore[arg-type]
        if item.reason:
            shared = f" (line {rows[id(item.shared_with)]})" if item.shared_with is not None and id(item.shared_with) in rows else ""
            detail.append(f"not fixed: {item.reason}{shared}")
        return message, "; ".join(detail)

    def _fix(self, item: _Pending) -> FixPlan | None:
        source = item.source
        if source is None or not isinstance(source.literal, cst.Integer):
            return None
        new = item.edit_rounded
        what = str(literal_number(source.literal)) if source.via == "literal" else f"the {source.via}"
        return Rule.fix(
            f"Round {what} up to {new} (changes the architecture)",
            [Replace(source.literal, cst.Integer(integer_text(source.literal, new)))],
            unsafe=True,
        )


# Strategies that split a global batch among replicas (canonical names).
_SPLITTING_STRATEGIES = frozenset({
    "tensorflow.distribute.MirroredStrategy", "tensorflow.distribute.MultiWorkerMirroredStrategy",
    "tensorflow.distribute.experimental.MultiWorkerMirroredStrategy",
    "tensorflow.distribute.experimental.CentralStorageStrategy",
})


class _TensorCoreRule(Rule):
    severity = Severity.WARNING
    fix_availability = FixAvailability.SOMETIMES
    requires_mixed_policy = True
    premises = ("policy",)

    def check(self) -> None:
        findings = self.facts.analysis(TensorCoreFindings)
        cpu_only = self.facts.analysis(CpuOnly)
        for finding in findings.by_code.get(self.code, []):
            if not cpu_only.covers(finding.node):  # no GPU, no Tensor Cores to feed
                self.report(finding.node, finding.message, fix=finding.fix, detail=finding.detail,
                            premises=finding.premises)


class UnitsNotMultiple(_TensorCoreRule):
    """## What it does
    Finds layers whose width is not a multiple of 8 (`tensor-core-multiple`) under a
    `mixed_float16` policy: `units` of `Dense`, `LSTM`, `GRU`, `SimpleRNN` (and their
    cells, also inside `Bidirectional`/`TimeDistributed`), `filters` of `ConvLSTM1D/2D/3D`,
    `EinsumDense`'s kernel output size, and `MultiHeadAttention`'s `num_heads * key_dim`
    (and `num_heads * value_dim`). The value is followed to where it is written: a literal,
    a constant (`HIDDEN = 1001`), arithmetic of constants, a flag default or a parameter
    default; the message names that place.

    Not reported: sizes below the multiple, a model's output layers (their size is the
    task's: the last layer of a `Sequential`, the layers producing `Model(...)`'s outputs or
    a subclassed model's `call` result, layers ending in softmax/sigmoid, sizes named like
    `NUM_CLASSES`), layers with a non-float16 `dtype=`, and code under `mixed_bfloat16` only.

    ## Why is this bad?
    Tensor Cores multiply float16 matrices only when the dimensions are multiples of 8; a
    `Dense(1001)` runs its float16 matmul on the slower general-purpose units, so
    mixed precision buys less speed than it could. The guide: "Tensor Cores requires
    certain dimensions of tensors to be a multiple of 8".

    ## Example
    ```python
    HIDDEN = 1001
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(HIDDEN, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    ```

    ## Use instead
    ```python
    HIDDEN = 1008
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(HIDDEN, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    ```

    ## Fix safety
    Unsafe: it changes the architecture (and so the parameter count, the results and
    which checkpoints load); the message gives the extra parameters in percent. The fix
    rounds the value up where it is defined (the literal, the constant, the flag or
    parameter default). There is no fix when the value is computed from several values
    (`4 * HIDDEN`: which one to change is a choice) or is shared with an output layer.
    """

    code = MP301
    name = "units-not-multiple"
    precision = "medium"
    precision_evidence = "0 of its 7 judged findings in the fresh audits were true (7 false, 14 debatable)"


class FiltersNotMultiple(_TensorCoreRule):
    """## What it does
    Finds convolutions whose `filters` is not a multiple of 8 (`tensor-core-multiple`)
    under a `mixed_float16` policy: `Conv1D/2D/3D`, `Conv1D/2D/3DTranspose`,
    `SeparableConv1D/2D` and their `Convolution*` aliases. `DepthwiseConv*D` is not
    checked: it has no Tensor Core path. The value is followed to where it is written
    (literal, constant, arithmetic, flag or parameter default).

    Not reported: filters below the multiple, output layers (a segmentation head's
    class count, an image's channels), layers with a non-float16 `dtype=`, code under
    `mixed_bfloat16` only.

    ## Why is this bad?
    cuDNN runs float16 convolutions on Tensor Cores only when the channel counts are
    multiples of 8; `Conv2D(100, 3)` under `mixed_float16` falls back to slower kernels.
    The guide's example of a good size: `Conv2D(filters=48, ...)`.

    ## Example
    ```python
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    x = tf.keras.layers.Conv2D(100, 3, activation="relu")(inputs)
    ```

    ## Use instead
    ```python
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    x = tf.keras.layers.Conv2D(104, 3, activation="relu")(inputs)
    ```

    ## Fix safety
    Unsafe: it changes the architecture; the message gives the extra parameters in
    percent (for separable convolutions an upper bound: only the pointwise kernel grows).
    No fix when the value is computed from several values or shared with an output layer.
    """

    code = MP302
    name = "filters-not-multiple"
    precision = "medium"
    precision_evidence = "0 of its 3 judged findings in the fresh audits were true (3 false, 13 debatable)"


class BatchSizeNotMultiple(_TensorCoreRule):
    """## What it does
    Finds batch sizes that are not a multiple of 8 (`tensor-core-multiple`) under a global
    `mixed_float16` policy: `batch_size` of `fit`/`evaluate`/`predict` on a Keras model,
    the size given to `batch`/`padded_batch` and the `bucket_batch_sizes` of
    `bucket_by_sequence_length` on a tf.data pipeline, and `batch_size` of
    `tf.data.experimental.make_csv_dataset` and `keras.utils.*_dataset_from_*`.
    Receivers are resolved: `.batch(...)` on something that is not a tf.data pipeline
    (or not known to be one) and `.fit(...)` on something that is not a Keras model are
    not reported, nor `fit`'s `batch_size` where the data comes in batches already (a
    tf.data pipeline, a generator, an `ImageDataGenerator.flow*`): Keras ignores it there.
    Nor a dataset bound to a name that is only shown (`list(ds.take(1))`,
    `print(ds.element_spec)`): no model takes its batches. A size that comes from callers
    counts only where a mixed policy runs at the call; a parameter's default that every
    call in the project overrides rests on an assumed call path (extended tier). Under a
    strategy that splits batches over several GPUs (`tf.distribute.MirroredStrategy()`
    over every visible GPU, a multi-worker or central-storage strategy) a GPU sees
    batch/replicas: the finding rests on an assumed role ("one device's batch", extended
    tier).

    ## Why is this bad?
    The batch is a dimension of every matmul and convolution in the model: with 100
    examples per step, float16 work misses the Tensor Cores throughout. The guide's
    example: `model.fit(..., batch_size=128)`.

    ## Example
    ```python
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(100)
    ```

    ## Use instead
    ```python
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(104)
    ```

    ## Fix safety
    Unsafe: a different batch size changes the training dynamics (you may want to scale
    the learning rate) and the memory needed. The work per epoch stays the same. No fix
    when the value is computed from several values (`per_replica * replicas`).
    """

    code = MP303
    name = "batch-size-not-multiple"
    precision = "medium"
    precision_evidence = "0 of its 7 judged findings in the fresh audits were true (7 false, 0 debatable)"


class EmbeddingSizeNotMultiple(_TensorCoreRule):
    """## What it does
    Finds an `Embedding` whose vocabulary (`input_dim`) or width (`output_dim`) is not a
    multiple of 8 (`tensor-core-multiple`) under a `mixed_float16` policy, and a
    vocabulary-sized output layer (a model output whose size is an embedding's
    `input_dim`, or a value named like `VOCAB_SIZE`).

    Not reported: an embedding given its weights (`weights=`, a constant initializer,
    `trainable=False`: its shape is the checkpoint's), nor the `input_dim` of a table of
    positions or slots, read by a gather rather than a matmul (named like `pos_embed`, or
    looked up with a range of ids: DETR's `query_embed(tf.range(num_queries))`).

    A lookup is a gather, not a matmul: the vocabulary costs Tensor Core work only where
    something projects onto it. An `input_dim` finding rests on that role, proved where a
    layer of the module has the vocabulary's size (from the same value) or the module
    reads a table's weights (`.embeddings`, tied to an output projection); elsewhere it is
    assumed, and the finding is in the extended tier (`--extended`).

    ## Why is this bad?
    The embedding width is the inner dimension of the float16 matmuls that read the
    embeddings, and the vocabulary is the width of the output projection of a language
    model (the largest matmul in many models). Unlike a class count, the vocabulary size
    is a free choice: padding it with a few unused ids (GPT-2's 50257 -> 50304 is the
    well-known case) lets those matmuls run on Tensor Cores.

    ## Example
    ```python
    VOCAB_SIZE = 10001
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    embed = tf.keras.layers.Embedding(VOCAB_SIZE, 100)
    logits = tf.keras.layers.Dense(VOCAB_SIZE)
    ```

    ## Use instead
    ```python
    VOCAB_SIZE = 10008
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    embed = tf.keras.layers.Embedding(VOCAB_SIZE, 104)
    logits = tf.keras.layers.Dense(VOCAB_SIZE)
    ```

    ## Fix safety
    Unsafe: it changes the architecture (and the checkpoint shapes). Rounding the
    vocabulary up adds ids that the data never uses. A vocabulary-sized output layer is
    fixed only through the name its size comes from (a constant or flag shared with the
    tokenizer and the embedding), never by editing the output layer's own literal; labels
    one-hot encoded with a literal depth would no longer match.
    """

    code = MP304
    name = "embedding-size-not-multiple"
    premises = ("policy", "role")  # role: an input_dim's vocabulary is a matmul's width
    precision = "medium"
    precision_evidence = "0 of its 4 judged findings in the fresh audits were true (4 false, 2 debatable)"
