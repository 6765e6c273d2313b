"""The first, text-only look at every file of a project (no parsing).

It says what a file imports (for the import graph), and the tokens the project facts care about: a policy set, a test file, the
Keras it targets (`TF_USE_LEGACY_KERAS`, `tf_keras`, Keras-2-only or Keras-3-only APIs),
the Keras backend it sets, the absl flags it defines. Cheap enough to run on every file
of a 10,000-file project; kept on disk by file size and modification time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields

from mplint.facts.target import sets_legacy_keras
from mplint.facts.test_modules import is_test_file
from mplint.facts.training_calls import TRAINING_METHODS

_FROM_IMPORT = re.compile(r"from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^#;]+)")
_IMPORT = re.compile(r"import[ \t]+([^#;]+)")
_SETS_POLICY = re.compile(r"(?<!def )\b(?:set_global_policy|set_dtype_policy|set_policy|policy_scope)[ \t]*\(")
# The framework's own implementation of the setter (Keras's source, a vendored copy).
_DEFINES_SETTER = re.compile(r"^[ \t]*def[ \t]+(?:set_global_policy|set_dtype_policy)\b", re.M)
_TF_KERAS = re.compile(r"^[ \t]*(?:import[ \t]+tf_keras\b|from[ \t]+tf_keras\b)", re.M)
_KERAS2_ONLY = re.compile(r"\boptimizers\.legacy\b|^[ \t]*(?:import|from)[ \t]+tensorflow_addons\b", re.M)
# Keras-2-era code (TF 2.1-2.15): the experimental mixed-precision API, TensorFlow's
# private Keras, `experimental_run_v2`, the generator methods. Weaker than `_KERAS2_ONLY`:
# it dates the project's code, it does not prove what runs it.
# The names are those of `mplint.facts.target`'s Keras-2-era list, as code spells them.
_KERAS2_ERA = re.compile(r"mixed_precision\.experimental\b|mixed_precision[ \t]+import[ \t]+experimental\b"
                         r"|\.experimental_run_v2\(|\.(?:fit|evaluate|predict)_generator\(|\btensorflow\.python\.keras\b"
                         r"|\boptimizers\.experimental\.|\blayers\.experimental\.preprocessing\b|\bwrappers\.scikit_learn\b"
                         r"|\bOrderedEnqueuer\b|\bhorovod\.tensorflow\.keras\b|\bofficial\.vision\.beta\b"
                         r"|\bkeras(?:\.\w+)*?\.experimental\b")  # any Keras `experimental` namespace (mplint.facts.target)
_KERAS3_NAMES = ("ops", "config", "random", "tree", "DTypePolicy", "dtype_policies")
_KERAS3_ONLY = re.compile(r"\bkeras\.(?:%s)\b" % "|".join(_KERAS3_NAMES))
_BACKEND = re.compile(r"""KERAS_BACKEND['"]?\s*(?:\]\s*=|,)\s*['"](\w+)['"]""")
# What a project that uses mixed precision names somewhere (its code, tests or notebooks).
_MIXED_PRECISION_WORDS = ("mixed_float16", "mixed_bfloat16", "mixed_precision", "LossScaleOptimizer",
                          "set_dtype_policy", "auto_mixed_precision", "AUTO_MIXED_PRECISION")
_FLOAT16_WORDS = re.compile(r"mixed_float16|LossScale|(?<!b)float16|AUTO_MIXED_PRECISION|graph_rewrite")
# A float16 Keras policy (or float16 variables): what makes layer code compute in float16.
# The graph rewrite (`auto_mixed_precision`) and a loss-scale optimizer alone do not: the
# rewrite keeps the numerically sensitive ops (exp, log, softmax, reductions) in float32.
_FLOAT16_POLICY = re.compile(
    r"mixed_float16|\b(?:set_floatx|Policy|DTypePolicy|set_global_policy|set_policy|set_dtype_policy)\(\s*['\"]float16['\"]")
_GRAPH_REWRITE = re.compile(r"auto_mixed_precision|AUTO_MIXED_PRECISION|mixed_precision_graph_rewrite")
_FLAG = re.compile(r"""\bDEFINE_\w+\(\s*(?:name\s*=\s*)?['"](\w+)['"]""")
# What trains a model: a training method (`x.fit(...)`, `x.apply_gradients(...)`) or a
# tape (`tf.GradientTape()`). The parse confirms it is a call.
_TRAINING_CALL = re.compile(r"\.(?:%s)\s*\(|GradientTape\b" % "|".join(sorted(TRAINING_METHODS)))
_INSTANTIATE = re.compile(r"\binstantiate\s*\(")
_TRAINER_CALLS = TRAINING_METHODS | {"GradientTape"}



@dataclass
class FileScan:
    imports: list[tuple[int, str, list[str]]] = field(default_factory=list)  # (level, module, names)
    sets_policy: bool = False
    test: bool = False
    legacy_keras: bool = False  # sets TF_USE_LEGACY_KERAS
    tf_keras: bool = False
    keras2_only: bool = False
    keras3_only: bool = False
    keras2_era: bool = False  # Keras-2-era code (`_KERAS2_ERA`)
    backend: str | None = None  # KERAS_BACKEND it sets
    flags: list[str] = field(default_factory=list)
    mixed_precision: bool = False  # names a mixed-precision API or policy
    float16: bool = False  # names float16 mixed precision (mixed_float16, a LossScaleOptimizer)
    bfloat16: bool = False  # names bfloat16
    float16_policy: bool = False  # names a float16 Keras policy (`mixed_float16`, `set_floatx("float16")`)
    graph_rewrite: bool = False  # names the float16 graph rewrite (`auto_mixed_precision`, `..._graph_rewrite`)
    # Its text names something that trains (`.fit(`, `apply_gradients(`, `GradientTape`):
    # the parse confirms it is a call only when MP103's trainer search asks
    # (`calls_a_trainer`), so the scan parses no more files than before.
    training_call: bool = False
    half: bool = False  # names float16 or bfloat16 (a pure half policy or dtype may be here)
    instantiates_configs: bool = False  # calls Hydra's `instantiate(...)`: uses the classes its configs name

    def to_json(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: dict) -> FileScan:
        scan = cls(**data)
        scan.imports = [(level, module, list(names)) for level, module, names in scan.imports]
        return scan


def scan_text(text: str, path: str) -> FileScan:
    """Plain substring tests decide which (slower) patterns run at all."""
    scan = FileScan(test=is_test_file(path))
    if "import" in text:
        scan.imports = _imports(text)
    parsed = _Parsed(text)
    if "mixed_" in text and "polic" in text:
        # A module that sets a mixed policy (the policy named in it, possibly through a
        # variable), and is not the framework's own implementation of the setter.
        # Comments and strings never count: a docstring that says "call
        # set_global_policy('mixed_float16')" sets nothing.
        scan.sets_policy = _SETS_POLICY.search(text) is not None and _DEFINES_SETTER.search(text) is None \
            and _calls_a_setter(parsed)
    scan.legacy_keras = sets_legacy_keras(text)
    scan.tf_keras = "tf_keras" in text and _TF_KERAS.search(text) is not None
    scan.keras2_only = ("optimizers.legacy" in text or "tensorflow_addons" in text) and _KERAS2_ONLY.search(text) is not None
    scan.keras2_era = ("experimental" in text or "_generator(" in text or "python.keras" in text
                       or "scikit_learn" in text or "Enqueuer" in text or "horovod" in text or "vision.beta" in text) \
        and _KERAS2_ERA.search(text) is not None
    scan.keras3_only = any(f"keras.{name}" in text for name in _KERAS3_NAMES) and _KERAS3_ONLY.search(text) is not None
    if "KERAS_BACKEND" in text:
        backend = _BACKEND.search(text)
        scan.backend = backend.group(1) if backend else None
    if "DEFINE_" in text:
        scan.flags = sorted(set(_FLAG.findall(text)))
    scan.mixed_precision = any(word in text for word in _MIXED_PRECISION_WORDS)
    scan.float16 = scan.mixed_precision and _FLOAT16_WORDS.search(text) is not None
    scan.bfloat16 = "bfloat16" in text
    scan.float16_policy = scan.float16 and _FLOAT16_POLICY.search(text) is not None and _names_float16_policy(parsed)
    scan.graph_rewrite = scan.float16 and _GRAPH_REWRITE.search(text) is not None
    scan.training_call = _TRAINING_CALL.search(text) is not None
    scan.half = "float16" in text
    scan.instantiates_configs = "hydra" in text and _INSTANTIATE.search(text) is not None
    return scan


_SETTERS = frozenset({"set_global_policy", "set_dtype_policy", "set_policy", "policy_scope"})


class _Parsed:
    """The module's `ast` tree, parsed on first use and at most once per scan (None where
    it does not parse)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._tree: object = False

    @property
    def tree(self):
        if self._tree is False:
            from mplint.inputs.python_tree import python_tree

            self._tree = python_tree(self.text)
        return self._tree


def _calls_a_setter(parsed: _Parsed) -> bool:
    """Whether the module's code calls a policy setter (Python's parser: a call, not a
    comment, a docstring or a definition)."""
    return _calls_one_of(parsed, _SETTERS, _SETTERS, _SETS_POLICY)


def calls_a_trainer(text: str) -> bool:
    """Whether the module's code calls something that trains (not a comment or a string)."""
    return _TRAINING_CALL.search(text) is not None and \
        _calls_one_of(_Parsed(text), _TRAINER_CALLS, frozenset({"GradientTape"}), _TRAINING_CALL)


