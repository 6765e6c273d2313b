"""Which files are test modules: their policies are their own (a test sets a policy for
itself), and pytest runs their `test*` functions."""

from __future__ import annotations

_TEST_FOLDERS = frozenset({"tests", "test", "testing"})


def is_test_file(path: str) -> bool:
    """A test module: `test_*.py`, `*_test.py`, `conftest.py`, or under tests/test/testing."""
    normalised = path.replace("\\", "/")
    name = normalised.rsplit("/", 1)[-1]
    if name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py":
        return True
    return bool(set(normalised.split("/")[:-1]) & _TEST_FOLDERS)
