"""The comparison analysis (``harness.job.comparison``): exact bucket BLEU (sacrebleu on the bucket's segments),
compare-mt's length-difference buckets, n-gram ranking and word buckets on hand-made cases, one count of the texts,
seeded reproducibility, more than two systems (each pair exactly what comparing it alone gives), sparse human
scores, tables, JSON and LaTeX, and the page renderer's escaping."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import sacrebleu

from harness.core.options import make_options
from harness.errors import ConfigError, InputError
from harness.job.comparison import (
    FREQUENCY_CUTOFFS,
    LENGTH_CUTOFFS,
    LENGTH_DIFF_CUTOFFS,
    SENTENCE_BLEU_CUTOFFS,
    TABLE_NAMES,
    ComparisonRequest,
    ComparisonSet,
    Side,
    compare,
    compare_systems,
    comparison_tables,
    latex_tables,
    set_json,
    to_json,
    word_counts,
)
from harness.job.comparison.buckets import bucket_labels, bucket_of, primary_ref_len
from harness.job.comparison.examples import word_diff
from harness.job.comparison.ngrams import rank_ngrams
from harness.job.comparison.page import render_page
from harness.text.pipeline import systems_statistics
from support import DEMO, read_lines

N_SAMPLES = 200
N_DEMO = 250


def sides(a_lines, b_lines, human_a=None, human_b=None, names=("A", "B")):
    return Side(names[0], a_lines, human=human_a), Side(names[1], b_lines, human=human_b)


def compare_sides(a, b, refs, opts, **settings):
    return compare(ComparisonRequest(a, b, refs, opts, **settings))


@pytest.fixture(scope="module")
def demo():
    """Nemo vs UEdin on the first 250 segments of the demo, both references."""
    opts = make_options()
    refs = [read_lines(DEMO / "refs" / f"{r}.txt")[:N_DEMO] for r in ("ref-C", "ref-D")]
    a = read_lines(DEMO / "systems" / "Nemo.txt")[:N_DEMO]
    b = read_lines(DEMO / "systems" / "UEdin.txt")[:N_DEMO]
    sa, sb = sides(a, b, names=("Nemo", "UEdin"))
    result = compare_sides(sa, sb, refs, opts, ref_names=("ref-C", "ref-D"), n_samples=N_SAMPLES, seed=7,
                             n_examples=5, top=10)
    return {"opts": opts, "refs": refs, "a": a, "b": b, "sides": (sa, sb), "result": result}


# --------------------------------------------------------------------------------------------------------------
# exactness
# --------------------------------------------------------------------------------------------------------------


def test_bucket_labels_are_compare_mt_s():
    assert bucket_labels(LENGTH_CUTOFFS) == ["<10", "[10,20)", "[20,30)", "[30,40)", "[40,50)", "[50,60)", ">=60"]
    assert bucket_labels(FREQUENCY_CUTOFFS) == ["<1", "1", "2", "3", "4", "[5,10)", "[10,100)", "[100,1000)",
                                                ">=1000"]
    assert bucket_labels(SENTENCE_BLEU_CUTOFFS)[0] == "<10" and bucket_labels(SENTENCE_BLEU_CUTOFFS)[-1] == ">=90"
    # compare-mt's cutoff_into_bucket: the first i with value < cutoffs[i]
    assert list(bucket_of([0, 9, 10, 19.99, 20, 60, 1000], LENGTH_CUTOFFS)) == [0, 0, 1, 1, 2, 6, 6]


@pytest.mark.slow
def test_bucket_bleu_equals_sacrebleu_on_the_bucket_segments(demo):
    """Length buckets by the first reference's 13a tokens, sentence-BLEU buckets by sacrebleu's sentence_bleu of
    system A: every bucket's BLEU of A and B is sacrebleu's corpus_bleu on exactly those segments."""
    res, a, b, refs = demo["result"], demo["a"], demo["b"], demo["refs"]
    tok = sacrebleu.BLEU()
    ref_len = np.array([len(tok._preprocess_segment(r).split()) for r in refs[0]])
    sentence = sacrebleu.BLEU(effective_order=True)  # what sacrebleu.sentence_bleu uses
    sent_a = np.array([sentence.sentence_score(h, [r1, r2]).score for h, r1, r2 in zip(a, *refs)])
    for group, values, cutoffs in ((res.by_length, ref_len, LENGTH_CUTOFFS),
                                   (res.by_sentence_bleu, sent_a, SENTENCE_BLEU_CUTOFFS)):
        labels = bucket_labels(cutoffs)
        bucket = bucket_of(values, cutoffs)
        assert [r.bucket for r in group.rows] == [labels[j] for j in sorted(set(bucket))]
        for row in group.rows:
            idx = np.flatnonzero(bucket == labels.index(row.bucket))
            assert row.n_segments == idx.size
            for value, hyp in ((row.a, a), (row.b, b)):
                theirs = sacrebleu.corpus_bleu([hyp[i] for i in idx], [[r[i] for i in idx] for r in refs]).score
                assert abs(value - theirs) < 1e-9
            assert row.delta == row.b - row.a and row.delta_low <= row.delta <= row.delta_high
    assert abs(res.a.score.score - sacrebleu.corpus_bleu(a, refs).score) < 1e-9
    assert abs(res.headline.b - sacrebleu.corpus_bleu(b, refs).score) < 1e-9
    assert sum(r.n_segments for r in res.by_length.rows) == len(a)


def test_length_difference_buckets_are_compare_mt_s():
    """compare-mt's ``LengthDiffSentenceBucketer``: ``len(output) - len(reference)``, cutoffs -20, -10, -5 .. 5, 6,
    11, 21 and its labels. By hand (no tokenizer): A is 1 token longer than the reference in segment 0, as long in
    1, 3 shorter in 2; B as long in 0 and 1, 25 longer in 2. Each system's own segments: counts and values differ,
    and there is no paired difference."""
    assert bucket_labels(LENGTH_DIFF_CUTOFFS) == ["<-20", "[-20,-10)", "[-10,-5)", "-5", "-4", "-3", "-2", "-1", "0",
                                                  "1", "2", "3", "4", "5", "[6,11)", "[11,21)", ">=21"]
    refs = [["a b c", "x y", "p q r s"]]
    a_out = ["a b c d", "x y", "p"]
    b_out = ["a b c", "x z", "p q r s " + " ".join(["t"] * 25)]
    opts = make_options(tokenize="none")
    res = compare_sides(*sides(a_out, b_out), refs, opts, n_samples=50, seed=1)
    rows = {r.bucket: r for r in res.by_length_diff.rows}
    assert list(rows) == ["-3", "0", "1", ">=21"]
    assert [(rows[k].n_segments, rows[k].n_segments_b) for k in rows] == [(1, 0), (1, 2), (1, 0), (0, 1)]
    assert rows["0"].a == pytest.approx(sacrebleu.corpus_bleu(["x y"], [["x y"]], tokenize="none").score)
    assert rows["0"].b == pytest.approx(sacrebleu.corpus_bleu(["a b c", "x z"], [["a b c", "x y"]],
                                                              tokenize="none").score)
    assert math.isnan(rows[">=21"].a) and rows[">=21"].n_segments == 0
    assert all(math.isnan(r.delta) and math.isnan(r.p_value) and not r.paired for r in rows.values())


@pytest.mark.slow
def test_length_difference_bleu_equals_sacrebleu_on_each_system_s_segments(demo):
    """Each system's segments bucketed by its own 13a tokens minus the first reference's; its count and BLEU in a
    bucket are sacrebleu's corpus_bleu on exactly those segments; its interval holds its value."""
    res, refs = demo["result"], demo["refs"]
    tok = sacrebleu.BLEU()
    ref_len = np.array([len(tok._preprocess_segment(r).split()) for r in refs[0]])
    labels = bucket_labels(LENGTH_DIFF_CUTOFFS)
    rows = res.by_length_diff.rows
    for hyp, count, value, low, high in ((demo["a"], "n_segments", "a", "a_low", "a_high"),
                                         (demo["b"], "n_segments_b", "b", "b_low", "b_high")):
        diff = np.array([len(tok._preprocess_segment(h).split()) for h in hyp]) - ref_len
        bucket = bucket_of(diff, LENGTH_DIFF_CUTOFFS)
        assert sum(getattr(r, count) for r in rows) == len(hyp)
        for row in rows:
            idx = np.flatnonzero(bucket == labels.index(row.bucket))
            assert getattr(row, count) == idx.size
            if idx.size:
                theirs = sacrebleu.corpus_bleu([hyp[i] for i in idx], [[r[i] for i in idx] for r in refs]).score
                assert abs(getattr(row, value) - theirs) < 1e-9
                assert getattr(row, low) <= getattr(row, value) + 1e-9 or idx.size < 3
                assert getattr(row, high) >= getattr(row, low)
    assert len(rows) > 8 and any(r.n_segments != r.n_segments_b for r in rows)


