"""The Python API: ``harness.corpus_bleu``, ``harness.sentence_bleu``, ``harness.corpus_chrf`` and
``harness.sentence_chrf``, sacrebleu's layout and option names.

Thin on top of the text pipeline (:mod:`harness.text.pipeline`, :mod:`harness.text.chrf_counting`) and the
formulas (:mod:`harness.core.bleu`, :mod:`harness.core.chrf`).
"""

from __future__ import annotations

from typing import Any, Sequence

from .core.bleu import BleuScore, corpus_score
from .core.chrf import ChrfScore, make_chrf_options
from .core.chrf import corpus_chrf as chrf_of_stats
from .core.options import BleuOptions, make_options
from .core.profiles import get_profile
from .core.stats import SegmentStats
from .text.chrf_counting import chrf_statistics
from .text.pipeline import check_systems, lines_statistics


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


def corpus_chrf(hypotheses: Sequence[str], references: Sequence[Sequence[str | None]], **options: Any) -> ChrfScore:
    """Corpus chrF (chrF++ with ``word_order=2``), sacrebleu's ``CHRF`` and its option names (``char_order``,
    ``word_order``, ``beta``, ``lowercase``, ``whitespace``, ``eps_smoothing``); references in sacrebleu's layout
    (streams, None = absent), checked as for BLEU.

    >>> corpus_chrf(["the cat sat on the mat"], [["the cat sat on the mat"]]).score
    100.0
    """
    opts = make_chrf_options(**options)
    hyps, refs = check_systems([hypotheses], references)
    return chrf_of_stats(chrf_statistics(hyps, refs, opts)[0], opts)


def sentence_chrf(hypothesis: str, references: Sequence[str], **options: Any) -> ChrfScore:
    """chrF of one hypothesis against its references (a list of strings for this one segment)."""
    if not isinstance(hypothesis, str):
        raise TypeError(f"hypothesis must be a str, got {type(hypothesis).__name__}")
    if isinstance(references, str):
        raise TypeError("references must be a list of strings (the references of this one segment), not a str")
    return corpus_chrf([hypothesis], [[r] for r in references], **options)
