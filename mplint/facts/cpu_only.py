"""Code that hides every GPU, so it has no Tensor Cores to feed (MP301-MP304).

A size that is not a multiple of 8 costs Tensor Core speed only where a GPU runs the
matmul. Code that hides all GPUs before TensorFlow sees them runs on the CPU:

    os.environ["CUDA_VISIBLE_DEVICES"] = "-1"        # or "" (also os.environ.setdefault, os.putenv)
    tf.config.set_visible_devices([], "GPU")         # also tf.config.experimental.set_visible_devices
    with tf.device("/cpu:0"):                        # the layers built in the block

A setting at module level makes the whole module CPU-only; one in a function, that
function (the device block, that block). A setting under an `if` or `try` may not run
(`if args.cpu:`): the GPU stays possible and the findings stay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mplint.analysis.calls import arg_value, string_value

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts

_HIDE_ALL = frozenset({"-1", ""})
_SET_VISIBLE = frozenset({"tensorflow.config.set_visible_devices", "tensorflow.config.experimental.set_visible_devices"})
_ENV_SETTERS = frozenset({"os.environ.setdefault", "os.putenv"})
_DEVICE = frozenset({"tensorflow.device", "tensorflow.compat.v1.device"})


class CpuOnly:
    def __init__(self, facts: "ModuleFacts") -> None:
        self.facts = facts
        self.scopes: list[cst.CSTNode] = []  # module / functions that hide every GPU
        self.blocks: list[cst.With] = []  # `with tf.device("/cpu:0"):` blocks
        for node in self._hiding_settings():
            if not self._conditional(node):
                self.scopes.append(facts.index.scope_of(node))
        for with_node in facts.index.nodes(cst.With):
            for item in with_node.items:
                if isinstance(item.item, cst.Call) and facts.qualified(item.item.func) in _DEVICE:
                    device = string_value(arg_value(item.item, 0, "device_name"))
                    if device is not None and "cpu" in device.lower():
                        self.blocks.append(with_node)

    def covers(self, node: cst.CSTNode) -> bool:
        index = self.facts.index
        if any(scope is index.module for scope in self.scopes):
            return True
        if any(index.contains(scope, node) for scope in self.scopes):
            return True
        return any(index.contains(block, node) for block in self.blocks)

    def _conditional(self, node: cst.CSTNode) -> bool:
        scope = self.facts.index.scope_of(node)
        for ancestor in self.facts.index.ancestors(node):
            if ancestor is scope:
                return False
            if isinstance(ancestor, (cst.If, cst.IfExp, cst.Try, cst.For, cst.While)):
                return True
        return False

    def _hiding_settings(self) -> list[cst.CSTNode]:
        facts = self.facts
        found: list[cst.CSTNode] = []
        for assign in facts.index.nodes(cst.Assign):
            for target in assign.targets:
                subscript = target.target
                if isinstance(subscript, cst.Subscript) and facts.qualified(subscript.value) == "os.environ" \
                        and len(subscript.slice) == 1 and isinstance(subscript.slice[0].slice, cst.Index) \
                        and string_value(subscript.slice[0].slice.value) == "CUDA_VISIBLE_DEVICES" \
                        and string_value(assign.value) in _HIDE_ALL:
                    found.append(assign)
        for call in facts.calls_to(_ENV_SETTERS):
            if string_value(arg_value(call, 0)) == "CUDA_VISIBLE_DEVICES" and string_value(arg_value(call, 1)) in _HIDE_ALL:
                found.append(call)
        for call in facts.calls_to(_SET_VISIBLE):
            devices = arg_value(call, 0, "devices")
            kind = string_value(arg_value(call, 1, "device_type"))
            if isinstance(devices, (cst.List, cst.Tuple)) and not devices.elements and kind is not None \
                    and kind.upper() == "GPU":
                found.append(call)
        return found