def test_the_sentence_options_of_the_variant_decide_the_sentence_buckets_and_examples():
    """A job passes its variant's segment-level options (``sentence_effective_order``): on short segments the
    examples' sentence BLEU is sacrebleu's with effective order on by default (sentBLEU), off when asked."""
    from pathlib import Path

    from harness.core.options import sentence_options

    root = Path(__file__).resolve().parent.parent / "data" / "short_segments"
    opts = make_options()
    refs = [read_lines(root / "refs" / f"{r}.txt") for r in ("ref-A", "ref-B")]
    a, b = (read_lines(root / "systems" / f"{s}.txt") for s in ("Nemo", "UEdin"))
    sa, sb = sides(a, b)
    results = [(compare_sides(sa, sb, refs, opts, n_samples=50, seed=7, n_examples=20, top=5,
                                sentence_options=None if eff else sentence_options(opts, False)),
                sacrebleu.BLEU(effective_order=eff)) for eff in (True, False)]
    for result, bleu in results:
        got = [(e.seg_id, e.sentence_a, e.sentence_b) for lst in result.examples for e in lst.items]
        assert len(got) >= 10
        for i, x, y in got:
            assert x == pytest.approx(bleu.sentence_score(a[i], [r[i] for r in refs]).score, rel=1e-12, abs=1e-12)
            assert y == pytest.approx(bleu.sentence_score(b[i], [r[i] for r in refs]).score, rel=1e-12, abs=1e-12)
    (on, _), (off, _) = results
    assert [r.n_segments for r in on.by_sentence_bleu.rows] != [r.n_segments for r in off.by_sentence_bleu.rows]


