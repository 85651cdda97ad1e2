"""numba source of the compiled text kernels: UTF-8 text -> sacrebleu's tokens -> ids -> n-gram statistics.

Must stay C-ABI functions (``cfunc``) that take pointers and integers, allocate nothing and cannot raise:
:mod:`.native` keeps their object code and maps it without numba. Imported only to compile.
"""

from __future__ import annotations

import numpy as np
from numba import carray, cfunc, njit, types

# What the kernels do.
#
# Text. ``encode`` reads ``n_streams`` streams of ``n_lines`` lines each from one UTF-8 buffer (stream ``s`` is
# ``text[bounds[s]:bounds[n_streams + s]]``, with its own flags in ``bounds[2 * n_streams + s]``: ``F_CRLF``;
# lines end at LF, the last one may not) and writes the token ids of every line (``ids``; line
# ``g = s * n_lines + i`` ends at ``tok_off[g + 1]``). Per line, the tokens of sacrebleu's
# ``BLEU(tokenize=..., lowercase=...)._preprocess_segment(line).split()``:
# - casing: A-Z only, in here (``F_LOWER_ASCII``: ``str.lower`` of ASCII text, or mteval's ``ascii-lc``); other
#   text is lowered by the caller with ``str.lower`` before it comes here;
# - ``str.rstrip()`` (the whitespace of ``str.isspace``: the ``WS`` bit of the class table);
# - 13a: ``replace('<skipped>', '')`` then, if the line has a '&', the four entities in sacrebleu's order (each
#   ``str.replace`` done literally); '-\n' and '\n' cannot occur: LF ends the line here, and the caller
#   pre-tokenizes the rare API string that holds one (``LF_PRETOKENIZED``);
# - 13a, zh, intl: their regular expressions only insert spaces, so the tokens are found in one scan from the
#   token boundaries the rules create (``_rule_tokens``, derived case by case in harness/text/tokenizers.py):
#   TokenizerRegexp's four rules on f' {line} ' (13a) or, after ``str.strip()`` and TokenizerZh's CJK padding
#   (its effective table: the ``CJK`` bit), on the line (zh); intl's (\P{N})(\p{P}), (\p{P})(\P{N}), (\p{S})
#   with the ``regex`` module's categories (the ``PUNCT``, ``NUMBER``, ``SYMBOL`` bits);
# - char: every non-whitespace character is a token; none: ``str.split()``.
# Tokens are looked up in a hash table of the reference vocabulary (``F_INSERT`` adds unknown ones: references;
# else they get -1: hypotheses). A token of at most 7 code points below 256 *is* its key (its length in the low
# byte, its code points above); any other token's key is a 64-bit hash with a zero low byte, and a hit is
# confirmed by comparing the stored code points. Ids are therefore exact.
#
# With ``F_VALIDATE`` (files) the bytes are checked as harness.text.reading.parse_text checks them: strict UTF-8
# (CPython's rules: no overlong forms, no surrogates, nothing above U+10FFFF), no control or separator character
# (the ``BAD`` bit, U+FEFF included: a BOM at byte 0 was removed by the caller), and carriage returns only as the
# file's line ending (``F_CRLF``: before every LF, and optionally at the very end). Anything else stops with
# ``IRREGULAR``: the caller then reads the file whole, which reports it exactly.
#
# The kernel never grows a buffer: before each line it checks the line's worst case (one token and one code
# point per byte) and returns ``NEED_*`` with its state saved in ``state`` (line, byte position, counters), so
# that the caller grows the buffer and calls again from there.
#
# Counting. ``count`` is sacrebleu's clipped n-gram matching (``min(hyp count, max over present references)``
# per n-gram and order), per segment with a small open-addressing table of the reference n-grams (scratch from
# the caller).

# ---- bits of the class table (one uint8 per code point; built by harness.text.token_ids.class_table) ----------
WS = 1  # str.isspace(): what str.split / str.strip split on
PUNCT = 2  # regex \p{P}
NUMBER = 4  # regex \p{N}
SYMBOL = 8  # regex \p{S}
CJK = 16  # sacrebleu TokenizerZh._is_chinese_char, as it really behaves
BAD = 32  # not allowed inside a line of a file (C0 controls but TAB/LF/CR, U+0085, U+2028, U+2029, U+FEFF)
RULES_13A = 64  # a character 13a's and zh's rules look at: rule 1's ASCII class, '.', ',' and '-' 

