"""The analyses behind safe fixes: where gradients go (mplint/facts/gradient_uses.py),
whether a name is bound where a fix would use it (mplint/analysis/bound_names.py),
removing a statement without emptying its block (mplint/fixes/removal.py) and the
conditions a statement runs under (mplint/analysis/guards.py)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from mplint.analysis.guards import condition_text, guard_of
from mplint.fixes.removal import remove_statement
from mplint.engine.engine import FileSettings, check_document
from mplint.facts.gradient_uses import gradient_uses
from mplint.facts.module import ModuleFacts
from mplint.facts.training import TrainingLoops
from mplint.catalogue.rule import RemoveStatement, ReplaceText
from mplint.inputs.source import decode_python


def facts_of(source: str, path: str = "m.py") -> ModuleFacts:
    source = textwrap.dedent(source)
    return ModuleFacts(cst.parse_module(source), source, path, configured_target="keras3")


def name_node(facts: ModuleFacts, value: str, nth: int = 0) -> cst.Name:
    return [n for n in facts.index.nodes(cst.Name) if n.value == value][nth]


# -- gradient uses ---------------------------------------------------------------------------

HEAD = """
    import tensorflow as tf
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x))
        grads = tape.gradient(loss, model.trainable_variables)
"""


def uses_of(body: str):
    facts = facts_of(HEAD + textwrap.indent(textwrap.dedent(body), "        "))
    loops = facts.analysis(TrainingLoops)
    (step,) = loops.steps
    return gradient_uses(loops, step.call)


@pytest.mark.parametrize("body", [
    "optimizer.apply_gradients(zip(grads, model.trainable_variables))",
    "g = grads\noptimizer.apply_gradients(zip(g, model.trainable_variables))",
    "pairs = [(g, v) for g, v in zip(grads, model.trainable_variables) if g is not None]\noptimizer.apply_gradients(pairs)",
    "kept = []\nfor g in grads:\n    kept.append(g)\noptimizer.apply(kept, model.trainable_variables)",
    "assert len(grads) == 2\noptimizer.apply(grads)",
])
def test_repacking_the_gradients_is_not_a_use(body):
    uses = uses_of(body)
    assert uses.reaches_apply and uses.consumers == []


@pytest.mark.parametrize("body, what", [
    ("grads, _ = tf.clip_by_global_norm(grads, 1.0)\noptimizer.apply(grads)", "clipped by `tf.clip_by_global_norm`"),
    ("tf.summary.scalar('g', tf.linalg.global_norm(grads))\noptimizer.apply(grads)", "reduced to a norm by `tf.linalg.global_norm`"),
    ("grads = [hvd.allreduce(g) for g in grads]\noptimizer.apply(grads)", "changed one by one"),
    ("accumulator.add_gradients(grads)", "accumulated by `accumulator.add_gradients`"),
    ("self.last = grads\noptimizer.apply(grads)", "stored in `self.last`"),
    ("return loss, grads", "returned to the caller"),
    ("optimizer.apply(grads)\ntf.print(grads[0])", "indexed"),
])
def test_every_other_use_is_a_consumer(body, what):
    uses = uses_of(body)
    assert any(c.what.startswith(what) for c in uses.consumers), [c.what for c in uses.consumers]


@pytest.mark.parametrize("body, keyword, threshold", [
    ("grads, _ = tf.clip_by_global_norm(grads, 5.0)\noptimizer.apply(grads)", "global_clipnorm", "5.0"),
    ("(grads, _) = tf.clip_by_global_norm(grads, clip_norm=C)\noptimizer.apply(grads)", "global_clipnorm", "C"),
    ("grads = tf.clip_by_global_norm(grads, 2.0)[0]\noptimizer.apply(grads)", "global_clipnorm", "2.0"),
    ("clipped = [tf.clip_by_norm(g, 0.5) for g in grads]\noptimizer.apply(clipped)", "clipnorm", "0.5"),
    ("grads = [tf.clip_by_value(g, -3.0, 3.0) for g in grads]\noptimizer.apply(grads)", "clipvalue", "3.0"),
    ("grads = [tf.clip_by_norm(g, 1.5) if g is not None else None for g in grads]\noptimizer.apply(grads)", "clipnorm", "1.5"),
    ("chosen = grads if use_them else zeros\nchosen, _ = tf.clip_by_global_norm(chosen, 1.0)\n"
     "optimizer.apply(chosen)", "global_clipnorm", "1.0"),
])
def test_plain_clips_an_optimizer_argument_can_do(body, keyword, threshold):
    uses = uses_of(body)
    clip = uses.plain_clip
    assert clip is not None and clip.keyword == keyword
    assert cst.Module([]).code_for_node(clip.threshold) == threshold


@pytest.mark.parametrize("body", [
    "grads, norm = tf.clip_by_global_norm(grads, 1.0)\ntf.print(norm)\noptimizer.apply(grads)",  # the norm is logged
    "grads = [tf.clip_by_value(g, 0.0, 3.0) for g in grads]\noptimizer.apply(grads)",  # not symmetric
    "grads, _ = tf.clip_by_global_norm(grads, 1.0)\ntf.print(tf.linalg.global_norm(grads))\noptimizer.apply(grads)",
])
def test_clips_that_are_not_only_clips(body):
    assert uses_of(body).plain_clip is None


def test_a_rebinding_in_another_branch_does_not_end_the_trace():
    uses = uses_of("""
        if amp:
            grads = optimizer.get_unscaled_gradients(grads)
        else:
            grads = other
        grads, _ = tf.clip_by_global_norm(grads, 1.0)
        optimizer.apply(grads)
    """)
    assert any("clip_by_global_norm" in c.what for c in uses.consumers)


def test_gradients_returned_to_a_private_helper_caller_are_followed():
    facts = facts_of("""
        import tensorflow as tf
        def _grads(x):
            with tf.GradientTape() as tape:
                loss = f(x)
            return loss, tape.gradient(loss, v)
        def step(x):
            loss, g = _grads(x)
            optimizer.apply(g, v)
    """)
    loops = facts.analysis(TrainingLoops)
    uses = gradient_uses(loops, loops.steps[0].call)
    assert uses.reaches_apply and uses.consumers == []
    public = facts_of(facts.text.replace("_grads", "grads"))
    loops = public.analysis(TrainingLoops)
    uses = gradient_uses(loops, loops.steps[0].call)
    assert [c.what for c in uses.consumers] == ["returned by `grads` (which other modules can call)"]


def test_applies_by_other_optimizers_are_recorded():
    uses = uses_of("""
        for v, g in zip(model.trainable_variables, grads):
            (dense if dense_var(v) else sparse).append((g, v))
        optimizer.apply_gradients(dense)
    """)
    assert uses.consumers  # `(... if ... else ...).append` is not a plain list
    uses = uses_of("""
        dense, sparse = [], []
        for v, g in zip(model.trainable_variables, grads):
            if v.ref() in refs:
                sparse.append(g)
            else:
                dense.append(g)
        optimizer.apply(dense)
        embedding_optimizer.apply(sparse)
    """)
    assert uses.consumers == [] and len(uses.applies) == 2


# -- bound names ----------------------------------------------------------------------------

def test_local_names_must_be_bound_before_the_use():
    facts = facts_of("""
        import tensorflow as tf
        def f():
            x = 1
            y = x
            opt = 2
        opt = 3
    """)
    bound = facts.bound_names
    y = name_node(facts, "y")
    assert bound.is_bound("x", y)
    assert not bound.is_bound("opt", y)  # local to f, assigned after y
    assert bound.is_bound("tf", y)  # a module import: the function runs later
    assert bound.is_bound("print", y)


def test_module_level_code_needs_the_binding_before_it():
    facts = facts_of("""
        a = 1
        b = tf.constant(a)
        import tensorflow as tf
    """)
    b = name_node(facts, "b")
    assert facts.bound_names.is_bound("a", b)
    assert not facts.bound_names.is_bound("tf", b)
    assert facts.bound_names.is_bound("tf", b, after=False) is False


def test_notebook_cells_bind_for_their_own_and_later_cells_only():
    text = "# mplint-cell 1\ndef f():\n    return tf.constant(1)\n# mplint-cell 2\nimport tensorflow as tf\n"
    facts = ModuleFacts(cst.parse_module(text), text, "nb.ipynb", configured_target="keras3")
    use = name_node(facts, "tf")
    assert not facts.bound_names.is_bound("tf", use)
    as_script = ModuleFacts(cst.parse_module(text), text, "nb.py", configured_target="keras3")
    assert as_script.bound_names.is_bound("tf", name_node(as_script, "tf"))


def test_names_only_ever_used_come_from_outside():
    facts = facts_of("model = keras.Sequential()\n")
    assert facts.bound_names.is_bound("keras", name_node(facts, "model"))
    assert not facts.bound_names.is_bound("tf", name_node(facts, "model"))


# -- statement removal ------------------------------------------------------------------------

def removal_of(source: str, statement_text: str):
    facts = facts_of(source)
    (statement,) = [s for s in facts.index.nodes(cst.SimpleStatementLine)
                    if facts.module.code_for_node(s.body[0]).strip() == statement_text]
    return facts, remove_statement(facts.index, statement)


def test_a_statement_with_siblings_is_removed_alone():
    facts, change = removal_of("if amp:\n    a = 1\n    b = 2\n", "a = 1")
    assert isinstance(change, RemoveStatement) and isinstance(change.statement, cst.SimpleStatementLine)


def test_the_only_statement_takes_its_side_effect_free_ifs_along():
    facts, change = removal_of("def f():\n    x = 1\n    if amp:\n        if isinstance(o, T):\n            a = 1\n", "a = 1")
    assert isinstance(change, RemoveStatement) and isinstance(change.statement, cst.If)
    assert facts.module.code_for_node(change.statement.test) == "amp"


@pytest.mark.parametrize("source", [
    "if check():\n    a = 1\n",  # the test calls something
    "if amp:\n    a = 1\nelse:\n    b = 2\n",  # an else
    "if amp:\n    # why\n    a = 1\n",  # a comment would go with the if
    "for x in y:\n    a = 1\n",
])
def test_otherwise_the_statement_becomes_pass(source):
    _, change = removal_of(source, "a = 1")
    assert isinstance(change, ReplaceText) and change.text == "pass"


# -- guards -----------------------------------------------------------------------------------

def test_guard_of_collects_if_elif_else_and_conditional_expressions():
    facts = facts_of("""
        def f():
            if a:
                pass
            elif b.c:
                if not d:
                    target = 1
                else:
                    other = 2 if e else target2
    """)
    target = name_node(facts, "target")
    assert condition_text(facts.module, guard_of(facts.index, target)) == "not a and b.c and (not d)"
    other = name_node(facts, "target2")
    assert condition_text(facts.module, guard_of(facts.index, other)) == "not a and b.c and not (not d) and not e"


# -- through the engine -------------------------------------------------------------------------

def test_an_import_added_for_a_wrap_goes_into_the_wraps_cell():
    """A notebook whose `tf` is imported only in a later cell: the LossScaleOptimizer
    spelled with `tf` needs its own import in the optimizer's cell."""
    text = (
        "# mplint-cell 1\nfrom tensorflow.keras.optimizers import SGD\noptimizer = SGD(0.1)\n"
        "# mplint-cell 2\nimport tensorflow as tf\ntf.keras.mixed_precision.set_global_policy('mixed_float16')\n"
        "with tf.GradientTape() as tape:\n    loss = f()\n"
        "optimizer.apply_gradients(zip(tape.gradient(loss, v), v))\n"
    )
    facts = ModuleFacts(cst.parse_module(text), text, "nb.ipynb", configured_target="keras3")
    from mplint.fixes.scaling_edits import mixed_precision_module

    call = [c for c in facts.index.nodes(cst.Call) if facts.module.code_for_node(c) == "SGD(0.1)"][0]
    spelling, extra = mixed_precision_module(facts, call, at=call)
    assert spelling == "tf.keras.mixed_precision"
    assert [c.code for c in extra] == ["import tensorflow as tf"]
    assert facts.index.top_level_statement(extra[0].statement) is facts.module.body[0]


