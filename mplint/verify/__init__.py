"""`mplint verify`: run the user's model under its mixed policy and prove it right.

Two halves that never share a process:

- the parent (this package, minus `probe/`): parses TARGET, decides Keras 2 or 3,
  starts a child interpreter with a timeout, reads its JSON answers, renders the
  report, picks the exit code. It never imports TensorFlow.
- the probe (`probe/`): runs in the child with TensorFlow, imports the user's module,
  builds the model, runs the checks on synthetic data and answers in JSON lines.

Importing this package imports nothing else (the CLI stays cheap).

May import: mplint.core, mplint.inputs (the configuration), mplint.facts (the Keras
target). It sits beside the engine; only the front ends import it.
"""

DEFAULT_TIMEOUT = 120.0  # seconds before the child is killed