# ---- tokenizers ----------------------------------------------------------------------------------------------
MODE_NONE = 0
MODE_13A = 1
MODE_INTL = 2
MODE_ZH = 3
MODE_CHAR = 4

# ---- flags (params[P_FLAGS]) ---------------------------------------------------------------------------------
F_VALIDATE = 1
F_CRLF = 2
F_LOWER_ASCII = 4
F_INSERT = 8
F_LINE_FLAGS = 16  # line_flags holds per-line flags (else it is a dummy)

# ---- per-line flags (line_flags[g]) --------------------------------------------------------------------------
LF_ABSENT = 1  # a reference that is not there (sacrebleu's None): no tokens, the caller marks its length -1
LF_PRETOKENIZED = 2  # already sacrebleu's tokens joined by spaces (cased too): only split

# ---- status --------------------------------------------------------------------------------------------------
OK = 0
NEED_IDS = 1
NEED_TABLE = 2
NEED_SCRATCH = 3
IRREGULAR = 4
FEWER_LINES = 5
MORE_LINES = 6

# ---- state[] (in and out) ------------------------------------------------------------------------------------
S_LINE = 0  # next line g
S_POS = 1  # its byte position
S_IDS = 2  # ids written
S_VOCAB = 3  # tokens in the table
S_CHARS = 4  # code points stored for them
S_NEED = 5  # NEED_*: how much (ids: total; table: new tokens; scratch: code points)
S_STREAM = 6  # IRREGULAR / FEWER_LINES / MORE_LINES: which stream
S_OFFSET = 7  # IRREGULAR: byte position of the line in text
STATE_SIZE = 8

# ---- params[] of encode --------------------------------------------------------------------------------------
P_STREAMS = 0
P_LINES = 1
P_MODE = 2
P_FLAGS = 3
P_CLASSES = 4  # size of the class table
P_SLOTS = 5  # slots of the hash table (a power of two; the array holds 2 int64 per slot)
P_TOKENS = 6  # capacity of starts / lens
P_CHARS = 7  # capacity of chars
P_IDS = 8  # capacity of ids
P_SCRATCH = 9  # capacity of each scratch buffer
P_TEXT = 10  # bytes in text
PARAMS_SIZE = 11

_SPACE = np.uint32(32)
_OFFSET = np.int64(-3750763034362895579)  # FNV-1a 64-bit offset basis 0xcbf29ce484222325, as int64
_PRIME = np.int64(1099511628211)


# ================================================================================================== helpers


@njit(inline="always")
def _mix(h):  # pragma: no cover - compiled
    """MurmurHash3's 64-bit finaliser (logical shifts written for signed int64)."""
    h = h ^ ((h >> 33) & np.int64(0x7FFFFFFF))
    h = h * np.int64(-49064778989728563)  # 0xff51afd7ed558ccd
    h = h ^ ((h >> 33) & np.int64(0x7FFFFFFF))
    h = h * np.int64(-4265267296055464877)  # 0xc4ceb9fe1a85ec53
    return h ^ ((h >> 33) & np.int64(0x7FFFFFFF))


@njit(inline="always")
def _cls(table, n_cls, c):  # pragma: no cover - compiled
    if c < n_cls:
        return table[c]
    return np.uint8(0)


@njit(inline="always")
def _in_class_13a(c):  # pragma: no cover - compiled
    # r'([\{-\~\[-\` -\&\(-\+\:-\@\/])'
    return ((0x7B <= c <= 0x7E) or (0x5B <= c <= 0x60) or (0x20 <= c <= 0x26) or (0x28 <= c <= 0x2B)
            or (0x3A <= c <= 0x40) or c == 0x2F)


@njit(inline="always")
def _cont(b):  # pragma: no cover - compiled
    return (b & 0xC0) == 0x80


# what a line holds (returned by _decode): whether 13a's replacements can change anything
HAS_AMP = 1
HAS_LT = 2


