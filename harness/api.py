"""The Python API: ``harness.corpus_bleu`` and ``harness.sentence_bleu``, sacrebleu's layout and option names.

Thin on top of the text pipeline (:mod:`harness.text.pipeline`) and the BLEU formulas (:mod:`harness.core.bleu`).
"""

from __future__ import annotations

from typing import Any, Sequence

from .core.bleu import BleuScore, corpus_score
from .core.options import BleuOptions, make_options
from .core.profiles import get_profile
from .core.stats import SegmentStats
from .text.pipeline import lines_statistics


def corpus_statistics(hypotheses: Sequence[str], references: Sequence[Sequence[str | None]],
                      **options: Any) -> SegmentStats:
    """Per-segment sufficient statistics (see :mod:`harness.core.stats`) under ``options``, for scoring many
    variants or resampling without re-tokenizing: ``harness.core.bleu.corpus_score(stats, opts)``."""
    return lines_statistics(hypotheses, references, make_options(**options))


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[Sequence[str | None]], **options: Any) -> BleuScore:
    """Corpus BLEU, sacrebleu's layout and option names (``tokenize``, ``lowercase``, ``smooth_method``,
    ``smooth_value``, ``max_ngram_order``, ``effective_order``) plus ``ref_length``, ``weights``, ``profile``.

    >>> corpus_bleu(["the cat sat on the mat"], [["the cat sat on the mat"]]).score
    100.0
    """
    opts = make_options(**options)
    return corpus_score(lines_statistics(hypotheses, references, opts), opts)


def sentence_bleu(hypothesis: str, references: Sequence[str], **options: Any) -> BleuScore:
    """Sentence BLEU of one hypothesis against its references (a list of strings for this one segment).

    ``effective_order`` defaults to True, as in sacrebleu's ``sentence_bleu`` and ``--sentence-level``.
    """
    if not isinstance(hypothesis, str):
        raise TypeError(f"hypothesis must be a str, got {type(hypothesis).__name__}")
    if isinstance(references, str):
        raise TypeError("references must be a list of strings (the references of this one segment), not a str")
    refs = list(references)
    for k, ref in enumerate(refs):
        if not isinstance(ref, str):
            raise TypeError(f"references[{k}] is {type(ref).__name__}, expected str")
    if not refs:
        raise ValueError("references: at least one reference is needed")
    options.setdefault("effective_order", get_profile(options.get("profile", BleuOptions.profile)).effective_order)
    opts = make_options(**options)
    return corpus_score(lines_statistics([hypothesis], [[r] for r in refs], opts), opts)
