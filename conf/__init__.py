"""Hydra configuration of bleu-harness (shipped as the package ``harness.conf``)."""
