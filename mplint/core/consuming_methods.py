"""The methods of a Keras model that consume its outputs as its result: training,
evaluating, predicting with or saving it. Read by the role premise of MP101 (on the
syntax tree, `mplint.facts.model_roles`) and by the project's module tables (with `ast`,
`mplint.project.module_table`: which parameters of a function it consumes so)."""

CONSUMING_METHODS = frozenset(
    {
        "compile", "fit", "fit_generator", "train_on_batch", "evaluate", "evaluate_generator", "test_on_batch",
        "predict", "predict_generator", "predict_on_batch", "save", "export",
    }
)
