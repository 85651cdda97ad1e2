"""The comparison page: one self-contained HTML file from a :class:`~.result.ComparisonResult`.

Everything is inline: CSS, the charts (SVG written here), and a small script for the search box and the length
filter of the examples. No server, no network: a Content-Security-Policy forbids every fetch (the favicon is a
``data:`` URL), and the page names no external URL. Every text from the data is escaped (:func:`html.escape`).

Test hook: the page applies ``#search=TEXT&minlen=N&maxlen=M`` from its URL on load (and on ``hashchange``), so a
headless browser's ``--dump-dom`` shows which examples it hides (``hidden``), and ``<body data-ready="1">`` says the
script ran.

Reads the result only; writes nothing (the caller writes the returned string with the atomic writer). Standard
library only.
"""

from __future__ import annotations

import html
import math
from typing import Sequence

from ...version import __version__
from .result import (
    LEVEL,
    BucketGroup,
    ComparisonResult,
    Example,
    ExampleList,
    NgramList,
    PairedRow,
    SystemSummary,
)

#: Colours of system A and B (a blue/orange pair that colour-blind readers tell apart).
COLOR_A = "#2563eb"
COLOR_B = "#d9480f"
#: Buckets with fewer segments than this are marked (their intervals are wide).
FEW_SEGMENTS = 10

_CSS = """
:root{--a:%(a)s;--b:%(b)s;--ink:#1f2933;--muted:#64748b;--line:#e2e8f0;--bg:#f8fafc;--ma:#dbe6fd;--mb:#fde3d3}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;color:var(--ink);
  background:var(--bg)}
main{max-width:1180px;margin:0 auto;padding:24px 28px 48px}
h1{font-size:28px;margin:0 0 4px}h2{font-size:21px;margin:36px 0 8px;padding-top:8px;border-top:2px solid var(--line)}
h3{font-size:16px;margin:22px 0 4px}
.a{color:var(--a)}.b{color:var(--b)}
.meta,.note{color:var(--muted);font-size:13px;margin:2px 0 8px}
nav{font-size:13px;margin:10px 0 0}nav a{color:var(--muted);margin-right:14px}
.cards{display:grid;grid-template-columns:1fr 1fr 1.35fr;gap:14px;margin-top:16px}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:14px 16px}
.card.sys-a{border-top:4px solid var(--a)}.card.sys-b{border-top:4px solid var(--b)}
.card.delta{border-top:4px solid #475569}
.card .label{font-size:13px;color:var(--muted)}.card .big{font-size:34px;font-weight:650;line-height:1.15}
.card .ci{font-size:13px;color:var(--muted)}.card .small{font-size:12px;color:var(--muted);margin-top:6px}
.verdict{font-size:15px;margin:6px 0 0}
.sig{display:inline-block;font-size:12px;padding:1px 7px;border-radius:10px;background:#dcfce7;color:#166534}
.nosig{display:inline-block;font-size:12px;padding:1px 7px;border-radius:10px;background:#f1f5f9;color:#475569}
code.sig-line{display:block;font-size:12px;color:var(--muted);background:#fff;border:1px solid var(--line);
  border-radius:6px;padding:6px 8px;margin-top:12px;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%%;background:#fff;border:1px solid var(--line);border-radius:6px;
  font-size:13.5px}
th,td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
th{background:#f1f5f9;font-weight:600;font-size:12.5px;color:#334155}
td.l,th.l{text-align:left}td.plot,th.plot{padding:0 6px;width:280px}
tr.few td{color:#94a3b8}
.iv{color:#94a3b8;font-size:12px}
.grid2{display:grid;grid-template-columns:1fr 1fr;gap:14px}
.ngrams td.l{white-space:normal;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
.controls{position:sticky;top:0;z-index:2;background:var(--bg);padding:10px 0;display:flex;gap:14px;
  align-items:center;flex-wrap:wrap;border-bottom:1px solid var(--line)}
.controls input[type=search]{width:320px;padding:6px 8px;font-size:14px;border:1px solid #cbd5e1;border-radius:6px}
.controls input[type=number]{width:70px;padding:5px 6px;font-size:14px;border:1px solid #cbd5e1;border-radius:6px}
.controls .shown{color:var(--muted);font-size:13px}
.ex{background:#fff;border:1px solid var(--line);border-radius:8px;padding:10px 14px;margin:10px 0}
.ex[hidden],.empty[hidden]{display:none}
.ex header{font-size:13px;color:var(--muted);margin-bottom:6px}
.ex header b{color:var(--ink)}
.ex dl{display:grid;grid-template-columns:130px 1fr;gap:3px 12px;margin:0}
.ex dt{font-size:12.5px;color:var(--muted);text-align:right;padding-top:1px;overflow:hidden;text-overflow:ellipsis}
.ex dd{margin:0}
.ex dt.a{color:var(--a);font-weight:600}.ex dt.b{color:var(--b);font-weight:600}
mark.a{background:var(--ma);color:inherit;border-radius:3px;padding:0 1px}
mark.b{background:var(--mb);color:inherit;border-radius:3px;padding:0 1px}
.empty{color:var(--muted);font-style:italic}
.pill{display:inline-block;border-radius:10px;padding:0 7px;font-size:12px;font-weight:600}
.pill.a{background:var(--ma)}.pill.b{background:var(--mb)}
footer{margin-top:40px;color:var(--muted);font-size:12.5px}
footer li{margin:3px 0}
@media (max-width:900px){.cards,.grid2{grid-template-columns:1fr}td.plot,th.plot{width:180px}}
""" % {"a": COLOR_A, "b": COLOR_B}