def _calls_one_of(parsed: _Parsed, methods: frozenset[str], functions: frozenset[str], pattern: re.Pattern) -> bool:
    """Whether the module calls `x.method(...)` for one of `methods` or `function(...)` for
    one of `functions`; the blanked text (no comments or strings) against `pattern` where
    it does not parse."""
    import ast

    tree = parsed.tree
    if tree is None:
        return pattern.search(code_only(parsed.text)) is not None
    Call, Name, Attribute = ast.Call, ast.Name, ast.Attribute
    for node in ast.walk(tree):
        if type(node) is Call:
            func = node.func
            kind = type(func)
            if (kind is Attribute and func.attr in methods) or (kind is Name and func.id in functions):
                return True
    return False


_FLOAT16_SETTERS = frozenset({"set_floatx", "Policy", "DTypePolicy", "set_global_policy", "set_policy",
                              "set_dtype_policy"})


def _names_float16_policy(parsed: _Parsed) -> bool:
    """Whether the module's code names a float16 Keras policy: the string
    `"mixed_float16"` (a whole string, so never a docstring or a comment), or `"float16"`
    given to a policy or floatx setter. Where it does not parse, the text without comments
    and strings decides, which only a policy spelled as a name can match."""
    import ast

    tree = parsed.tree
    if tree is None:
        return _FLOAT16_POLICY.search(code_only(parsed.text)) is not None
    for node in ast.walk(tree):
        if type(node) is ast.Constant and node.value == "mixed_float16":
            return True
        if type(node) is ast.Call and node.args and type(node.args[0]) is ast.Constant \
                and node.args[0].value == "float16":
            func = node.func
            name = func.id if type(func) is ast.Name else func.attr if type(func) is ast.Attribute else None
            if name in _FLOAT16_SETTERS:
                return True
    return False


