"""Rule families, installed as `mplint_rules`: one module per family (outputs,
loss_scaling, backend_steps, tensor_cores, migration, numerics). What several families
share lives below them: analyses in mplint.facts, edits in mplint.fixes.

May import: mplint.core, mplint.inputs, mplint.analysis, mplint.facts, mplint.catalogue,
mplint.fixes.
"""
