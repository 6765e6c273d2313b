"""The engine: whether a file needs a parse (`prefilter`), the rules and the fix loop on one document (`engine`, `fix_vetting`), a whole run over files
and worker processes with the project index and the cache (`runner`), and one text for
the editor and flake8 (`textcheck`).

May import: mplint.core, mplint.inputs, mplint.analysis, mplint.facts, mplint.project,
mplint.catalogue, mplint.fixes and the rules (mplint_rules, through the registry).
"""