_SCRIPT = """
(function () {
  var q = document.getElementById('search'), lo = document.getElementById('minlen'),
      hi = document.getElementById('maxlen'), shown = document.getElementById('shown');
  var items = Array.prototype.slice.call(document.querySelectorAll('.ex'));
  var texts = items.map(function (e) { return e.textContent.toLowerCase(); });
  var lists = Array.prototype.slice.call(document.querySelectorAll('.exlist'));
  function num(input, dflt) { var v = input.value.trim(); return v === '' || isNaN(+v) ? dflt : +v; }
  function apply() {
    var s = q.value.trim().toLowerCase(), a = num(lo, -Infinity), b = num(hi, Infinity), n = 0;
    items.forEach(function (e, i) {
      var len = +e.getAttribute('data-len');
      var ok = (!s || texts[i].indexOf(s) >= 0) && len >= a && len <= b;
      e.hidden = !ok;
      if (ok) { n += 1; }
    });
    lists.forEach(function (l) {
      var any = l.querySelector('.ex:not([hidden])') !== null, empty = l.querySelector('.empty');
      if (empty) { empty.hidden = any; }
    });
    shown.textContent = n + ' of ' + items.length + ' segments shown';
  }
  function fromHash() {
    var h = window.location.hash.replace(/^#/, '');
    h.split('&').forEach(function (kv) {
      var k = kv.split('=')[0], v = kv.indexOf('=') < 0 ? '' : kv.slice(kv.indexOf('=') + 1);
      try { v = decodeURIComponent(v.replace(/[+]/g, ' ')); } catch (err) { return; }
      if (k === 'search') { q.value = v; } else if (k === 'minlen') { lo.value = v; }
      else if (k === 'maxlen') { hi.value = v; }
    });
  }
  [q, lo, hi].forEach(function (el) { el.addEventListener('input', apply); });
  window.addEventListener('hashchange', function () { fromHash(); apply(); });
  fromHash();
  apply();
  document.body.setAttribute('data-ready', '1');
})();
"""


# --------------------------------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------------------------------


def esc(text: object) -> str:
    """Escaped text for element content and attribute values."""
    return html.escape(str(text), quote=True)


