"""chrF and chrF++ (Popović 2015, 2017) as pure functions of per-segment sufficient statistics, exactly sacrebleu
2.x's ``CHRF``.

For every segment and order (character n-grams ``1..char_order``, then word n-grams ``1..word_order``) the
statistics are ``[hyp, ref, match]``: the hypothesis n-grams (0 when the reference has none of that order), the
reference n-grams and the clipped matches, taken from the *one* reference with the best segment F-score
(:mod:`harness.text.chrf_counting` counts them). They add up over segments, so the corpus score is a function of
their sums (:func:`chrf_formula`), like BLEU's: bootstrap intervals and paired tests apply.

The formula: per order ``prec = match / hyp``, ``rec = match / ref``; by default (``eps_smoothing=False``, sacrebleu
>= 2.0) the precisions and recalls are averaged over the orders where both hypothesis and reference have n-grams
and ``F = (1 + beta^2) P R / (beta^2 P + R)``; with ``eps_smoothing`` (chrF++.py, NLTK, Moses) it is the mean of
the per-order F-scores, an empty side counting as ``1e-16``. Vectorised over leading axes; the arithmetic is
sacrebleu's, step for step, in float64 or, for bootstrap resamples, in the float32 sacrebleu uses there
(``arithmetic="float32"``: its resamples sum float32 statistics), so p-values equal sacrebleu's.

Pure core: numpy in, numbers out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigError
from ..version import __version__

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: sacrebleu's epsilon for an empty side (``CHRF._compute_f_score``).
EPS = 1e-16
#: The names of :class:`ChrfOptions`, in sacrebleu's argument order.
CHRF_OPTION_NAMES: tuple[str, ...] = ("char_order", "word_order", "beta", "lowercase", "whitespace", "eps_smoothing")


@dataclass(frozen=True)
class ChrfOptions:
    """sacrebleu's ``CHRF`` arguments: ``char_order`` 6, ``word_order`` 0 (2: chrF++), ``beta`` 2, ``lowercase``,
    ``whitespace`` (keep spaces in character n-grams) and ``eps_smoothing`` (chrF++.py's smoothing instead of
    the effective order)."""

    char_order: int = 6
    word_order: int = 0
    beta: int = 2
    lowercase: bool = False
    whitespace: bool = False
    eps_smoothing: bool = False

    def __post_init__(self) -> None:
        for key in ("char_order", "word_order", "beta"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < (1 if key == "char_order" else 0):
                raise ConfigError(key, f"must be a {'positive' if key == 'char_order' else 'non-negative'} integer, "
                                  f"got {value!r}", expected="an integer", got=value)
        for key in ("lowercase", "whitespace", "eps_smoothing"):
            if not isinstance(getattr(self, key), bool):
                raise ConfigError(key, f"must be true or false, got {getattr(self, key)!r}", ["true", "false"],
                                  got=getattr(self, key))

    @property
    def order(self) -> int:
        """Character and word orders together: the statistics have ``3 * order`` columns."""
        return self.char_order + self.word_order

    @property
    def name(self) -> str:
        """sacrebleu's score name: ``chrF2``, ``chrF2++`` (``+`` per word order)."""
        return f"chrF{self.beta}" + "+" * self.word_order

    def as_params(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in CHRF_OPTION_NAMES}


def make_chrf_options(**options: Any) -> ChrfOptions:
    """Options from keyword arguments, rejecting unknown names with the valid ones listed."""
    unknown = sorted(set(options) - set(CHRF_OPTION_NAMES))
    if unknown:
        raise ConfigError(unknown[0], "unknown chrF option", CHRF_OPTION_NAMES)
    return ChrfOptions(**{k: v for k, v in options.items() if v is not None})


@dataclass(frozen=True)
class ChrfStats:
    """Per-segment chrF statistics ``[n, 3 * order]`` (``[hyp, ref, match]`` per order, characters first) against
    ``n_refs`` reference streams (``variable_refs``: some segment lacks some reference)."""

    stats: IntArray
    n_refs: int = 1
    variable_refs: bool = False

    def __len__(self) -> int:
        return int(self.stats.shape[0])

    @property
    def nrefs_label(self) -> int | str:
        return "var" if self.variable_refs else self.n_refs

    def matrix(self) -> FloatArray:
        """The statistics as float64 (what score functions and the resampling engine read)."""
        return self.stats.astype(np.float64)

    def take(self, index: Any) -> ChrfStats:
        return ChrfStats(self.stats[index], self.n_refs, self.variable_refs)

    @staticmethod
    def concat(parts: Sequence[ChrfStats]) -> ChrfStats:
        return ChrfStats(np.concatenate([p.stats for p in parts]), parts[0].n_refs,
                         any(p.variable_refs for p in parts))