def test_precisions_and_ngram_counts_come_from_the_statistics(demo):
    res = demo["result"]
    bleu_a = sacrebleu.corpus_bleu(demo["a"], demo["refs"])
    for row, counts, totals in zip(res.precisions.rows, bleu_a.counts, bleu_a.totals):
        assert abs(row.a - 100.0 * counts / totals) < 1e-9
    # the n-gram lists hold clipped matches: never more than the n-gram occurs in A's output
    assert all(lst.rows for lst in res.ngrams)
    unigram = next(r for lst in res.ngrams if lst.kind == "match" and lst.favours == "a" for r in lst.rows
                   if r.order == 1)
    tok = sacrebleu.BLEU()
    tokens = [t for line in demo["a"] for t in tok._preprocess_segment(line).split()]
    assert unigram.count_a <= tokens.count(unigram.ngram)


def test_statistics_that_do_not_belong_to_the_texts_are_refused(demo):
    """A caller's statistics are checked against the comparison's own count: B's text with A's statistics is
    refused, naming the system and the first segment where they differ; the right ones are accepted."""
    sa, sb = demo["sides"]
    st_a, st_b = systems_statistics([demo["a"], demo["b"]], demo["refs"], demo["opts"])
    with pytest.raises(InputError, match=r"statistics of system 'UEdin' do not belong to its text .* segment 0"):
        compare_sides(sa, sb, demo["refs"], demo["opts"], n_samples=10, statistics=(st_a, st_a))
    ok = compare_sides(sa, sb, demo["refs"], demo["opts"], n_samples=N_SAMPLES, seed=7, n_examples=5, top=10,
                         ref_names=("ref-C", "ref-D"), statistics=(st_a, st_b))
    assert json.dumps(to_json(ok)) == json.dumps(to_json(demo["result"]))


