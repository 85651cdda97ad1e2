"""Benchmark: the BLEU core (issue 2), harness vs sacrebleu 2.x, NLTK and bleuscore, side by side in one run.

Measured (medians over ``--repeats`` runs, 3 by default; the slow sacrebleu runs at 1M segments once):

(a) shared data (``harness/data/wmt21_news_ende``, 527 segments, 9 systems, refs C and D): corpus BLEU 13a from
    raw text, ``harness.corpus_bleu`` vs ``sacrebleu.BLEU().corpus_score`` (1 and 2 references), vs NLTK
    ``corpus_bleu`` (``profile="nltk"``, whitespace tokens; the split is timed for NLTK too) and vs
    ``bleuscore.compute`` (``profile="hf"``, smoothing on both sides);
(b) generated corpora (fixed seed, written once to ``benchmarks/_data/``): Zipfian vocabulary of 50k words,
    lengths 5-60, punctuation, digits, capitals; references = noisy copies of an underlying sentence, hypothesis =
    a noisier copy. Corpus BLEU 13a from raw text (tokenization included) with 1 and 4 references, harness vs
    sacrebleu and vs bleuscore (``hf`` profile). Each (tool, size, refs) runs in its own subprocess, which also
    gives its peak RSS (``ru_maxrss``);
(c) ``harness-score`` vs the ``sacrebleu`` CLI as whole processes (wall time) on 3,000 and 100,000 segments, and
    the peak RSS of ``harness-score`` at 1M segments (``/usr/bin/time -v``);
(d) sentence BLEU of every segment of the 100k corpus: harness (statistics once + vectorised
    ``harness.core.bleu.sentence_scores``) vs sacrebleu ``sentence_score`` per segment, timed on an evenly spaced sample
    of 5,000 segments and extrapolated;
plus the cold start (first call in a fresh process: the kernels are an extension module built at install, so the
first call of the first process after an install costs what any first call does) and where the harness time goes
(stage profile of the 100k, 4-reference case).

Every harness score is checked against its peer (``|diff| <= 1e-9``, asserted). ``--quick``: a smoke run under
a minute (small sizes, one repeat, RESULTS.md not written unless ``--write``).

    python benchmarks/bench_bleu.py [--quick] [--sizes 100000,1000000] [--repeats 3] [--no-write]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from _results import RESULTS, md_table, write_section  # benchmarks/ is the script directory

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "_data"
SHARED = ROOT / "harness" / "data" / "wmt21_news_ende"
SECTION = "## BLEU core (issue 2)"
VENV_BIN = Path(sys.executable).parent
SACREBLEU_CLI = str(VENV_BIN / "sacrebleu")
HARNESS_CLI = str(VENV_BIN / "harness-score")
TOL = 1e-9
GENERATOR_VERSION = 1
SEED = 20240502
MAX_REFS = 4
TARGET_SPEEDUP = 25.0
TARGET_RSS_MB = 2048.0


# ------------------------------------------------------------------------------------------------------ corpus


def _make_vocab(rng: Any, size: int) -> list[str]:
    """``size`` distinct words, shortest first (so that the Zipf head is short words), with names (capitals),
    hyphenated compounds, possessives and numbers (``1,234``, ``12.5``, ``3-8``, years) spread over the ranks
    below the first 200."""
    cons = list("bcdfghjklmnprstvwz") + ["ch", "sch", "st", "tr", "br", "th"]
    vow = list("aeiou") + ["ä", "ö", "ü", "ei", "au", "ie"]
    seen: set[str] = set()
    words: list[str] = []
    while len(words) < size:
        n = int(rng.integers(1, 5))
        w = "".join(cons[int(rng.integers(len(cons)))] + vow[int(rng.integers(len(vow)))] for _ in range(n))
        if rng.random() < 0.3:
            w += cons[int(rng.integers(len(cons)))]
        if w not in seen:
            seen.add(w)
            words.append(w)
    words.sort(key=len)
    out = []
    for i, w in enumerate(words):
        r = rng.random() if i >= 200 else 1.0
        if r < 0.05:
            w = w.capitalize()
        elif r < 0.06:
            w = w + "-" + words[int(rng.integers(size))]
        elif r < 0.07:
            w = w + "'s"
        elif r < 0.085:
            x = int(rng.integers(1, 100_000))
            forms = [str(x), f"{x / 100:.1f}", f"{x:,}", f"{x % 40}-{x % 40 + 5}", str(1900 + x % 130)]
            w = forms[int(rng.integers(5))]
        out.append(w)
    return out


def generate(n: int, seed: int = SEED, n_refs: int = MAX_REFS, vocab_size: int = 50_000) -> dict[str, str]:
    """Texts (one segment per line, final newline) ``ref1..ref{n_refs}`` and ``hyp`` for ``n`` segments.

    Underlying sentences: lognormal lengths (median 22) clipped to 5..60 tokens, Zipf(1.07) words, a punctuation
    token after ~8% of the words. Each copy substitutes (Zipfian draws), deletes and inserts words (references
    12/4/4 %, hypothesis 22/7/7 %), capitalises its first word, attaches closing punctuation to the word before
    and opening punctuation to the word after (so 13a has to split them) and ends with '.', '?' or '!'.
    Vectorised with numpy: 1M segments x 5 texts take about a minute.
    """
    import numpy as np

    close, opening = [",", ".", ";", ":", "?", "!", ")", "%"], ["(", "$"]
    rng = np.random.default_rng(seed)
    words = _make_vocab(rng, vocab_size)
    v, n_punct = vocab_size, len(close) + len(opening)
    p = 1.0 / np.arange(1, v + 1) ** 1.07
    cdf = np.cumsum(p / p.sum())

    def zipf(k: int) -> Any:
        return np.minimum(np.searchsorted(cdf, rng.random(k)), v - 1)

    lengths = np.clip(np.round(rng.lognormal(np.log(22), 0.5, n)), 5, 60).astype(np.int64)
    total = int(lengths.sum())
    base = zipf(total)
    punct = rng.random(total) < 0.08
    base[punct] = v + rng.integers(0, n_punct, int(punct.sum()))
    owner = np.repeat(np.arange(n), lengths)
    starts = np.r_[0, np.cumsum(lengths)[:-1]]
    plain = np.array(words + close + opening, dtype=object)
    capital = np.array([w[:1].upper() + w[1:] for w in words] + close + opening, dtype=object)
    is_close = np.zeros(v + n_punct, bool)
    is_close[v: v + len(close)] = True
    is_open = np.zeros(v + n_punct, bool)
    is_open[v + len(close):] = True
    finals = np.array([".", ".", ".", "?", "!", "."], dtype=object)

    def copy(sub: float, dele: float, ins: float) -> str:
        u = rng.random(total)
        tok = base.copy()
        s = (u >= dele) & (u < dele + sub)
        tok[s] = zipf(int(s.sum()))
        extra = rng.random(total) < ins
        keep = u >= dele
        lost = np.flatnonzero(np.bincount(owner, weights=keep | extra, minlength=n) == 0)
        keep[starts[lost]] = True  # never an empty line: a copy keeps at least one word
        slots = np.stack([tok, np.where(extra, zipf(total), 0)], 1)
        mask = np.stack([keep, extra], 1)
        out = slots[mask]
        lens = np.bincount(np.repeat(owner, 2).reshape(total, 2)[mask], minlength=n)
        first = np.r_[0, np.cumsum(lens)[:-1]]
        strs = plain[out]
        strs[first] = capital[out[first]]
        sep = np.where(is_close[out], "", " ").astype(object)
        sep[1:][is_open[out[:-1]]] = ""
        sep[first] = "\n"
        sep[0] = ""
        pieces = np.empty(2 * out.size, object)
        pieces[0::2] = sep
        pieces[1::2] = strs
        last = 2 * (first + lens - 1) + 1
        pieces[last] = pieces[last] + finals[rng.integers(0, len(finals), n)]
        return "".join(pieces.tolist()) + "\n"

    texts = {f"ref{k + 1}": copy(0.12, 0.04, 0.04) for k in range(n_refs)}
    texts["hyp"] = copy(0.22, 0.07, 0.07)
    return texts


def corpus_dir(n: int) -> Path:
    return DATA / f"synth-{n}-s{SEED}-v{GENERATOR_VERSION}"


def ensure_corpus(n: int) -> Path:
    """Generate the ``n``-segment corpus once (in a subprocess: at 1M the generator peaks at a few GB)."""
    d = corpus_dir(n)
    meta = d / "meta.json"
    if meta.exists() and json.loads(meta.read_text())["segments"] == n:
        return d
    t = time.perf_counter()
    _worker_call({"task": "generate", "n": n}, timeout=1800)
    print(f"  generated {n:,} segments into {d.relative_to(ROOT)} in {time.perf_counter() - t:.1f} s", flush=True)
    return d


def _task_generate(spec: dict[str, Any]) -> dict[str, Any]:
    n = spec["n"]
    d = corpus_dir(n)
    d.mkdir(parents=True, exist_ok=True)
    texts = generate(n)
    for name, text in texts.items():
        if text.count("\n") != n:
            raise RuntimeError(f"generator bug: {name} has {text.count(chr(10))} lines, expected {n}")
        (d / f"{name}.txt").write_text(text, encoding="utf-8", newline="\n")
    (d / "meta.json").write_text(json.dumps({"segments": n, "seed": SEED, "generator": GENERATOR_VERSION,
                                             "refs": MAX_REFS}))
    return {}


def read_lines(path: Path) -> list[str]:
    with open(path, encoding="utf-8", newline="\n") as f:
        return f.read().split("\n")[:-1]


def load_synth(n: int, n_refs: int) -> tuple[list[str], list[list[str]]]:
    d = corpus_dir(n)
    return read_lines(d / "hyp.txt"), [read_lines(d / f"ref{k + 1}.txt") for k in range(n_refs)]


# ------------------------------------------------------------------------------------------------------ timing


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


def timed(fn: Callable[[], Any], repeats: int) -> dict[str, Any]:
    """Wall and CPU seconds of every run (median reported), and the last result."""
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        gc.collect()
        c, t = _cpu(), time.perf_counter()
        out = fn()
        walls.append(time.perf_counter() - t)
        cpus.append(_cpu() - c)
    return {"walls": walls, "cpus": cpus, "wall": statistics.median(walls), "cpu": statistics.median(cpus),
            "result": out}


def _rss_mb() -> float:
    """Current resident set size of this process (MB)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _maxrss_mb() -> float:
    """Peak RSS of this process (MB): ``VmHWM``, which starts afresh at exec. (``ru_maxrss`` would not do in a
    subprocess: Linux carries the forking parent's peak over into the child's ``ru_maxrss`` across exec.)"""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux


