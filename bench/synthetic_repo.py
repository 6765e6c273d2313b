"""Generate a realistic synthetic repository for benchmarking mplint (deterministic).

Most files are ordinary Python (services, utilities, data classes, tests); about a
tenth use Keras with mixed precision in the forms mplint's rules cover: policies in all
spellings, functional/sequential/subclassed models, custom training loops, sizes from
constants and flags, attention masks with float32-only constants, old experimental
APIs. A few files use Keras without mixed precision.

    python bench/synthetic_repo.py OUT_DIR [--files 3000] [--seed 0] [--mixed-fraction 0.1]
"""

from __future__ import annotations

import argparse
import os
import random
import textwrap

WORDS = (
    "account order invoice user session cache token record batch queue worker report metric "
    "event stream buffer client server request response payload schema config setting value "
    "item entry node graph edge path file block chunk frame packet signal channel store"
).split()


def _name(rng: random.Random, parts: int = 2) -> str:
    return "_".join(rng.choice(WORDS) for _ in range(parts))


def _class_name(rng: random.Random) -> str:
    return "".join(w.title() for w in _name(rng, 2).split("_"))


def ordinary_function(rng: random.Random) -> str:
    name = _name(rng)
    arg = rng.choice(WORDS)
    body = rng.choice(
        [
            f"""
            result = []
            for index, {arg} in enumerate(items):
                if {arg} is None:
                    continue
                key = str({arg}).strip().lower()
                if key in seen:
                    result.append((index, key))
                else:
                    seen.add(key)
            return result
            """,
            f"""
            total = 0
            for {arg} in items:
                try:
                    total += int(getattr({arg}, "size", 0)) * factor
                except (TypeError, ValueError) as exc:
                    logger.warning("skipping %r: %s", {arg}, exc)
            return {{"total": total, "count": len(items), "mean": total / max(len(items), 1)}}
            """,
            f"""
            mapping = {{{arg}.id: {arg} for {arg} in items if getattr({arg}, "id", None)}}
            ordered = sorted(mapping.values(), key=lambda x: (x.priority, x.id))
            return [x for x in ordered if x.priority > threshold][:limit]
            """,
        ]
    )
    signature = rng.choice(["items, seen=None", "items, factor=1", "items, threshold=0, limit=100"])
    if "seen" in signature:
        body = "\n            seen = set(seen or ())" + body
    return f'''
def {name}({signature}):
    """{rng.choice(WORDS).title()} the {rng.choice(WORDS)}s of a {rng.choice(WORDS)}."""''' + textwrap.indent(
        textwrap.dedent(body), "    "
    )


def ordinary_class(rng: random.Random) -> str:
    cls = _class_name(rng)
    fields = rng.sample(WORDS, 4)
    assigns = "\n".join(f"        self.{f} = {f}" for f in fields)
    params = ", ".join(f"{f}=None" for f in fields)
    return f'''

@dataclasses.dataclass
class {cls}Options:
    retries: int = 3
    timeout: float = 2.5
    name: str = "{rng.choice(WORDS)}"


class {cls}:
    """Holds a {fields[0]} and its {fields[1]}."""

    def __init__(self, {params}):
{assigns}
        self._lock = threading.Lock()

    def __repr__(self):
        return f"{cls}({{self.{fields[0]}!r}}, {{self.{fields[1]}!r}})"

    def update(self, **changes):
        with self._lock:
            for key, value in changes.items():
                if not hasattr(self, key):
                    raise AttributeError(key)
                setattr(self, key, value)
        return self

    @property
    def summary(self):
        return {{"{fields[0]}": self.{fields[0]}, "{fields[1]}": self.{fields[1]}}}
'''


def ordinary_file(rng: random.Random) -> str:
    parts = [
        '"""Module for handling ' + " ".join(rng.sample(WORDS, 3)) + '."""\n',
        "import dataclasses\nimport json\nimport logging\nimport os\nimport threading\n",
        "logger = logging.getLogger(__name__)\n",
        f"DEFAULT_LIMIT = {rng.randint(10, 500)}\n",
    ]
    for _ in range(rng.randint(3, 9)):
        parts.append(ordinary_class(rng) if rng.random() < 0.4 else ordinary_function(rng))
    return "\n".join(parts) + "\n"