@njit
def _decode(text, p, e, validate, lower, table, n_cls, out):  # pragma: no cover - compiled
    """Code points of ``text[p:e]`` into ``out``; returns ``(their number, HAS_* bits)``, or ``(-1, 0)`` if
    ``validate`` finds a byte sequence CPython's strict decoder rejects, a ``BAD`` character or a carriage
    return."""
    k = 0
    seen = 0
    while p < e:
        c = np.int64(text[p])
        if c < 0x80:
            cp = c
            p += 1
            if cp == 0x26:
                seen |= HAS_AMP
            elif cp == 0x3C:
                seen |= HAS_LT
        elif c < 0xE0:
            if validate and (c < 0xC2 or p + 1 >= e or not _cont(text[p + 1])):
                return -1, 0
            cp = ((c & 0x1F) << 6) | (np.int64(text[p + 1]) & 0x3F)
            p += 2
        elif c < 0xF0:
            if validate:
                if p + 2 >= e:
                    return -1, 0
                b1 = np.int64(text[p + 1])
                lo = 0xA0 if c == 0xE0 else 0x80
                hi = 0x9F if c == 0xED else 0xBF
                if b1 < lo or b1 > hi or not _cont(text[p + 2]):
                    return -1, 0
            cp = ((c & 0x0F) << 12) | ((np.int64(text[p + 1]) & 0x3F) << 6) | (np.int64(text[p + 2]) & 0x3F)
            p += 3
        else:
            if validate:
                if c > 0xF4 or p + 3 >= e:
                    return -1, 0
                b1 = np.int64(text[p + 1])
                lo = 0x90 if c == 0xF0 else 0x80
                hi = 0x8F if c == 0xF4 else 0xBF
                if b1 < lo or b1 > hi or not _cont(text[p + 2]) or not _cont(text[p + 3]):
                    return -1, 0
            cp = (((c & 0x07) << 18) | ((np.int64(text[p + 1]) & 0x3F) << 12)
                  | ((np.int64(text[p + 2]) & 0x3F) << 6) | (np.int64(text[p + 3]) & 0x3F))
            p += 4
        if validate and (cp == 13 or (_cls(table, n_cls, cp) & BAD) != 0):
            return -1, 0
        if lower and 0x41 <= cp <= 0x5A:
            cp += 32
        out[k] = np.uint32(cp)
        k += 1
    return k, seen


@njit
def _replace(buf, k, old, new):  # pragma: no cover - compiled
    """``str.replace(old, new)`` on ``buf[:k]`` in place (``len(new) <= len(old)``); returns the new length."""
    n_old = old.shape[0]
    n_new = new.shape[0]
    w = 0
    j = 0
    while j < k:
        if j + n_old <= k:
            same = True
            for q in range(n_old):
                if buf[j + q] != old[q]:
                    same = False
                    break
            if same:
                for q in range(n_new):
                    buf[w + q] = new[q]
                w += n_new
                j += n_old
                continue
        buf[w] = buf[j]
        w += 1
        j += 1
    return w


@njit(inline="always")
def _add(bnd, n_tok, t0, t1):  # pragma: no cover - compiled
    bnd[2 * n_tok] = t0
    bnd[2 * n_tok + 1] = t1
    return n_tok + 1


@njit(inline="always")
def _is_digit(c, cl, mode):  # pragma: no cover - compiled
    """A "digit" of the punctuation rules: ``[0-9]`` (13a, zh), ``\\p{N}`` (intl)."""
    if mode == MODE_INTL:
        return (cl & NUMBER) != 0
    return 0x30 <= c <= 0x39


@njit(inline="always")
def _is_mark(c, cl, mode):  # pragma: no cover - compiled
    """A mark of the punctuation rules: ``[\\.,]`` (13a, zh), ``\\p{P}`` (intl)."""
    if mode == MODE_INTL:
        return (cl & PUNCT) != 0
    return c == 0x2E or c == 0x2C


@njit(inline="always")
def _is_alone(c, cl, mode):  # pragma: no cover - compiled
    """Always a token of its own: rule 1's ASCII class (13a, zh; the space is whitespace anyway), zh's CJK
    characters, intl's ``\\p{S}``."""
    if mode == MODE_INTL:
        return (cl & SYMBOL) != 0
    if mode == MODE_ZH and (cl & CJK) != 0:
        return True
    return _in_class_13a(c)


