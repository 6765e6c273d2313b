"""Finds rule classes: each family module in `rules/` (installed as `mplint_rules`)
is imported only when one of its rules is enabled."""

from __future__ import annotations

import importlib
from functools import lru_cache

from mplint.core.codes import RULES, all_codes  # noqa: F401  (re-exported)


class RegistryError(Exception):
    pass


@lru_cache(maxsize=None)
def family_rules(family: str) -> dict[str, type]:
    from mplint.catalogue.rule import Rule

    # A family is a module of rules/ (installed as mplint_rules), or a dotted module path.
    module = importlib.import_module(family if "." in family else f"mplint_rules.{family}")
    found: dict[str, type] = {}
    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, Rule) and value.code and value.__module__ == module.__name__:
            if value.code in found:
                raise RegistryError(f"rule code {value.code} defined twice in {family}")
            found[value.code] = value
    expected = {code for code, (_, fam) in RULES.items() if fam == family}
    if set(found) != expected:
        raise RegistryError(
            f"{family} defines {sorted(found)} but mplint/core/codes.py lists {sorted(expected)}"
        )
    for code, rule in found.items():
        if rule.name != RULES[code][0]:
            raise RegistryError(f"{code}: name {rule.name!r} differs from the catalogue's {RULES[code][0]!r}")
    return found


def rule_class(code: str) -> type:
    name, family = RULES[code]
    return family_rules(family)[code]


def rules_for(codes: frozenset[str] | set[str]) -> list[type]:
    """Rule classes for enabled codes, in code order."""
    return [rule_class(code) for code in sorted(codes) if code in RULES]


def all_rules() -> list[type]:
    return [rule_class(code) for code in all_codes()]
