"""The numba kernel behind :mod:`harness.token_ids`: lines of code points -> 13a / whitespace tokens -> ids.

Imported lazily (only once the counting kernel is loaded, see :func:`harness.stats.prefer_compiled`), and kept in
its own file so that numba's on-disk cache (``cache=True``) is keyed to this file only.

The 13a rules are sacrebleu's ``TokenizerRegexp`` passes applied *literally*, one linear scan per ``re.sub``:
each pattern is two fixed characters with no empty match, so ``re.sub``'s leftmost, non-overlapping search is
"at position j: if the pattern matches s[j], s[j+1], emit the replacement and go to j + 2, else emit s[j] and go
to j + 1". No cleverness, no place-holders, no reserved characters: every line is padded on its own.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_OFFSET = np.int64(-3750763034362895579)  # FNV-1a 64-bit offset basis 0xcbf29ce484222325, as int64
_PRIME = np.int64(1099511628211)
_SPACE = 32

MODE_SPLIT = 0  # str.split() of the line (tokenizer "none")
MODE_13A = 1  # sacrebleu Tokenizer13a (after its str.replace preprocessing, done in Python) then str.split()


@njit(cache=True, nogil=True, inline="always")
def _in_class_13a(c):  # pragma: no cover - compiled
    # r'([\{-\~\[-\` -\&\(-\+\:-\@\/])'
    return ((0x7B <= c <= 0x7E) or (0x5B <= c <= 0x60) or (0x20 <= c <= 0x26) or (0x28 <= c <= 0x2B)
            or (0x3A <= c <= 0x40) or c == 0x2F)


@njit(cache=True, nogil=True, inline="always")
def _digit(c):  # pragma: no cover - compiled
    return 0x30 <= c <= 0x39  # [0-9]: ASCII digits only, as in a str pattern's explicit range


@njit(cache=True, nogil=True, inline="always")
def _dot_comma(c):  # pragma: no cover - compiled
    return c == 0x2E or c == 0x2C


def scratch_size(longest_line):
    """Scratch buffer size for lines of up to ``longest_line`` code points: rule 1 at most triples the padded
    line (``3 * (L + 2)``); rules 2-4 each add two spaces per match, and every match consumes a '.' or ',' (once
    per rule 2 and 3) or a '-' (rule 4) of the line, so at most ``4 * L`` more."""
    return 7 * longest_line + 8


@njit(cache=True, nogil=True)
def _pad_13a(cps, s, e, a, b):  # pragma: no cover - compiled
    """The four TokenizerRegexp passes on f' {line} ' (line = ``cps[s:e]``), in the scratch buffers ``a``, ``b``
    (of :func:`scratch_size`); the result is ``b[:m]``, returns ``m``."""
    # rule 1: ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> ' \1 '  (the padding spaces are in the class too)
    a[0] = _SPACE
    a[1] = _SPACE
    a[2] = _SPACE
    m = 3
    for j in range(s, e):
        c = np.uint32(cps[j])
        if _in_class_13a(c):
            a[m] = _SPACE
            a[m + 1] = c
            a[m + 2] = _SPACE
            m += 3
        else:
            a[m] = c
            m += 1
    a[m] = _SPACE
    a[m + 1] = _SPACE
    a[m + 2] = _SPACE
    m += 3
    m = _context_rule(a, m, b, 2)  # ([^0-9])([\.,]) -> '\1 \2 '
    m = _context_rule(b, m, a, 3)  # ([\.,])([^0-9]) -> ' \1 \2'
    return _context_rule(a, m, b, 4)  # ([0-9])(-) -> '\1 \2 '


@njit(cache=True, nogil=True, inline="always")
def _context_rule(src, m, dst, rule):  # pragma: no cover - compiled
    """One of TokenizerRegexp's two-character rules 2-4 as ``re.sub`` applies it to ``src[:m]``, into ``dst``;
    returns the new length.  Each inserts a space after the first and after the second character matched
    (rules 2, 4) or before each of them (rule 3)."""
    k = 0
    j = 0
    while j < m:
        c = src[j]
        if j + 1 < m:
            d = src[j + 1]
            if rule == 2:
                hit = not _digit(c) and _dot_comma(d)
            elif rule == 3:
                hit = _dot_comma(c) and not _digit(d)
            else:
                hit = _digit(c) and d == 0x2D
            if hit:
                if rule == 3:
                    dst[k] = _SPACE
                    dst[k + 1] = c
                    dst[k + 2] = _SPACE
                    dst[k + 3] = d
                else:
                    dst[k] = c
                    dst[k + 1] = _SPACE
                    dst[k + 2] = d
                    dst[k + 3] = _SPACE
                k += 4
                j += 2
                continue
        dst[k] = c
        k += 1
        j += 1
    return k


@njit(cache=True, nogil=True, inline="always")
def _mix(h):  # pragma: no cover - compiled
    """MurmurHash3's 64-bit finaliser (logical shifts written for signed int64)."""
    h = h ^ ((h >> 33) & np.int64(0x7FFFFFFF))
    h = h * np.int64(-49064778989728563)  # 0xff51afd7ed558ccd
    h = h ^ ((h >> 33) & np.int64(0x7FFFFFFF))
    h = h * np.int64(-4265267296055464877)  # 0xc4ceb9fe1a85ec53
    return h ^ ((h >> 33) & np.int64(0x7FFFFFFF))


