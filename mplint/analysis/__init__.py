"""Fast structural analysis of one libcst module: one walk (`index`), names through imports
(`names`), bindings and values (`values`, `bound_names`), calls and guards, positions.

May import: mplint.core, mplint.inputs (a notebook's cell sentinel, the code scan).
"""
