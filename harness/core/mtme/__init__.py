"""WMT metrics-task meta-evaluation statistics, computed exactly as google-research/mt-metrics-eval (MTME) does.

A vectorised numpy re-implementation of MTME (commit ``68a481aea1a787392d55af8f76ac8ef40c5f4664``: ``stats.py``,
``pce.py``, ``tau_optimization.py``, ``tasks.py``) whose numbers equal MTME's own code on the same inputs (tests
carry MTME's cases). MTME is not a dependency. Pure core: arrays in, numbers out; no file I/O, no global RNG;
numpy only (MTME's ``scipy.stats.zscore`` as scipy computes it: :func:`.sig_matrix.zscore`); the pair counts of the
permutation p-values and of pairwise accuracy in compiled kernels (:mod:`.kernels`) when they can be had, else
numpy (the same counts).

The modules follow MTME's own split: :mod:`.accuracy` (pairwise accuracy), :mod:`.pce` (soft pairwise accuracy,
MTME's ``pce.py``), :mod:`.tau_optimization` (Kendall variants, tau optimization, acc_eq; MTME's
``tau_optimization.py``), :mod:`.sig_matrix` (the significance tests between metrics, for many pairs at once on
shared draws: MTME's ``ComputeSigMatrix``), :mod:`.permutation` (the tests of one pair, and PERM-BOTH of any
statistic), :mod:`.draws` (the draws and MTME's early stopping), :mod:`.inputs` (types and checks).

Conventions
-----------
- Matrices are ``systems x items``: ``metric[S, n]``, ``human[S, n]``, float64; NaN = missing. Human scores may be
  sparse; a metric score that is NaN where the human score is present is an input error (``ValueError``), except
  in :func:`tau_optimization` / :func:`acc_eq`, which drop such entries as MTME's ``tau_optimization`` does.
- Higher is better for both (callers orient error-like scores first, e.g. negate MQM penalties or TER).
- MTME packs a matrix as a system-major vector (``Correlation.gold_scores``); ``metric.ravel()`` is that vector,
  and ``average_by`` has MTME's meaning: 'item' = one group per item (column), 'sys' = one per system (row),
  'none' = one group of everything.
- Statistics WMT23/24/25 use (``tasks.WMT23``/``WMT24``/``WMT25``): system-level pairwise accuracy
  (:func:`pairwise_accuracy`, :func:`global_pairwise_accuracy`), system-level soft pairwise accuracy = 1 - PCE
  (:func:`soft_pairwise_accuracy`), segment-level acc_eq = ``KendallWithTiesOpt(variant='acc23',
  sample_rate=1.0, average_by='item')`` (:func:`acc_eq`), and their significance tests
  (:func:`pairwise_accuracy_test`, :func:`soft_pairwise_accuracy_test`: PERM-BOTH, ``perm_test='scores'``;
  :func:`acc_eq_pairs_test`: ``perm_test='pairs'``).

Randomness
----------
- The permutation p-values behind soft pairwise accuracy use MTME's own fixed generator
  (``default_rng(seed=4)``, float32 uniforms rounded to a +-1 sign matrix): numbers equal MTME's bit for bit.
- Significance tests between two metrics draw from ``numpy.random.default_rng(seed)``; MTME uses the unseeded
  global ``np.random`` there, so the *procedure* is MTME's but individual p-values are not MTME's.
"""

from .accuracy import global_pairwise_accuracy, pairwise_accuracy, pairwise_agreement
from .inputs import MTME_COMMIT, VARIANTS, AccEq, SigDiff
from .kernels import KERNELS
from .pce import (
    complete_block,
    mtme_sign_matrix,
    one_minus_pce,
    pairwise_p_values,
    pairwise_p_values_corpus,
    soft_pairwise_accuracy,
    soft_pairwise_accuracy_corpus,
)
from .permutation import (
    acc_eq_pairs_test,
    pairwise_accuracy_test,
    pearson_rows,
    pearson_test,
    perm_both_test,
    soft_pairwise_accuracy_test,
)
from .sig_matrix import (
    Tester,
    acc_eq_pairs,
    acc_eq_tester,
    pairwise_accuracy_pairs,
    pairwise_accuracy_tester,
    pearson_pairs,
    pearson_tester,
    soft_pairwise_accuracy_pairs,
    soft_pairwise_accuracy_tester,
)
from .tau_optimization import TauOptimization, acc_eq, kendall_variants, kendall_variants_grouped, tau_optimization

__all__ = [
    "AccEq", "KERNELS", "MTME_COMMIT", "SigDiff", "TauOptimization", "Tester", "VARIANTS", "acc_eq", "acc_eq_pairs",
    "acc_eq_pairs_test", "acc_eq_tester", "pairwise_accuracy_pairs", "pairwise_accuracy_tester", "pearson_pairs",
    "pearson_tester", "soft_pairwise_accuracy_pairs", "soft_pairwise_accuracy_tester",
    "complete_block", "global_pairwise_accuracy", "kendall_variants", "kendall_variants_grouped",
    "mtme_sign_matrix", "one_minus_pce", "pairwise_accuracy", "pairwise_accuracy_test", "pairwise_agreement",
    "pairwise_p_values", "pairwise_p_values_corpus", "pearson_rows", "pearson_test", "perm_both_test",
    "soft_pairwise_accuracy", "soft_pairwise_accuracy_corpus", "soft_pairwise_accuracy_test", "tau_optimization",
]
