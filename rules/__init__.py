"""Rule families: one module per family (outputs, loss_scaling, tensor_cores, migration, numerics)."""