def code_only(text: str) -> str:
    """The text with every comment and string literal blanked (tokens, not a parse); the
    text itself where it does not tokenize (a module that does not parse adds no facts
    anyway)."""
    import io
    import tokenize

    lines = text.splitlines(keepends=True)
    blanked = [list(line) for line in lines]
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type not in (tokenize.COMMENT, tokenize.STRING) and \
                    getattr(tokenize, "FSTRING_MIDDLE", None) != token.type:
                continue
            (start_row, start_col), (end_row, end_col) = token.start, token.end
            for row in range(start_row, end_row + 1):
                line = blanked[row - 1]
                first = start_col if row == start_row else 0
                last = end_col if row == end_row else len(line)
                for col in range(first, min(last, len(line))):
                    if line[col] not in "\r\n":
                        line[col] = " "
    except (tokenize.TokenError, IndentationError, SyntaxError, IndexError):
        return text
    return "".join("".join(line) for line in blanked)


def _imports(text: str) -> list[tuple[int, str, list[str]]]:
    """(level, module, names) of every import statement: only the lines holding the word
    `import` are looked at (a parenthesised `from x import (...)` may span lines)."""
    found: list[tuple[int, str, list[str]]] = []
    position = text.find("import")
    while position >= 0:
        start = text.rfind("\n", 0, position) + 1
        end = text.find("\n", position)
        end = len(text) if end < 0 else end
        statement = text[start:end].strip()
        if statement.startswith("from ") and "(" in statement and ")" not in statement:
            close = text.find(")", end)
            if close >= 0:
                end = close
                statement = " ".join(text[start:close + 1].split())
        position = text.find("import", end)
        if statement.startswith("from "):
            match = _FROM_IMPORT.match(statement)
            if match:
                level = len(match.group(1))
                names = [n.strip().split(" as ")[0].strip() for n in match.group(3).strip("()").replace("\\", " ").split(",")]
                found.append((level, match.group(2), [n for n in names if n.isidentifier()]))
        elif statement.startswith("import "):
            match = _IMPORT.match(statement)
            if match:
                for part in match.group(1).replace("\\", " ").split(","):
                    module = part.strip().split(" as ")[0].strip()
                    if module and all(p.isidentifier() for p in module.split(".")):
                        found.append((0, module, []))
    return found
