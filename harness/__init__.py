"""bleu-harness: exact, fast BLEU from sufficient statistics, with experiment tracking.

``harness.corpus_bleu`` and ``harness.sentence_bleu`` mirror sacrebleu's API (same reference-stream layout and
option names) and add ``ref_length``, ``weights`` and compatibility ``profile``s; see README.md.
"""

__version__ = "0.1.0"

from .bleu import BleuOptions, BleuScore, make_options, parse_signature  # noqa: E402
from .scoring import corpus_bleu, sentence_bleu  # noqa: E402

__all__ = ["BleuOptions", "BleuScore", "__version__", "corpus_bleu", "make_options", "parse_signature",
           "sentence_bleu"]