def test_unbound_names_withhold_the_fix_and_say_so():
    text = textwrap.dedent("""
        import tensorflow as tf
        tf.keras.mixed_precision.set_global_policy("mixed_float16")
        with tf.GradientTape() as tape:
            loss = f()
        grads = tape.gradient(loss, v)
        optimizer = tf.keras.optimizers.SGD()
        optimizer.apply_gradients(zip(grads, v))
    """)
    doc = decode_python("m.py", text.encode())
    outcome = check_document(doc, FileSettings(codes=frozenset({"MP201"}), target="keras3"), "m.py", fix=True, unsafe=True)
    (finding,) = outcome.findings
    assert finding.fix is None and "it would use `optimizer`, which is not bound" in finding.detail
    assert outcome.text == doc.text


MIXED_OUTPUT = """\
import keras
keras.mixed_precision.set_global_policy("mixed_float16")
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(2)])
model.compile("adam", "mse")
model.fit(x, y)
"""


@pytest.mark.parametrize("path, applicability", [("train.py", "safe"), ("tests/test_outputs.py", "unsafe")])
def test_a_fix_that_changes_numerics_is_unsafe_in_a_test_module(cli, tmp_path, path, applicability):
    """A test may build a float16 output on purpose (what it checks): MP101's fix, safe in
    a program, is unsafe there; a migration's (MP401) is not affected."""
    import json

    from tests.conftest import write

    write(tmp_path / path, "# fixture\n" + MIXED_OUTPUT)
    (finding,) = json.loads(cli(["--no-cache", "--output-format", "json", "--target", "keras3", path], cwd=tmp_path).stdout)
    assert finding["code"] == "MP101" and finding["fix"]["applicability"] == applicability
    write(tmp_path / path, "import tensorflow as tf\ntf.keras.mixed_precision.experimental.set_policy('mixed_float16')\n")
    (finding,) = json.loads(cli(["--no-cache", "--output-format", "json", "--target", "keras2", path], cwd=tmp_path).stdout)
    assert finding["code"] == "MP401" and finding["fix"]["applicability"] == "safe"
