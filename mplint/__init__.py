"""mplint: find and fix TensorFlow/Keras mixed-precision mistakes.

Importing this package is cheap on purpose: it never imports TensorFlow, and the
parser (libcst) is only imported when a file actually needs parsing.
"""

__version__ = "0.1.0"
