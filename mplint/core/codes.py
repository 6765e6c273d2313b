"""The rule catalogue: every code, its name and the `rules/` family module defining it.

Like ruff's codes table, this lets config validation, `mplint rule --all` listings and
the pre-filter run without importing any rule (and the parser behind them). The
registry checks that each family module defines exactly the rules listed here.
"""

from __future__ import annotations

# code -> (name, family module in rules/)
RULES: dict[str, tuple[str, str]] = {
    "MP101": ("float16-model-output", "outputs"),
    "MP102": ("policy-set-after-layers", "outputs"),
    "MP103": ("float16-variables", "outputs"),
    "MP104": ("float16-on-tpu", "outputs"),
    "MP201": ("unscaled-custom-loop", "loss_scaling"),
    "MP202": ("gradient-of-unscaled-loss", "loss_scaling"),
    "MP203": ("gradients-not-unscaled", "loss_scaling"),
    "MP204": ("graph-rewrite-with-tape", "loss_scaling"),
    "MP205": ("loss-scaling-with-bfloat16", "loss_scaling"),
    "MP206": ("unscaled-jax-torch-step", "backend_steps"),
    "MP207": ("scaled-loss-reported", "backend_steps"),
    "MP301": ("units-not-multiple", "tensor_cores"),
    "MP302": ("filters-not-multiple", "tensor_cores"),
    "MP303": ("batch-size-not-multiple", "tensor_cores"),
    "MP304": ("embedding-size-not-multiple", "tensor_cores"),
    "MP401": ("experimental-mixed-precision-api", "migration"),
    "MP403": ("graph-rewrite-api", "migration"),
    "MP404": ("loss-scale-api-mismatch", "migration"),
    "MP501": ("float16-overflow-constant", "numerics"),
    "MP502": ("float16-underflow-epsilon", "numerics"),
    "MP503": ("float16-input-pipeline", "numerics"),
}

# Engine codes: always on, never suppressed.
ENGINE_CODES = {"MP000": "unreadable-or-invalid-source", "MP900": "internal-error"}


def all_codes() -> list[str]:
    return sorted(RULES)


def families() -> list[str]:
    return sorted({family for _, family in RULES.values()})
