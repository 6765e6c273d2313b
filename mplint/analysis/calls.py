"""Reading and editing call arguments, by position or keyword, keeping formatting."""

from __future__ import annotations

from typing import Sequence

import libcst as cst


def get_arg(call: cst.Call, position: int | None, *keywords: str) -> cst.Arg | None:
    """The Arg at positional index `position` or passed as one of `keywords`."""
    index = 0
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value in keywords:
                return arg
        elif arg.star == "":
            if index == position:
                return arg
            index += 1
    return None


def arg_value(call: cst.Call, position: int | None, *keywords: str) -> cst.BaseExpression | None:
    arg = get_arg(call, position, *keywords)
    return arg.value if arg is not None else None


def callee_name(call: cst.Call) -> str:
    """The last name of what a call calls: `Generator` for `nets.Generator(...)` and
    `Generator(...)`; "" for anything else (`f()()`, `fs[0]()`)."""
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def positional(call: cst.Call) -> list[cst.Arg]:
    return [a for a in call.args if a.keyword is None and a.star == ""]


def keyword_names(call: cst.Call) -> set[str]:
    return {a.keyword.value for a in call.args if a.keyword is not None}


def has_star_args(call: cst.Call) -> bool:
    return any(a.star in ("*", "**") for a in call.args)


def is_super_init(call: cst.Call) -> bool:
    """`super().__init__(...)` (also `super(Cls, self).__init__(...)`)."""
    func = call.func
    return isinstance(func, cst.Attribute) and func.attr.value == "__init__" and isinstance(func.value, cst.Call) \
        and isinstance(func.value.func, cst.Name) and func.value.func.value == "super"


def _fresh_keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )


def with_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """The call with `name=value` set: replaced in place if present, else appended in
    the call's own layout (one per line with a trailing comma stays that way)."""
    args = list(call.args)
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == name:
            args[i] = arg.with_changes(value=value)
            return call.with_changes(args=args)
    new = _fresh_keyword(name, value)
    if not args:
        return call.with_changes(args=[new])
    last = args[-1]
    if isinstance(last.comma, cst.Comma):
        # Trailing comma: the new arg takes it; the old last takes the separator style.
        separator = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else cst.Comma(
            whitespace_after=_after_comma(last.comma)
        )
        args[-1] = last.with_changes(comma=separator)
        args.append(new.with_changes(comma=last.comma))
    else:
        # The space before `)` (a newline in a multi-line call) stays before `)`.
        args[-1] = last.with_changes(whitespace_after_arg=cst.SimpleWhitespace(""))
        args.append(new.with_changes(whitespace_after_arg=last.whitespace_after_arg))
    return call.with_changes(args=args)


def _after_comma(comma: cst.Comma) -> cst.BaseParenthesizableWhitespace:
    whitespace = comma.whitespace_after
    if isinstance(whitespace, cst.ParenthesizedWhitespace):
        return whitespace
    return cst.SimpleWhitespace(" ")


def without_arg(call: cst.Call, target: cst.Arg) -> cst.Call:
    """The call with one argument removed, commas kept consistent."""
    args = list(call.args)
    index = next(i for i, a in enumerate(args) if a is target)
    removed = args.pop(index)
    if index == len(args) and index > 0:
        # Removed the last one: its predecessor takes over its (trailing) comma.
        args[index - 1] = args[index - 1].with_changes(comma=removed.comma)
    return call.with_changes(args=args)


def with_args(call: cst.Call, args: Sequence[cst.Arg]) -> cst.Call:
    return call.with_changes(args=list(args))


def string_value(node: cst.BaseExpression | None) -> str | None:
    """The value of a plain string literal, else None."""
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def quote_like(node: cst.BaseExpression | None, value: str) -> cst.SimpleString:
    """A string literal for `value` in the quote style of `node` (default double)."""
    quote = '"'
    if isinstance(node, cst.SimpleString):
        prefix_end = len(node.value) - len(node.value.lstrip("rRbBuUfF"))
        body = node.value[prefix_end:]
        quote = "'" if body.startswith("'") else '"'
    return cst.SimpleString(f"{quote}{value}{quote}")