@njit
def _rule_tokens(a, first, k, mode, table, n_cls, bnd):  # pragma: no cover - compiled
    """The tokens of ``a[first:k]`` under 13a, zh or intl, in one scan: where their rules put token boundaries
    (``first``: zh's ``str.strip()``, whose line starts there). Token ``t`` is ``a[bnd[2t]:bnd[2t + 1]]``;
    returns the number of tokens.

    The rules only insert spaces, so the tokens are the runs of non-whitespace characters between the boundaries
    they create (harness/text/tokenizers.py derives each case; the tests hold this to sacrebleu):

    - whitespace separates; rule 1's ASCII class (13a, zh), zh's CJK characters and intl's ``\\p{S}`` are tokens of
      their own;
    - ``([0-9])(-)`` (13a, zh): a '-' right after a digit is a token of its own (rules 2 and 3 never put a
      space between a digit and a '-');
    - the two punctuation rules act on each maximal run of ``n`` marks, preceded by ``c`` and followed by ``d``,
      where "``c`` is non-digit" means ``c`` exists and is not a digit (13a pads the line with spaces, so ``c``
      and ``d`` always exist there): every gap in and around the run is a boundary, except (i) ``n == 1`` and
      neither ``c`` nor ``d`` non-digit (``1.5``; zh's ``.5`` at a line start): no boundary at all; (ii)
      ``n >= 2``, ``d`` not non-digit and ``n + [c is non-digit]`` odd (``a..5`` -> ``a . .5``): no boundary
      before ``d``.
    """
    padded = mode == MODE_13A
    if mode == MODE_INTL:
        special = WS | PUNCT | SYMBOL
    elif mode == MODE_ZH:
        special = WS | RULES_13A | CJK
    else:
        special = WS | RULES_13A
    n_tok = 0
    t0 = -1  # start of the open token
    i = first
    while i < k:
        c = a[i]
        cl = _cls(table, n_cls, c)
        if (cl & special) == 0:  # no rule looks at it: part of a token
            if t0 < 0:
                t0 = i
            i += 1
            continue
        if (cl & WS) != 0:
            if t0 >= 0:
                n_tok = _add(bnd, n_tok, t0, i)
                t0 = -1
            i += 1
            continue
        alone = _is_alone(c, cl, mode)
        if not alone and mode != MODE_INTL and c == 0x2D and i > first and 0x30 <= a[i - 1] <= 0x39:
            alone = True
        if alone:
            if t0 >= 0:
                n_tok = _add(bnd, n_tok, t0, i)
                t0 = -1
            n_tok = _add(bnd, n_tok, i, i + 1)
            i += 1
            continue
        if _is_mark(c, cl, mode):
            j = i + 1
            while j < k and _is_mark(a[j], _cls(table, n_cls, a[j]), mode):
                j += 1
            run = j - i
            if i > first:
                c_non = not _is_digit(a[i - 1], _cls(table, n_cls, a[i - 1]), mode)
            else:
                c_non = padded
            if j < k:
                d_non = not _is_digit(a[j], _cls(table, n_cls, a[j]), mode)
            else:
                d_non = padded
            if run == 1 and not c_non and not d_non:  # (i): glued to both sides
                if t0 < 0:
                    t0 = i
                i = j
                continue
            if t0 >= 0:
                n_tok = _add(bnd, n_tok, t0, i)
                t0 = -1
            for q in range(i, j - 1):
                n_tok = _add(bnd, n_tok, q, q + 1)
            if run >= 2 and not d_non and (run + (1 if c_non else 0)) % 2 == 1:  # (ii): glued to what follows
                t0 = j - 1
            else:
                n_tok = _add(bnd, n_tok, j - 1, j)
            i = j
            continue
        if t0 < 0:
            t0 = i
        i += 1
    if t0 >= 0:
        n_tok = _add(bnd, n_tok, t0, k)
    return n_tok


