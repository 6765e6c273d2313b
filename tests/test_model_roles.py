"""The role premise of MP101 (mplint.facts.model_roles): a model's outputs are its result
where this module consumes them (proved), where another module does (inferred, see the
fixture project `model_roles_across_modules`), and assumed otherwise."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from mplint.core.diagnostics import Status
from mplint.facts.model_graph import ModelGraph
from mplint.facts.model_roles import output_role
from mplint.facts.module import ModuleFacts

HEAD = """
import keras
from keras import layers
keras.mixed_precision.set_global_policy("mixed_float16")
"""


def _roles(source: str) -> dict[str, tuple[Status, str]]:
    """The role premise of each model the source binds to a name (or class it defines)."""
    text = textwrap.dedent(HEAD) + textwrap.dedent(source)
    facts = ModuleFacts(cst.parse_module(text), text, "/nonexistent/example.py")
    graph = facts.analysis(ModelGraph)
    roles = {}
    for model in graph.models:
        if isinstance(model.node, cst.ClassDef):
            name = model.node.name.value
        else:
            assign = facts.index.parent_of(model.node)
            name = assign.targets[0].target.value if isinstance(assign, cst.Assign) else "?"
        premise = output_role(graph, model)
        roles[name] = (premise.status, premise.evidence)
    return roles


MODEL = 'model = keras.Sequential([keras.Input((4,)), layers.Dense(2)])\n'


@pytest.mark.parametrize("use, evidence", [
    ('model.compile(loss="mse")', "`.compile()` on it"),
    ("model.fit(x, y)", "`.fit()` on it"),
    ("model.predict(x)", "`.predict()` on it"),
    ('model.save("m.keras")', "`.save()` on it"),
    ("loss = loss_fn(y, model(x))", "its output goes into `loss_fn()`"),
    ("pred = model(x)\nerror = keras.losses.mean_squared_error(y, pred)", "its output goes into `mean_squared_error()`"),
    ("total_loss = ((model(x) - y) ** 2).mean()", "its output goes into `total_loss`"),
    ("def train(m):\n    m.fit(x, y)\ntrain(model)", "`.fit()` on it"),
])
def test_what_this_module_does_with_the_model_proves_its_role(use: str, evidence: str) -> None:
    assert _roles(MODEL + use)["model"] == (Status.PROVED, evidence)


@pytest.mark.parametrize("use", [
    "model.summary()",
    "features = model(x)\nprint(features)",
    "head = layers.Dense(3)\nhead(model(x))",
    "extractor = model.get_layer('dense').output",
])
def test_nothing_that_consumes_the_output_leaves_the_role_assumed(use: str) -> None:
    assert _roles(MODEL + use)["model"][0] is Status.ASSUMED


def test_a_softmax_output_is_a_result_whatever_consumes_it() -> None:
    roles = _roles('model = keras.Sequential([keras.Input((4,)), layers.Dense(2, activation="softmax")])\n'
                   'wrapped = keras.Sequential([keras.Input((3, 4)), '
                   'layers.TimeDistributed(layers.Dense(2, activation="sigmoid"))])\n')
    assert roles["model"] == (Status.PROVED, "its output is a softmax or sigmoid")
    assert roles["wrapped"][0] is Status.PROVED


def test_a_model_class_that_trains_itself_or_whose_instance_is_trained() -> None:
    roles = _roles("""
        class Self(keras.Model):
            def call(self, x):
                return self.head(x)

            def train_step(self, data):
                return {}

        class Used(keras.Model):
            def __init__(self):
                super().__init__()
                self.head = layers.Dense(2)

            def call(self, x):
                return self.head(x)

        class Unused(keras.Model):
            def call(self, x):
                return self.head(x)

        class Trainer:
            def __init__(self):
                self.net = Used()

            def step(self, x, y):
                logits = self.net(x)
                return self.criterion_loss(y, logits)
    """)
    assert roles["Self"][0] is Status.PROVED
    assert roles["Used"] == (Status.PROVED, "its output goes into `criterion_loss()`")
    assert roles["Unused"][0] is Status.ASSUMED


def test_a_builder_whose_result_is_compiled_where_it_is_called() -> None:
    roles = _roles("""
        def build():
            inputs = keras.Input((4,))
            model = keras.Model(inputs, layers.Dense(2)(inputs))
            return model

        net = build()
        net.compile(loss="mse")
    """)
    assert roles["model"] == (Status.PROVED, "`.compile()` on it")


def test_the_items_of_a_returned_tuple_have_their_own_roles() -> None:
    roles = _roles("""
        def build():
            inputs = keras.Input((4,))
            encoder = keras.Model(inputs, layers.Dense(8)(inputs))
            classifier = keras.Model(inputs, layers.Dense(2)(inputs))
            return classifier, encoder

        def build_for_export():
            inputs = keras.Input((4,))
            served = keras.Model(inputs, layers.Dense(2)(inputs))
            return served, None

        net, backbone = build()
        net.fit(x, y)
        backbone.summary()
        export_saved_model(path, model=build_for_export()[0])
    """)
    assert roles["classifier"] == (Status.PROVED, "`.fit()` on it")
    assert roles["encoder"][0] is Status.ASSUMED
    assert roles["served"] == (Status.PROVED, "exported by `export_saved_model()`")
