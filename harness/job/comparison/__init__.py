"""Where two systems (or more) differ: the analysis behind ``harness-compare``, ``harness-history --compare`` and a
job's ``compare=[[A, B], ...]``.

A BLEU difference with a p-value says *that* two systems differ; this package says *where*, in the spirit of
compare-mt (Neubig et al., NAACL 2019 demo, ``neulab/compare-mt``) and MT-Telescope, from the per-segment
sufficient statistics, seeded, and with every resample done by the one engine (:mod:`harness.core.resampling`
through :mod:`harness.core.significance`); nothing is re-tokenised per resample. Every ``delta`` is B minus A.

One request, one entry point, one result::

    result = compare(ComparisonRequest.of_files(text_a, text_b, refs, options, source=src, human=mqm))
    several = compare_systems(ComparisonRequest.of_files(base, b, refs, options, others=[c, d]))

More than two systems: the first is the baseline and every other is compared with it (sacrebleu's
``--paired-bs``); :class:`ComparisonSet` holds each pair's :class:`ComparisonResult` (what comparing that pair
alone gives) and every breakdown with all systems side by side.

- :mod:`.request`: what is asked (:class:`ComparisonRequest`, :class:`Side`), checked;
- :mod:`.engine`: :func:`compare`: the texts through the one text pipeline once, counted once per n-gram;
- :mod:`.buckets`, :mod:`.ngrams`, :mod:`.examples`: what it finds (headline and buckets with paired bootstrap
  intervals, compare-mt's salient n-grams, segments side by side, the human side);
- :mod:`.result`: the immutable :class:`ComparisonResult`;
- :mod:`.tables` and :mod:`.page`: its tables, JSON, LaTeX (booktabs) and self-contained HTML page (read the
  result only; the sinks or the caller write them).

No mlflow, hydra or pandas here.
"""

from .engine import compare, compare_systems
from .request import ComparisonRequest, Side, word_counts
from .result import (
    DEFAULT_EXAMPLES,
    DEFAULT_SAMPLES,
    DEFAULT_TOP,
    FREQUENCY_CUTOFFS,
    LENGTH_CUTOFFS,
    LENGTH_DIFF_CUTOFFS,
    SENTENCE_BLEU_CUTOFFS,
    ComparisonResult,
    ComparisonSet,
)
from .tables import (
    TABLE_NAMES,
    comparison_tables,
    latex_tables,
    page_contents,
    page_name,
    set_json,
    table_files,
    to_json,
)

__all__ = ["DEFAULT_EXAMPLES", "DEFAULT_SAMPLES", "DEFAULT_TOP", "FREQUENCY_CUTOFFS", "LENGTH_CUTOFFS",
           "LENGTH_DIFF_CUTOFFS", "SENTENCE_BLEU_CUTOFFS", "TABLE_NAMES", "ComparisonRequest", "ComparisonResult",
           "ComparisonSet", "Side", "compare", "compare_systems", "comparison_tables", "latex_tables",
           "page_contents", "page_name", "set_json", "table_files", "to_json", "word_counts"]