@njit
def _split_tokens(a, k, single, table, n_cls, bnd):  # pragma: no cover - compiled
    """``str.split()`` of ``a[:k]`` (``none``), or every non-whitespace character (``char``), as in
    :func:`_rule_tokens`."""
    n_tok = 0
    t0 = -1
    for i in range(k):
        if (_cls(table, n_cls, a[i]) & WS) != 0:
            if t0 >= 0:
                n_tok = _add(bnd, n_tok, t0, i)
                t0 = -1
        elif single:
            n_tok = _add(bnd, n_tok, i, i + 1)
        elif t0 < 0:
            t0 = i
    if t0 >= 0:
        n_tok = _add(bnd, n_tok, t0, k)
    return n_tok


_SKIPPED = np.array([ord(c) for c in "<skipped>"], dtype=np.uint32)
_EMPTY = np.zeros(0, dtype=np.uint32)
_QUOT = np.array([ord(c) for c in "&quot;"], dtype=np.uint32)
_AMP = np.array([ord(c) for c in "&amp;"], dtype=np.uint32)
_LT = np.array([ord(c) for c in "&lt;"], dtype=np.uint32)
_GT = np.array([ord(c) for c in "&gt;"], dtype=np.uint32)
_C_QUOT = np.array([ord('"')], dtype=np.uint32)
_C_AMP = np.array([ord("&")], dtype=np.uint32)
_C_LT = np.array([ord("<")], dtype=np.uint32)
_C_GT = np.array([ord(">")], dtype=np.uint32)


