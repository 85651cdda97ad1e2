"""bleu-harness: exact, fast BLEU from sufficient statistics, with experiment tracking.

``harness.corpus_bleu`` and ``harness.sentence_bleu`` mirror sacrebleu's API (same reference-stream layout and
option names) and add ``ref_length``, ``weights`` and compatibility ``profile``s; ``harness.corpus_chrf`` and
``harness.sentence_chrf`` are sacrebleu's chrF and chrF++; see README.md. The package is
organised in layers (README, "How the code is organised"): ``harness.core`` (pure arithmetic), ``harness.text``
(texts to statistics), ``harness.job`` (a harness job), ``harness.sinks`` (Parquet, MLflow) and the entry points.
Names are loaded on first use, so importing a submodule never loads the layers above it.
"""

from __future__ import annotations

from typing import Any

from .version import __version__

_EXPORTS = {
    "corpus_bleu": "harness.api",
    "sentence_bleu": "harness.api",
    "corpus_statistics": "harness.api",
    "corpus_chrf": "harness.api",
    "sentence_chrf": "harness.api",
    "BleuOptions": "harness.core.options",
    "make_options": "harness.core.options",
    "BleuScore": "harness.core.bleu",
    "parse_signature": "harness.core.signature",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