# ------------------------------------------------------------------------------------------------------ workers
# Every measurement runs in a fresh subprocess (``--worker SPEC``): tools do not share caches or heap, and the
# subprocess's ru_maxrss is the peak RSS of that tool alone (plus its inputs, measured separately).


def _worker_call(spec: dict[str, Any], timeout: float = 3600, env: dict[str, str] | None = None) -> dict[str, Any]:
    res = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)],
                         capture_output=True, text=True, timeout=timeout, env=env)
    if res.returncode != 0:
        raise RuntimeError(f"worker {spec} failed ({res.returncode}):\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _score_of(result: Any) -> float:
    if isinstance(result, dict):  # bleuscore
        return 100.0 * float(result["bleu"])
    if isinstance(result, float):  # nltk
        return 100.0 * result
    return float(result.score)


def _measure(tool: str, hyps: list[str], refs: list[list[str]], repeats: int, warm: bool = True) -> dict[str, Any]:
    """One tool on raw text; ``refs`` are reference streams (sacrebleu's layout)."""
    if tool in ("harness", "harness-hf", "harness-nltk"):
        import harness

        options = {"harness": {}, "harness-hf": {"profile": "hf"}, "harness-nltk": {"profile": "nltk"}}[tool]
        fn: Callable[[], Any] = lambda: harness.corpus_bleu(hyps, refs, **options)  # noqa: E731
        first = None
        if warm:  # kernel load (or compilation) + thread pool, on a prefix large enough for the compiled path
            k = min(len(hyps), 30_000)
            t = time.perf_counter()
            harness.corpus_bleu(hyps[:k], [r[:k] for r in refs], **options)
            first = time.perf_counter() - t
        out = timed(fn, repeats)
        out["warmup"] = first
    elif tool == "sacrebleu":
        from sacrebleu.metrics.bleu import BLEU

        out = timed(lambda: BLEU().corpus_score(hyps, refs), repeats)  # a fresh BLEU: cold tokenizer cache
    elif tool == "bleuscore":
        import bleuscore

        per_segment = [list(r) for r in zip(*refs)]  # bleuscore takes references per segment (not timed)
        out = timed(lambda: bleuscore.compute(references=per_segment, predictions=hyps, smooth=True), repeats)
    elif tool == "nltk":
        import warnings

        from nltk.translate.bleu_score import corpus_bleu

        def run() -> float:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                per_segment = [[r[i].split() for r in refs] for i in range(len(hyps))]
                return corpus_bleu(per_segment, [h.split() for h in hyps])

        out = timed(run, repeats)
    else:
        raise ValueError(tool)
    out["score"] = _score_of(out.pop("result"))
    return out


def _task_corpus(spec: dict[str, Any]) -> dict[str, Any]:
    hyps, refs = load_synth(spec["n"], spec["refs"])
    gc.collect()
    rss_inputs = _rss_mb()
    out = _measure(spec["tool"], hyps, refs, spec["repeats"])
    out["rss_inputs_mb"] = rss_inputs
    out["maxrss_mb"] = _maxrss_mb()
    return out


def _task_shared(spec: dict[str, Any]) -> dict[str, Any]:
    """(a): every system of the shared data, for each tool in turn (one process: the data are small, and each
    tool is warmed up once first); per tool, per-system scores and the time summed over the systems."""
    refs = [read_lines(SHARED / "refs" / f"{name}.txt") for name in ("ref-C", "ref-D")][: spec["refs"]]
    systems = sorted(p.stem for p in (SHARED / "systems").glob("*.txt"))
    hyps = {s: read_lines(SHARED / "systems" / f"{s}.txt") for s in systems}
    out: dict[str, Any] = {"n_systems": len(systems), "n_segments": len(refs[0])}
    for tool in spec["tools"]:
        _measure(tool, hyps[systems[0]], refs, 1, warm=False)  # imports, first-call costs
        runs = {s: _measure(tool, hyps[s], refs, spec["repeats"], warm=False) for s in systems}
        walls = [sum(runs[s]["walls"][i] for s in systems) for i in range(spec["repeats"])]
        out[tool] = {"wall": statistics.median(walls), "walls": walls,
                     "scores": {s: runs[s]["score"] for s in systems}}
    return out


def _task_prepared(spec: dict[str, Any]) -> dict[str, Any]:
    """(a), harness only: references prepared once, every system scored against them (the CLI's way)."""
    from harness.core.bleu import corpus_score
    from harness.core.options import make_options
    from harness.text.pipeline import PreparedReferences

    refs = [read_lines(SHARED / "refs" / f"{name}.txt") for name in ("ref-C", "ref-D")][: spec["refs"]]
    systems = sorted(p.stem for p in (SHARED / "systems").glob("*.txt"))
    hyps = [read_lines(SHARED / "systems" / f"{s}.txt") for s in systems]
    opts = make_options()

    def run() -> list[float]:
        prepared = PreparedReferences.build(refs, opts)
        return [corpus_score(prepared.statistics(h), opts).score for h in hyps]

    run()
    out = timed(run, spec["repeats"])
    out["scores"] = dict(zip(systems, out.pop("result")))
    return out


def _task_coldstart(spec: dict[str, Any]) -> dict[str, Any]:
    """First and second call of corpus_bleu in this fresh process (the kernels: the installed extension)."""
    t0 = time.perf_counter()
    import harness

    t_import = time.perf_counter() - t0
    hyps, refs = load_synth(spec["n"], spec["refs"])
    t = time.perf_counter()
    s1 = harness.corpus_bleu(hyps, refs).score
    first = time.perf_counter() - t
    t = time.perf_counter()
    s2 = harness.corpus_bleu(hyps, refs).score
    second = time.perf_counter() - t
    assert s1 == s2
    return {"import": t_import, "first": first, "second": second}


def _task_sentence(spec: dict[str, Any]) -> dict[str, Any]:
    """(d): sentence BLEU of every segment; sacrebleu on an evenly spaced sample, extrapolated."""
    import numpy as np

    hyps, refs = load_synth(spec["n"], spec["refs"])
    n, repeats = len(hyps), spec["repeats"]
    tool = spec["tool"]
    step = max(1, n // spec["sample"])
    sample = list(range(0, n, step))[: spec["sample"]]
    if tool == "harness":
        import harness
        from harness.core.bleu import corpus_score, sentence_scores
        from harness.core.options import make_options
        from harness.text.pipeline import lines_statistics

        opts = make_options(effective_order=True)  # sacrebleu's sentence_bleu / --sentence-level
        harness.corpus_bleu(hyps[:30_000], [r[:30_000] for r in refs])  # warm-up (kernels, thread pool)
        st = timed(lambda: lines_statistics(hyps, refs, opts), repeats)
        stats = st["result"]
        sc = timed(lambda: sentence_scores(stats, opts), repeats)
        corpus = timed(lambda: corpus_score(lines_statistics(hyps, refs, make_options()), make_options()), 1)
        scores = np.asarray(sc["result"].score)
        assert scores.shape == (n,)
        return {"stats": st["wall"], "scores": sc["wall"], "total": st["wall"] + sc["wall"],
                "corpus": corpus["wall"], "sample_scores": scores[sample].tolist(), "n": n}
    from sacrebleu.metrics.bleu import BLEU

    def run() -> list[float]:
        bleu = BLEU(effective_order=True)  # fresh: cold tokenizer cache
        return [bleu.sentence_score(hyps[i], [r[i] for r in refs]).score for i in sample]

    out = timed(run, repeats)
    return {"sample_time": out["wall"], "sample_walls": out["walls"], "sample_scores": out["result"],
            "sample": len(sample), "n": n}


def _task_stages(spec: dict[str, Any]) -> dict[str, Any]:
    """Where the harness time goes on ``n`` segments x ``refs`` references: the stages of the compiled path called
    one by one in one thread, chunk by chunk as ``lines_statistics`` cuts the corpus (text straight to ids,
    :mod:`harness.text.token_ids`), each stage's time summed over the chunks, next to a real ``corpus_bleu`` call
    (chunks in a thread per core); and, on the same chunks, the Python path (token lists from
    :mod:`harness.text.tokenizers`, then a dict vocabulary and numpy counting)."""
    import numpy as np

    import harness
    from harness.core.bleu import corpus_score
    from harness.core.options import make_options
    from harness.core.stats import SegmentStats
    from harness.text import counting, pipeline, token_ids
    from harness.text.tokenizers import case_and_tokenize

    hyps, refs = load_synth(spec["n"], spec["refs"])
    opts = make_options()
    harness.corpus_bleu(hyps[:30_000], [r[:30_000] for r in refs])  # warm-up (kernels, thread pool)
    rows: dict[str, list[float]] = {}
    acc: dict[str, float] = {}

    def stage(name: str, fn: Callable[..., Any], *args: Any) -> Any:
        t = time.perf_counter()
        out = fn(*args)
        acc[name] = acc.get(name, 0.0) + time.perf_counter() - t
        return out

    chars = sum(map(len, hyps))
    chunk = pipeline.chunk_lines(len(hyps), (chars + len(hyps)) * (1 + len(refs)) / len(hyps))
    for _ in range(spec["repeats"]):
        acc.clear()
        gc.collect()
        h = stage("validate inputs (check_hypotheses/references)", pipeline.check_hypotheses, hyps)
        r = stage("validate inputs (check_hypotheses/references)", pipeline.check_references, refs, len(h))
        parts = []
        for start in range(0, len(h), chunk):
            stop = min(len(h), start + chunk)
            table = token_ids.TokenTable.empty(1 << 12)
            text = stage("references: join, case, encode UTF-8", token_ids.text_of_lines,
                         [x[start:stop] for x in r], opts)
            enc = stage("references: text -> ids (kernel)", token_ids.encode_text, text, opts, table, True)
            refs_enc = token_ids.references_of(enc, len(r), stop - start, table, text.line_flags)
            htext = stage("hypotheses: join, case, encode UTF-8", token_ids.text_of_lines, [h[start:stop]], opts)
            henc = stage("hypotheses: text -> ids (kernel)", token_ids.encode_text, htext, opts, table, False)
            m, tot = stage("count n-grams (kernel)", token_ids.count_ids, henc.ids, henc.offsets, refs_enc, 4)
            parts.append(SegmentStats(np.diff(henc.offsets), refs_enc.lengths.copy(), m, tot))
        st = stage("concatenate chunks + corpus score", lambda: corpus_score(SegmentStats.concat(parts), opts))
        acc["sum of the stages (one thread)"] = sum(acc.values())
        gc.collect()
        total = stage("total: harness.corpus_bleu (a thread per core)", lambda: harness.corpus_bleu(hyps, refs))
        assert abs(total.score - st.score) <= TOL
        for k, v in acc.items():
            rows.setdefault(k, []).append(v)
    n_tokens = 0
    # the same chunks through the Python path (what corpus_bleu takes without the kernels)
    compare: dict[str, list[float]] = {}
    for _ in range(spec["repeats"]):
        acc.clear()
        gc.collect()
        for start in range(0, len(hyps), chunk):
            stop = min(len(hyps), start + chunk)
            ref_tokens = stage("Python path: tokenize (token lists)", lambda a, b: [case_and_tokenize(x[a:b], opts)
                                                                                  for x in refs], start, stop)
            hyp_tokens = stage("Python path: tokenize (token lists)", case_and_tokenize, hyps[start:stop], opts)
            enc = stage("Python path: encode (dict vocabulary)", counting.encode_references, ref_tokens)
            h_ids, h_off = stage("Python path: encode (dict vocabulary)", counting.encode_hypotheses, hyp_tokens,
                                 enc.vocab)
            stage("Python path: count (numpy)", counting.count_numpy, h_ids, h_off, enc, 4)
            n_tokens += int(enc.ids.size + h_ids.size)
            del ref_tokens, hyp_tokens, enc
        acc["Python path: total"] = sum(acc.values())
        for k, v in acc.items():
            compare.setdefault(k, []).append(v)
    med = {k: statistics.median(v) for k, v in rows.items()}
    return {"stages": med, "chunk": chunk, "string_path": {k: statistics.median(v) for k, v in compare.items()},
            "n_tokens": n_tokens // spec["repeats"], "n_lines": len(hyps) * (1 + len(refs))}


def _task_memory(spec: dict[str, Any]) -> dict[str, Any]:
    """Where the memory goes on ``n`` x ``refs``: RSS after each step (after ``gc.collect()``) and the peak so
    far, first through ``harness.corpus_bleu`` (the API), then through ``PreparedReferences`` (what
    ``harness-score`` does: every chunk of the references kept, then each system counted against them)."""
    import harness
    from harness.core.bleu import corpus_score
    from harness.core.options import make_options
    from harness.text.pipeline import CHUNK_SEGMENTS, PreparedReferences

    steps: list[tuple[str, float, float]] = [("interpreter + harness imported", _rss_mb(), _maxrss_mb())]
    hyps, refs = load_synth(spec["n"], spec["refs"])
    gc.collect()
    steps.append(("inputs loaded (lists of str)", _rss_mb(), _maxrss_mb()))
    score = harness.corpus_bleu(hyps, refs).score
    gc.collect()
    steps.append(("`harness.corpus_bleu` returned", _rss_mb(), _maxrss_mb()))
    opts = make_options()
    prepared = PreparedReferences.build(refs, opts)
    gc.collect()
    steps.append(("`PreparedReferences.build` (every chunk tokenized + encoded, kept)", _rss_mb(), _maxrss_mb()))
    kept = sum(c.ids.nbytes + c.offsets.nbytes + c.lengths.nbytes for c in prepared.chunks)
    vocab = sum(len(c.vocab) for c in prepared.chunks)
    score2 = corpus_score(prepared.statistics(hyps), opts).score
    gc.collect()
    steps.append(("`prepared.statistics(hyps)` (one system counted)", _rss_mb(), _maxrss_mb()))
    assert score == score2
    return {"steps": steps, "arrays_mb": kept / 2**20, "vocab_entries": vocab, "chunks": len(prepared.chunks),
            "chunk_segments": CHUNK_SEGMENTS, "score": score}


TASKS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "generate": _task_generate, "corpus": _task_corpus, "shared": _task_shared, "prepared": _task_prepared,
    "coldstart": _task_coldstart, "sentence": _task_sentence, "stages": _task_stages, "memory": _task_memory,
}


# ------------------------------------------------------------------------------------------------------ CLI runs


def run_cli(cmd: list[str]) -> tuple[float, str, float]:
    """(wall seconds, stdout, peak RSS MB) of one whole process, via /usr/bin/time -v when available."""
    timer = ["/usr/bin/time", "-v"] if Path("/usr/bin/time").exists() else []
    t = time.perf_counter()
    res = subprocess.run(timer + cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if res.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} failed ({res.returncode}): {res.stderr[-2000:]}")
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", res.stderr)
    return wall, res.stdout, (int(m.group(1)) / 1024 if m else float("nan"))


def cli_pair(ref_files: list[Path], hyp: Path, repeats: int) -> dict[str, Any]:
    h_cmd = [HARNESS_CLI, *map(str, ref_files), "-i", str(hyp), "-f", "json"]
    s_cmd = [SACREBLEU_CLI, *map(str, ref_files), "-i", str(hyp), "-f", "json", "-w", "10"]
    run_cli(h_cmd)  # warm-up: page cache and the kernels' cache file
    out: dict[str, Any] = {}
    for name, cmd in (("harness-score", h_cmd), ("sacrebleu", s_cmd)):
        walls, rss, text = [], [], ""
        for _ in range(repeats):
            w, text, r = run_cli(cmd)
            walls.append(w)
            rss.append(r)
        data = json.loads(text)
        score = float(data[0]["score"] if isinstance(data, list) else data["score"])
        out[name] = {"wall": statistics.median(walls), "walls": walls, "maxrss_mb": max(rss), "score": score}
    # sacrebleu prints 10 decimals: allow its rounding (5e-11) on top of the tolerance
    diff = abs(out["harness-score"]["score"] - out["sacrebleu"]["score"])
    assert diff <= TOL, f"CLI scores differ by {diff}"
    out["diff"] = diff
    return out


# ------------------------------------------------------------------------------------------------------ report


def fmt_s(x: float) -> str:
    if x != x:
        return "-"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def fmt_mb(x: float) -> str:
    return "-" if x != x else f"{x:,.0f}"


# ------------------------------------------------------------------------------------------------------ main


class Checks:
    """Score comparisons, asserted at once and summarised by group in the report."""

    def __init__(self) -> None:
        self.groups: dict[str, list[float]] = {}

    def __call__(self, group: str, what: str, ours: float, theirs: float, tol: float = TOL) -> float:
        diff = abs(ours - theirs)
        assert diff <= tol, f"{group} / {what}: harness {ours!r} vs {theirs!r} (|diff| = {diff})"
        self.groups.setdefault(group, []).append(diff)
        return diff

    def summary(self) -> str:
        return "; ".join(f"{g}: {len(d)} score(s), max |diff| {max(d):.1e}" for g, d in self.groups.items())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run (< 1 min): 5,000 segments, 1 repeat, no write")
    ap.add_argument("--sizes", default=None, help="generated corpus sizes, comma-separated (default 100000,1000000)")
    ap.add_argument("--repeats", type=int, default=None, help="runs per measurement, median reported (default 3; "
                    "peers at >= 1M segments run once)")
    ap.add_argument("--cli-repeats", type=int, default=5, help="runs per CLI measurement on 3,000 segments")
    ap.add_argument("--sentence-sample", type=int, default=5000, help="sacrebleu sentence_score sample size")
    ap.add_argument("--all-peers-1m", action="store_true",
                    help="also run sacrebleu and bleuscore at 1M segments x 4 references (long)")
    ap.add_argument("--resume", action="store_true", help="reuse the measurements of an interrupted run (kept in "
                    "benchmarks/_data/; only those with the same options, corpora and harness sources)")
    ap.add_argument("--write", action="store_true", help="update RESULTS.md even with --quick")
    ap.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        spec = json.loads(args.worker)
        sys.stdout.write(json.dumps(TASKS[spec["task"]](spec)) + "\n")
        return 0

    # The parent stays small (no numpy, no harness imported): every measurement runs in a worker process.
    quick = args.quick
    sizes = sorted(int(s) for s in (args.sizes or ("5000" if quick else "100000,1000000")).split(","))
    reps = args.repeats or (1 if quick else 3)
    cli_reps = 1 if quick else args.cli_repeats
    cli_n = 3000
    sample = min(args.sentence_sample, 500) if quick else args.sentence_sample
    big = max(sizes)
    mid = min(sizes, key=lambda s: abs(s - 100_000))  # "the 100k corpus" of (c), (d) and the profile
    t_start = time.perf_counter()
    load0 = os.getloadavg()
    code0 = fingerprint()
    partial = DATA / f"bench_bleu_partial{'_quick' if quick else ''}.json"
    cache: dict[str, Any] = {}
    if args.resume and partial.exists():
        saved = json.loads(partial.read_text())
        if saved.get("code") == code0 and saved.get("generator") == GENERATOR_VERSION:
            cache = saved["results"]
        else:
            print("--resume: the saved measurements are for other harness sources; starting afresh", flush=True)

    def cached(spec: dict[str, Any], fn: Callable[[], Any]) -> Any:
        """Run ``fn`` (a measurement) unless --resume has its result; save every result as it comes."""
        key = json.dumps(spec, sort_keys=True)
        if key not in cache:
            cache[key] = fn()
            DATA.mkdir(parents=True, exist_ok=True)
            partial.write_text(json.dumps({"code": code0, "generator": GENERATOR_VERSION, "results": cache}))
        return cache[key]

    def work(spec: dict[str, Any], **kw: Any) -> dict[str, Any]:
        return cached(spec, lambda: _worker_call(spec, **kw))

    def say(msg: str) -> None:
        print(f"[{time.perf_counter() - t_start:6.0f} s] {msg}", flush=True)

    say(f"bench_bleu: sizes {sizes}, repeats {reps}, {os.cpu_count()} CPUs, load {load0[0]:.1f}")
    for n in sorted(set(sizes + [cli_n])):
        ensure_corpus(n)
    versions = ", ".join(f"{name} {_dist_version(dist)}" for name, dist in (
        ("harness", "bleu-harness"), ("sacrebleu", "sacrebleu"), ("nltk", "nltk"), ("bleuscore", "bleuscore"),
        ("numpy", "numpy")))
    check = Checks()

    # ---------------------------------------------------------------- (a) shared data
    say("(a) shared data")
    rows_a: list[list[str]] = []
    for n_refs in (1,) if quick else (1, 2):
        res = work({"task": "shared", "refs": n_refs, "repeats": reps,
                            "tools": ["harness", "sacrebleu", "harness-nltk", "nltk", "harness-hf", "bleuscore"]})
        prep = work({"task": "prepared", "refs": n_refs, "repeats": reps})
        n_sys, n_seg = res["n_systems"], res["n_segments"]
        data = f"wmt21 en-de, {n_sys} systems x {n_seg}"
        for ours, peer, label in (("harness", "sacrebleu", "sacrebleu `BLEU().corpus_score`"),
                                  ("harness-nltk", "nltk", "NLTK `corpus_bleu` (profile nltk)"),
                                  ("harness-hf", "bleuscore", "bleuscore `compute` (profile hf)")):
            diff = max(check(f"(a) vs {peer}", f"{n_refs} ref(s) {s}", res[ours]["scores"][s],
                             res[peer]["scores"][s]) for s in res[ours]["scores"])
            rows_a.append([data, str(n_refs), label, fmt_s(res[peer]["wall"]), fmt_s(res[ours]["wall"]),
                           f"{res[peer]['wall'] / res[ours]['wall']:.1f}x", f"{diff:.0e}"])
        diff = max(check("(a) PreparedReferences vs sacrebleu", f"{n_refs} ref(s) {s}", prep["scores"][s],
                         res["sacrebleu"]["scores"][s]) for s in prep["scores"])
        rows_a.append([data, str(n_refs), "sacrebleu; harness references prepared once for all systems",
                       fmt_s(res["sacrebleu"]["wall"]), fmt_s(prep["wall"]),
                       f"{res['sacrebleu']['wall'] / prep['wall']:.1f}x", f"{diff:.0e}"])
        say(f"  {n_refs} ref(s): sacrebleu {res['sacrebleu']['wall']:.3f} s, harness {res['harness']['wall']:.3f} s")

    # ---------------------------------------------------------------- (b) generated corpora
    say("(b) generated corpora")
    rows_b: list[list[str]] = []
    cres: dict[tuple[int, int, str], dict[str, Any]] = {}
    for n in sizes:
        for n_refs in (1, 4):
            huge = n >= 1_000_000
            tools = ["harness", "sacrebleu", "harness-hf", "bleuscore"]
            if huge and n_refs == 4 and not args.all_peers_1m:
                tools = ["harness"]
            for tool in tools:
                r = 1 if huge and tool != "harness" else reps
                cres[n, n_refs, tool] = res = work(
                    {"task": "corpus", "tool": tool, "n": n, "refs": n_refs, "repeats": r})
                res["runs"] = r
                say(f"  {n:,} x {n_refs} ref(s) {tool}: {res['wall']:.2f} s wall, {res['cpu']:.2f} s CPU "
                    f"(median of {r}), peak RSS {res['maxrss_mb']:.0f} MB")
            for ours, peer, label in (("harness", "sacrebleu", "sacrebleu `BLEU().corpus_score`"),
                                      ("harness-hf", "bleuscore", "bleuscore `compute` (profile hf)")):
                p = cres.get((n, n_refs, peer))
                if p is None:
                    if ours == "harness":
                        h = cres[n, n_refs, "harness"]
                        rows_b.append([f"{n:,}", str(n_refs), "sacrebleu, bleuscore: not run (`--all-peers-1m`)",
                                       "-", f"{fmt_s(h['wall'])} ({h['runs']})", "-", "-", "-",
                                       f"{fmt_mb(h['rss_inputs_mb'])} / {fmt_mb(h['maxrss_mb'])}", "-"])
                    continue
                o = cres[n, n_refs, ours]
                diff = check(f"(b) vs {peer}", f"{n:,} x {n_refs}", o["score"], p["score"])
                rows_b.append([f"{n:,}", str(n_refs), label, f"{fmt_s(p['wall'])} ({p['runs']})",
                               f"{fmt_s(o['wall'])} ({o['runs']})", f"**{p['wall'] / o['wall']:.1f}x**",
                               f"{p['cpu'] / o['cpu']:.1f}x", f"{diff:.0e}",
                               f"{fmt_mb(o['rss_inputs_mb'])} / {fmt_mb(o['maxrss_mb'])}",
                               f"{fmt_mb(p['rss_inputs_mb'])} / {fmt_mb(p['maxrss_mb'])}"])
    rss_rows: list[list[str]] = []
    for n_refs in (1, 4):
        h = cres[big, n_refs, "harness"]
        rss_rows.append([f"{big:,} x {n_refs} ref(s): API worker (warm-up + {h['runs']} calls)",
                         fmt_mb(h["rss_inputs_mb"]), fmt_mb(h["maxrss_mb"]),
                         fmt_mb(h["maxrss_mb"] - h["rss_inputs_mb"])])

    mem = work({"task": "memory", "n": big, "refs": 4})
    check("(b) memory walk vs harness API", f"{big:,} x 4", mem["score"], cres[big, 4, "harness"]["score"])
    say(f"  memory walk {big:,} x 4: " + ", ".join(f"{name}: {rss:.0f} MB" for name, rss, _ in mem["steps"]))

    # ---------------------------------------------------------------- cold start
    say("cold start")
    cold_refs = 1 if mid >= 20_000 else 4  # enough tokens for the compiled path
    cold = {"first": work({"task": "coldstart", "n": mid, "refs": cold_refs}),
            "again": work({"task": "coldstart", "n": mid, "refs": cold_refs, "again": 1})}

    # ---------------------------------------------------------------- (c) CLI
    say("(c) CLI")
    d_small, d_mid, d_big = corpus_dir(cli_n), corpus_dir(mid), corpus_dir(big)
    cli_small = cached({"task": "cli_pair", "n": cli_n, "repeats": cli_reps},
                       lambda: cli_pair([d_small / "ref1.txt"], d_small / "hyp.txt", cli_reps))
    cli_mid = cached({"task": "cli_pair", "n": mid, "repeats": reps},
                     lambda: cli_pair([d_mid / "ref1.txt"], d_mid / "hyp.txt", reps))
    rows_c = []
    for label, c, r in ((f"{cli_n:,} x 1 ref", cli_small, cli_reps), (f"{mid:,} x 1 ref", cli_mid, reps)):
        s, h = c["sacrebleu"], c["harness-score"]
        check("(c) CLI vs sacrebleu CLI (10 decimals)", label, h["score"], s["score"])
        rows_c.append([label, f"{fmt_s(s['wall'])} ({r})", f"{fmt_s(h['wall'])} ({r})",
                       f"**{s['wall'] / h['wall']:.1f}x**", f"{c['diff']:.0e}", fmt_mb(h["maxrss_mb"]),
                       fmt_mb(s["maxrss_mb"])])
        say(f"  {label}: sacrebleu {s['wall']:.2f} s, harness-score {h['wall']:.2f} s")
    for n_refs in (1, 4):
        w, text, rss = cached({"task": "cli_big", "n": big, "refs": n_refs}, lambda: run_cli(
            [HARNESS_CLI, *(str(d_big / f"ref{k + 1}.txt") for k in range(n_refs)), "-i", str(d_big / "hyp.txt"),
             "-f", "json"]))
        check("(c) harness-score vs harness API", f"{big:,} x {n_refs}", float(json.loads(text)[0]["score"]),
              cres[big, n_refs, "harness"]["score"])
        cres[big, n_refs, "cli"] = {"wall": w, "maxrss_mb": rss}
        rss_rows.append([f"{big:,} x {n_refs} ref(s): `harness-score` process, 1 run ({fmt_s(w)} s)", "-",
                         fmt_mb(rss), "-"])
        say(f"  harness-score {big:,} x {n_refs}: {w:.1f} s, peak RSS {rss:.0f} MB")

    # ---------------------------------------------------------------- (d) sentence BLEU
    say("(d) sentence BLEU")
    rows_d = []
    sent: dict[int, dict[str, Any]] = {}
    for n_refs in (1, 4):
        spec = {"task": "sentence", "n": mid, "refs": n_refs, "repeats": reps, "sample": sample}
        h = work({**spec, "tool": "harness"})
        s = work({**spec, "tool": "sacrebleu"})
        diff = max(check("(d) sentence BLEU vs sacrebleu (sampled segments)", f"{n_refs} ref(s) #{i}", a, b)
                   for i, (a, b) in enumerate(zip(h["sample_scores"], s["sample_scores"])))
        full = s["sample_time"] * s["n"] / s["sample"]
        sent[n_refs] = h
        rows_d.append([f"{mid:,} x {n_refs} ref(s)", f"{fmt_s(full)} (from {fmt_s(s['sample_time'])} s on "
                       f"{s['sample']:,})", fmt_s(h["total"]), f"**{full / h['total']:.0f}x**", fmt_s(h["stats"]),
                       fmt_s(h["scores"]), fmt_s(h["corpus"]), f"{diff:.0e}"])
        say(f"  {n_refs} ref(s): sacrebleu ~{full:.1f} s, harness {h['total']:.3f} s "
            f"(stats {h['stats']:.3f} + scores {h['scores']:.3f})")

    # ---------------------------------------------------------------- profile
    say("profile")
    prof = work({"task": "stages", "n": mid, "refs": 4, "repeats": reps})
    one = prof["stages"]["sum of the stages (one thread)"]
    rows_p = [[k, fmt_s(v), f"{100 * v / one:.0f}%"] for k, v in prof["stages"].items()]
    kernel_path = one - prof["stages"]["validate inputs (check_hypotheses/references)"]
    rows_t = [[k, fmt_s(v)] for k, v in prof["string_path"].items()]
    rows_t.append(["compiled path, the same chunks, one thread (the stages above but validation)", fmt_s(kernel_path)])
    rows_t.append(["ratio (Python path / compiled path, one thread)",
                   f"{prof['string_path']['Python path: total'] / kernel_path:.1f}x"])

    # ---------------------------------------------------------------- targets
    targets = []
    for n_refs in (1, 4):
        p, h = cres.get((mid, n_refs, "sacrebleu")), cres[mid, n_refs, "harness"]
        if p:
            x = p["wall"] / h["wall"]
            targets.append([f"corpus BLEU 13a from raw text, {mid:,} segments x {n_refs} ref(s): >= 25x sacrebleu",
                            f"{x:.1f}x wall ({fmt_s(p['wall'])} s vs {fmt_s(h['wall'])} s), "
                            f"{p['cpu'] / h['cpu']:.1f}x CPU", "**met**" if x >= TARGET_SPEEDUP else "**not met**"])
    for r in (1, 4):
        api, cli = cres[big, r, "harness"]["maxrss_mb"], cres[big, r, "cli"]["maxrss_mb"]
        targets.append([f"{big:,} segments x {r} ref(s) under 2 GB RSS (harness)",
                        f"peak {api:,.0f} MB (API worker, inputs {cres[big, r, 'harness']['rss_inputs_mb']:,.0f} MB "
                        f"of it), {cli:,.0f} MB (`harness-score`)",
                        "**met**" if max(api, cli) < TARGET_RSS_MB else "**not met**"])
    s3 = cli_small
    targets.append([f"`harness-score` on {cli_n:,} segments no slower than the sacrebleu CLI",
                    f"{fmt_s(s3['harness-score']['wall'])} s vs {fmt_s(s3['sacrebleu']['wall'])} s",
                    "**met**" if s3["harness-score"]["wall"] <= s3["sacrebleu"]["wall"] else "**not met**"])
    for n_refs in (1, 4):
        h = sent[n_refs]
        targets.append([f"sentence BLEU of all {mid:,} segments x {n_refs} ref(s) at the cost of the statistics",
                        f"statistics {fmt_s(h['stats'])} s + sentence_scores {fmt_s(h['scores'])} s "
                        f"({100 * h['scores'] / h['stats']:.1f}%)",
                        "**met**" if h["scores"] <= 0.1 * h["stats"] else "**not met**"])

    elapsed = time.perf_counter() - t_start
    load1 = os.getloadavg()
    code1 = fingerprint()
    code = (f"harness sources (sha256 of harness/*.py) `{code0}`" if code0 == code1 else
            f"**harness sources changed during the run** (`{code0}` at start, `{code1}` at end: rows measured "
            "earlier and later may come from different code)")
    if code0 != code1:
        say(f"WARNING: harness/*.py changed during the run ({code0} -> {code1})")
    busy = ("other work was running at the start" if load0[0] > 0.5 else
            "nothing else was running at the start; the load at the end is mostly this benchmark's own")
    cmd = "python benchmarks/bench_bleu.py" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    out = [SECTION, "",
           f"`{cmd}` ({time.strftime('%Y-%m-%d %H:%M')}, {elapsed / 60:.1f} min): {platform.machine()}, "
           f"{os.cpu_count()} CPUs, load average {load0[0]:.1f} at start / {load1[0]:.1f} at end ({busy}; wall times "
           f"on a shared machine drift by up to 30% between runs, CPU-time ratios are steadier); {versions}; {code}. "
           "Times are wall seconds, median of the number of runs in brackets; ratio = peer time / harness time; "
           "every harness score was checked against its peer (|diff| <= 1e-9, asserted).",
           "", "### Targets", "", md_table(["target", "measured", "status"], targets),
           "", "### (a) Shared data: corpus BLEU from raw text, every system (time summed over the systems)", "",
           md_table(["data", "refs", "peer", "peer s", "harness s", "ratio", "max abs diff"], rows_a),
           "", "One call per system on both sides, in one process per reference count after one warm-up call per "
           "tool (last row: harness tokenizes and encodes the references once, as "
           "`harness-score` does). Whether harness takes its compiled or its Python path at 527 segments depends "
           "on the size of the work (`harness.text.counting._COMPILED_MIN_TOKENS`).",
           "", "### (b) Generated corpora: corpus BLEU 13a from raw text (tokenization included), in-process", "",
           f"Zipfian vocabulary of 50k words, lengths 5-60, punctuation, digits, capitals (seed {SEED}, "
           "`benchmarks/_data/`). Each tool runs in its own process after its inputs are loaded (lists of str); "
           "harness after one warm-up call on a 30k prefix (kernels, thread pool). bleuscore is compared "
           "with harness's `hf` profile (add-k smoothing, shortest reference), sacrebleu with the default. RSS = "
           "the worker's RSS with the inputs loaded / its peak (`VmHWM`) over all its runs.", "",
           md_table(["segments", "refs", "peer", "peer s (runs)", "harness s (runs)", "ratio", "ratio (CPU s)",
                     "abs diff", "harness RSS MB inputs / peak", "peer RSS MB inputs / peak"], rows_b),
           "", f"Memory of harness at {big:,} segments (MB):", "",
           md_table(["run", "RSS of the inputs", "peak RSS", "added by scoring"], rss_rows),
           "", f"Step by step, {big:,} x 4 refs, one fresh process: RSS after each step (after `gc.collect()`) and "
           "the peak so far; first the API (`corpus_bleu` streams chunk by chunk, as `systems_statistics` and "
           "`harness-score` do), then `PreparedReferences`, which keeps every chunk for systems that arrive "
           f"later ({mem['chunks']} chunks of {mem['chunk_segments']:,} segments):", "",
           md_table(["after", "RSS MB", "peak RSS so far MB"],
                    [[name, fmt_mb(rss), fmt_mb(hwm)] for name, rss, hwm in mem["steps"]]),
           "", f"`PreparedReferences` keeps {mem['arrays_mb']:,.0f} MB of int64 arrays (ids, offsets, lengths) and "
           f"{mem['vocab_entries']:,} vocabulary entries over its chunks (held as long as the prepared references "
           "live): keeping them is what it is for; streaming is the bounded-memory way.",
           "", "### Cold start (compiled kernels)", "",
           f"First vs second `harness.corpus_bleu` call in a fresh process, {mid:,} segments x {cold_refs} ref(s), "
           "in two fresh processes one after the other: the kernels are the extension module the install built "
           "(`harness/_kernels.c`), so nothing is compiled or cached at run time and the first process after an "
           "install pays what every process pays:", "",
           md_table(["process", "import harness s", "first call s", "second call s", "first-call cost s"],
                    [[k, fmt_s(v["import"]), fmt_s(v["first"]), fmt_s(v["second"]), fmt_s(v["first"] - v["second"])]
                     for k, v in (("first after the install", cold["first"]), ("the next one", cold["again"]))]),
           "", "### (c) Whole processes: `harness-score` vs the `sacrebleu` CLI (1 ref, `-f json`)", "",
           md_table(["file", "sacrebleu CLI s (runs)", "harness-score s (runs)", "ratio", "abs diff",
                     "harness-score peak RSS MB", "sacrebleu peak RSS MB"], rows_c),
           "", "Wall time of the whole process (`/usr/bin/time -v`, after one warm-up run of each). harness-score "
           "imports the compiled kernels (an extension module) and streams the files in chunks. sacrebleu prints 10 "
           "decimals here (`-w 10`).",
           "", "### (d) Sentence BLEU of every segment", "",
           f"sacrebleu: `BLEU(effective_order=True).sentence_score` per segment, timed on {sample:,} evenly spaced "
           f"segments and **extrapolated** to all {mid:,}. harness: statistics once (`lines_statistics`) + "
           "`harness.core.bleu.sentence_scores` (vectorised), same options; the sampled scores were compared.", "",
           md_table(["corpus", "sacrebleu s (extrapolated)", "harness s", "ratio", "harness: statistics s",
                     "harness: sentence_scores s", "harness corpus BLEU s (for comparison)", "max abs diff"], rows_d),
           "", f"### Where the harness time goes ({mid:,} segments x 4 refs, corpus BLEU 13a)", "",
           f"The stages of the compiled path called one by one in one thread, in chunks of {prof['chunk']:,} "
           "segments as `corpus_bleu` cuts the corpus (each stage summed over the chunks), median of the runs, next "
           "to a real `corpus_bleu` call (the chunks in a thread per core):", "",
           md_table(["stage", "s", "share of the one-thread sum"], rows_p),
           "", f"The same chunks ({prof['n_lines']:,} lines, {prof['n_tokens']:,} tokens) through the Python path, "
           "which `corpus_bleu` takes for small inputs and without the kernels: token lists, a dict vocabulary, "
           "numpy counting:", "",
           md_table(["step", "s"], rows_t),
           "", "Checks: " + check.summary() + "."]
    report = "\n".join(out) + "\n"
    print()
    print(report)
    if (not quick or args.write) and not args.no_write:
        write_section(SECTION, report)
        say(f"updated {RESULTS.relative_to(ROOT)} ({SECTION})")
    return 0


def _task_fingerprint(spec: dict[str, Any]) -> dict[str, Any]:
    """A short hash of the harness modules the measured paths import (others may edit the tree during a run)."""
    import hashlib

    import harness  # noqa: F401
    import harness.api  # noqa: F401
    import harness.cli  # noqa: F401
    import harness.core.nltk_replay  # noqa: F401
    import harness.native  # noqa: F401

    harness.native.extension()  # the compiled kernels (their .so is hashed too)

    files = sorted({Path(m.__file__).name: Path(m.__file__) for name, m in sys.modules.items()
                    if name.split(".")[0] == "harness" and getattr(m, "__file__", None)}.items())
    h = hashlib.sha256()
    for name, path in files:
        h.update(name.encode() + b"\0" + path.read_bytes())
    return {"hash": h.hexdigest()[:12], "files": [name for name, _ in files]}


TASKS["fingerprint"] = _task_fingerprint


def fingerprint() -> str:
    return _worker_call({"task": "fingerprint"})["hash"]


def _dist_version(name: str) -> str:
    from importlib.metadata import version

    try:
        return version(name)
    except Exception:  # pragma: no cover
        return "?"


if __name__ == "__main__":
    sys.exit(main())