def _fmt(x: float, digits: int = 2, sign: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return "–"
    x = float(x) + 0.0  # no "-0.00"
    if round(x, digits) == 0:
        x = 0.0
    text = f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"
    return text.replace("-", "−")


def _digits(metric: str) -> int:
    return 3 if metric == "human" else 2


def _p(p: float) -> str:
    if not math.isfinite(p):
        return "–"
    return f"{p:.4f}" if p >= 0.0001 else f"{p:.1e}"


# --------------------------------------------------------------------------------------------------------------
# Charts (inline SVG)
# --------------------------------------------------------------------------------------------------------------


def _scale(rows: Sequence[PairedRow]) -> tuple[float, float]:
    """A symmetric-enough axis covering every interval and zero, with some margin."""
    values = [v for r in rows for v in (r.delta, r.delta_low, r.delta_high) if v is not None and math.isfinite(v)]
    lo, hi = min(values + [0.0]), max(values + [0.0])
    if hi - lo == 0:
        lo, hi = -1.0, 1.0
    pad = 0.06 * (hi - lo)
    return lo - pad, hi + pad


def _x(v: float, lo: float, hi: float, width: float, margin: float = 8.0) -> float:
    return margin + (v - lo) / (hi - lo) * (width - 2 * margin)


def interval_svg(row: PairedRow, lo: float, hi: float, width: int = 270, height: int = 22) -> str:
    """One row of a forest plot: zero line, the 95% interval of B - A and the point, coloured by the system it
    favours when the interval excludes zero (grey otherwise)."""
    zero = _x(0.0, lo, hi, width)
    parts = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="difference {esc(_fmt(row.delta, 2, True))}">',
             f'<line x1="{zero:.1f}" y1="0" x2="{zero:.1f}" y2="{height}" stroke="#94a3b8" stroke-width="1"/>']
    if math.isfinite(row.delta_low) and math.isfinite(row.delta_high):
        if row.delta_low > 0:
            color = COLOR_B
        elif row.delta_high < 0:
            color = COLOR_A
        else:
            color = "#64748b"
        x1, x2 = _x(row.delta_low, lo, hi, width), _x(row.delta_high, lo, hi, width)
        y = height / 2
        parts.append(f'<line x1="{x1:.1f}" y1="{y}" x2="{x2:.1f}" y2="{y}" stroke="{color}" stroke-width="3" '
                     'stroke-linecap="round"/>')
        if math.isfinite(row.delta):
            parts.append(f'<circle cx="{_x(row.delta, lo, hi, width):.1f}" cy="{y}" r="4.5" fill="#fff" '
                         f'stroke="{color}" stroke-width="2"/>')
    parts.append("</svg>")
    return "".join(parts)


def axis_svg(lo: float, hi: float, a: str, b: str, width: int = 270, height: int = 30) -> str:
    """The axis of a forest plot column: ticks, and which side favours which system."""
    span = hi - lo
    raw = span / 4
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=mag)
    ticks = []
    t = math.ceil(lo / step) * step
    while t <= hi + 1e-12:
        ticks.append(t)
        t += step
    parts = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" aria-hidden="true">']
    for t in ticks:
        x = _x(t, lo, hi, width)
        label = _fmt(t, 0 if float(step).is_integer() else (1 if step >= 0.1 else 2), True if t else False)
        parts.append(f'<line x1="{x:.1f}" y1="{height - 4}" x2="{x:.1f}" y2="{height}" stroke="#94a3b8"/>'
                     f'<text x="{x:.1f}" y="{height - 7}" font-size="10" fill="#64748b" '
                     f'text-anchor="middle">{esc(label)}</text>')
    parts.append(f'<text x="2" y="10" font-size="10" fill="{COLOR_A}">◀ {esc(_short(a))} better</text>'
                 f'<text x="{width - 2}" y="10" font-size="10" fill="{COLOR_B}" text-anchor="end">'
                 f'{esc(_short(b))} better ▶</text></svg>')
    return "".join(parts)


def _short(label: str, n: int = 16) -> str:
    return label if len(label) <= n else label[: n - 1] + "…"


def bar_svg(value: float, vmax: float, color: str, width: int = 60, height: int = 10) -> str:
    """A small horizontal bar (n-gram log ratios)."""
    w = 0.0 if vmax <= 0 or not math.isfinite(value) else min(1.0, abs(value) / vmax) * width
    return (f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" aria-hidden="true">'
            f'<rect x="0" y="1" width="{w:.1f}" height="{height - 2}" rx="2" fill="{color}" opacity="0.75"/></svg>')


# --------------------------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------------------------


