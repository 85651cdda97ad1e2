"""A harness job: the spec that describes it, dataset and human-score loading, the cached statistics, the
analysis into an immutable result, its tables, report and figures, and the folder it publishes into. No Hydra,
no MLflow (those are the app's and the sinks')."""