def test_the_texts_are_counted_once(demo, monkeypatch):
    """The comparison reads its tokens from the one text pipeline once (one ``encode_corpus`` of both systems and
    the references) and derives the statistics, buckets, n-grams and words from that count: no tokenizer runs
    again and no other counter is called."""
    from harness.job.comparison import engine
    from harness.text import counting, tokenizers

    calls = {"encode": 0, "grams": 0}
    encode, grams = engine.encode_corpus, engine.count_grams

    def counted_encode(*args, **kwargs):
        calls["encode"] += 1
        return encode(*args, **kwargs)

    def counted_grams(*args, **kwargs):
        calls["grams"] += 1
        return grams(*args, **kwargs)

    def forbidden(*args, **kwargs):
        raise AssertionError("tokenized or counted outside the one pipeline call")

    monkeypatch.setattr(engine, "encode_corpus", counted_encode)
    monkeypatch.setattr(engine, "count_grams", counted_grams)
    monkeypatch.setattr(counting, "count_numpy", forbidden)
    sa, sb = demo["sides"]
    before = tokenizers.case_and_tokenize
    monkeypatch.setattr(tokenizers, "case_and_tokenize", forbidden)
    monkeypatch.setattr("harness.text.pipeline.case_and_tokenize",
                        lambda *a, **k: before(*a, **k) if calls["encode"] == 1 and calls["grams"] == 0
                        else forbidden())
    compare_sides(sa, sb, demo["refs"], demo["opts"], n_samples=10, n_examples=2, top=3)
    assert calls == {"encode": 1, "grams": 2}  # every order against all references, words against the first


def test_bad_knobs_are_config_errors(demo):
    sa, sb = demo["sides"]
    with pytest.raises(ConfigError, match="not a function of summed statistics"):
        compare_sides(sa, sb, demo["refs"], make_options(profile="nltk"), n_samples=10)
    with pytest.raises(ConfigError, match="compared with itself"):
        compare_sides(sa, Side("Nemo", sb.lines), demo["refs"], demo["opts"], n_samples=10)
    with pytest.raises(ConfigError, match="n_samples"):
        compare_sides(sa, sb, demo["refs"], demo["opts"], n_samples=0)


# --------------------------------------------------------------------------------------------------------------
# compare-mt's n-gram ranking and word buckets, by hand
# --------------------------------------------------------------------------------------------------------------

REFS = [["a b c", "x y", "p q"]]
HYP_A = ["a b d", "x y", "p q"]
HYP_B = ["a c c", "x z", "q q"]


def tiny(**kwargs):
    opts = make_options(tokenize="none")
    sa, sb = sides(HYP_A, HYP_B)
    return compare_sides(sa, sb, REFS, opts, n_samples=50, seed=1, **kwargs)


def lists(result):
    return {(lst.kind, lst.favours): [(r.ngram, r.count_a, r.count_b) for r in lst.rows] for lst in result.ngrams}


def test_ngram_ranking_on_a_case_computed_by_hand():
    """Clipped matches: A matches a, b, x, y, p, q, 'a b', 'x y', 'p q'; B matches a, c (once), x, q (once).
    Over-produced: A d, 'b d', 'a b d'; B c (the second), z, q (the second), 'a c', 'c c', 'x z', 'q q', 'a c c'.
    log((c_a + 1) / (c_b + 1)): ratios 2:1 -> +-log 2; ties (all counts 1 vs 0) sorted by text."""
    res = tiny(top=4)
    got = lists(res)
    assert got[("match", "a")] == [("a b", 1, 0), ("b", 1, 0), ("p", 1, 0), ("p q", 1, 0)]
    assert got[("match", "b")] == [("c", 0, 1)]
    assert got[("over", "a")] == [("a b d", 1, 0), ("b d", 1, 0), ("d", 1, 0)]
    assert got[("over", "b")] == [("a c", 0, 1), ("a c c", 0, 1), ("c", 0, 1), ("c c", 0, 1)]
    row = res.ngrams[0].rows[0]
    assert row.order == 2 and math.isclose(row.log_ratio, math.log(2))


def test_frequency_breaks_ties_and_the_order_is_compare_mt_s():
    ca = np.array([3, 1, 0, 2, 5, 0, 7])
    cb = np.array([1, 0, 0, 0, 5, 2, 1])
    ids_a, ids_b, score = rank_ngrams(ca, cb, top=10)
    assert list(ids_a) == [6, 3, 0, 1]  # log 4 = log(8/2), then log 3 (3:1), then log 2 (4:2 and 2:1, 4 more frequent)
    assert list(ids_b) == [5]
    share = (ca + 1.0) / (ca + cb + 2.0)  # compare-mt's extract_salient_features: the same order
    seen = np.flatnonzero(ca + cb > 0)
    assert list(np.argsort(-share[seen], kind="stable")[:2]) == list(np.argsort(-score[seen], kind="stable")[:2])
    assert all(np.sign(share[seen] - 0.5) == np.sign(score[seen]))