POLICY_FORMS = [
    'tf.keras.mixed_precision.set_global_policy("mixed_float16")',
    'keras.mixed_precision.set_dtype_policy("mixed_float16")',
    'mixed_precision.set_global_policy(mixed_precision.Policy("mixed_float16"))',
    'if args.fp16:\n    tf.keras.mixed_precision.set_global_policy("mixed_float16")',
]
MODEL_FORMS = [
    """
def build_model(num_classes={classes}):
    inputs = keras.Input(shape=({features},))
    x = layers.Dense({hidden}, activation="relu")(inputs)
    x = layers.Dropout(0.1)(x)
    x = layers.Dense(HIDDEN, activation="relu")(x)
    outputs = layers.Dense(num_classes, activation="softmax")(x)
    return keras.Model(inputs, outputs)
""",
    """
def build_model():
    model = keras.Sequential([
        layers.Conv2D({filters}, 3, activation="relu", input_shape=(32, 32, 3)),
        layers.MaxPooling2D(),
        layers.Conv2D(64, 3, activation="relu"),
        layers.Flatten(),
        layers.Dense({hidden}, activation="relu"),
        layers.Dense({classes}, activation="softmax"),
    ])
    return model
""",
    """
class {cls}Model(keras.Model):
    def __init__(self):
        super().__init__()
        self.embed = layers.Embedding({vocab}, {hidden})
        self.rnn = layers.LSTM({hidden})
        self.head = layers.Dense({classes})

    def call(self, x):
        return self.head(self.rnn(self.embed(x)))
""",
    """
class {cls}Attention(layers.Layer):
    def call(self, scores, mask):
        scores = scores - 1e30 * (1.0 - mask)
        return tf.nn.softmax(scores, axis=-1) / (tf.norm(scores) + 1e-12)
""",
]
LOOP_FORMS = [
    """
optimizer = keras.optimizers.Adam(1e-3)

@tf.function
def train_step(model, x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
""",
    """
def fit(model, dataset):
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(dataset.batch({batch}), epochs=3, batch_size={batch})
""",
]


def mixed_file(rng: random.Random) -> str:
    header = rng.choice(
        [
            "import tensorflow as tf\nfrom tensorflow import keras\nfrom tensorflow.keras import layers\n",
            "import keras\nimport tensorflow as tf\nfrom keras import layers\n",
            "import tensorflow as tf\nfrom tensorflow import keras\nfrom tensorflow.keras import layers, mixed_precision\n",
        ]
    )
    values = {
        "classes": rng.choice([10, 2, 100, 1000]),
        "features": rng.choice([20, 64, 100]),
        "hidden": rng.choice([128, 256, 1000, 500, 768]),
        "filters": rng.choice([32, 30, 64, 100]),
        "vocab": rng.choice([10000, 30522, 32000]),
        "batch": rng.choice([32, 50, 64, 100]),
        "cls": _class_name(rng),
    }
    parts = [
        '"""Training code for the ' + " ".join(rng.sample(WORDS, 2)) + ' model."""\n',
        header,
        "import argparse\n" if "args" in "".join(POLICY_FORMS) else "",
        f"HIDDEN = {rng.choice([512, 1000, 1024, 300])}\n",
        "parser = argparse.ArgumentParser()\nparser.add_argument('--fp16', action='store_true')\nargs = parser.parse_args([])\n",
        rng.choice(POLICY_FORMS).replace("mixed_precision.", "tf.keras.mixed_precision.", 1)
        if "mixed_precision" not in header
        else rng.choice(POLICY_FORMS),
        "\n",
    ]
    for form in rng.sample(MODEL_FORMS, 2) + rng.sample(LOOP_FORMS, 1):
        parts.append(form.format(**values))
    for _ in range(rng.randint(1, 4)):
        parts.append(ordinary_function(rng))
    return "\n".join(parts) + "\n"


def keras_file_without_policy(rng: random.Random) -> str:
    return (
        "import tensorflow as tf\nfrom tensorflow import keras\n\n"
        f"model = keras.Sequential([keras.layers.Dense({rng.randint(8, 512)}), keras.layers.Dense(1)])\n"
        + "\n".join(ordinary_function(rng) for _ in range(rng.randint(2, 5)))
    )


def large_file(lines: int, seed: int = 0) -> str:
    """One module of at least `lines` lines: mixed-precision training modules one after
    the other (what a new user tries first: everything in one file)."""
    rng = random.Random(seed)
    parts: list[str] = []
    count = 0
    while count < lines:
        part = mixed_file(rng)
        parts.append(part)
        count += part.count("\n")
    return "".join(parts)


def generate(out: str, files: int, seed: int = 0, mixed_fraction: float = 0.1) -> dict[str, int]:
    rng = random.Random(seed)
    counts = {"files": 0, "mixed": 0, "lines": 0}
    for i in range(files):
        package = os.path.join(out, f"pkg{i % 37:02d}", f"sub{i % 5}")
        os.makedirs(package, exist_ok=True)
        roll = rng.random()
        if roll < mixed_fraction:
            text, counts["mixed"] = mixed_file(rng), counts["mixed"] + 1
        elif roll < mixed_fraction + 0.03:
            text = keras_file_without_policy(rng)
        else:
            text = ordinary_file(rng)
        with open(os.path.join(package, f"module_{i:05d}.py"), "w", encoding="utf-8") as handle:
            handle.write(text)
        counts["files"] += 1
        counts["lines"] += text.count("\n")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mixed-fraction", type=float, default=0.1)
    args = parser.parse_args()
    print(generate(args.out, args.files, args.seed, args.mixed_fraction))


if __name__ == "__main__":
    main()
