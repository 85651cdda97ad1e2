"""What a comparison is asked: two systems (or more: the first is the baseline), their references, the options,
and how to resample and report.

One :class:`ComparisonRequest` per comparison, built from texts already read (:meth:`ComparisonRequest.of_files`:
``harness-compare``, ``harness-history --compare``, a job's ``compare=[[A, B], ...]``) or from lines (the API and
the tests); :func:`~.engine.compare` (two systems) and :func:`~.engine.compare_systems` (two or more) answer it.
Checked here, before anything is counted.
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
    (``references[k][i]``, None = absent) under ``options``; ``others``: more systems, each compared with ``a``
    too (:func:`~.engine.compare_systems`).

    ``source``: the source lines or None. ``human_name``: the display name of the human scores of the sides.
    ``train_counts``: word frequencies of a training corpus (:func:`word_counts`; default: the first reference's,
    as compare-mt) named ``train_name``. ``sentence_options``: the options of the sentence BLEU of buckets and
    examples (default :func:`~harness.core.options.sentence_options` of ``options``: WMT's sentBLEU).
    ``statistics``: the caller's statistics of every system (``a``, ``b``, then ``others``) against these
    references, if it has them: the comparison counts its own and refuses statistics that differ (they would belong
    to other texts or options).
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
    statistics: tuple[SegmentStats, ...] | None = None
    n_samples: int = DEFAULT_SAMPLES
    seed: int | None = DEFAULT_SEED
    top: int = DEFAULT_TOP
    n_examples: int = DEFAULT_EXAMPLES
    dataset: str = ""
    refset: str = ""
    variant: str = ""
    others: Sequence[Side] = ()
    _checked: bool = field(default=False, repr=False)

    @property
    def systems(self) -> tuple[Side, ...]:
        """Every system: ``a`` (the baseline), ``b``, then ``others``."""
        return (self.a, self.b, *self.others)

    @classmethod
    def of_files(cls, a: TextFile, b: TextFile, references: Sequence[TextFile], options: BleuOptions, *,
                 labels: Sequence[str | None] = (None, None), source: TextFile | None = None,
                 human: HumanScores | None = None, human_name: str | None = None, train: TextFile | None = None,
                 others: Sequence[TextFile] = (), train_name: str | None = None, **settings: Any
                 ) -> ComparisonRequest:
        """A request from files already read: the systems (``a``, ``b``, then ``others``) are named by ``labels``
        (one per system, ``NAME@VERSION``, default the texts' names), their human scores looked up there by label
        (``human_name``: its display name, default the kind's), word frequencies counted in ``train`` when given
        (named ``train_name``, default its file name); ``settings``: the other fields."""
        texts = (a, b, *others)
        if len(labels) > len(texts):
            raise ConfigError("labels", f"{len(labels)} labels for {len(texts)} systems", got=list(labels))
        names = [(labels[k] if k < len(labels) else None) or t.name for k, t in enumerate(texts)]
        if train is not None:
            settings.update(train_counts=word_counts(train.lines, options), train_name=train_name or train.path.name)
        sides = [Side.of_text(label, t, human) for label, t in zip(names, texts)]
        return cls(sides[0], sides[1], [r.lines for r in references], options,
                   ref_names=[r.name for r in references], source=None if source is None else source.lines,
                   human_name=None if human is None else (human_name or human.name), others=tuple(sides[2:]),
                   **settings)

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
        return replace(self, options=opts, n_samples=n_samples, seed=seed, others=tuple(self.others), _checked=True)

    def _check_inputs(self) -> None:
        a, references, source = self.a, self.references, self.source
        sides = self.systems
        n = len(a.lines)
        if n == 0:
            raise InputError("no segments to compare")
        seen: set[str] = set()
        for side in sides:
            if side.label in seen:
                raise ConfigError("systems", f"a system cannot be compared with itself ({side.label!r} twice)",
                                  got=side.label)
            seen.add(side.label)
        for side in sides:
            if len(side.lines) != n:
                raise InputError(f"system {side.label!r} has {len(side.lines)} lines; expected {n} like "
                                 f"{a.label!r}")
            if side.human is not None and len(side.human) != n:
                raise InputError(f"human scores of {side.label!r} cover {len(side.human)} segments, expected {n}")
        if self.statistics is not None:
            if len(self.statistics) != len(sides):
                raise InputError(f"statistics of {len(self.statistics)} systems for {len(sides)} systems")
            for side, stats in zip(sides, self.statistics):
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
