"""What every rule asks about one module: the policy in effect at each place (`policy`,
`policy_flow`, `entries`), the call graph, values through calls, the model graph,
training loops, the Keras target and backend, and the premises a finding rests on
(`premises`); and the analyses several rule families share (`cpu_only`,
`float16_arithmetic`, `input_pipeline`, `late_policy`, `layer_variables`, `tf1_code`,
`version_guards`). Other modules of the project are seen only through the
`ProjectContext` protocol (`project_context`).

May import: mplint.core, mplint.inputs, mplint.analysis.
"""
