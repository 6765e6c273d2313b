"""The project index: a text and `ast` table of every module of the project (imports,
re-exports, functions and parameters, constants, flag defaults, where policies are set),
the cross-module policy solution, and the Keras-target evidence of the whole project,
stored in `.mplint_cache/`. The facts of one module see it only through the
`ProjectContext` protocol (mplint.facts.project_context).

May import: mplint.core, mplint.inputs, mplint.analysis, mplint.facts.
"""
