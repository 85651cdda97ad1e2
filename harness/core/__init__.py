"""Pure core: arrays in, numbers out (no file I/O, no hydra/mlflow/pandas/matplotlib)."""
