"""The comparison page: one self-contained HTML file from a :class:`~.result.ComparisonResult` (two systems) or a
:class:`~.result.ComparisonSet` (two or more; the first is the baseline).

Everything is inline: CSS, the charts (SVG written here), and a small script for the search box and the length
filter of the examples. No server, no network: a Content-Security-Policy forbids every fetch (the favicon is a
``data:`` URL), and the page names no external URL. Every text from the data is escaped (:func:`html.escape`).

Every breakdown shows all systems side by side (a column per system, the difference of each to the baseline with
its interval, and a forest plot of those intervals); the n-grams, the examples and the human scores are per pair,
the baseline against each other system. Names that do not fit a column are cut with an ellipsis (the whole name in
its tooltip), never drawn over each other.

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
    BucketLine,
    BucketTable,
    ComparisonResult,
    ComparisonSet,
    Example,
    ExampleList,
    NgramList,
    PairedRow,
    SystemSummary,
)

#: Colours of the systems in order: the baseline blue, the second orange (a pair colour-blind readers tell apart),
#: then more; beyond the eighth the others repeat, never the baseline's (the names are always written).
COLORS = ("#2563eb", "#d9480f", "#059669", "#7c3aed", "#db2777", "#0891b2", "#a16207", "#4d7c0f")
#: Light backgrounds of the same colours (highlighted words, pills).
MARKS = ("#dbe6fd", "#fde3d3", "#d1fae5", "#ede9fe", "#fce7f3", "#cffafe", "#fef3c7", "#ecfccb")
COLOR_A, COLOR_B = COLORS[0], COLORS[1]
#: Buckets with fewer segments than this are marked (their intervals are wide).
FEW_SEGMENTS = 10
GREY = "#64748b"

_CSS = """
:root{--ink:#1f2933;--muted:#64748b;--line:#e2e8f0;--bg:#f8fafc}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;color:var(--ink);
  background:var(--bg)}
