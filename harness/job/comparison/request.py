"""What a comparison is asked: two systems, their references, the options, and how to resample and report.

One :class:`ComparisonRequest` per comparison, built from texts already read (:meth:`ComparisonRequest.of_files`:
``harness-compare``, ``harness-history --compare``, a job's ``compare=[[A, B], ...]``) or from lines (the API and
the tests); :func:`~.engine.compare` answers it. Checked here, before anything is counted.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Any, Mapping, Sequence

import numpy as np

from ...core.options import BleuOptions
from ...core.profiles import additive_profiles, get_profile
from ...core.resampling import DEFAULT_SEED, check_n_samples, check_seed
from ...core.stats import SegmentStats
from ...errors import ConfigError, InputError
from ...text.reading import TextFile
from ...text.tokenizers import case_and_tokenize
from ..human import HumanScores
from .result import DEFAULT_EXAMPLES, DEFAULT_SAMPLES, DEFAULT_TOP, FloatArray


@dataclass(frozen=True, eq=False)
class Side:
    """One system of a comparison: its ``name`` (and ``version``), output ``lines``, the hash of its text, and its
    per-segment human scores (higher is better, NaN where not judged) or None."""

    name: str
    lines: Sequence[str]
    version: str | None = None
    sha256: str = ""
    human: FloatArray | None = None

    @property
    def label(self) -> str:
        """``NAME@VERSION`` or ``NAME``."""
        return self.name if self.version is None else f"{self.name}@{self.version}"

    @classmethod
    def of_text(cls, label: str, text: TextFile, human: HumanScores | None = None) -> Side:
        """The system ``label`` (``NAME@VERSION`` or ``NAME``) with the text read from its file, and its scores in
        ``human`` (oriented so that higher is better; None when it has no segment scores there)."""
        name, at, version = label.partition("@")
        seg = None if human is None else human.oriented().seg.get(label)
        return cls(name if at else label, text.lines, version if at else None, text.sha256,
                   None if seg is None else np.asarray(seg, dtype=np.float64))


def word_counts(lines: Sequence[str], opts: BleuOptions) -> Counter[str]:
    """Word frequencies of a corpus (e.g. the training data) under the options' case and tokenizer, so they
    count the same words the comparison sees."""
    return Counter(chain.from_iterable(case_and_tokenize(list(lines), opts.resolved())))


@dataclass(frozen=True, eq=False)
class ComparisonRequest:
    """Compare system ``b`` with system ``a`` (every ``delta`` is B minus A) against reference streams
    (``references[k][i]``, None = absent) under ``options``.

    ``source``: the source lines or None. ``human_name``: the display name of the human scores of the sides.
    ``train_counts``: word frequencies of a training corpus (:func:`word_counts`; default: the first reference's,
    as compare-mt) named ``train_name``. ``sentence_options``: the options of the sentence BLEU of buckets and
    examples (default :func:`~harness.core.options.sentence_options` of ``options``: WMT's sentBLEU).
    ``statistics``: the caller's statistics of both systems against these references, if it has them: the
    comparison counts its own and refuses statistics that differ (they would belong to other texts or options).
    ``dataset``, ``refset``, ``variant``: labels carried into the tables. Seeded: the same request gives the same
    result.
    """

    a: Side
    b: Side
    references: Sequence[Sequence[str | None]]
    options: BleuOptions
    ref_names: Sequence[str] = ()
    source: Sequence[str] | None = None
    human_name: str | None = None
    train_counts: Mapping[str, int] | None = None
    train_name: str = "training corpus"
    sentence_options: BleuOptions | None = None
    statistics: tuple[SegmentStats, SegmentStats] | None = None
    n_samples: int = DEFAULT_SAMPLES
    seed: int | None = DEFAULT_SEED
    top: int = DEFAULT_TOP
    n_examples: int = DEFAULT_EXAMPLES
    dataset: str = ""
    refset: str = ""
    variant: str = ""
    _checked: bool = field(default=False, repr=False)

    @classmethod
    def of_files(cls, a: TextFile, b: TextFile, references: Sequence[TextFile], options: BleuOptions, *,
                 labels: tuple[str | None, str | None] = (None, None), source: TextFile | None = None,
                 human: HumanScores | None = None, human_name: str | None = None, train: TextFile | None = None,
                 **settings: Any) -> ComparisonRequest:
        """A request from files already read: the systems are named by ``labels`` (``NAME@VERSION``, default the
        texts' names), their human scores looked up there by label (``human_name``: its display name, default
        the kind's), word frequencies counted in ``train`` when given; ``settings``: the other fields."""
        la, lb = labels[0] or a.name, labels[1] or b.name
        if train is not None:
            settings.update(train_counts=word_counts(train.lines, options), train_name=train.path.name)
        return cls(Side.of_text(la, a, human), Side.of_text(lb, b, human), [r.lines for r in references], options,
                   ref_names=[r.name for r in references], source=None if source is None else source.lines,
                   human_name=None if human is None else (human_name or human.name), **settings)

    def checked(self) -> ComparisonRequest:
        """The request with its options resolved and every setting and input checked (a :class:`ConfigError` or
        :class:`InputError` naming what is wrong)."""
        opts = self.options.resolved()
        if not get_profile(opts.profile).additive:
            raise ConfigError("profile", f"profile {opts.profile!r} is not a function of summed statistics, so its "
                              "buckets cannot be resampled; compare with another profile", additive_profiles(),
                              got=opts.profile)
        n_samples, seed = check_n_samples(self.n_samples), check_seed(self.seed)
        if isinstance(self.top, bool) or not isinstance(self.top, int) or self.top < 1:
            raise ConfigError("top", f"must be a positive integer, got {self.top!r}", got=self.top)
        if isinstance(self.n_examples, bool) or not isinstance(self.n_examples, int) or self.n_examples < 0:
            raise ConfigError("examples", f"must be a non-negative integer, got {self.n_examples!r}",
                              got=self.n_examples)
        self._check_inputs()
        return replace(self, options=opts, n_samples=n_samples, seed=seed, _checked=True)

    def _check_inputs(self) -> None:
        a, b, references, source = self.a, self.b, self.references, self.source
        n = len(a.lines)
        if n == 0:
            raise InputError("no segments to compare")
        if a.label == b.label:
            raise ConfigError("systems", f"a system cannot be compared with itself ({a.label!r} twice)", got=a.label)
        for side in (a, b):
            if len(side.lines) != n:
                raise InputError(f"system {side.label!r} has {len(side.lines)} lines; expected {n} like "
                                 f"{a.label!r}")
            if side.human is not None and len(side.human) != n:
                raise InputError(f"human scores of {side.label!r} cover {len(side.human)} segments, expected {n}")
        if self.statistics is not None:
            for side, stats in zip((a, b), self.statistics):
                if len(stats) != n:
                    raise InputError(f"the statistics of {side.label!r} have {len(stats)} segments, expected {n}")
        if not references:
            raise InputError("no references")
        for k, stream in enumerate(references):
            if len(stream) != n:
                raise InputError(f"reference stream {k} has {len(stream)} segments, expected {n}")
        if any(None in stream for stream in references):
            for i in range(n):
                if all(stream[i] is None for stream in references):
                    raise InputError(f"segment {i} has no reference (every stream is None there)")
        if source is not None and len(source) != n:
            raise InputError(f"the source has {len(source)} lines, expected {n}")
