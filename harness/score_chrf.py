"""``harness-score -m chrf``: chrF and chrF++ of files, from the statistics of :mod:`harness.text.chrf_counting`:
as sacrebleu's ``-m chrf`` prints them (:class:`ChrfMetric`, for :func:`harness.score_output.dropin_report`), and
our own output (``--full``, ``-f tsv``: :func:`report`)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .core.chrf import ChrfOptions, ChrfScore, ChrfScoreFn, ChrfStats, chrf_signature, corpus_chrf, sentence_chrf
from .score_output import dumps, format_paired_text, json_out, paired_results, seed_of, text_lines, tsv
from .text.chrf_counting import chrf_statistics
from .text.chunks import Source
from .text.reading import check_parallel

PROG = "harness-score"


@dataclass(frozen=True)
class ChrfSystem:
    name: str
    path: str
    stats: ChrfStats


def chrf_files(inputs: tuple[list[Source], list[Source]], names: Sequence[str], paths: Sequence[str],
               opts: ChrfOptions, warn: bool) -> list[ChrfSystem]:
    """Read every file whole (checked as for BLEU: the same errors, and the same warnings when ``warn``: not
    printed twice when BLEU is scored too) and count each system's statistics."""
    refs, hyps = inputs
    texts = [s.read() for s in (*refs, *hyps)]
    check_parallel(texts)
    if warn:
        for text in texts:
            for warning in text.warnings:
                print(f"{PROG}: warning: {text.path}: {warning}", file=sys.stderr)
    stats = chrf_statistics([t.lines for t in texts[len(refs):]], [t.lines for t in texts[:len(refs)]], opts)
    return [ChrfSystem(n, p, st) for n, p, st in zip(names, paths, stats)]


#: sacrebleu's short names of chrF's signature fields (``--short``); ``harness`` (our version) is its ``v``.
_SHORT = {"nrefs": "#", "bs": "bs", "ar": "ar", "seed": "rs", "case": "c", "eff": "e", "nc": "nc", "nw": "nw",
          "space": "s", "harness": "v"}


def short_signature(sig: str) -> str:
    """sacrebleu's short form of a chrF signature: ``#:1|c:mixed|e:yes|nc:6|nw:0|s:no|v:...``."""
    parts = (field.partition(":") for field in sig.split("|"))
    return "|".join(f"{_SHORT.get(key, key)}:{value}" for key, _, value in parts)


@dataclass
class ChrfMetric:
    """chrF of every system, as sacrebleu's output needs it (:class:`harness.score_output.DropInMetric`)."""

    opts: ChrfOptions
    systems: list[ChrfSystem]
    key = "CHRF"

    @property
    def name(self) -> str:
        return self.opts.name

    @property
    def score_fn(self) -> Any:
        return ChrfScoreFn(self.opts)

    def stats(self, i: int) -> Any:
        return self.systems[i].stats

    def corpus(self, i: int) -> tuple[float, str]:
        return corpus_chrf(self.systems[i].stats, self.opts).score, ""

    def signature(self, extra: Mapping[str, str] | None, short: bool) -> str:
        sig = chrf_signature(self.opts, self.systems[0].stats.nrefs_label, extra)
        return short_signature(sig) if short else sig

    def sentence_lines(self, i: int, width: int, score_only: bool, sig: str) -> list[str]:
        values = sentence_chrf(self.systems[i].stats, self.opts).tolist()
        if score_only:
            return [f"{v:.{width}f}" for v in values]
        return [f"{self.opts.name}|{sig} = {v:.{width}f}" for v in values]

    def warn(self, i: int) -> None:
        """sacrebleu's chrF logs nothing when it reads a system."""


def _object(system: ChrfSystem, score: ChrfScore, width: int, multi: bool) -> dict[str, Any]:
    """sacrebleu's JSON keys (``name``, ``score``, ``signature``, the signature fields) and, for several systems,
    ``system`` and the formatted score under the metric's name."""
    fields = dict(f.split(":", 1) for f in score.signature.split("|"))
    fields["version"] = fields.pop("harness")
    out: dict[str, Any] = {"name": score.name, "score": score.score, "signature": score.signature, **fields,
                           "stats": score.stats, "system": system.path if multi else system.name}
    if multi:
        out[score.name] = f"{score.score:.{width}f}"
    return out