main{max-width:1180px;margin:0 auto;padding:24px 28px 48px}
h1{font-size:28px;margin:0 0 4px;overflow-wrap:anywhere}h1 .vs{color:var(--muted);font-size:20px;font-weight:400}
h2{font-size:21px;margin:36px 0 8px;padding-top:8px;border-top:2px solid var(--line)}
h3{font-size:16px;margin:22px 0 4px}h4{font-size:14.5px;margin:16px 0 4px}
h3.pair{font-size:17px;margin-top:30px;padding-bottom:2px;border-bottom:1px solid var(--line)}
.meta,.note{color:var(--muted);font-size:13px;margin:2px 0 8px}
nav{font-size:13px;margin:10px 0 0}nav a{color:var(--muted);margin-right:14px}
.cards{display:grid;grid-template-columns:1fr 1fr 1.35fr;gap:14px;margin-top:16px}
.cards.many{grid-template-columns:repeat(auto-fill,minmax(250px,1fr))}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:14px 16px;min-width:0}
.card.delta{border-top:4px solid #475569}
.card .label{font-size:13px;color:var(--muted);overflow-wrap:anywhere}
.card .big{font-size:34px;font-weight:650;line-height:1.15}
.card .ci{font-size:13px;color:var(--muted)}.card .small{font-size:12px;color:var(--muted);margin-top:6px}
.verdict{font-size:15px;margin:6px 0 0}
.sig{display:inline-block;font-size:12px;padding:1px 7px;border-radius:10px;background:#dcfce7;color:#166534}
.nosig{display:inline-block;font-size:12px;padding:1px 7px;border-radius:10px;background:#f1f5f9;color:#475569}
code.sig-line{display:block;font-size:12px;color:var(--muted);background:#fff;border:1px solid var(--line);
  border-radius:6px;padding:6px 8px;margin-top:12px;overflow-wrap:anywhere}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid var(--line);border-radius:6px;
  font-size:13.5px}
th,td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
th{background:#f1f5f9;font-weight:600;font-size:12.5px;color:#334155;vertical-align:bottom}
th.name{max-width:150px;overflow:hidden;text-overflow:ellipsis}
td.l,th.l{text-align:left}td.plot,th.plot{padding:0 6px;width:280px}
th.group{text-align:center;border-bottom:1px solid #cbd5e1}
tr.few td{color:#94a3b8}
.iv{color:#94a3b8;font-size:12px}.iv.blk{display:block;line-height:1.2}
.who{display:flex;flex-direction:column;font-size:10.5px;font-weight:600;line-height:1.3;padding:4px 8px 0;
  width:270px}
.who span{align-self:flex-start;max-width:100%;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.who span+span{align-self:flex-end}
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
.ex dt.sys{font-weight:600}
mark{color:inherit;border-radius:3px;padding:0 1px}
.empty{color:var(--muted);font-style:italic}
.pill{display:inline-block;border-radius:10px;padding:0 7px;font-size:12px;font-weight:600}
footer{margin-top:40px;color:var(--muted);font-size:12.5px}
footer li{margin:3px 0}
@media (max-width:900px){.cards,.grid2{grid-template-columns:1fr}td.plot,th.plot{width:180px}}
"""

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


def _slot(k: int) -> int:
    return 0 if k == 0 else 1 + (k - 1) % (len(COLORS) - 1)


def color(k: int) -> str:
    """The colour of system ``k`` (0: the baseline, whose colour no other system takes)."""
    return COLORS[_slot(k)]


def _system_css(n: int) -> str:
    """Per-system classes: ``c{k}`` text colour, ``m{k}`` light background, ``t{k}`` a card's top border."""
    return "".join(f".c{k}{{color:{color(k)}}}.m{k}{{background:{MARKS[_slot(k)]}}}"
                   f".t{k}{{border-top:4px solid {color(k)}}}" for k in range(n))


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


def _short(label: str, n: int = 16) -> str:
    return label if len(label) <= n else label[: n - 1] + "…"


def _name(label: str, k: int, n: int = 16) -> str:
    """A system's name in its colour, cut to ``n`` characters (the whole name in the tooltip)."""
    return f'<span class="c{k}" title="{esc(label)}">{esc(_short(label, n))}</span>'


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


def interval_svg(rows: Sequence[PairedRow | None], lo: float, hi: float, width: int = 270,
                 keys: Sequence[int] | None = None) -> str:
    """One row of a forest plot: the zero line and the 95% interval of each system minus the baseline with its
    point. Two systems: one interval, coloured by the system it favours when it excludes zero (grey otherwise).
    More: one interval per other system in its colour, solid when it excludes zero, faint when not. ``keys``: the
    colour index of every system, the baseline first (default ``0, 1, 2, ...``)."""
    keys = list(keys) if keys is not None else list(range(len(rows) + 1))
    many = len(rows) > 1
    height = 22 if not many else 6 + 11 * len(rows)
    zero = _x(0.0, lo, hi, width)
    label = ", ".join(_fmt(r.delta, 2, True) for r in rows if r is not None)
    parts = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="difference {esc(label)}">',
             f'<line x1="{zero:.1f}" y1="0" x2="{zero:.1f}" y2="{height}" stroke="#94a3b8" stroke-width="1"/>']
    for j, row in enumerate(rows):
        if row is None or not (math.isfinite(row.delta_low) and math.isfinite(row.delta_high)):
            continue
        significant = row.delta_low > 0 or row.delta_high < 0
        if many:
            stroke, opacity = color(keys[j + 1]), ("1" if significant else "0.4")
            fill = stroke if significant else "#fff"
            y = 8.5 + 11 * j
        else:
            stroke = color(keys[1]) if row.delta_low > 0 else color(keys[0]) if row.delta_high < 0 else GREY
            opacity, fill, y = "1", "#fff", height / 2
        x1, x2 = _x(row.delta_low, lo, hi, width), _x(row.delta_high, lo, hi, width)
        parts.append(f'<line x1="{x1:.1f}" y1="{y}" x2="{x2:.1f}" y2="{y}" stroke="{stroke}" stroke-width="3" '
                     f'stroke-linecap="round" stroke-opacity="{opacity}"/>')
        if math.isfinite(row.delta):
            parts.append(f'<circle cx="{_x(row.delta, lo, hi, width):.1f}" cy="{y}" r="{3.5 if many else 4.5}" '
                         f'fill="{fill}" stroke="{stroke}" stroke-width="2" stroke-opacity="{opacity}"/>')
    parts.append("</svg>")
    return "".join(parts)


def axis_svg(lo: float, hi: float, width: int = 270, height: int = 20) -> str:
    """The ticks of a forest plot column (which side favours whom is written above it, :func:`_who`)."""
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
    parts.append("</svg>")
    return "".join(parts)


def _who(labels: Sequence[str], keys: Sequence[int]) -> str:
    """Which side of a forest plot favours whom: the baseline's side on one line at the left, the other's on the
    next at the right, each cut with an ellipsis if it is wider than the column, so two names never run into each
    other."""
    left = f"◀ {labels[0]} better"
    right = f"{labels[1]} better ▶" if len(labels) == 2 else "the others better ▶"
    return (f'<div class="who"><span class="c{keys[0]}" title="{esc(left)}">{esc(left)}</span>'
            f'<span class="{f"c{keys[1]}" if len(labels) == 2 else ""}" title="{esc(right)}">{esc(right)}</span>'
            "</div>")


def counts_svg(counts: Sequence[int], vmax: int, width: int = 270, keys: Sequence[int] | None = None) -> str:
    """Each system's number of segments in a bucket as a bar in its colour (buckets of each system's own
    segments)."""
    keys = list(keys) if keys is not None else list(range(len(counts)))
    height = 4 + 9 * len(counts)
    parts = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="segments {esc(", ".join(str(c) for c in counts))}">']
    for k, c in enumerate(counts):
        w = 0.0 if vmax <= 0 else c / vmax * (width - 16)
        parts.append(f'<rect x="8" y="{3 + 9 * k}" width="{w:.1f}" height="7" rx="2" fill="{color(keys[k])}" '
                     'opacity="0.8"/>')
    parts.append("</svg>")
    return "".join(parts)


def bar_svg(value: float, vmax: float, fill: str, width: int = 60, height: int = 10) -> str:
    """A small horizontal bar (n-gram log ratios)."""
    w = 0.0 if vmax <= 0 or not math.isfinite(value) else min(1.0, abs(value) / vmax) * width
    return (f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" aria-hidden="true">'
            f'<rect x="0" y="1" width="{w:.1f}" height="{height - 2}" rx="2" fill="{fill}" opacity="0.75"/></svg>')


# --------------------------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------------------------


def _card(s: SystemSummary, k: int, many: bool) -> str:
    sc = s.score
    prec = "/".join(f"{p:.1f}" for p in sc.precisions)
    role = ("(baseline)" if k == 0 else "") if many else ("(A, baseline)" if k == 0 else "(B)")
    return (f'<div class="card t{k}"><div class="label"><b class="c{k}">{esc(s.label)}</b> {role}</div>'
            f'<div class="big">{_fmt(sc.score)}</div>'
            f'<div class="ci">BLEU, {LEVEL:.0%} CI {_fmt(s.ci_low)} – {_fmt(s.ci_high)}</div>'
            f'<div class="small">precisions {esc(prec)} · BP {sc.bp:.3f} · ratio {sc.ratio:.3f} · '
            f'hyp_len {esc(sc.hyp_len)} · ref_len {esc(sc.ref_len)}</div></div>')


def _delta_card(r: ComparisonResult, k: int) -> str:
    a, b, h = r.a, r.b, r.headline
    pct = f"{LEVEL:.0%}"
    if r.significant:
        winner, wk = (b.label, k) if h.delta > 0 else (a.label, 0)
        badge = f'<span class="sig">significant, p = {_p(h.p_value)}</span>'
        verdict = f'<b class="c{wk}">{esc(winner)}</b> is better by {_fmt(abs(h.delta))} BLEU.'
    else:
        badge = f'<span class="nosig">not significant, p = {_p(h.p_value)}</span>'
        verdict = "The difference is within what resampling the test set produces."
    return (f'<div class="card delta"><div class="label">difference <b class="c{k}">{esc(b.label)}</b> − '
            f'<b class="c0">{esc(a.label)}</b></div><div class="big">{_fmt(h.delta, 2, True)}</div>'
            f'<div class="ci">BLEU, {pct} CI {_fmt(h.delta_low, 2, True)} to {_fmt(h.delta_high, 2, True)} '
            f'{badge}</div><p class="verdict">{verdict}</p>'
            f'<div class="small">paired bootstrap over {r.n_segments:,} segments: {r.n_samples:,} resamples, '
            f'seed {esc(r.seed)} (sacrebleu --paired-bs)</div></div>')


def _human_verdict(r: ComparisonResult, k: int) -> str:
    if r.human is None:
        return ""
    o, a, b = r.human.overall, r.a, r.b
    pct = f"{LEVEL:.0%}"
    sig = "significant" if not o.p_value > 0.05 else "not significant"
    return (f'<p class="verdict">{esc(r.human.name)} (higher is better, {r.human.n_judged:,} segments judged for '
            f'both): <b class="c0">{esc(a.label)}</b> {_fmt(o.a, 3)}, <b class="c{k}">{esc(b.label)}</b> '
            f'{_fmt(o.b, 3)}, difference {_fmt(o.delta, 3, True)} ({pct} CI {_fmt(o.delta_low, 3, True)} to '
            f'{_fmt(o.delta_high, 3, True)}, {sig}, p = {_p(o.p_value)}).</p>')


def _headline(s: ComparisonSet) -> str:
    systems = s.systems
    if len(s.pairs) == 1:
        cards = [f'<div class="cards">{_card(systems[0], 0, False)}{_card(systems[1], 1, False)}'
                 f'{_delta_card(s.first, 1)}</div>']
    else:
        cards = ['<div class="cards many">', *(_card(x, k, True) for k, x in enumerate(systems)), "</div>",
                 '<div class="cards many">', *(_delta_card(p, j + 1) for j, p in enumerate(s.pairs)), "</div>"]
    out = ['<section id="headline">', *cards]
    out += [_human_verdict(p, j + 1) for j, p in enumerate(s.pairs)]
    out.append(f'<code class="sig-line">{esc(s.signature)}</code></section>')
    return "".join(out)


def _value_cell(value: float, low: float, high: float, d: int, block: bool) -> str:
    return (f'<td>{_fmt(value, d)} <span class="iv{" blk" if block else ""}">[{_fmt(low, d)}, {_fmt(high, d)}]'
            "</span></td>")


def bucket_table(table: BucketTable | BucketGroup, labels: Sequence[str], keys: Sequence[int] | None = None) -> str:
    """A breakdown with every system: one row per bucket, a column per system (value and interval), the difference
    of each system to the baseline with its interval, and their forest plot. Buckets of each system's own segments
    (by length difference) show each system's count and value instead, and the counts as bars. ``keys``: the
    colour index of each system (default ``0, 1, 2, ...``)."""
    if isinstance(table, BucketGroup):
        table = BucketTable.of_group(table)
    keys = list(keys) if keys is not None else list(range(len(labels)))
    if not table.lines:
        return f'<h3 id="g-{esc(table.key)}">{esc(table.title)}</h3><p class="note">No segments.</p>'
    if table.per_system:
        body = _own_segments_table(table, labels, keys)
    else:
        body = _paired_table(table, labels, keys)
    return (f'<h3 id="g-{esc(table.key)}">{esc(table.title)}</h3><p class="note">{esc(table.note)}</p>'
            f'<div class="scroll">{body}</div>')


def _paired_table(table: BucketTable, labels: Sequence[str], keys: Sequence[int]) -> str:
    d = _digits(table.metric)
    many = len(labels) > 2
    lo, hi = _scale([r for line in table.lines for r in line.rows if r is not None])
    words = table.lines[0].first.words is not None
    head = ['<tr><th class="l">bucket</th><th>segments</th>']
    if words:
        head.append("<th>ref words</th>")
    head += [f'<th class="name">{_name(x, k)}</th>' for x, k in zip(labels, keys)]
    if many:
        head += [f'<th class="name">{_name(x, k, 10)} − {_name(labels[0], keys[0], 10)}</th>'
                 for x, k in zip(labels[1:], keys[1:])]
    else:
        head.append(f"<th>B − A ({LEVEL:.0%} CI)</th>")
    head.append(f'<th class="plot">{_who(labels, keys)}{axis_svg(lo, hi)}</th></tr>')
    body = []
    for line in table.lines:
        base = line.first
        few = base.n_segments < FEW_SEGMENTS and table.key not in ("word_frequency", "precision")
        cells = [f'<td class="l">{esc(line.bucket)}</td><td>{base.n_segments:,}</td>']
        if words:
            cells.append(f"<td>{base.words.ref:,}</td>" if base.words is not None else "<td>–</td>")
        cells.append(_value_cell(base.a, base.a_low, base.a_high, d, many))
        for row in line.rows:
            cells.append("<td>–</td>" if row is None else _value_cell(row.b, row.b_low, row.b_high, d, many))
        for row in line.rows:
            if row is None:
                cells.append("<td>–</td>")
                continue
            cells.append(f'<td><b>{_fmt(row.delta, d, True)}</b> <span class="iv{" blk" if many else ""}">'
                         f'[{_fmt(row.delta_low, d, True)}, {_fmt(row.delta_high, d, True)}]</span></td>')
        cells.append(f'<td class="plot">{interval_svg(line.rows, lo, hi, keys=keys)}</td>')
        attrs = ' class="few" title="few segments: a wide interval"' if few else ""
        body.append(f'<tr{attrs}>{"".join(cells)}</tr>')
    return (f'<table class="buckets"><thead>{"".join(head)}</thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def _own_counts(line: BucketLine) -> tuple[list[int], list[tuple[float, float, float]]]:
    """Each system's count and (value, low, high) in a bucket of each system's own segments."""
    base = line.first
    counts = [base.n_segments]
    values = [(base.a, base.a_low, base.a_high)]
    for row in line.rows:
        if row is None:
            counts.append(0)
            values.append((math.nan, math.nan, math.nan))
        else:
            counts.append(row.n_segments_b or 0)
            values.append((row.b, row.b_low, row.b_high))
    return counts, values


def _own_segments_table(table: BucketTable, labels: Sequence[str], keys: Sequence[int]) -> str:
    d = _digits(table.metric)
    n = len(labels)
    per = [_own_counts(line) for line in table.lines]
    vmax = max((c for counts, _ in per for c in counts), default=0)
    metric = {"bleu": "BLEU", "human": "mean"}.get(table.metric, table.metric)
    head = (f'<tr><th class="l" rowspan="2">bucket</th><th class="group" colspan="{n}">segments</th>'
            f'<th class="group" colspan="{n}">{esc(metric)} on its own segments ({LEVEL:.0%} CI)</th>'
            f'<th class="plot" rowspan="2">segments of each system</th></tr><tr>'
            + "".join(f'<th class="name">{_name(x, k)}</th>' for x, k in zip(labels, keys)) * 2 + "</tr>")
    body = []
    for line, (counts, values) in zip(table.lines, per):
        cells = [f'<td class="l">{esc(line.bucket)}</td>', *(f"<td>{c:,}</td>" for c in counts)]
        cells += [_value_cell(v, lo, hi, d, n > 2) if c else "<td>–</td>" for c, (v, lo, hi) in zip(counts, values)]
        cells.append(f'<td class="plot">{counts_svg(counts, vmax, keys=keys)}</td>')
        body.append(f'<tr>{"".join(cells)}</tr>')
    return (f'<table class="buckets own"><thead>{head}</thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def ngram_table(lst: NgramList, a: str, b: str, kb: int = 1, level: int = 3) -> str:
    """One of compare-mt's n-gram lists of the pair (``a``, ``b``); ``kb``: the index of ``b`` among the
    systems (its colour)."""
    k = 0 if lst.favours == "a" else kb
    who = a if lst.favours == "a" else b
    other = b if lst.favours == "a" else a
    if lst.kind == "match":
        title = f'<span class="c{k}">{esc(who)}</span> gets right more often than {esc(other)}'
    else:
        title = f'<span class="c{k}">{esc(who)}</span> over-produces'
    vmax = max((abs(r.log_ratio) for r in lst.rows), default=1.0)
    rows = "".join(
        f'<tr><td class="l">{esc(r.ngram)}</td><td>{r.order}</td><td>{r.count_a:,}</td><td>{r.count_b:,}</td>'
        f'<td>{_fmt(r.log_ratio, 2, True)} {bar_svg(r.log_ratio, vmax, color(k))}</td></tr>' for r in lst.rows)
    if not rows:
        rows = '<tr><td class="l empty" colspan="5">none</td></tr>'
    return (f'<div><h{level}>{title}</h{level}><table class="ngrams"><thead><tr><th class="l">n-gram</th>'
            f'<th>order</th><th class="name">{_name(a, 0, 12)}</th><th class="name">{_name(b, kb, 12)}</th>'
            f'<th>log ratio</th></tr></thead><tbody>{rows}</tbody></table></div>')


def _words(words: Sequence[tuple[str, bool]], k: int) -> str:
    out = []
    for w, differs in words:
        out.append(f'<mark class="m{k}">{esc(w)}</mark>' if differs else esc(w))
    return " ".join(out) if out else '<span class="empty">(empty)</span>'


def example_card(e: Example, r: ComparisonResult, human: bool, kb: int = 1) -> str:
    """One segment of the pair ``r`` side by side; ``kb``: the index of its system B (its colour)."""
    a, b = r.a.label, r.b.label
    lead = (f'<b>#{e.seg_id}</b> · reference length {e.ref_len} · sentence BLEU '
            f'<span class="pill m0">{esc(_short(a))} {_fmt(e.sentence_a, 1)}</span> '
            f'<span class="pill m{kb}">{esc(_short(b))} {_fmt(e.sentence_b, 1)}</span> '
            f'(B − A {_fmt(e.delta, 1, True)})')
    if human and math.isfinite(e.human_a) and math.isfinite(e.human_b):
        name = r.human.name if r.human is not None else "human"
        lead += (f' · {esc(name)} <span class="pill m0">{_fmt(e.human_a, 2)}</span> '
                 f'<span class="pill m{kb}">{_fmt(e.human_b, 2)}</span>')
    rows = []
    if e.source is not None:
        rows.append(f"<dt>source</dt><dd>{esc(e.source)}</dd>")
    for name, ref in zip(r.ref_names, e.references):
        if ref is not None:
            rows.append(f'<dt title="{esc(name)}">{esc(name)}</dt><dd>{esc(ref)}</dd>')
    rows.append(f'<dt class="sys c0" title="{esc(a)}">{esc(a)}</dt><dd>{_words(e.words_a, 0)}</dd>')
    rows.append(f'<dt class="sys c{kb}" title="{esc(b)}">{esc(b)}</dt><dd>{_words(e.words_b, kb)}</dd>')
    return (f'<article class="ex" data-seg="{e.seg_id}" data-len="{e.ref_len}"><header>{lead}</header>'
            f'<dl>{"".join(rows)}</dl></article>')


def example_section(lst: ExampleList, r: ComparisonResult, kb: int = 1) -> str:
    a, b = r.a.label, r.b.label
    titles = {
        "b_better": (f'Segments where <span class="c{kb}">{esc(b)}</span> beats <span class="c0">{esc(a)}</span> '
                     "most (sentence BLEU)"),
        "a_better": (f'Segments where <span class="c0">{esc(a)}</span> beats <span class="c{kb}">{esc(b)}</span> '
                     "most (sentence BLEU)"),
        "disagree": "Segments where BLEU and the human scores disagree most about which system is better",
    }
    items = "".join(example_card(e, r, lst.key == "disagree" or r.human is not None, kb) for e in lst.items)
    if lst.key == "disagree" and r.human is not None:
        items = (f'<p class="note">Sentence BLEU prefers one system and {esc(r.human.name)} the other; ranked by '
                 "the product of the two standardised differences, so both disagree strongly at the top.</p>"
                 + items)
    empty = '<p class="empty">No segment matches the filter.</p>' if lst.items else \
        '<p class="empty">No such segment.</p>'
    anchor = f"ex-{lst.key}" if kb == 1 else f"ex-{lst.key}-{kb}"
    return (f'<section class="exlist" id="{esc(anchor)}"><h3>{titles.get(lst.key, esc(lst.key))} '
            f'<span class="meta">({len(lst.items)})</span></h3>{items}{empty}</section>')


def _pair_head(r: ComparisonResult, kb: int, many: bool) -> str:
    if not many:
        return ""
    return (f'<h3 class="pair"><span class="c0">{esc(r.a.label)}</span> <span class="meta">vs</span> '
            f'<span class="c{kb}">{esc(r.b.label)}</span></h3>')


def _footer(s: ComparisonSet) -> str:
    r = s.first
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
    if len(s.pairs) > 1:
        notes.insert(0, f"{esc(s.labels[0])} is the baseline: every other system is compared with it on the same "
                     "resamples (sacrebleu --paired-bs with several systems), so each difference is what comparing "
                     "that pair alone gives; p-values are per comparison, not corrected for their number.")
    return ("<footer><ul>" + "".join(f"<li>{n}</li>" for n in notes) + "</ul>"
            f"<p>Generated by harness-compare (bleu-harness {esc(__version__)}).</p></footer>")


def render_page(result: ComparisonResult | ComparisonSet) -> str:
    """The whole page as a string: headline, breakdowns, n-grams, examples (searchable, length filter), human
    scores when there are any; two systems or more."""
    s = result if isinstance(result, ComparisonSet) else ComparisonSet.of_pair(result)
    labels = s.labels
    many = len(labels) > 2
    r = s.first
    where = " · ".join(x for x in (
        esc(s.dataset) if s.dataset else "",
        f"{s.n_segments:,} segments",
        "references " + ", ".join(esc(x) for x in s.ref_names),
        esc(s.variant) if s.variant else "",
    ) if x)
    nav = ['<a href="#headline">headline</a>', '<a href="#buckets">where</a>', '<a href="#ngrams">n-grams</a>',
           '<a href="#examples">segments</a>']
    humans = [(j + 1, p) for j, p in enumerate(s.pairs) if p.human is not None]
    if humans:
        nav.append('<a href="#human">human scores</a>')
    title = " vs ".join(esc(x) for x in labels)
    h1 = ' <span class="vs">vs</span> '.join(f'<span class="c{k}">{esc(x)}</span>' for k, x in enumerate(labels))
    ngrams, examples = [], []
    for j, p in enumerate(s.pairs):
        kb, level = j + 1, 4 if many else 3
        a, b = p.a.label, p.b.label
        ngrams += [_pair_head(p, kb, many),
                   '<div class="grid2">',
                   "".join(ngram_table(lst, a, b, kb, level) for lst in p.ngrams if lst.kind == "match"), "</div>",
                   '<div class="grid2">',
                   "".join(ngram_table(lst, a, b, kb, level) for lst in p.ngrams if lst.kind == "over"), "</div>"]
        examples += [_pair_head(p, kb, many), "".join(example_section(lst, p, kb) for lst in p.examples)]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',
        f"<title>{title} · harness-compare</title>",
        f"<style>{_CSS}{_system_css(len(labels))}</style></head><body><main>",
        f"<h1>{h1}</h1>",
        f'<p class="meta">{where}</p><nav>{"".join(nav)}</nav>',
        _headline(s),
        '<h2 id="buckets">Where the difference comes from</h2>',
        "".join(bucket_table(t, labels) for t in s.tables),
        '<h2 id="ngrams">n-grams</h2>',
        f'<p class="note">Clipped matches (output n-grams also in a reference, at most as often) and over-productions '
        f"(output n-grams beyond the reference count), summed over segments, orders 1–{r.options.max_ngram_order} "
        f"together, ranked by the smoothed log ratio log((count + {r.ngram_alpha:g}) / (other + "
        f"{r.ngram_alpha:g})) as compare-mt does.</p>",
        *ngrams,
        '<h2 id="examples">Segments</h2>',
        '<div class="controls"><label>search <input type="search" id="search" placeholder="words in any text" '
        'autocomplete="off"></label><label>reference length from <input type="number" id="minlen" min="0"> to '
        '<input type="number" id="maxlen" min="0"> tokens</label><span class="shown" id="shown"></span></div>',
        *examples,
    ]
    if humans:
        name = humans[0][1].human.name if humans[0][1].human is not None else "human"
        parts.append(f'<h2 id="human">{esc(name)} scores</h2>')
        for kb, p in humans:
            assert p.human is not None
            pl = [p.a.label, p.b.label]
            parts += [_pair_head(p, kb, many),
                      bucket_table(p.human.by_length, pl, (0, kb)),
                      bucket_table(p.human.by_sentence_bleu, pl, (0, kb)),
                      example_section(p.human.disagreements, p, kb)]
    parts += [_footer(s), "</main>", f"<script>{_SCRIPT}</script>", "</body></html>"]
    return "\n".join(parts) + "\n"
