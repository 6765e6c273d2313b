"""Which rule codes are enabled: ruff's prefix selection (`MP1`, `MP30`, `MP101`).

The most specific (longest) matching prefix decides; on a tie, ignore wins.
"""

from __future__ import annotations

from typing import Iterable, Sequence


def parse_codes(value: str | Sequence[str] | None) -> list[str]:
    """`"MP1, MP301"` or `["MP1", "MP301"]` -> `["MP1", "MP301"]` (upper-cased)."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    return [item.strip().upper() for item in items if item.strip()]


def matches(prefix: str, code: str) -> bool:
    return prefix == "ALL" or code.startswith(prefix)


def specificity(prefix: str) -> int:
    return 0 if prefix == "ALL" else len(prefix)


def is_enabled(code: str, select: Iterable[str], ignore: Iterable[str]) -> bool:
    best_select = max((specificity(p) for p in select if matches(p, code)), default=-1)
    best_ignore = max((specificity(p) for p in ignore if matches(p, code)), default=-1)
    return best_select >= 0 and best_select > best_ignore


def unknown_codes(prefixes: Iterable[str], known: Iterable[str]) -> list[str]:
    """Prefixes that select no known rule code."""
    known = list(known)
    return [p for p in prefixes if p != "ALL" and not any(code.startswith(p) for code in known)]