@njit(cache=True, nogil=True)
def encode_lines(cps, line_off, first, mode, ws, insert, slots, starts, lens, chars, n_vocab, n_chars, ids, n_ids,
                 tok_off, a, b):  # pragma: no cover - compiled
    """Token ids of the lines ``cps[line_off[i]:line_off[i+1]]`` from line ``first`` on.

    ``ws[c]`` (``c < ws.size``) says whether code point ``c`` is whitespace for ``str.split``; code points at or
    beyond ``ws.size`` never are.  The vocabulary is an open-addressing table of ``(key, id)`` pairs
    (``slots[2s]``, ``slots[2s + 1]``; id ``-1`` = empty slot).  A token of at most 7 code points below 256 (most
    words of most languages written in Latin script) *is* its key: its length in the low byte, its code points in
    the others, so equal keys are equal tokens.  Any other token's key is a hash with a zero low byte, and a hit
    is confirmed by comparing the stored code points (``chars[starts[t]:starts[t] + lens[t]]``).  With
    ``insert`` unknown tokens get the next id, otherwise ``-1``.  Ids go to ``ids[n_ids:]``, line ends to
    ``tok_off[i + 1]``; ``a`` and ``b`` are scratch buffers of :func:`scratch_size` (longest line).

    No array is grown here (rebinding arrays in the loop would cost reference counting per token): before each
    line, if its worst case (one new token per code point) could overflow the table's half load, ``chars``,
    ``starts`` or ``ids``, it returns so that the caller grows them and calls again from that line.

    Returns ``(next_line, n_vocab, n_chars, n_ids)``; ``next_line == len(line_off) - 1`` when done.
    """
    n_lines = line_off.shape[0] - 1
    n_ws = ws.shape[0]
    size = slots.shape[0] // 2
    mask = size - 1
    for i in range(first, n_lines):
        s = line_off[i]
        e = line_off[i + 1]
        worst = e - s
        if n_ids + worst > ids.shape[0]:
            return i, n_vocab, n_chars, n_ids
        if insert and (2 * (n_vocab + worst) > size or n_chars + worst > chars.shape[0]
                       or n_vocab + worst > starts.shape[0]):
            return i, n_vocab, n_chars, n_ids
        if mode == MODE_13A:
            m = _pad_13a(cps, s, e, a, b)
        else:
            m = worst
            for j in range(m):
                b[j] = cps[s + j]
        j = 0
        while j < m:
            c = b[j]
            if c < n_ws and ws[c]:
                j += 1
                continue
            t0 = j
            h = _OFFSET
            packed = np.int64(0)
            short = True
            while j < m:
                c = b[j]
                if c < n_ws and ws[c]:
                    break
                h = (h ^ np.int64(c)) * _PRIME
                if short:
                    if c < 256 and j - t0 < 7:
                        packed |= np.int64(c) << (8 * (j - t0 + 1))
                    else:
                        short = False
                j += 1
            tl = j - t0
            key = (packed | tl) if short else (h & np.int64(-256))
            slot = _mix(key) & mask
            found = -1
            while True:
                v = slots[2 * slot + 1]
                if v == -1:
                    break
                if slots[2 * slot] == key:
                    if short:
                        found = v
                        break
                    if lens[v] == tl:
                        st = starts[v]
                        same = True
                        for q in range(tl):
                            if chars[st + q] != b[t0 + q]:
                                same = False
                                break
                        if same:
                            found = v
                            break
                slot = (slot + 1) & mask
            if found == -1 and insert:
                found = n_vocab
                for q in range(tl):
                    chars[n_chars + q] = b[t0 + q]
                starts[n_vocab] = n_chars
                lens[n_vocab] = tl
                n_chars += tl
                slots[2 * slot] = key
                slots[2 * slot + 1] = n_vocab
                n_vocab += 1
            ids[n_ids] = found
            n_ids += 1
        tok_off[i + 1] = n_ids
    return n_lines, n_vocab, n_chars, n_ids


@njit(cache=True, nogil=True)
def rehash(slots, size):  # pragma: no cover - compiled
    """The table's ``(key, id)`` pairs in a new table of ``size`` slots (a power of two)."""
    out = np.full(2 * size, -1, np.int64)
    mask = size - 1
    for s in range(slots.shape[0] // 2):
        if slots[2 * s + 1] != -1:
            key = slots[2 * s]
            sl = _mix(key) & mask
            while out[2 * sl + 1] != -1:
                sl = (sl + 1) & mask
            out[2 * sl] = key
            out[2 * sl + 1] = slots[2 * s + 1]
    return out