@njit
def _encode(text, bounds, params, table, line_flags, slots, starts, lens, chars, ids, tok_off, a, bnd, state,
            empty):  # pragma: no cover - compiled
    n_streams = params[P_STREAMS]
    n_lines = params[P_LINES]
    mode = params[P_MODE]
    flags = params[P_FLAGS]
    n_cls = params[P_CLASSES]
    validate = (flags & F_VALIDATE) != 0
    lower = (flags & F_LOWER_ASCII) != 0
    insert = (flags & F_INSERT) != 0
    has_flags = (flags & F_LINE_FLAGS) != 0
    size = params[P_SLOTS]
    mask = size - 1
    scratch = params[P_SCRATCH]
    g = state[S_LINE]
    pos = state[S_POS]
    n_ids = state[S_IDS]
    n_vocab = state[S_VOCAB]
    n_chars = state[S_CHARS]
    total = n_streams * n_lines
    if g == 0:
        tok_off[0] = 0
    while g < total:
        s = g // n_lines
        i = g - s * n_lines
        end = bounds[n_streams + s]
        if i == 0:
            if g > 0 and pos < bounds[n_streams + s - 1]:
                state[S_LINE] = g
                state[S_POS] = pos
                state[S_STREAM] = s - 1
                return MORE_LINES
            pos = bounds[s]
        if pos >= end:
            state[S_LINE] = g
            state[S_POS] = pos
            state[S_STREAM] = s
            return FEWER_LINES
        e = pos
        while e < end and text[e] != 10:
            e += 1
        terminated = e < end
        m = e - pos
        # worst case of this line: one token and one code point per byte
        need = 0
        status = OK
        if n_ids + m > params[P_IDS]:
            status = NEED_IDS
            need = n_ids + m
        elif insert and (2 * (n_vocab + m) > size or n_chars + m > params[P_CHARS]
                         or n_vocab + m > params[P_TOKENS]):
            status = NEED_TABLE
            need = m
        elif 2 * m + 16 > scratch:
            status = NEED_SCRATCH
            need = 2 * m + 16
        if status != OK:
            state[S_LINE] = g
            state[S_POS] = pos
            state[S_IDS] = n_ids
            state[S_VOCAB] = n_vocab
            state[S_CHARS] = n_chars
            state[S_NEED] = need
            return status
        if (bounds[2 * n_streams + s] & F_CRLF) != 0:
            if m > 0 and text[e - 1] == 13:
                m -= 1
            elif terminated:  # a LF without CR in a CRLF file: not what the file's first line promised
                state[S_LINE] = g
                state[S_POS] = pos
                state[S_STREAM] = s
                state[S_OFFSET] = pos
                return IRREGULAR
        lflag = line_flags[g] if has_flags else np.uint8(0)
        pretok = (lflag & LF_PRETOKENIZED) != 0
        k, seen = _decode(text, pos, pos + m, validate, lower and not pretok, table, n_cls, a)
        if k < 0:
            state[S_LINE] = g
            state[S_POS] = pos
            state[S_STREAM] = s
            state[S_OFFSET] = pos
            return IRREGULAR
        if m == 0:
            empty[s] += 1
        pos = e + 1 if terminated else end
        if (lflag & LF_ABSENT) == 0:
            while k > 0 and (_cls(table, n_cls, a[k - 1]) & WS) != 0:  # str.rstrip()
                k -= 1
            if pretok or mode == MODE_NONE or mode == MODE_CHAR:
                n_tok = _split_tokens(a, k, mode == MODE_CHAR and not pretok, table, n_cls, bnd)
            else:
                if mode == MODE_13A:
                    if (seen & HAS_LT) != 0:
                        k = _replace(a, k, _SKIPPED, _EMPTY)
                    if (seen & HAS_AMP) != 0:
                        k = _replace(a, k, _QUOT, _C_QUOT)
                        k = _replace(a, k, _AMP, _C_AMP)
                        k = _replace(a, k, _LT, _C_LT)
                        k = _replace(a, k, _GT, _C_GT)
                first = 0
                if mode == MODE_ZH:
                    while first < k and (_cls(table, n_cls, a[first]) & WS) != 0:  # TokenizerZh's str.strip()
                        first += 1
                n_tok = _rule_tokens(a, first, k, mode, table, n_cls, bnd)
            for t in range(n_tok):
                t0 = bnd[2 * t]
                t1 = bnd[2 * t + 1]
                tl = t1 - t0
                # a token of at most 7 code points below 256 is its own key (length in the low byte); any other
                # token's key is its FNV-1a hash with the low byte cleared, confirmed by comparing code points
                short = tl <= 7
                key = np.int64(tl)
                if short:
                    for q in range(tl):
                        c = a[t0 + q]
                        if c >= 256:
                            short = False
                            break
                        key |= np.int64(c) << (8 * (q + 1))
                if not short:
                    h = _OFFSET
                    for q in range(t0, t1):
                        h = (h ^ np.int64(a[q])) * _PRIME
                    key = h & np.int64(-256)
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
                                if chars[st + q] != a[t0 + q]:
                                    same = False
                                    break
                            if same:
                                found = v
                                break
                    slot = (slot + 1) & mask
                if found == -1 and insert:
                    found = n_vocab
                    for q in range(tl):
                        chars[n_chars + q] = a[t0 + q]
                    starts[n_vocab] = n_chars
                    lens[n_vocab] = tl
                    n_chars += tl
                    slots[2 * slot] = key
                    slots[2 * slot + 1] = n_vocab
                    n_vocab += 1
                ids[n_ids] = found
                n_ids += 1
        tok_off[g + 1] = n_ids
        g += 1
    state[S_IDS] = n_ids
    state[S_VOCAB] = n_vocab
    state[S_CHARS] = n_chars
    if n_streams > 0 and pos < bounds[2 * n_streams - 1]:
        state[S_LINE] = g
        state[S_POS] = pos
        state[S_STREAM] = n_streams - 1
        return MORE_LINES
    state[S_LINE] = g
    state[S_POS] = pos
    return OK


@njit
def _rehash(old, old_size, out, size):  # pragma: no cover - compiled
    """The ``(key, id)`` pairs of a table of ``old_size`` slots into an empty one (all -1) of ``size`` slots."""
    mask = size - 1
    for s in range(old_size):
        if old[2 * s + 1] != -1:
            key = old[2 * s]
            sl = _mix(key) & mask
            while out[2 * sl + 1] != -1:
                sl = (sl + 1) & mask
            out[2 * sl] = key
            out[2 * sl + 1] = old[2 * s + 1]
    return 0


