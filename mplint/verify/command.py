"""The `mplint verify` click command, and the `mplint check --fix --verify` follow-up.

Importing this module imports only click (the CLI registers the command at import).
"""

from __future__ import annotations

import os

import click

from mplint.verify import DEFAULT_TIMEOUT


@click.command()
@click.argument("target")
@click.option("--python", "python", metavar="PATH", help="Interpreter with the user's TensorFlow (default: this one).")
@click.option("--policy", type=click.Choice(["mixed_float16", "mixed_bfloat16"]),
              help="Policy to build under when the code sets none (default: mixed_float16).")
@click.option("--keras", type=click.Choice(["auto", "2", "3"]), default="auto", show_default=True,
              help="Keras 2 (tf-keras, TF_USE_LEGACY_KERAS=1) or Keras 3; auto decides like `mplint check`.")
@click.option("--backend", type=click.Choice(["auto", "tensorflow", "jax", "torch"]), default="auto", show_default=True,
              help="The Keras 3 backend to run on (KERAS_BACKEND); auto decides like `mplint check -v`.")
@click.option("--steps", type=click.IntRange(1, 100), default=3, show_default=True,
              help="Synthetic training steps to run.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=DEFAULT_TIMEOUT, show_default=True,
              help="Seconds before the child process is killed.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--train-step", metavar="NAME", help="The custom training step function (default: train_step if defined).")
@click.option("--batch-size", type=click.IntRange(min=1), help="Batch size of the synthetic data (default: the Input's, else 8).")
@click.option("--inputs", "inputs_file", type=click.Path(dir_okay=False), metavar="FILE.npz",
              help="A real batch instead of synthetic inputs: arrays named like the model's inputs (one input: any name).")
def verify(target, python, policy, keras, backend, steps, timeout, output_format, train_step, batch_size,
           inputs_file) -> None:
    """Run the model of TARGET under its mixed policy and prove outputs and gradients right.

    TARGET is path/to/file.py[:callable] or package.module:callable. Without a callable:
    build_model, create_model, get_model, make_model, then a module-level `model`.
    The user's code runs in a child process, on synthetic data only.

    Exit 0: every applicable check was made and passed; 1: a check failed; 2: could not
    run; 3: not proved (a key check applies but could not be made: the report says which and why).
    """
    from mplint.verify.report import render
    from mplint.verify.runner import VerifyOptions
    from mplint.verify.runner import verify as run_verify

    if inputs_file is not None and not os.path.isfile(inputs_file):
        click.echo(f"mplint: error: --inputs {inputs_file}: no such file", err=True)
        raise click.exceptions.Exit(2)
    options = VerifyOptions(python=python, policy=policy, keras=keras, steps=steps, timeout=timeout,
                            train_step=train_step, batch_size=batch_size, backend=backend,
                            inputs_file=os.path.abspath(inputs_file) if inputs_file else None)
    result = run_verify(target, options)
    click.echo(render(result, output_format), nl=False)
    raise click.exceptions.Exit(result.exit_code)


def verify_fixed_files(paths: list, to_stderr: bool) -> int:
    """`mplint check --fix --verify`: verify each fixed file that has a model entry point,
    one report per file; returns the worst exit code (2 could not run, then 1 failed, then 3 not proved, then 0)."""
    from mplint.verify.report import render_text
    from mplint.verify.runner import verify as run_verify
    from mplint.verify.target import entry_point

    from mplint.verify.runner import worst_exit_code

    codes: list[int] = []
    if not paths:
        click.echo("verify: no file was fixed, nothing to verify", err=to_stderr)
    for path in paths:
        entry = entry_point(path)
        if entry is None:
            click.echo(f"verify: {path}: skipped (no model entry point: build_model(), create_model(), "
                       "get_model(), make_model() defined or imported, a module-level `model`, or a "
                       "`train_step`)", err=to_stderr)
            continue
        result = run_verify(path)
        # `mplint check` has no --python: the way to another interpreter is `mplint verify`.
        text = render_text(result).replace(
            "or pass --python with an interpreter that has it",
            f"or run `mplint verify --python PATH {path}` with an interpreter that has it")
        click.echo(text, nl=False, err=to_stderr)
        codes.append(result.exit_code)
    return worst_exit_code(codes)