def report_corpus(systems: list[ChrfSystem], opts: ChrfOptions, args: argparse.Namespace) -> str:
    scores = [(s, corpus_chrf(s.stats, opts)) for s in systems]
    width = args.width
    if args.score_only:
        return "\n".join(sc.format(width, score_only=True) for _, sc in scores)
    if args.format == "json":
        return json_out([_object(s, sc, width, len(systems) > 1) for s, sc in scores], args)
    if args.format == "tsv":
        return tsv([{"name": s.name, "score": sc.score, "signature": sc.signature} for s, sc in scores],
                   ["name", "score", "signature"])
    return text_lines([(s.name, sc) for s, sc in scores], width)


def report_sentences(systems: list[ChrfSystem], opts: ChrfOptions, args: argparse.Namespace) -> str:
    width, multi = args.width, len(systems) > 1
    rows: list[dict[str, Any]] = []
    lines: list[str] = []
    for system in systems:
        for i, value in enumerate(sentence_chrf(system.stats, opts).tolist()):
            rows.append({**({"system": system.name} if multi else {}), "seg_id": i, "name": opts.name,
                         "score": value})
            if args.score_only:
                lines.append(f"{value:.{width}f}")
            else:
                lines.append((f"{system.name}\t" if multi else "") + f"{opts.name} = {value:.{width}f}")
    if args.format == "json" and not args.score_only:
        return dumps(rows)
    if args.format == "tsv" and not args.score_only:
        return tsv(rows, (["system"] if multi else []) + ["seg_id", "score"])
    if not args.score_only:
        lines.append(f"signature: {chrf_signature(opts, systems[0].stats.nrefs_label)}")
    return "\n".join(lines)


def report_paired(systems: list[ChrfSystem], opts: ChrfOptions, args: argparse.Namespace) -> str:
    """sacrebleu's paired tests for chrF (bootstrap resamples scored in its float32: the same p-values)."""
    results, extra = paired_results(args, [(s.name, s.stats) for s in systems], ChrfScoreFn(opts))
    sig = chrf_signature(opts, systems[0].stats.nrefs_label, extra)
    if args.score_only:
        return "\n".join(f"{r.score:.{args.width}f}" for r in results)
    if args.format == "text":
        return format_paired_text(results, args.width, sig, metric=opts.name)
    rows = [{"system": s.path, "name": opts.name, "score": r.score, "p_value": r.p_value, "mean": r.mean,
             "ci": r.ci, "ci_low": r.ci_low, "ci_high": r.ci_high, "signature": sig,
             opts.name: {"score": r.score, "p_value": r.p_value, "mean": r.mean, "ci": r.ci}}
            for s, r in zip(systems, results)]
    if args.format == "json":
        return dumps(rows)
    return tsv(rows, ["system", "score", "p_value", "ci_low", "ci_high", "signature"])


def report_confidence(systems: list[ChrfSystem], opts: ChrfOptions, args: argparse.Namespace) -> str:
    """sacrebleu's ``--confidence`` for chrF: the score, its bootstrap mean and 95% half-width."""
    from .core.significance import signature_extra, systems_ci

    seed, n = seed_of(args), args.n_samples or 1000
    cis = systems_ci([(s.name, s.stats) for s in systems], ChrfScoreFn(opts), n, seed)
    sig = chrf_signature(opts, systems[0].stats.nrefs_label, signature_extra("bs", n, seed))
    if args.score_only:
        return "\n".join(f"{ci.score:.{args.width}f}" for ci in cis)
    rows = [{"system": s.path if len(systems) > 1 else s.name, "name": opts.name, "score": ci.score,
             "mean": ci.mean, "ci": ci.ci, "ci_low": ci.ci_low, "ci_high": ci.ci_high, "signature": sig}
            for s, ci in zip(systems, cis)]
    if args.format == "json":
        return json_out(rows, args)
    if args.format == "tsv":
        return tsv([{**r, "name": s.name} for s, r in zip(systems, rows)],
                   ["name", "score", "mean", "ci", "ci_low", "ci_high", "signature"])
    multi = len(systems) > 1
    return "\n".join((f"{s.name}  " if multi else "") + f"{opts.name}|{sig} = {ci.format(args.width)}"
                     for s, ci in zip(systems, cis))


def report(systems: list[ChrfSystem], opts: ChrfOptions, args: argparse.Namespace) -> str:
    if args.sentence_level:
        return report_sentences(systems, opts, args)
    if args.paired_bs or args.paired_ar:
        return report_paired(systems, opts, args)
    if args.confidence:
        return report_confidence(systems, opts, args)
    return report_corpus(systems, opts, args)