def _columns(stats: Any, opts: ChrfOptions, dtype: Any) -> tuple[Any, Any, Any]:
    s = np.asarray(stats, dtype=np.float64)
    if s.shape[-1] != 3 * opts.order:
        raise ValueError(f"chrF statistics have {s.shape[-1]} columns, expected 3 * {opts.order}")
    s = np.moveaxis(s, -1, 0).astype(dtype)
    return s[0::3], s[1::3], s[2::3]


def chrf_formula(stats: Any, opts: ChrfOptions, arithmetic: str = "float64") -> FloatArray:
    """chrF (0-100) of summed statistics ``[..., 3 * order]`` (vectorised over leading axes): sacrebleu's
    ``_compute_f_score`` operation for operation, in float64 or (``arithmetic='float32'``) in the float32 of its
    bootstrap resamples, where every Python float meets a float32 and is rounded to one first (NumPy's rules)."""
    f32 = arithmetic == "float32"
    dtype = np.float32 if f32 else np.float64
    hyp, ref, match = _columns(stats, opts, dtype)
    factor = opts.beta ** 2
    shape = hyp.shape[1:]
    one = np.ones(shape, dtype=dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        if opts.eps_smoothing:
            return _eps_smoothed(hyp, ref, match, opts, dtype)
        avg_prec = np.zeros(shape, dtype=dtype)
        avg_rec = np.zeros(shape, dtype=dtype)
        count = np.zeros(shape, dtype=np.int64)
        for i in range(opts.order):
            used = (hyp[i] > 0) & (ref[i] > 0)
            prec = np.where(used, match[i] / np.where(used, hyp[i], one), 0)
            rec = np.where(used, match[i] / np.where(used, ref[i], one), 0)
            avg_prec = np.where(used, avg_prec + prec, avg_prec).astype(dtype)
            avg_rec = np.where(used, avg_rec + rec, avg_rec).astype(dtype)
            count += used
        ok = count > 0
        avg_prec = np.where(ok, avg_prec / np.where(ok, count, 1).astype(dtype), 0).astype(dtype)
        avg_rec = np.where(ok, avg_rec / np.where(ok, count, 1).astype(dtype), 0).astype(dtype)
        num = (dtype(1 + factor) * avg_prec).astype(dtype) * avg_rec
        den = (dtype(factor) * avg_prec).astype(dtype) + avg_rec
        score = np.where(avg_prec + avg_rec != 0, dtype(100) * (num / np.where(den != 0, den, one)), 0)
    return np.asarray(score, dtype=dtype).astype(np.float64)


def _eps_smoothed(hyp: Any, ref: Any, match: Any, opts: ChrfOptions, dtype: Any) -> FloatArray:
    """``eps_smoothing``: the mean of the per-order F-scores. In float64 this is Python's arithmetic. In float32
    (sacrebleu's resamples) an empty side is the Python float 1e-16: where it meets a float32 it is rounded to one
    first; an order with both sides empty stays a Python float, and so does the running sum until its first
    float32 term (NumPy's rules for Python scalars), which is tracked element by element."""
    factor = opts.beta ** 2
    shape = hyp.shape[1:]
    if dtype is np.float64:
        score = np.zeros(shape)
        for i in range(opts.order):
            prec = np.where(hyp[i] > 0, match[i] / np.where(hyp[i] > 0, hyp[i], 1.0), EPS)
            rec = np.where(ref[i] > 0, match[i] / np.where(ref[i] > 0, ref[i], 1.0), EPS)
            denom = factor * prec + rec
            score = score + np.where(denom > 0, (1 + factor) * prec * rec / np.where(denom > 0, denom, 1.0), EPS)
        return np.asarray(100 * score / opts.order, dtype=np.float64)
    f32 = np.float32
    py_score = np.zeros(shape)  # the running sum while it is still a Python float
    f32_score = np.zeros(shape, dtype=f32)
    is_py = np.ones(shape, dtype=bool)
    one = np.ones(shape, dtype=f32)
    for i in range(opts.order):
        has_p, has_r = hyp[i] > 0, ref[i] > 0
        prec = (match[i] / np.where(has_p, hyp[i], one)).astype(f32)
        rec = (match[i] / np.where(has_r, ref[i], one)).astype(f32)
        e32 = f32(EPS)
        # the four cases of (prec, rec): float32 or the Python float EPS
        denom = np.where(has_p & has_r, (f32(factor) * prec).astype(f32) + rec,
                         np.where(has_p, (f32(factor) * prec).astype(f32) + e32,
                                  f32(factor * EPS) + rec)).astype(f32)
        num = np.where(has_p & has_r, (f32(1 + factor) * prec).astype(f32) * rec,
                       np.where(has_p, (f32(1 + factor) * prec).astype(f32) * e32,
                                f32((1 + factor) * EPS) * rec)).astype(f32)
        term32 = np.where(denom > 0, num / np.where(denom > 0, denom, one), e32).astype(f32)
        term_is_py = ~has_p & ~has_r | ((has_p | has_r) & ~(denom > 0))
        term_py = np.where(~has_p & ~has_r, (1 + factor) * EPS * EPS / (factor * EPS + EPS), EPS)
        stays_py = is_py & term_is_py
        py_score = np.where(stays_py, py_score + term_py, py_score)
        start32 = is_py & ~term_is_py  # a Python float sum meets a float32 term: the sum is rounded first
        f32_score = np.where(start32, (py_score.astype(f32) + term32).astype(f32), f32_score)
        cont = ~is_py
        f32_score = np.where(cont & term_is_py, (f32_score + term_py.astype(f32)).astype(f32),
                             np.where(cont, (f32_score + term32).astype(f32), f32_score)).astype(f32)
        is_py = stays_py
    out32 = ((f32(100) * f32_score).astype(f32) / f32(opts.order)).astype(f32).astype(np.float64)
    return np.where(is_py, 100 * py_score / opts.order, out32)


@dataclass(frozen=True)
class ChrfScore:
    """One chrF score: ``score`` (0-100), the ``name`` (``chrF2``, ``chrF2++``), the summed statistics and the
    signature."""

    score: float
    name: str
    stats: list[int]
    signature: str
    options: ChrfOptions = field(repr=False, compare=False, default_factory=ChrfOptions)

    def format(self, width: int = 2, signature: bool = True, score_only: bool = False) -> str:
        """sacrebleu's score line: ``chrF2|sig = 58.71``."""
        if score_only:
            return f"{self.score:.{width}f}"
        return f"{self.name}|{self.signature} = {self.score:.{width}f}" if signature else \
            f"{self.name} = {self.score:.{width}f}"

    def __str__(self) -> str:
        return self.format()


def chrf_signature(opts: ChrfOptions, nrefs: int | str, extra: Mapping[str, Any] | None = None) -> str:
    """sacrebleu's chrF signature fields (``nrefs``, ``case``, ``eff``, ``nc``, ``nw``, ``space``; ``beta`` is in the
    score's name, ``chrF1``, as in sacrebleu's) and our version last where sacrebleu has ``version``."""
    fields: dict[str, Any] = {"nrefs": nrefs, **(extra or {}), "case": "lc" if opts.lowercase else "mixed",
                              "eff": "no" if opts.eps_smoothing else "yes", "nc": opts.char_order,
                              "nw": opts.word_order, "space": "yes" if opts.whitespace else "no"}
    fields["harness"] = __version__
    return "|".join(f"{k}:{v}" for k, v in fields.items())


def corpus_chrf(stats: ChrfStats, opts: ChrfOptions, extra: Mapping[str, Any] | None = None) -> ChrfScore:
    """The corpus chrF of per-segment statistics."""
    sums = stats.stats.sum(axis=0)
    return ChrfScore(float(chrf_formula(sums, opts)), opts.name, [int(x) for x in sums],
                     chrf_signature(opts, stats.nrefs_label, extra), opts)


def sentence_chrf(stats: ChrfStats, opts: ChrfOptions) -> FloatArray:
    """chrF of every segment (vectorised)."""
    return chrf_formula(stats.stats, opts)


@dataclass(frozen=True)
class ChrfScoreFn:
    """chrF of summed statistics for the resampling engine: ``fn(sums[..., 3 * order]) -> scores[...]``;
    :meth:`resampled` scores bootstrap resamples in sacrebleu's float32 (``sacrebleu_float32``), so p-values
    equal sacrebleu's."""

    opts: ChrfOptions
    sacrebleu_float32: bool = True

    def __call__(self, sums: Any) -> FloatArray:
        return chrf_formula(sums, self.opts)

    def resampled(self, sums: Any) -> FloatArray:
        return chrf_formula(sums, self.opts, "float32" if self.sacrebleu_float32 else "float64")