def _headline(r: ComparisonResult) -> str:
    a, b, h = r.a, r.b, r.headline
    pct = f"{LEVEL:.0%}"

    def card(cls: str, side_cls: str, s: SystemSummary) -> str:
        sc = s.score
        prec = "/".join(f"{p:.1f}" for p in sc.precisions)
        return (f'<div class="card {cls}"><div class="label"><b class="{side_cls}">{esc(s.label)}</b> '
                f'{"(A, baseline)" if side_cls == "a" else "(B)"}</div>'
                f'<div class="big">{_fmt(sc.score)}</div>'
                f'<div class="ci">BLEU, {pct} CI {_fmt(s.ci_low)} – {_fmt(s.ci_high)}</div>'
                f'<div class="small">precisions {esc(prec)} · BP {sc.bp:.3f} · ratio {sc.ratio:.3f} · '
                f'hyp_len {esc(sc.hyp_len)} · ref_len {esc(sc.ref_len)}</div></div>')

    if r.significant:
        winner = b.label if h.delta > 0 else a.label
        badge = f'<span class="sig">significant, p = {_p(h.p_value)}</span>'
        verdict = (f'<b class="{"b" if h.delta > 0 else "a"}">{esc(winner)}</b> is better by '
                   f'{_fmt(abs(h.delta))} BLEU.')
    else:
        badge = f'<span class="nosig">not significant, p = {_p(h.p_value)}</span>'
        verdict = "The difference is within what resampling the test set produces."
    delta = (f'<div class="card delta"><div class="label">difference <b class="b">{esc(b.label)}</b> − '
             f'<b class="a">{esc(a.label)}</b></div><div class="big">{_fmt(h.delta, 2, True)}</div>'
             f'<div class="ci">BLEU, {pct} CI {_fmt(h.delta_low, 2, True)} to {_fmt(h.delta_high, 2, True)} '
             f'{badge}</div><p class="verdict">{verdict}</p>'
             f'<div class="small">paired bootstrap over {r.n_segments:,} segments: {r.n_samples:,} resamples, '
             f'seed {esc(r.seed)} (sacrebleu --paired-bs)</div></div>')
    out = ['<section id="headline"><div class="cards">', card("sys-a", "a", a), card("sys-b", "b", b), delta,
           "</div>"]
    if r.human is not None:
        o = r.human.overall
        sig = "significant" if not o.p_value > 0.05 else "not significant"
        out.append(f'<p class="verdict">{esc(r.human.name)} (higher is better, {r.human.n_judged:,} segments judged '
                   f'for both): <b class="a">{esc(a.label)}</b> {_fmt(o.a, 3)}, <b class="b">{esc(b.label)}</b> '
                   f'{_fmt(o.b, 3)}, difference {_fmt(o.delta, 3, True)} ({pct} CI {_fmt(o.delta_low, 3, True)} to '
                   f'{_fmt(o.delta_high, 3, True)}, {sig}, p = {_p(o.p_value)}).</p>')
    out.append(f'<code class="sig-line">{esc(r.signature)}</code></section>')
    return "".join(out)


