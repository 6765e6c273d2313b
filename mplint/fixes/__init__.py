"""Edits that several rule families share: removing a statement without emptying its
block (`removal`), making a model's output float32 (`output_fix`), and the loss-scaling
edits of the training-loop and migration rules (`scaling_edits`). Analyses the rules
share are facts (mplint.facts), not here.

May import: mplint.core, mplint.inputs, mplint.analysis, mplint.facts, mplint.catalogue.
"""
