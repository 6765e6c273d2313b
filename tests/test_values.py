"""Constant values with their sources (mplint.analysis.values)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from mplint.facts.module import ModuleFacts


def _facts(code: str) -> ModuleFacts:
    text = textwrap.dedent(code)
    return ModuleFacts(cst.parse_module(text), text, "example.py")


def _argument_of(facts: ModuleFacts, callee: str, occurrence: int = 0) -> cst.BaseExpression:
    """The first argument of the `occurrence`-th call to a function named `callee`."""
    calls = [
        c for c in facts.index.nodes(cst.Call)
        if isinstance(c.func, cst.Name) and c.func.value == callee
    ]
    return calls[occurrence].args[0].value


def _resolve(code: str, callee: str = "use", occurrence: int = 0):
    facts = _facts(code)
    return facts.values.resolve(_argument_of(facts, callee, occurrence))


def _described(value) -> list[tuple[str, str, str | None]]:
    """(literal text, via, name) per source."""
    module = cst.Module([])
    return [(module.code_for_node(s.literal), s.via, s.name) for s in value.sources]


# -- literals and constants ---------------------------------------------------------------

@pytest.mark.parametrize(
    "literal, expected",
    [("1000", 1000), ("1_000", 1000), ("0x10", 16), ("2.5", 2.5), ("-3", -3), ("'a'", "a"), ("True", True)],
)
def test_literal_written_at_the_use(literal: str, expected: object) -> None:
    value = _resolve(f"use({literal})\n")
    assert value.value == expected
    assert value.is_literal_here


def test_module_constant_assigned_once() -> None:
    value = _resolve("HIDDEN = 1000\nuse(HIDDEN)\n")
    assert value.value == 1000
    assert _described(value) == [("1000", "constant HIDDEN", "HIDDEN")]
    assert value.single_source is not None and not value.is_literal_here


def test_constant_reassigned_is_unknown() -> None:
    assert _resolve("HIDDEN = 1000\nHIDDEN = 2000\nuse(HIDDEN)\n") is None
    assert _resolve("HIDDEN = 1000\nHIDDEN += 8\nuse(HIDDEN)\n") is None
    assert _resolve("HIDDEN = 1000\nfor HIDDEN in range(3):\n    pass\nuse(HIDDEN)\n") is None
    assert _resolve("HIDDEN, OTHER = 1000, 3\nuse(HIDDEN)\n") is None


def test_constant_rebound_by_global_statement_is_unknown() -> None:
    code = """
        HIDDEN = 1000
        def configure():
            global HIDDEN
            HIDDEN = 512
        use(HIDDEN)
    """
    assert _resolve(code) is None


def test_import_and_assignment_of_the_same_name_is_unknown() -> None:
    assert _resolve("from config import HIDDEN\nif x:\n    HIDDEN = 1000\nuse(HIDDEN)\n") is None


def test_chained_constants_point_at_the_innermost_literal() -> None:
    value = _resolve("BASE = 1000\nHIDDEN = BASE\nuse(HIDDEN)\n")
    assert _described(value) == [("1000", "constant BASE", "BASE")]


def test_function_level_variable_assigned_once() -> None:
    code = """
        HIDDEN = 64
        def build():
            HIDDEN = 1000
            use(HIDDEN)
    """
    value = _resolve(code)
    assert value.value == 1000
    assert _described(value) == [("1000", "variable HIDDEN", "HIDDEN")]


def test_enclosing_function_variable_is_visible_in_a_nested_function() -> None:
    code = """
        def build():
            units = 100
            def block():
                use(units)
    """
    assert _resolve(code).value == 100


def test_class_body_constant_and_class_attribute() -> None:
    code = """
        class Config:
            HIDDEN = 1000
            use(HIDDEN)
        use(Config.HIDDEN)
    """
    facts = _facts(code)
    in_body = facts.values.resolve(_argument_of(facts, "use", 0))
    outside = facts.values.resolve(_argument_of(facts, "use", 1))
    assert in_body.value == 1000 and outside.value == 1000
    assert _described(outside) == [("1000", "constant Config.HIDDEN", "Config.HIDDEN")]


def test_class_attribute_assigned_from_outside_is_unknown() -> None:
    code = """
        class Config:
            HIDDEN = 1000
        Config.HIDDEN = 2000
        use(Config.HIDDEN)
    """
    assert _resolve(code) is None


def test_comprehension_and_lambda_variables_shadow_constants() -> None:
    assert _resolve("u = 1000\nx = [use(u) for u in (1, 2)]\n") is None
    assert _resolve("u = 1000\nf = lambda u: use(u)\n") is None


# -- arithmetic ---------------------------------------------------------------------------

def test_arithmetic_of_constants_keeps_every_source() -> None:
    value = _resolve("HIDDEN = 250\nuse(4 * HIDDEN)\n")
    assert value.value == 1000
    assert _described(value) == [("4", "literal", None), ("250", "constant HIDDEN", "HIDDEN")]
    assert value.single_source is None


@pytest.mark.parametrize(
    "expr, expected",
    [("HIDDEN // 3", 333), ("HIDDEN - 1", 999), ("HIDDEN % 7", 6), ("2 ** 10", 1024),
     ("int(HIDDEN * 1.5)", 1500), ("-HIDDEN", -1000), ("(HIDDEN + 8)", 1008)],
)
def test_arithmetic_operators(expr: str, expected: int) -> None:
    assert _resolve(f"HIDDEN = 1000\nuse({expr})\n").value == expected


def test_arithmetic_with_unknowns_or_strings_is_unknown() -> None:
    assert _resolve("use(4 * width)\n") is None
    assert _resolve("use('a' * 3)\n") is None
    assert _resolve("use(1 // 0)\n") is None
    assert _resolve("use(2 ** 100000)\n") is None


# -- flags --------------------------------------------------------------------------------

def test_argparse_default_through_parse_args() -> None:
    code = """
        import argparse
        parser = argparse.ArgumentParser()
        parser.add_argument("--hidden-units", type=int, default=1000)
        args = parser.parse_args()
        use(args.hidden_units)
    """
    value = _resolve(code)
    assert value.value == 1000
    assert _described(value) == [("1000", "flag --hidden-units default", "hidden_units")]


def test_argparse_dest_and_function_returning_the_namespace() -> None:
    code = """
        import argparse
        def get_args():
            p = argparse.ArgumentParser()
            p.add_argument("-u", "--units", dest="width", type=int, default=96)
            return p.parse_args()
        opts = get_args()
        use(opts.width)
    """
    assert _resolve(code).value == 96


def test_absl_flag_default() -> None:
    code = """
        from absl import flags
        flags.DEFINE_integer("batch_size", 100, "Batch size.")
        FLAGS = flags.FLAGS
        def main(_):
            use(FLAGS.batch_size)
    """
    value = _resolve(code)
    assert value.value == 100
    assert _described(value) == [("100", "flag --batch_size default", "batch_size")]


def test_flag_default_that_is_a_constant_keeps_the_constant_as_source() -> None:
    code = """
        HIDDEN = 1000
        parser.add_argument("--units", default=HIDDEN)
        def main(args):
            use(args.units)
    """
    assert _described(_resolve(code)) == [("1000", "constant HIDDEN", "HIDDEN")]


def test_attribute_of_an_unrelated_object_is_not_a_flag() -> None:
    code = """
        parser.add_argument("--units", type=int, default=1000)
        layer = make_layer()
        use(layer.units)
    """
    assert _resolve(code) is None


def test_flag_defined_twice_has_no_single_default() -> None:
    code = """
        parser.add_argument("--units", type=int, default=1000)
        other.add_argument("--units", type=int)
        args = parser.parse_args()
        use(args.units)
    """
    assert _resolve(code) is None


# -- parameter defaults -----------------------------------------------------------------

def test_parameter_default_when_never_passed() -> None:
    code = """
        def block(x, units=1000):
            return use(units)
        block(1)
    """
    value = _resolve(code)
    assert value.value == 1000
    assert _described(value) == [("1000", "parameter units default", "units")]


@pytest.mark.parametrize(
    "call",
    ["block(1, units=64)", "block(1, 64)", "block(*a)", "block(1, **kw)", "functools.partial(block, units=64)"],
)
def test_parameter_default_is_unknown_when_a_call_may_pass_it(call: str) -> None:
    code = f"""
        def block(x, units=1000):
            return use(units)
        {call}
    """
    assert _resolve(code) is None


def test_method_and_constructor_parameters_count_self() -> None:
    code = """
        class Block:
            def __init__(self, units=1000):
                use(units)
            def head(self, size=100):
                use(size)
        Block()
        Block().head()
    """
    facts = _facts(code)
    assert facts.values.resolve(_argument_of(facts, "use", 0)).value == 1000
    assert facts.values.resolve(_argument_of(facts, "use", 1)).value == 100
    passed = code.replace("Block()\n", "Block(64)\n", 1).replace("head()", "head(10)")
    facts = _facts(passed)
    assert facts.values.resolve(_argument_of(facts, "use", 0)) is None
    assert facts.values.resolve(_argument_of(facts, "use", 1)) is None


def test_parameter_without_default_or_reassigned_is_unknown() -> None:
    assert _resolve("def f(units):\n    use(units)\n") is None
    assert _resolve("def f(units=10):\n    units = units * 2\n    use(units)\n") is None


# -- sequences ----------------------------------------------------------------------------

def test_elements_of_a_literal_list_a_constant_and_a_repetition() -> None:
    facts = _facts("SIZES = [30, 64]\nBATCH = 100\nuse(SIZES)\nuse([BATCH] * 3)\nuse((8, n))\nuse(n)\n")
    constant = facts.values.resolve_elements(_argument_of(facts, "use", 0))
    assert [v.value for v in constant] == [30, 64]
    assert [s.via for v in constant for s in v.sources] == ["constant SIZES", "constant SIZES"]
    repeated = facts.values.resolve_elements(_argument_of(facts, "use", 1))
    assert [v.value for v in repeated] == [100]
    assert repeated[0].sources[0].via == "constant BATCH"
    partial = facts.values.resolve_elements(_argument_of(facts, "use", 2))
    assert partial[0].value == 8 and partial[1] is None
    assert facts.values.resolve_elements(_argument_of(facts, "use", 3)) is None
