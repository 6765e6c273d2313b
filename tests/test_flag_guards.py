"""Policies set under a command-line flag are not in effect where that flag is the other
way round (mplint.facts.flag_guards), in one module and across the project."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import libcst as cst

from mplint.facts.flag_guards import (
    common_guards,
    flag_guards,
    never_under,
    truth_under,
)
from mplint.facts.module import ModuleFacts
from tests.fixture_cases import FIXTURES

MIXED = frozenset({"mixed_float16"})


def _facts(source: str) -> ModuleFacts:
    text = textwrap.dedent(source)
    return ModuleFacts(cst.parse_module(text), text, "/nonexistent/example.py")


def _dense_policies(facts: ModuleFacts) -> dict[str, frozenset[str]]:
    return {facts.module.code_for_node(call.args[0].value): facts.policy.global_at(call)
            for call in facts.index.nodes(cst.Call)
            if isinstance(call.func, cst.Name) and call.func.value == "Dense"}


def test_the_branch_where_the_flag_is_off_runs_without_the_policy() -> None:
    facts = _facts("""
        import argparse
        from keras import mixed_precision
        from keras.layers import Dense

        args = argparse.ArgumentParser().parse_args()
        if args.amp:
            mixed_precision.set_global_policy("mixed_float16")
        if args.amp:
            Dense(1)
        else:
            Dense(2)
        if not args.amp:
            Dense(3)
        Dense(4)
        if args.amp and args.big:
            Dense(5)
        elif args.small:
            Dense(6)
    """)
    found = _dense_policies(facts)
    assert MIXED <= found["1"] and MIXED <= found["4"] and MIXED <= found["5"]
    assert not (MIXED & found["2"]) and not (MIXED & found["3"])
    assert MIXED <= found["6"]  # `elif` of an `and`: `amp` may be either way


def test_a_policy_set_also_without_the_flag_stays_everywhere() -> None:
    facts = _facts("""
        import argparse
        from keras import mixed_precision
        from keras.layers import Dense

        args = argparse.ArgumentParser().parse_args()
        if args.amp:
            mixed_precision.set_global_policy("mixed_float16")
        elif args.tpu:
            mixed_precision.set_global_policy("mixed_float16")
        if not args.amp:
            Dense(1)
    """)
    assert MIXED <= _dense_policies(facts)["1"]


def test_only_flags_count_not_other_names() -> None:
    facts = _facts("""
        from keras import mixed_precision
        from keras.layers import Dense

        class Net:
            def __init__(self, model):
                self.model = model
                if model.amp:
                    mixed_precision.set_global_policy("mixed_float16")
                if not self.model.amp:
                    Dense(1)
    """)
    assert MIXED <= _dense_policies(facts)["1"]
    assert flag_guards(facts, next(iter(facts.index.nodes(cst.Call)))) == {}


def test_guards_combine_and_contradict() -> None:
    assert common_guards([{"fp16": True, "tpu": False}, {"fp16": True}]) == {"fp16": True}
    assert common_guards([{"fp16": True}, {}]) == {}
    assert common_guards([]) == {}


def test_truth_of_a_test_under_known_flags() -> None:
    facts = _facts("""
        import argparse
        args = argparse.ArgumentParser().parse_args()
        a = args.fp16 and not args.tpu
        b = args.fp16 or args.other
        c = not (args.fp16 and args.other)
    """)
    tests = {t.targets[0].target.value: t.value for t in facts.index.nodes(cst.Assign)[1:]}
    assert truth_under(facts, tests["a"], {"fp16": True, "tpu": False}) is True
    assert truth_under(facts, tests["a"], {"fp16": True, "tpu": True}) is False
    assert truth_under(facts, tests["a"], {"fp16": True}) is None  # depends on tpu
    assert truth_under(facts, tests["a"], {"fp16": False}) is False
    assert truth_under(facts, tests["b"], {"fp16": True}) is True
    assert truth_under(facts, tests["b"], {"fp16": False}) is None
    assert truth_under(facts, tests["c"], {"fp16": False}) is True
    assert truth_under(facts, tests["c"], {"fp16": True, "other": True}) is False


def test_a_trainer_of_another_module_under_the_same_flag(cli, tmp_path: Path) -> None:
    """train.py sets mixed_float16 only `if args.fp16:`; the trainer it runs trains
    unscaled only in the `else:` of `if self.args.fp16:` (nothing to report there), and
    unscaled in a helper with no such branch (reported). Without the flag on the
    setting, both are reported."""
    root = tmp_path / "p"
    shutil.copytree(FIXTURES / "projects" / "policy_and_loop_under_one_flag", root,
                    ignore=shutil.ignore_patterns("expected.txt"))

    def found() -> set[tuple[str, int]]:
        result = cli(["--no-cache", "--extended", "--output-format", "json", "."], cwd=root)
        return {(f["code"], f["location"]["row"]) for f in json.loads(result.stdout)}

    assert found() == {("MP201", 39)}
    script = root / "train.py"
    script.write_text(script.read_text().replace("if args.fp16:\n    tf.keras", "if True:\n    tf.keras"))
    assert ("MP201", 39) in found() and len(found()) > 1


_SELECTED_METHOD = """
    import argparse
    import keras
    args = argparse.ArgumentParser().parse_args()

    class Trainer{bases}:
        def __init__(self, args):
            self.args = args
            if args.fp16 and not args.tpu:
                self.step = self.train_step_mp
            else:
                self.step = self.train_step

        def train_step_mp(self):
            return 1

        def train_step(self):
            return 2
    {extra}
"""


def _step_body(facts: ModuleFacts, name: str) -> cst.CSTNode:
    function = next(f for f in facts.index.nodes(cst.FunctionDef) if f.name.value == name)
    return function.body.body[0]


def test_a_method_selected_only_where_the_flags_are_otherwise() -> None:
    facts = _facts(_SELECTED_METHOD.format(bases="", extra=""))
    fp16_gpu = {"fp16": True, "tpu": False}
    assert never_under(facts, _step_body(facts, "train_step"), fp16_gpu)
    assert not never_under(facts, _step_body(facts, "train_step_mp"), fp16_gpu)
    assert not never_under(facts, _step_body(facts, "train_step"), {"fp16": True})  # on a TPU it runs


def test_a_method_used_elsewhere_or_run_by_the_framework_is_not_decided() -> None:
    fp16_gpu = {"fp16": True, "tpu": False}
    named_elsewhere = _facts(_SELECTED_METHOD.format(bases="", extra="Trainer(args).train_step()"))
    assert not never_under(named_elsewhere, _step_body(named_elsewhere, "train_step"), fp16_gpu)
    keras_model = _facts(_SELECTED_METHOD.format(bases="(keras.Model)", extra=""))
    assert not never_under(keras_model, _step_body(keras_model, "train_step"), fp16_gpu)