def test_word_f_measure_by_frequency_by_hand():
    """Frequencies in the reference: a b c x y p q once each (bucket '1'; A's d and B's z are unseen, bucket
    '<1', which has no reference word and so no F-measure). In bucket '1', A matches a b x y p q (6 of its 6
    words, 6 of the 7 reference words): F = 2*6 / (6 + 7); B matches a c x q of its 6: F = 2*4 / (6 + 7)."""
    res = tiny()
    (row,) = res.by_frequency.rows
    assert row.bucket == "1" and row.words.ref == 7 and row.words.matched_a == 6 and row.words.matched_b == 4
    assert math.isclose(row.a, 100 * 12 / 13) and math.isclose(row.b, 100 * 8 / 13)
    assert "never seen in the reference" in res.by_frequency.note and "1 of A's, 1 of B's" in res.by_frequency.note
    # with training-corpus counts: 'a' frequent, the rest unseen
    train = word_counts(["a a a a a a", "a b"], make_options(tokenize="none"))
    assert train == {"a": 7, "b": 1}
    opts = make_options(tokenize="none")
    sa, sb = sides(HYP_A, HYP_B)
    res2 = compare_sides(sa, sb, REFS, opts, train_counts=train, train_name="train.txt", n_samples=50, seed=1)
    assert [r.bucket for r in res2.by_frequency.rows] == ["<1", "1", "[5,10)"]
    assert res2.frequency_source == "train.txt" and "train.txt" in res2.by_frequency.note


def test_word_diff_marks_what_the_outputs_do_not_share():
    wa, wb = word_diff("the cat sat on the mat", "the dog sat on a mat")
    assert [w for w, d in wa if d] == ["cat", "the"] and [w for w, d in wb if d] == ["dog", "a"]
    assert word_diff("", "x") == ((), (("x", True),))


# --------------------------------------------------------------------------------------------------------------
# seeds, human scores, tables
# --------------------------------------------------------------------------------------------------------------


def test_seeded_and_reproducible(demo):
    sa, sb = demo["sides"]
    kw = dict(n_samples=N_SAMPLES, n_examples=5, top=10)
    again = compare_sides(sa, sb, demo["refs"], demo["opts"], ref_names=("ref-C", "ref-D"), seed=7, **kw)
    assert json.dumps(to_json(again)) == json.dumps(to_json(demo["result"]))
    other = compare_sides(sa, sb, demo["refs"], demo["opts"], ref_names=("ref-C", "ref-D"), seed=8, **kw)
    assert other.headline.delta == again.headline.delta
    assert (other.headline.delta_low, other.headline.p_value) != (again.headline.delta_low, again.headline.p_value)
    assert "seed:7" in again.signature and "bs:200" in again.signature


def test_human_buckets_with_sparse_scores():
    opts = make_options()
    refs = [read_lines(DEMO / "refs" / "ref-C.txt")[:60]]
    a = read_lines(DEMO / "systems" / "Nemo.txt")[:60]
    b = read_lines(DEMO / "systems" / "UEdin.txt")[:60]
    rng = np.random.default_rng(0)
    ha, hb = rng.normal(size=60), rng.normal(size=60)
    ha[::3] = np.nan  # A judged on 2 of 3 segments
    hb[:10] = np.nan  # B not judged on the first 10
    sa, sb = sides(a, b, ha, hb)
    res = compare_sides(sa, sb, refs, opts, human_name="MQM", n_samples=100, seed=3, n_examples=50)
    judged = np.isfinite(ha) & np.isfinite(hb)
    h = res.human
    assert h.name == "MQM" and h.n_judged == judged.sum()
    assert math.isclose(h.overall.a, ha[judged].mean()) and math.isclose(h.overall.b, hb[judged].mean())
    bucket = bucket_of(primary_ref_len(systems_statistics([a], refs, opts)[0]), LENGTH_CUTOFFS)
    labels = bucket_labels(LENGTH_CUTOFFS)
    assert sum(r.n_segments for r in h.by_length.rows) == judged.sum()
    for row in h.by_length.rows:
        sel = judged & (bucket == labels.index(row.bucket))
        assert row.n_segments == sel.sum() and math.isclose(row.b, hb[sel].mean())
    sent = {e.seg_id: e for lst in res.examples for e in lst.items}
    for e in h.disagreements.items:
        assert judged[e.seg_id]
        assert np.sign(e.sentence_b - e.sentence_a) == -np.sign(e.human_b - e.human_a) != 0
    assert not sent or all(math.isnan(e.human_a) == math.isnan(ha[e.seg_id]) for e in sent.values())
    # no human scores for one side: no human section
    sa2, sb2 = sides(a, b, ha, None)
    assert compare_sides(sa2, sb2, refs, opts, n_samples=20).human is None