def bucket_table(group: BucketGroup, a: str, b: str) -> str:
    """A breakdown: one row per bucket with both values and intervals, the difference, and its forest plot."""
    if not group.rows:
        return f'<h3>{esc(group.title)}</h3><p class="note">No segments.</p>'
    d = _digits(group.metric)
    lo, hi = _scale(group.rows)
    words = group.rows[0].words is not None
    head = ['<tr><th class="l">bucket</th><th>segments</th>']
    if words:
        head.append("<th>ref words</th>")
    head.append(f'<th><span class="a">{esc(_short(a))}</span></th><th><span class="b">{esc(_short(b))}</span></th>'
                f'<th>B − A ({LEVEL:.0%} CI)</th><th class="plot">{axis_svg(lo, hi, a, b)}</th></tr>')
    body = []
    for row in group.rows:
        few = row.n_segments < FEW_SEGMENTS and group.key not in ("word_frequency", "precision")
        cells = [f'<td class="l">{esc(row.bucket)}</td><td>{row.n_segments:,}</td>']
        if words and row.words is not None:
            cells.append(f"<td>{row.words.ref:,}</td>")
        cells.append(f'<td>{_fmt(row.a, d)} <span class="iv">[{_fmt(row.a_low, d)}, {_fmt(row.a_high, d)}]</span>'
                     f'</td><td>{_fmt(row.b, d)} <span class="iv">[{_fmt(row.b_low, d)}, {_fmt(row.b_high, d)}]'
                     f'</span></td><td><b>{_fmt(row.delta, d, True)}</b> <span class="iv">'
                     f'[{_fmt(row.delta_low, d, True)}, {_fmt(row.delta_high, d, True)}]</span></td>'
                     f'<td class="plot">{interval_svg(row, lo, hi)}</td>')
        attrs = ' class="few" title="few segments: a wide interval"' if few else ""
        body.append(f'<tr{attrs}>{"".join(cells)}</tr>')
    return (f'<h3 id="g-{esc(group.key)}">{esc(group.title)}</h3>'
            f'<p class="note">{esc(group.note)}</p><table class="buckets"><thead>{"".join(head)}</thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def ngram_table(lst: NgramList, a: str, b: str) -> str:
    who = a if lst.favours == "a" else b
    cls = lst.favours
    other = b if lst.favours == "a" else a
    if lst.kind == "match":
        title = f'<span class="{cls}">{esc(who)}</span> gets right more often than {esc(other)}'
    else:
        title = f'<span class="{cls}">{esc(who)}</span> over-produces'
    vmax = max((abs(r.log_ratio) for r in lst.rows), default=1.0)
    color = "var(--a)" if cls == "a" else "var(--b)"
    rows = "".join(
        f'<tr><td class="l">{esc(r.ngram)}</td><td>{r.order}</td><td>{r.count_a:,}</td><td>{r.count_b:,}</td>'
        f'<td>{_fmt(r.log_ratio, 2, True)} {bar_svg(r.log_ratio, vmax, color)}</td></tr>' for r in lst.rows)
    if not rows:
        rows = '<tr><td class="l empty" colspan="5">none</td></tr>'
    return (f'<div><h3>{title}</h3><table class="ngrams"><thead><tr><th class="l">n-gram</th><th>order</th>'
            f'<th><span class="a">{esc(_short(a, 12))}</span></th><th><span class="b">{esc(_short(b, 12))}</span>'
            f'</th><th>log ratio</th></tr></thead><tbody>{rows}</tbody></table></div>')


def _words(words: Sequence[tuple[str, bool]], cls: str) -> str:
    out = []
    for w, differs in words:
        out.append(f'<mark class="{cls}">{esc(w)}</mark>' if differs else esc(w))
    return " ".join(out) if out else '<span class="empty">(empty)</span>'


def example_card(e: Example, r: ComparisonResult, human: bool) -> str:
    a, b = r.a.label, r.b.label
    lead = (f'<b>#{e.seg_id}</b> · reference length {e.ref_len} · sentence BLEU '
            f'<span class="pill a">{esc(_short(a))} {_fmt(e.sentence_a, 1)}</span> '
            f'<span class="pill b">{esc(_short(b))} {_fmt(e.sentence_b, 1)}</span> '
            f'(B − A {_fmt(e.delta, 1, True)})')
    if human and math.isfinite(e.human_a) and math.isfinite(e.human_b):
        name = r.human.name if r.human is not None else "human"
        lead += (f' · {esc(name)} <span class="pill a">{_fmt(e.human_a, 2)}</span> '
                 f'<span class="pill b">{_fmt(e.human_b, 2)}</span>')
    rows = []
    if e.source is not None:
        rows.append(f"<dt>source</dt><dd>{esc(e.source)}</dd>")
    for name, ref in zip(r.ref_names, e.references):
        if ref is not None:
            rows.append(f'<dt title="{esc(name)}">{esc(name)}</dt><dd>{esc(ref)}</dd>')
    rows.append(f'<dt class="a" title="{esc(a)}">{esc(a)}</dt><dd>{_words(e.words_a, "a")}</dd>')
    rows.append(f'<dt class="b" title="{esc(b)}">{esc(b)}</dt><dd>{_words(e.words_b, "b")}</dd>')
    return (f'<article class="ex" data-seg="{e.seg_id}" data-len="{e.ref_len}"><header>{lead}</header>'
            f'<dl>{"".join(rows)}</dl></article>')


def example_section(lst: ExampleList, r: ComparisonResult) -> str:
    a, b = r.a.label, r.b.label
    titles = {
        "b_better": (f'Segments where <span class="b">{esc(b)}</span> beats <span class="a">{esc(a)}</span> most '
                     "(sentence BLEU)"),
        "a_better": (f'Segments where <span class="a">{esc(a)}</span> beats <span class="b">{esc(b)}</span> most '
                     "(sentence BLEU)"),
        "disagree": "Segments where BLEU and the human scores disagree most about which system is better",
    }
    items = "".join(example_card(e, r, lst.key == "disagree" or r.human is not None) for e in lst.items)
    if lst.key == "disagree" and r.human is not None:
        items = (f'<p class="note">Sentence BLEU prefers one system and {esc(r.human.name)} the other; ranked by '
                 "the product of the two standardised differences, so both disagree strongly at the top.</p>"
                 + items)
    empty = '<p class="empty">No segment matches the filter.</p>' if lst.items else \
        '<p class="empty">No such segment.</p>'
    return (f'<section class="exlist" id="ex-{esc(lst.key)}"><h3>{titles.get(lst.key, esc(lst.key))} '
            f'<span class="meta">({len(lst.items)})</span></h3>{items}{empty}</section>')


def _footer(r: ComparisonResult) -> str:
    notes = [
        f"Intervals: {r.n_samples:,} bootstrap resamples of the segments (seed {esc(r.seed)}), drawn as sacrebleu "
        "draws them; a system's interval is sacrebleu's mean ± half the 95% range, a difference's the 2.5–97.5 "
        "percentiles of the paired differences.",
        "A bucket is a sub-test-set: its BLEU is corpus BLEU of its segments (equal to sacrebleu on them) and its "
        "interval resamples those segments. Word F-measure and n-gram precisions resample the whole test set.",
        "Sentence BLEU (buckets, examples) uses effective order, as sacrebleu's sentence_bleu."
        if r.sentence_effective_order else f"Sentence BLEU uses the {esc(r.options.profile)} profile's formula "
        "without effective order.",
        "Differing words: a word diff of the two outputs (whitespace-split); highlighted words are not in a run "
        "both outputs share.",
    ]
    return ("<footer><ul>" + "".join(f"<li>{n}</li>" for n in notes) + "</ul>"
            f"<p>Generated by harness-compare (bleu-harness {esc(__version__)}).</p></footer>")


def render_page(result: ComparisonResult) -> str:
    """The whole page as a string: headline, breakdowns, n-grams, examples (searchable, length filter), human
    scores when there are any."""
    r = result
    a, b = r.a.label, r.b.label
    where = " · ".join(x for x in (
        esc(r.dataset) if r.dataset else "",
        f"{r.n_segments:,} segments",
        "references " + ", ".join(esc(x) for x in r.ref_names),
        esc(r.variant) if r.variant else "",
    ) if x)
    nav = ['<a href="#headline">headline</a>', '<a href="#buckets">where</a>', '<a href="#ngrams">n-grams</a>',
           '<a href="#examples">segments</a>']
    if r.human is not None:
        nav.append('<a href="#human">human scores</a>')
    bleu_groups = [r.by_length, r.by_sentence_bleu, r.by_frequency, r.precisions]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',
        f"<title>{esc(a)} vs {esc(b)} · harness-compare</title>",
        f"<style>{_CSS}</style></head><body><main>",
        f'<h1><span class="a">{esc(a)}</span> <span class="meta" style="font-size:20px">vs</span> '
        f'<span class="b">{esc(b)}</span></h1>',
        f'<p class="meta">{where}</p><nav>{"".join(nav)}</nav>',
        _headline(r),
        '<h2 id="buckets">Where the difference comes from</h2>',
        "".join(bucket_table(g, a, b) for g in bleu_groups),
        '<h2 id="ngrams">n-grams</h2>',
        f'<p class="note">Clipped matches (output n-grams also in a reference, at most as often) and over-productions '
        f"(output n-grams beyond the reference count), summed over segments, orders 1–{r.options.max_ngram_order} "
        f"together, ranked by the smoothed log ratio log((count + {r.ngram_alpha:g}) / (other + "
        f"{r.ngram_alpha:g})) as compare-mt does.</p>",
        '<div class="grid2">', "".join(ngram_table(lst, a, b) for lst in r.ngrams if lst.kind == "match"), "</div>",
        '<div class="grid2">', "".join(ngram_table(lst, a, b) for lst in r.ngrams if lst.kind == "over"), "</div>",
        '<h2 id="examples">Segments</h2>',
        '<div class="controls"><label>search <input type="search" id="search" placeholder="words in any text" '
        'autocomplete="off"></label><label>reference length from <input type="number" id="minlen" min="0"> to '
        '<input type="number" id="maxlen" min="0"> tokens</label><span class="shown" id="shown"></span></div>',
        "".join(example_section(lst, r) for lst in r.examples),
    ]
    if r.human is not None:
        parts += [
            f'<h2 id="human">{esc(r.human.name)} scores</h2>',
            bucket_table(r.human.by_length, a, b),
            bucket_table(r.human.by_sentence_bleu, a, b),
            example_section(r.human.disagreements, r),
        ]
    parts += [_footer(r), "</main>", f"<script>{_SCRIPT}</script>", "</body></html>"]
    return "\n".join(parts) + "\n"