@njit
def _count(h_ids, h_off, r_ids, r_off, n_refs, n_lines, max_order, cap, stride_k, stride_i, matches, totals,
           slot_key, slot_ref, slot_cur, slot_max, slot_hyp, used, r_gram, h_gram):  # pragma: no cover - compiled
    """``matches[i * max_order + n - 1]`` and ``totals[...]`` of every segment ``i``: hypothesis tokens
    ``h_ids[h_off[i]:h_off[i + 1]]`` (``-1`` = unknown to the references), reference ``k`` of segment ``i``
    ``r_ids[r_off[j]:r_off[j + 1]]`` with ``j = k * stride_k + i * stride_i`` (stream-major: ``stride_k`` =
    ``n_lines``, ``stride_i`` = 1; segment-major: 1 and ``n_refs``).

    Per segment and order ``n``, the distinct reference n-grams fill an open-addressing table (``cap`` slots, a
    power of two above twice the segment's reference tokens) that keeps each one's count in the current reference
    and its maximum over the references; the hypothesis n-grams then stream through it, an occurrence counting
    while its running count does not exceed that maximum (sacrebleu's clipping). An n-gram is keyed by the slot
    of its first ``n - 1`` tokens in the previous order's table and its last token (``r_gram``, ``h_gram``: that
    slot per position, ``-1`` for a hypothesis (n-1)-gram no reference has), so keys are equal exactly when the
    n-grams are, and each costs one probe whatever ``n``. ``slot_key`` is all -1 and ``slot_hyp`` all 0 on entry
    and on exit."""
    mask = cap - 1
    for i in range(n_lines):
        hs = h_off[i]
        he = h_off[i + 1]
        length = he - hs
        for n in range(1, max_order + 1):
            n_used = 0
            q = 0
            for k in range(n_refs):
                rs = r_off[k * stride_k + i * stride_i]
                re_ = r_off[k * stride_k + i * stride_i + 1]
                for p in range(rs, re_):
                    if p + n <= re_:
                        if n == 1:
                            key = r_ids[p]
                        else:
                            key = (r_gram[q] << 32) | r_ids[p + n - 1]
                        slot = _mix(key) & mask
                        while True:
                            kk = slot_key[slot]
                            if kk == -1:
                                slot_key[slot] = key
                                slot_ref[slot] = k
                                slot_cur[slot] = 1
                                slot_max[slot] = 1
                                used[n_used] = slot
                                n_used += 1
                                break
                            if kk == key:
                                if slot_ref[slot] != k:
                                    slot_ref[slot] = k
                                    slot_cur[slot] = 0
                                slot_cur[slot] += 1
                                if slot_cur[slot] > slot_max[slot]:
                                    slot_max[slot] = slot_cur[slot]
                                break
                            slot = (slot + 1) & mask
                        r_gram[q] = slot
                    q += 1
            count = 0
            for p in range(hs, he - n + 1):
                h = p - hs
                if n == 1:
                    key = h_ids[p]
                    if key < 0:
                        h_gram[h] = -1
                        continue
                else:
                    last = h_ids[p + n - 1]
                    if h_gram[h] < 0 or last < 0:
                        h_gram[h] = -1
                        continue
                    key = (h_gram[h] << 32) | last
                found = -1
                if n_used > 0:
                    slot = _mix(key) & mask
                    while True:
                        kk = slot_key[slot]
                        if kk == -1:
                            break
                        if kk == key:
                            found = slot
                            break
                        slot = (slot + 1) & mask
                h_gram[h] = found
                if found >= 0:
                    slot_hyp[found] += 1
                    if slot_hyp[found] <= slot_max[found]:
                        count += 1
            for u in range(n_used):
                sl = used[u]
                slot_key[sl] = -1
                slot_hyp[sl] = 0
            matches[i * max_order + n - 1] = count
            totals[i * max_order + n - 1] = length - n + 1 if length >= n else 0
    return 0


# ================================================================================================== C ABI

_u8p = types.CPointer(types.uint8)
_u32p = types.CPointer(types.uint32)
_i64p = types.CPointer(types.int64)
_i64 = types.int64
_OPTIONS = {"nopython": True, "error_model": "numpy", "boundscheck": False}

LINES_END_SIGNATURE = _i64(_u8p, _i64, _i64, _i64)
ENCODE_SIGNATURE = _i64(_u8p, _i64p, _i64p, _u8p, _u8p, _i64p, _i64p, _i64p, _u32p, _i64p, _i64p, _u32p, _i64p,
                        _i64p, _i64p)