def test_tables_and_json(demo):
    res = demo["result"]
    tables = comparison_tables(res)
    assert tuple(tables) == TABLE_NAMES
    systems = tables["systems"].to_pylist()
    assert [r["system"] for r in systems] == ["Nemo", "UEdin"] and systems[0]["bleu"] == res.a.score.score
    buckets = tables["buckets"].to_pylist()
    assert buckets[0]["group"] == "overall" and buckets[0]["p_value"] == res.headline.p_value
    assert {"length", "sentence_bleu", "word_frequency", "precision"} <= {r["group"] for r in buckets}
    assert all(r["system_a"] == "Nemo" and r["system_b"] == "UEdin" for r in buckets)
    assert tables["ngrams"].num_rows == sum(len(lst.rows) for lst in res.ngrams)
    assert tables["examples"].num_rows == 10
    out = json.loads(json.dumps(to_json(res), allow_nan=False))
    assert out["paired_bs"]["p_value"] == res.headline.p_value and out["human"] is None
    assert [g["key"] for g in out["groups"]] == ["length", "length_diff", "sentence_bleu", "word_frequency",
                                                 "precision"]


def test_page_escapes_every_text_and_names_no_url():
    opts = make_options(tokenize="none")
    evil = '<script>alert("x")</script>'
    a = [f"{evil} a b", "x y & z"]
    b = ["a b", "x <b>y</b>"]
    refs = [["a b", "x y"]]
    sa, sb = sides(a, b, names=("<i>A</i>", "B&B"))
    page = render_page(compare_sides(sa, sb, refs, opts, source=["<src>", "s2"], n_samples=20))
    assert evil not in page and "&lt;script&gt;" in page and "<i>A</i>" not in page and "&lt;i&gt;A" in page
    assert "&lt;src&gt;" in page and "B&amp;B" in page
    assert page.count("<script>") == 1  # only the page's own
    for needle in ("http://", "https://", "src=", "url(", "@import"):
        assert needle not in page


# --------------------------------------------------------------------------------------------------------------
# more than two systems
# --------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def three(demo):
    """Nemo (the baseline), UEdin and Online-W on the demo's first 250 segments."""
    c = read_lines(DEMO / "systems" / "Online-W.txt")[:N_DEMO]
    sa, sb = demo["sides"]
    req = ComparisonRequest(sa, sb, demo["refs"], demo["opts"], ref_names=("ref-C", "ref-D"), n_samples=N_SAMPLES,
                            seed=7, n_examples=5, top=10, others=[Side("Online-W", c)])
    return {**demo, "c": c, "set": compare_systems(req)}


def test_each_pair_of_a_set_is_what_comparing_it_alone_gives(three):
    """The baseline against each other system, every resample drawn from the seed and the segment count: the pair
    (Nemo, UEdin) of three systems is the two-system comparison, number for number; (Nemo, Online-W) too."""
    res = three["set"]
    assert isinstance(res, ComparisonSet) and res.labels == ("Nemo", "UEdin", "Online-W")
    assert json.dumps(to_json(res.pairs[0])) == json.dumps(to_json(three["result"]))
    alone = compare_sides(Side("Nemo", three["a"]), Side("Online-W", three["c"]), three["refs"], three["opts"],
                          ref_names=("ref-C", "ref-D"), n_samples=N_SAMPLES, seed=7, n_examples=5, top=10)
    assert json.dumps(to_json(res.pairs[1])) == json.dumps(to_json(alone))
    assert abs(res.systems[2].score.score - sacrebleu.corpus_bleu(three["c"], three["refs"]).score) < 1e-9


