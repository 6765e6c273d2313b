#!/usr/bin/env python
"""Time float16 Dense and Conv2D stacks at sizes that are not multiples of 8 and at the
rounded sizes that mplint's MP301/MP302/MP303 fixes suggest.

Not a test: a measurement to run on a machine with an NVIDIA GPU (compute capability
7.0 or newer: V100, T4, A100, H100, RTX), where float16 matmuls and convolutions run on
Tensor Cores only when their sizes are multiples of 8. Each stack is timed for a
forward and backward pass (gradients, no optimizer step) under the `mixed_float16`
policy, at the original sizes and at the rounded ones; the speed-up is the original
time per step divided by the rounded one (above 1: the rounded model is faster per step
although it does slightly more work, given as "extra work").

It runs anywhere: on a CPU (no Tensor Cores, float16 is emulated and slow) it just shows
that everything works, with small sizes that finish in seconds.

    python bench/tensor_core_speedup.py                       # preset by device
    python bench/tensor_core_speedup.py --preset large        # GPU-sized stacks
    python bench/tensor_core_speedup.py --units 1001 4095 --filters 100 --batch 250 --steps 100
    python bench/tensor_core_speedup.py --json results.json   # also write JSON ("-": stdout only)

`TF_USE_LEGACY_KERAS=1` runs it with Keras 2 (tf-keras) instead of Keras 3.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass

PRESETS = {
    # CPU: tiny, so the whole run takes seconds (float16 on a CPU is emulated).
    "small": {"units": [100], "filters": [20], "batch": 32, "depth": 2, "image_size": 16,
              "steps": 5, "warmup": 2, "repeats": 3},
    # GPU: large enough that the matmuls, not the launches, dominate.
    "large": {"units": [1001, 4095], "filters": [100, 250], "batch": 256, "depth": 4,
              "image_size": 56, "steps": 50, "warmup": 5, "repeats": 5},
}


@dataclass
class Result:
    stack: str  # "dense" or "conv2d"
    depth: int
    size: int
    rounded_size: int
    batch: int
    rounded_batch: int
    extra_work_percent: float  # FLOPs of the rounded stack over the original, minus 1
    original_ms: float  # median time per step
    rounded_ms: float
    speedup: float  # original_ms / rounded_ms
    original_examples_per_s: float
    rounded_examples_per_s: float


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=["auto", *PRESETS], default="auto",
                        help="default sizes: 'large' on a GPU, 'small' otherwise (auto)")
    parser.add_argument("--units", type=int, nargs="*", help="Dense widths to time (each is rounded up too)")
    parser.add_argument("--filters", type=int, nargs="*", help="Conv2D filter counts to time")
    parser.add_argument("--batch", type=int, help="batch size (rounded up too if not a multiple)")
    parser.add_argument("--depth", type=int, help="layers per stack")
    parser.add_argument("--image-size", type=int, help="height and width of the Conv2D input")
    parser.add_argument("--steps", type=int, help="timed steps per repeat")
    parser.add_argument("--warmup", type=int, help="untimed steps first (tracing, autotuning)")
    parser.add_argument("--repeats", type=int, help="repeats; the median is reported")
    parser.add_argument("--multiple", type=int, default=8, help="round sizes up to a multiple of this (8)")
    parser.add_argument("--policy", default="mixed_float16", help="dtype policy (mixed_float16)")
    parser.add_argument("--device", choices=["auto", "gpu", "cpu"], default="auto", help="where to run (auto: GPU if any)")
    parser.add_argument("--jit", action="store_true", help="compile the step with XLA")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON to PATH ('-': print JSON instead of the table)")
    return parser.parse_args(argv)


def _settings(args: argparse.Namespace, has_gpu: bool) -> dict:
    preset = args.preset if args.preset != "auto" else ("large" if has_gpu else "small")
    settings = dict(PRESETS[preset], preset=preset)
    for key in ("units", "filters", "batch", "depth", "image_size", "steps", "warmup", "repeats"):
        value = getattr(args, key)
        if value is not None:
            settings[key] = value
    for key in ("batch", "depth", "image_size", "steps", "repeats"):
        if settings[key] < 1:
            raise SystemExit(f"--{key.replace('_', '-')} must be at least 1")
    return settings


def _dense_stack(tf, width: int, depth: int):
    inputs = tf.keras.Input((width,))
    x = inputs
    for _ in range(depth):
        x = tf.keras.layers.Dense(width, activation="relu")(x)
    return tf.keras.Model(inputs, x)


def _conv_stack(tf, filters: int, depth: int, image_size: int):
    inputs = tf.keras.Input((image_size, image_size, filters))
    x = inputs
    for _ in range(depth):
        x = tf.keras.layers.Conv2D(filters, 3, padding="same", activation="relu")(x)
    return tf.keras.Model(inputs, x)


def _flops(stack: str, size: int, batch: int, depth: int, image_size: int) -> float:
    """Multiply-adds x2 of the forward pass (the backward pass scales the same way)."""
    if stack == "dense":
        return 2.0 * batch * size * size * depth
    return 2.0 * batch * image_size * image_size * 9 * size * size * depth


def _step_function(tf, model, batch: int, jit: bool):
    """A compiled forward+backward step on fixed random data."""
    data = tf.random.normal((batch, *model.input_shape[1:]))

    @tf.function(jit_compile=jit)
    def step(x):
        with tf.GradientTape() as tape:
            y = model(x, training=True)
            loss = tf.reduce_mean(tf.square(tf.cast(y, tf.float32)))
        return loss, tape.gradient(loss, model.trainable_variables)

    return lambda: step(data)


def _time_pair(steps: list, settings: dict) -> list[float]:
    """Median milliseconds per step of each step function; the functions take turns in
    every repeat, so drift (clocks, caches, other load) hits both alike."""
    for step in steps:
        for _ in range(settings["warmup"]):
            step()[0].numpy()
    timings: list[list[float]] = [[] for _ in steps]
    for _ in range(settings["repeats"]):
        for i, step in enumerate(steps):
            start = time.perf_counter()
            for _ in range(settings["steps"]):
                result = step()
            result[0].numpy()  # waits for the device
            timings[i].append((time.perf_counter() - start) * 1000 / settings["steps"])
    return [statistics.median(t) for t in timings]


def run(args: argparse.Namespace) -> dict:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    use_gpu = bool(gpus) and args.device != "cpu"
    if args.device == "gpu" and not gpus:
        raise SystemExit("--device gpu: TensorFlow sees no GPU")
    device_name = "CPU"
    if use_gpu:
        details = tf.config.experimental.get_device_details(gpus[0])
        capability = details.get("compute_capability")
        device_name = f"GPU {details.get('device_name', gpus[0].name)}"
        if capability:
            device_name += f" (compute capability {capability[0]}.{capability[1]})"
    settings = _settings(args, use_gpu)
    tf.keras.mixed_precision.set_global_policy(args.policy)
    results: list[Result] = []
    batch = settings["batch"]
    rounded_batch = round_up(batch, args.multiple)
    plans = [("dense", size) for size in settings["units"]] + [("conv2d", size) for size in settings["filters"]]
    with tf.device("/GPU:0" if use_gpu else "/CPU:0"):
        for stack, size in plans:
            rounded = round_up(size, args.multiple)
            tf.keras.backend.clear_session()
            steps = []
            for width, examples in ((size, batch), (rounded, rounded_batch)):
                if stack == "dense":
                    model = _dense_stack(tf, width, settings["depth"])
                else:
                    model = _conv_stack(tf, width, settings["depth"], settings["image_size"])
                steps.append(_step_function(tf, model, examples, args.jit))
            timings = _time_pair(steps, settings)
            original_flops = _flops(stack, size, batch, settings["depth"], settings["image_size"])
            rounded_flops = _flops(stack, rounded, rounded_batch, settings["depth"], settings["image_size"])
            results.append(Result(
                stack=stack, depth=settings["depth"], size=size, rounded_size=rounded, batch=batch,
                rounded_batch=rounded_batch,
                extra_work_percent=round((rounded_flops / original_flops - 1) * 100, 2),
                original_ms=round(timings[0], 4), rounded_ms=round(timings[1], 4),
                speedup=round(timings[0] / timings[1], 3),
                original_examples_per_s=round(batch / timings[0] * 1000, 1),
                rounded_examples_per_s=round(rounded_batch / timings[1] * 1000, 1),
            ))
    keras_version = getattr(tf.keras, "__version__", None) or getattr(tf.keras, "version", lambda: "?")()
    return {
        "device": device_name,
        "tensor_cores": use_gpu,
        "policy": args.policy,
        "multiple": args.multiple,
        "jit": args.jit,
        "tensorflow": tf.__version__,
        "keras": str(keras_version),
        "python": platform.python_version(),
        "settings": settings,
        "results": [asdict(r) for r in results],
    }


def format_table(report: dict) -> str:
    settings = report["settings"]
    lines = [
        f"device: {report['device']}   policy: {report['policy']}   TensorFlow {report['tensorflow']}, "
        f"Keras {report['keras']}   XLA: {'on' if report['jit'] else 'off'}",
        f"preset: {settings['preset']}   {settings['steps']} steps x {settings['repeats']} repeats "
        f"(median), forward + backward",
        "",
    ]
    header = ("stack", "size -> rounded", "batch", "extra work", "ms/step original", "ms/step rounded", "speed-up")
    rows = [header]
    for r in report["results"]:
        batch = str(r["batch"]) if r["batch"] == r["rounded_batch"] else f"{r['batch']} -> {r['rounded_batch']}"
        rows.append((
            f"{r['stack']} x{r['depth']}", f"{r['size']} -> {r['rounded_size']}", batch,
            f"+{r['extra_work_percent']:.1f}%", f"{r['original_ms']:.3f}", f"{r['rounded_ms']:.3f}",
            f"{r['speedup']:.2f}x",
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for i, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(widths[j]) if j < 3 else cell.rjust(widths[j]) for j, cell in enumerate(row)))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines.append("")
    if report["tensor_cores"]:
        lines.append("speed-up = original ms/step / rounded ms/step (above 1: rounding pays for its extra work).")
    else:
        lines.append("No GPU: these timings only show the benchmark runs. Tensor Cores are a GPU feature;")
        lines.append("run it on an NVIDIA GPU (compute capability >= 7.0) for the real speed-up.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report = run(args)
    if args.json == "-":
        print(json.dumps(report, indent=2))
        return 0
    print(format_table(report))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2)
            handle.write("\n")
        print(f"\nwrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
