"""The method names whose call trains a model: fitting, applying gradients, minimizing, and
an estimator's or a framework's `train` (tf.estimator, DeepXDE). One list for MP103's
"does this module train" (`mplint.facts.layer_variables`, on the parse) and for the
project scan's text match (`mplint.project.scan`), which must stay cheap to import."""

from __future__ import annotations

TRAINING_METHODS = frozenset({"fit", "fit_generator", "train_on_batch", "apply_gradients", "minimize", "train"})
