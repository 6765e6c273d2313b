"""Fast structural analysis of a libcst module: one walk, names, values, positions."""