REHASH_SIGNATURE = _i64(_i64p, _i64, _i64p, _i64)
COUNT_SIGNATURE = _i64(_i64p, _i64p, _i64p, _i64p, _i64p, _i64p, _i64p, _i64p, _i64p, _i64p, _i64p, _i64p, _i64p,
                       _i64p, _i64p)


@cfunc(ENCODE_SIGNATURE, **_OPTIONS)
def encode(text_p, bounds_p, params_p, table_p, line_flags_p, slots_p, starts_p, lens_p, chars_p, ids_p,
           tok_off_p, a_p, bnd_p, state_p, empty_p):  # pragma: no cover - compiled
    params = carray(params_p, (PARAMS_SIZE,))
    n_streams = params[P_STREAMS]
    n_lines = params[P_LINES]
    n_flags = n_streams * n_lines if (params[P_FLAGS] & F_LINE_FLAGS) != 0 else 1
    return _encode(carray(text_p, (max(params[P_TEXT], 1),)), carray(bounds_p, (3 * n_streams,)), params,
                   carray(table_p, (params[P_CLASSES],)), carray(line_flags_p, (n_flags,)),
                   carray(slots_p, (2 * params[P_SLOTS],)), carray(starts_p, (params[P_TOKENS],)),
                   carray(lens_p, (params[P_TOKENS],)), carray(chars_p, (params[P_CHARS],)),
                   carray(ids_p, (params[P_IDS],)), carray(tok_off_p, (n_streams * n_lines + 1,)),
                   carray(a_p, (params[P_SCRATCH],)), carray(bnd_p, (params[P_SCRATCH],)), carray(state_p, (STATE_SIZE,)),
                   carray(empty_p, (n_streams,)))


@cfunc(LINES_END_SIGNATURE, **_OPTIONS)
def lines_end(text_p, start, end, n):  # pragma: no cover - compiled
    """The position just after the ``n``-th LF of ``text[start:end]``, or ``-1 - found`` if there are fewer."""
    text = carray(text_p, (max(end, 1),))
    found = 0
    if n <= 0:
        return start
    for p in range(start, end):
        if text[p] == 10:
            found += 1
            if found == n:
                return p + 1
    return -1 - found


@cfunc(REHASH_SIGNATURE, **_OPTIONS)
def rehash(old_p, old_size, out_p, size):  # pragma: no cover - compiled
    return _rehash(carray(old_p, (2 * old_size,)), old_size, carray(out_p, (2 * size,)), size)


#: params of count: n_refs, n_lines, max_order, cap, hypothesis ids, reference ids, stride_k, stride_i, the most
#: hypothesis tokens of a segment
COUNT_PARAMS = 9


@cfunc(COUNT_SIGNATURE, **_OPTIONS)
def count(h_ids_p, h_off_p, r_ids_p, r_off_p, params_p, matches_p, totals_p, slot_key_p, slot_ref_p, slot_cur_p,
          slot_max_p, slot_hyp_p, used_p, r_gram_p, h_gram_p):  # pragma: no cover - compiled
    params = carray(params_p, (COUNT_PARAMS,))
    n_refs = params[0]
    n_lines = params[1]
    max_order = params[2]
    cap = params[3]
    return _count(carray(h_ids_p, (max(params[4], 1),)), carray(h_off_p, (n_lines + 1,)),
                  carray(r_ids_p, (max(params[5], 1),)), carray(r_off_p, (n_refs * n_lines + 1,)), n_refs, n_lines,
                  max_order, cap, params[6], params[7], carray(matches_p, (n_lines * max_order,)),
                  carray(totals_p, (n_lines * max_order,)), carray(slot_key_p, (cap,)), carray(slot_ref_p, (cap,)),
                  carray(slot_cur_p, (cap,)), carray(slot_max_p, (cap,)), carray(slot_hyp_p, (cap,)),
                  carray(used_p, (cap,)), carray(r_gram_p, (cap,)), carray(h_gram_p, (max(params[8], 1),)))


#: The compiled functions and their C signatures (what :mod:`.native` exports).
CFUNCS = {"encode": encode, "rehash": rehash, "count": count, "lines_end": lines_end}
