"""Where two systems differ: the analysis behind ``harness-compare``, ``harness-history --compare`` and a job's
``compare=[[A, B], ...]``.

A BLEU difference with a p-value says *that* two systems differ; this package says *where*, in the spirit of
compare-mt (Neubig et al., NAACL 2019 demo, ``neulab/compare-mt``) and MT-Telescope, from the per-segment
sufficient statistics, seeded, and with every resample done by the one engine (:mod:`harness.core.resampling`
through :mod:`harness.core.significance`); nothing is re-tokenised per resample. Every ``delta`` is B minus A.

One request, one entry point, one result::

    result = compare(ComparisonRequest.of_files(text_a, text_b, refs, options, source=src, human=mqm))

- :mod:`.request`: what is asked (:class:`ComparisonRequest`, :class:`Side`), checked;
- :mod:`.engine`: :func:`compare`: the texts through the one text pipeline once, counted once per n-gram;
- :mod:`.buckets`, :mod:`.ngrams`, :mod:`.examples`: what it finds (headline and buckets with paired bootstrap
  intervals, compare-mt's salient n-grams, segments side by side, the human side);
- :mod:`.result`: the immutable :class:`ComparisonResult`;
- :mod:`.tables` and :mod:`.page`: its tables, JSON and self-contained HTML page (read the result only; the sinks
  write them).

No mlflow, hydra or pandas here.
"""

from .engine import compare
from .request import ComparisonRequest, Side, word_counts
from .result import (
    DEFAULT_EXAMPLES,
    DEFAULT_SAMPLES,
    DEFAULT_TOP,
    FREQUENCY_CUTOFFS,
    LENGTH_CUTOFFS,
    SENTENCE_BLEU_CUTOFFS,
    ComparisonResult,
)
from .tables import TABLE_NAMES, comparison_tables, page_contents, page_name, table_files, to_json

__all__ = ["DEFAULT_EXAMPLES", "DEFAULT_SAMPLES", "DEFAULT_TOP", "FREQUENCY_CUTOFFS", "LENGTH_CUTOFFS",
           "SENTENCE_BLEU_CUTOFFS", "TABLE_NAMES", "ComparisonRequest", "ComparisonResult", "Side", "compare",
           "comparison_tables", "page_contents", "page_name", "table_files", "to_json", "word_counts"]
