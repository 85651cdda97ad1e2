"""A synthetic meta-evaluation dataset in the harness's folder layout (DESIGN.md 1.6), for the benchmarks.

``generate(root, n_systems=20, n_segments=3000, seed=1)`` writes ``meta.json``, ``src.txt``, ``refs/ref-A.txt``,
``refs/ref-B.txt``, ``systems/<name>.txt`` and one kind of human scores with DENSE segment judgments (every system
judged on every segment: ``human/seg.tsv``, and the system means in ``human/sys.tsv``). The same seed writes the same
bytes (numpy's ``default_rng``; the files' digest is returned so that a report can name what it measured).

The texts are English-looking and realistic enough for the BLEU variants to differ and for the sentence scores to
follow the human scores:

- a vocabulary of pronounceable words with Zipf-Mandelbrot frequencies (short function words most frequent), plus
  numbers with thousands separators and decimals, possessives (``company's``), hyphenated compounds, capitalised
  names, commas and sentence-final punctuation, so that tokenizers (13a, intl, char, none), casing and smoothing
  give different scores;
- a source meaning per segment (a word sequence of log-normal length); reference A renders it, reference B is a
  paraphrase (synonyms of similar frequency, swapped neighbours, other commas);
- each system has a quality (close together, as in WMT) and a share of meaning-preserving changes; a segment's
  quality is the system's plus the segment's difficulty plus noise; a hypothesis copies one of the references (A
  more often) word by word, keeping a word with that probability and otherwise substituting a synonym (at the
  system's share) or a random word, dropping it or inserting a function word, swapping neighbours, losing a capital
  or the final period;
- the human score of a (system, segment) is DA-like (0-100, higher is better): the hypothesis's adequacy (words
  kept in place, synonyms counting 0.8: BLEU misses them, so system-level agreement is not perfect) and the segment
  quality, plus the raters' halo of the system and rater noise.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

_ONSETS = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "y", "z", "br",
           "ch", "cl", "dr", "fl", "gr", "pl", "pr", "sh", "sl", "st", "str", "th", "tr", "wh", ""]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ee", "ou", "oo", "y"]
_CODAS = ["", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ng", "ck", "rt", "ll"]
#: Units rendered without a space before them.
_ATTACHED = {",", ".", "?", "'s", ";"}
KIND = "da"


def _vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    """``size`` distinct pronounceable words; the first ones (the most frequent under Zipf) are the shortest."""
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        rank = len(words)
        n_syll = 1 if rank < 150 else int(rng.choice([1, 2, 3, 4], p=[0.3, 0.45, 0.2, 0.05]))
        w = "".join(_ONSETS[rng.integers(len(_ONSETS))] + _VOWELS[rng.integers(len(_VOWELS))]
                    + _CODAS[rng.integers(len(_CODAS))] for _ in range(n_syll))
        if len(w) < 2 or w in seen:
            continue
        seen.add(w)
        words.append(w)
    # a few special forms among the content words: tokenizers split them differently
    for k in range(200, size, 97):
        words[k] = words[k] + "-" + words[(k * 7) % 150 + 10]  # hyphenated compound
    for k in range(230, size, 131):
        words[k] = words[k].capitalize()  # a name
    return words


class _Language:
    def __init__(self, rng: np.random.Generator, size: int = 12000) -> None:
        self.words = _vocabulary(rng, size)
        ranks = np.arange(1, size + 1, dtype=np.float64)
        p = 1.0 / (ranks + 2.7) ** 1.07  # Zipf-Mandelbrot
        self.p = p / p.sum()
        self.cdf = np.cumsum(self.p)
        # synonyms: two words of similar frequency
        self.syn = (np.arange(size)[:, None] + rng.integers(1, 40, size=(size, 2))) % size

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.minimum(np.searchsorted(self.cdf, rng.random(n)), len(self.words) - 1)


def _number(rng: np.random.Generator) -> str:
    kind = rng.integers(3)
    if kind == 0:
        return f"{int(rng.integers(1000, 99999)):,}"
    if kind == 1:
        return f"{rng.random() * 100:.1f}"
    return str(int(rng.integers(2, 60)))


def _meaning(rng: np.random.Generator, lang: _Language) -> list[Any]:
    """A source meaning: word ids, numbers (strings) and punctuation units."""
    n = int(np.clip(round(rng.lognormal(np.log(19.0), 0.5)), 4, 70))
    ids = lang.draw(rng, n)
    units: list[Any] = []
    u = rng.random((n, 3))
    for k, w in enumerate(ids):
        units.append(_number(rng) if u[k, 0] < 0.03 else int(w))
        if u[k, 1] < 0.02:
            units.append("'s")
        if 0 < k < n - 2 and u[k, 2] < 0.07:
            units.append(",")
    units.append("?" if rng.random() < 0.05 else ".")
    return units


def _paraphrase(rng: np.random.Generator, lang: _Language, units: list[Any]) -> list[Any]:
    """Reference B: synonyms, swapped neighbours, commas moved."""
    out: list[Any] = []
    u = rng.random((len(units), 3))
    for k, x in enumerate(units):
        if x == ",":
            if u[k, 0] < 0.5:
                out.append(x)
            continue
        if isinstance(x, int) and u[k, 0] < 0.3:
            x = int(lang.syn[x, 0])
        out.append(x)
        if isinstance(x, int) and u[k, 1] < 0.03:
            out.append(",")
    for k in range(len(out) - 2):
        if isinstance(out[k], int) and isinstance(out[k + 1], int) and rng.random() < 0.08:
            out[k], out[k + 1] = out[k + 1], out[k]
    return out


def _render(lang: _Language, units: list[Any], lower_first: bool = False, drop_final: bool = False) -> str:
    parts: list[str] = []
    for x in units:
        s = lang.words[x] if isinstance(x, int) else x
        if parts and s in _ATTACHED:
            parts[-1] += s
        else:
            parts.append(s)
    if drop_final and parts and parts[-1][-1:] in ".?" and len(parts[-1]) > 1:
        parts[-1] = parts[-1][:-1]
    if parts and not lower_first:
        parts[0] = parts[0][:1].upper() + parts[0][1:]
    return " ".join(parts)


def _hypothesis(rng: np.random.Generator, lang: _Language, ref: list[Any], q: float, synonyms: float
                ) -> tuple[str, float]:
    """A system's output from a reference at segment quality ``q``, a changed word being a synonym with probability
    ``synonyms``; returns it and its adequacy: the share of the reference's units kept in place, a synonym counting
    0.8."""
    out: list[Any] = []
    kept = 0.0
    u = rng.random((len(ref), 4))
    for k, x in enumerate(ref):
        if u[k, 0] < q:
            out.append(x)
            kept += 1
            continue
        r = u[k, 1]
        if not isinstance(x, int):  # punctuation or a number: dropped or reformatted
            if r < 0.5 and isinstance(x, str) and x[:1].isdigit():
                out.append(x.replace(",", ""))
            elif r < 0.7:
                out.append(x)
            continue
        if r < synonyms:
            out.append(int(lang.syn[x, int(u[k, 2] < 0.5)]))
            kept += 0.8
        else:
            r = (r - synonyms) / (1.0 - synonyms)
            if r < 0.45:
                out.append(int(lang.draw(rng, 1)[0]))
            elif r < 0.8:
                pass  # dropped
            else:
                out.extend([x, int(lang.draw(rng, 1)[0] % 60)])  # a function word inserted
                kept += 0.5
    swaps = rng.random(len(out)) < (1.0 - q) * 0.25
    for k in map(int, np.flatnonzero(swaps[:-1])):
        out[k], out[k + 1] = out[k + 1], out[k]
        kept -= 1
    if not out:
        out = [ref[0]]
    text = _render(lang, out, lower_first=bool(rng.random() < 0.1 * (1 - q)),
                   drop_final=bool(rng.random() < 0.3 * (1 - q)))
    return text, max(kept, 0) / len(ref)


def system_names(n: int) -> list[str]:
    return [f"sys-{k + 1:02d}" for k in range(n)]


def generate(root: Path, n_systems: int = 20, n_segments: int = 3000, seed: int = 1) -> dict[str, Any]:
    """Write the dataset into ``root`` (created; must be empty or absent). Returns a summary: name, sizes, the
    systems' qualities and the sha256 of every file written (sorted by path), as ``digest``."""
    root = Path(root)
    if root.exists() and any(root.iterdir()):
        raise ValueError(f"{root} is not empty")
    rng = np.random.default_rng(seed)
    lang = _Language(rng)
    names = system_names(n_systems)
    quality = rng.permutation(np.linspace(0.6, 0.8, n_systems))
    synonyms = rng.uniform(0.15, 0.75, n_systems)  # how much of a system's changes keep the meaning
    halo = rng.normal(0.0, 1.5, n_systems)  # the raters' view of a system beyond its words
    meanings = [_meaning(rng, lang) for _ in range(n_segments)]
    ref_a = meanings
    ref_b = [_paraphrase(rng, lang, m) for m in meanings]
    difficulty = rng.normal(0.0, 0.08, n_segments)
    hyps: list[list[str]] = []
    human = np.zeros((n_systems, n_segments))
    for s in range(n_systems):
        lines = []
        q = np.clip(quality[s] + difficulty + rng.normal(0.0, 0.1, n_segments), 0.05, 0.98)
        use_b = rng.random(n_segments) < 0.3
        noise = rng.normal(0.0, 9.0, n_segments)
        for i in range(n_segments):
            text, share = _hypothesis(rng, lang, ref_b[i] if use_b[i] else ref_a[i], float(q[i]),
                                      float(synonyms[s]))
            lines.append(text)
            human[s, i] = np.clip(100.0 * (0.7 * share + 0.3 * q[i]) + halo[s] + noise[i], 0.0, 100.0)
        hyps.append(lines)
    name = f"synthetic_{n_systems}x{n_segments}_s{seed}"
    meta = {
        "name": name,
        "title": f"Synthetic English targets: {n_systems} systems x {n_segments} segments, 2 references, dense DA-like "
                 f"judgments (benchmarks/synthetic_study.py, seed {seed})",
        "source_lang": "xx", "target_lang": "en", "n_segments": n_segments, "primary_ref": "ref-A",
        "refs": ["ref-A", "ref-B"], "systems": names, "human_systems": [], "mt_systems": names,
        "human_scores": {KIND: {
            "name": "DA (synthetic)",
            "description": "DA-like 0-100: 100 x (0.7 x adequacy + 0.3 x segment quality) + the system's halo "
                           "N(0, 1.5) + N(0, 9) rater noise, clipped (adequacy: share of the reference's units kept "
                           "in place, a synonym 0.8); every system judged on every segment; system "
                           "score = mean of its segment scores.",
            "higher_is_better": True, "file_seg": "human/seg.tsv", "file_sys": "human/sys.tsv"}},
    }
    files: dict[str, str] = {
        "meta.json": json.dumps(meta, indent=1) + "\n",
        "src.txt": "".join(" ".join(lang.words[x][::-1] if isinstance(x, int) else x for x in m) + "\n"
                           for m in meanings),
        "refs/ref-A.txt": "".join(_render(lang, m) + "\n" for m in ref_a),
        "refs/ref-B.txt": "".join(_render(lang, m) + "\n" for m in ref_b),
    }
    for label, lines in zip(names, hyps):
        files[f"systems/{label}.txt"] = "".join(line + "\n" for line in lines)
    files["human/seg.tsv"] = "system\tseg_id\tscore\n" + "".join(
        f"{names[s]}\t{i}\t{human[s, i]:.4f}\n" for s in range(n_systems) for i in range(n_segments))
    rounded = np.round(human, 4)  # the scores as written
    files["human/sys.tsv"] = "system\tscore\tn_segments\n" + "".join(
        f"{names[s]}\t{rounded[s].mean():.8f}\t{n_segments}\n" for s in range(n_systems))
    digest = hashlib.sha256()
    for rel in sorted(files):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = files[rel].encode("utf-8")
        path.write_bytes(data)
        digest.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
    return {"name": name, "root": str(root), "n_systems": n_systems, "n_segments": n_segments, "seed": seed,
            "quality": dict(zip(names, map(float, quality))), "digest": digest.hexdigest()}


if __name__ == "__main__":
    import argparse
    import time

    ap = argparse.ArgumentParser(description="Write a synthetic dataset (see the module docstring).")
    ap.add_argument("root", type=Path)
    ap.add_argument("--systems", type=int, default=20)
    ap.add_argument("--segments", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    t = time.perf_counter()
    info = generate(a.root, a.systems, a.segments, a.seed)
    print(f"{info['name']}: {a.root} in {time.perf_counter() - t:.1f} s, sha256 {info['digest']}")
