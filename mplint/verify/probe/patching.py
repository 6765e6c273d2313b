"""Wrap a method on some objects (instances, not their classes) for a while.

    with wrapped_methods(layers, "call", lambda original: new_call):
        ...

The wrapper is set as an instance attribute (Keras looks methods up on the instance, and
`object.__setattr__` bypasses Keras's attribute tracking) and removed afterwards, so the
class's own method shows through again. Objects that already have an instance attribute
of that name, or whose `make(original)` returns None, are left alone.
"""

from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def wrapped_methods(objects, name: str, make):
    wrapped: list = []
    for obj in objects:
        if any(o is obj for o in wrapped) or name in vars(obj):
            continue
        wrapper = make(getattr(obj, name))
        if wrapper is None:
            continue
        object.__setattr__(obj, name, wrapper)
        wrapped.append(obj)
    try:
        yield
    finally:
        for obj in wrapped:
            object.__delattr__(obj, name)
