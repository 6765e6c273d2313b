"""Record every layer call of one forward pass: its inputs, its output, in call order.

Each layer's `call` is wrapped on the instance for the duration of the pass (Keras 2
and 3 both look `call` up on the instance) and unwrapped afterwards. The records keep
the tensors alive, so they can be matched with the model's outputs by identity.
"""

from __future__ import annotations

from dataclasses import dataclass

from .tensors import flatten, same_values


@dataclass
class LayerCall:
    layer: object
    inputs: list  # the tensors among the positional arguments, flattened
    output: object  # what `call` returned (nested structure)
    parent: object = None  # the layer whose `call` was running when this one started

    @property
    def first_input(self):
        return self.inputs[0] if self.inputs else None


class CallRecorder:
    def __init__(self, layers: list) -> None:
        self.layers = [l for l in layers if type(l).__name__ != "InputLayer"]
        self.calls: list[LayerCall] = []
        self._running: list = []  # the layers whose `call` is under way, outermost first

    def _wrap(self, layer):
        original = layer.call
        calls = self.calls
        running = self._running

        def recorded_call(*args, **kwargs):
            parent = running[-1] if running else None
            running.append(layer)
            try:
                output = original(*args, **kwargs)
            finally:
                running.pop()
            tensors = [t for t in flatten(list(args)) if hasattr(t, "shape") and hasattr(t, "dtype")]
            calls.append(LayerCall(layer, tensors, output, parent))
            return output

        return recorded_call

    def __enter__(self) -> "CallRecorder":
        self._wrapped = []
        for layer in self.layers:
            try:
                object.__setattr__(layer, "call", self._wrap(layer))
            except (AttributeError, TypeError):
                continue
            self._wrapped.append(layer)
        return self

    def __exit__(self, *exc) -> None:
        for layer in self._wrapped:
            try:
                object.__delattr__(layer, "call")
            except AttributeError:
                pass

    def producer_of(self, tensor, before: int | None = None):
        """The last call (before index `before`) that output this tensor: the very object,
        or, since a layer casts its inputs to its compute dtype before `call` sees them,
        a tensor of the same shape with the same values in the lower of the two precisions."""
        calls = self.calls[:before] if before is not None else self.calls
        for call in reversed(calls):
            if any(t is tensor for t in flatten(call.output)):
                return call
        shape = tuple(getattr(tensor, "shape", ()))
        for call in reversed(calls):
            if any(tuple(t.shape) == shape and same_values(t, tensor) for t in flatten(call.output)
                   if hasattr(t, "shape")):
                return call
        return None