def test_a_set_s_tables_put_every_system_side_by_side(three):
    res = three["set"]
    for table in res.tables:
        assert [line.bucket for line in table.lines]
        for j, pair in enumerate(res.pairs):
            group = next(g for g in pair.bleu_groups if g.key == table.key)
            assert [r for r in (line.rows[j] for line in table.lines) if r is not None] == list(group.rows)
            assert table.pair(j) == group
    by_key = {t.key: t for t in res.tables}
    # the baseline's numbers are the same in every row of a line
    for line in by_key["length"].lines:
        assert len({(r.a, r.a_low, r.a_high) for r in line.rows}) == 1
    assert "the other systems in the low buckets" in by_key["sentence_bleu"].note
    assert "favours UEdin" in by_key["sentence_bleu"].pair_notes[0]
    assert "favours Online-W" in by_key["sentence_bleu"].pair_notes[1]
    assert by_key["length_diff"].per_system and not by_key["length"].per_system
    tables = comparison_tables(res)
    assert {(r["system_a"], r["system_b"]) for r in tables["buckets"].to_pylist()} == {("Nemo", "UEdin"),
                                                                                       ("Nemo", "Online-W")}
    out = json.loads(json.dumps(set_json(res), allow_nan=False))
    assert out["baseline"] == "Nemo" and [c["system_b"] for c in out["comparisons"]] == ["UEdin", "Online-W"]
    assert out["pairs"][1]["paired_bs"]["p_value"] == res.pairs[1].headline.p_value


def test_more_systems_are_checked(demo):
    sa, sb = demo["sides"]
    with pytest.raises(ConfigError, match="compared with itself"):
        compare_systems(ComparisonRequest(sa, sb, demo["refs"], demo["opts"], others=[Side("Nemo", demo["b"])]))
    with pytest.raises(ConfigError, match="compare_systems"):
        compare(ComparisonRequest(sa, sb, demo["refs"], demo["opts"], others=[Side("C", demo["b"])]))
    with pytest.raises(InputError, match="system 'C' has 3 lines"):
        compare_systems(ComparisonRequest(sa, sb, demo["refs"], demo["opts"], others=[Side("C", demo["b"][:3])]))
    st_a, st_b = systems_statistics([demo["a"], demo["b"]], demo["refs"], demo["opts"])
    with pytest.raises(InputError, match="statistics of 2 systems for 3"):
        compare_systems(ComparisonRequest(sa, sb, demo["refs"], demo["opts"], others=[Side("C", demo["b"])],
                                          statistics=(st_a, st_b)))


def test_the_page_of_a_set(three):
    page = render_page(three["set"])
    assert "<h1>" in page and page.count('<span class="vs">vs</span>') == 2
    assert page.count('<table class="buckets">') == 4 and page.count('<table class="buckets own">') == 1
    assert page.count('<div class="who">') == 4 and "the others better ▶" in page
    assert page.count('<h3 class="pair">') == 4  # the n-grams and the segments of each pair
    assert 'id="ex-b_better"' in page and 'id="ex-b_better-2"' in page
    two = render_page(three["result"])
    assert '<h3 class="pair">' not in two and "UEdin better ▶" in two and "(A, baseline)" in two


# --------------------------------------------------------------------------------------------------------------
# LaTeX
# --------------------------------------------------------------------------------------------------------------


def test_latex_tables_escape_and_hold_every_breakdown(three):
    tex = latex_tables(three["set"])
    assert tex.count("\\begin{table}") == tex.count("\\end{table}") == 5
    assert tex.count("\\toprule") == tex.count("\\bottomrule") == 5
    assert "\\cmidrule(lr){2-3} \\cmidrule(lr){4-5} \\cmidrule(lr){6-7}" in tex  # length difference: 3 systems
    header = next(line for line in tex.splitlines() if line.startswith("Ref.\\ length"))
    assert header == "Ref.\\ length & Segments & Nemo & UEdin & Online-W & $\\Delta$ UEdin & $\\Delta$ Online-W \\\\"
    first = three["set"].tables[0].lines[0]
    row = next(line for line in tex.splitlines() if line.startswith("$<10$"))
    cells = [c.strip() for c in row.rstrip("\\ ").split("&")]
    assert cells[2:5] == [f"{first.first.a:.2f}", *(f"{r.b:.2f}" for r in first.rows)]
    assert cells[5].startswith(f"${first.rows[0].delta:+.2f}")
    opts = make_options(tokenize="none")
    sa, sb = sides(HYP_A, HYP_B, names=("my_sys", "50%&#$~^{x}\\"))
    odd = latex_tables(compare_sides(sa, sb, REFS, opts, n_samples=20))
    assert "my\\_sys" in odd and "50\\%\\&\\#\\$\\textasciitilde{}\\textasciicircum{}\\{x\\}\\textbackslash{}" in odd
    assert all("my_sys" not in line for line in odd.splitlines() if not line.startswith("%"))
