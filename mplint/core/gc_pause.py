"""Cyclic garbage collection paused while mplint builds and reads one module's trees.

A large module's libcst tree is hundreds of thousands of objects that live until the
module is done; every collection the analysis' own allocations trigger walks all of
them again (a third of checking a 50,000-line file). Nothing in a check creates
garbage cycles worth collecting before it ends, so collection waits: it is enabled again
afterwards (a long-running language server collects what the check left behind).
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def paused_gc() -> Iterator[None]:
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
