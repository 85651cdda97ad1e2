/*
 * harness._kernels: the compiled kernels of bleu-harness, a CPython extension module built by setuptools at
 * install (pyproject.toml [tool.setuptools] ext-modules, optional: without a C compiler the install succeeds and
 * the numpy path computes the same numbers).
 *
 * - encode, rehash, count, lines_end: UTF-8 text -> sacrebleu's tokens -> ids -> clipped n-gram statistics
 *   (harness.text.token_ids / counting / pipeline say what each argument is);
 * - tau_b: Kendall tau-b of resampled weightings (harness.core.correlation);
 * - exceed_counts, hybrid_counts, agreement: the pair counts of mt-metrics-eval's permutation p-values (of a metric,
 *   and of the metrics a significance test swaps) and pairwise accuracy; signed_sums: the permuted sums of the
 *   swapped metrics; acc_eq_draws: the statistics of acc_eq's pair-swap draws (harness.core.mtme).
 *
 * Every function takes its arrays as addresses (Python ints) or objects with the buffer protocol (bytes, numpy
 * arrays, ctypes arrays), and integers; it allocates nothing, reads and writes only within the sizes its
 * parameters give, and releases the GIL while it runs, so chunks run in threads on every core. Arithmetic that
 * must equal numpy's (tau_b's float64 sums, exceed_counts' float32 differences) is written in numpy's order and
 * compiled with -ffp-contract=off (no fused multiply-add).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- bits of the class table (one uint8 per code point; built by harness.text.token_ids.class_table) ---- */
#define WS 1        /* str.isspace(): what str.split / str.strip split on */
#define PUNCT 2     /* regex \p{P} */
#define NUMBER 4    /* regex \p{N} */
#define SYMBOL 8    /* regex \p{S} */
#define CJK 16      /* sacrebleu TokenizerZh._is_chinese_char, as it really behaves */
#define BAD 32      /* not allowed inside a line of a file */
#define RULES_13A 64 /* a character 13a's and zh's rules look at */

#define MODE_NONE 0
#define MODE_13A 1
#define MODE_INTL 2
#define MODE_ZH 3
#define MODE_CHAR 4

#define F_VALIDATE 1
#define F_CRLF 2
#define F_LOWER_ASCII 4
#define F_INSERT 8
#define F_LINE_FLAGS 16

#define LF_ABSENT 1
#define LF_PRETOKENIZED 2

#define OK 0
#define NEED_IDS 1
#define NEED_TABLE 2
#define NEED_SCRATCH 3
#define IRREGULAR 4
#define FEWER_LINES 5
#define MORE_LINES 6

#define S_LINE 0
#define S_POS 1
#define S_IDS 2
#define S_VOCAB 3
#define S_CHARS 4
#define S_NEED 5
#define S_STREAM 6
#define S_OFFSET 7

#define P_STREAMS 0
#define P_LINES 1
#define P_MODE 2
#define P_FLAGS 3
#define P_CLASSES 4
#define P_SLOTS 5
#define P_TOKENS 6
#define P_CHARS 7
#define P_IDS 8
#define P_SCRATCH 9
#define P_TEXT 10

#define HAS_AMP 1
#define HAS_LT 2

/* FNV-1a 64-bit and MurmurHash3's finaliser, in unsigned arithmetic (the bits of the numba kernels' signed
   wrap-around arithmetic, which the statistics cache's keys do not depend on anyway: ids are exact) */
#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME UINT64_C(1099511628211)

static inline int64_t mix(int64_t key) {
    uint64_t h = (uint64_t)key;
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 33;
    return (int64_t)h;
}

static inline uint8_t cls(const uint8_t *table, int64_t n_cls, int64_t c) {
    return c < n_cls ? table[c] : 0;
}

static inline int in_class_13a(int64_t c) {
    /* r'([\{-\~\[-\` -\&\(-\+\:-\@\/])' */
    return (0x7B <= c && c <= 0x7E) || (0x5B <= c && c <= 0x60) || (0x20 <= c && c <= 0x26) ||
           (0x28 <= c && c <= 0x2B) || (0x3A <= c && c <= 0x40) || c == 0x2F;
}

static inline int cont(uint8_t b) { return (b & 0xC0) == 0x80; }

/* Code points of text[p:e] into out; returns their number (seen: HAS_* bits), or -1 if validate finds a byte
   sequence CPython's strict decoder rejects, a BAD character or a carriage return. */
static int64_t decode(const uint8_t *text, int64_t p, int64_t e, int validate, int lower, const uint8_t *table,
                      int64_t n_cls, uint32_t *out, int *seen) {
    int64_t k = 0;
    *seen = 0;
    while (p < e) {
        int64_t c = text[p], cp;
        if (c < 0x80) {
            cp = c;
            p += 1;
            if (cp == 0x26) *seen |= HAS_AMP;
            else if (cp == 0x3C) *seen |= HAS_LT;
        } else if (c < 0xE0) {
            if (validate && (c < 0xC2 || p + 1 >= e || !cont(text[p + 1]))) return -1;
            cp = ((c & 0x1F) << 6) | (text[p + 1] & 0x3F);
            p += 2;
        } else if (c < 0xF0) {
            if (validate) {
                if (p + 2 >= e) return -1;
                int64_t b1 = text[p + 1];
                int64_t lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
                if (b1 < lo || b1 > hi || !cont(text[p + 2])) return -1;
            }
            cp = ((c & 0x0F) << 12) | ((int64_t)(text[p + 1] & 0x3F) << 6) | (text[p + 2] & 0x3F);
            p += 3;
        } else {
            if (validate) {
                if (c > 0xF4 || p + 3 >= e) return -1;
                int64_t b1 = text[p + 1];
                int64_t lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
                if (b1 < lo || b1 > hi || !cont(text[p + 2]) || !cont(text[p + 3])) return -1;
            }
            cp = ((c & 0x07) << 18) | ((int64_t)(text[p + 1] & 0x3F) << 12) | ((int64_t)(text[p + 2] & 0x3F) << 6) |
                 (text[p + 3] & 0x3F);
            p += 4;
        }
        if (validate && (cp == 13 || (cls(table, n_cls, cp) & BAD) != 0)) return -1;
        if (lower && 0x41 <= cp && cp <= 0x5A) cp += 32;
        out[k++] = (uint32_t)cp;
    }
    return k;
}

/* str.replace(old, new) on buf[:k] in place (len(new) <= len(old)); returns the new length */
static int64_t replace(uint32_t *buf, int64_t k, const uint32_t *old, int64_t n_old, const uint32_t *new_,
                       int64_t n_new) {
    int64_t w = 0, j = 0;
    while (j < k) {
        if (j + n_old <= k) {
            int same = 1;
            for (int64_t q = 0; q < n_old; q++) {
                if (buf[j + q] != old[q]) {
                    same = 0;
                    break;
                }
            }
            if (same) {
                for (int64_t q = 0; q < n_new; q++) buf[w + q] = new_[q];
                w += n_new;
                j += n_old;
                continue;
            }
        }
        buf[w++] = buf[j++];
    }
    return w;
}

static inline int64_t add(int64_t *bnd, int64_t n_tok, int64_t t0, int64_t t1) {
    bnd[2 * n_tok] = t0;
    bnd[2 * n_tok + 1] = t1;
    return n_tok + 1;
}

static inline int is_digit(int64_t c, uint8_t cl, int64_t mode) {
    if (mode == MODE_INTL) return (cl & NUMBER) != 0;
    return 0x30 <= c && c <= 0x39;
}

static inline int is_mark(int64_t c, uint8_t cl, int64_t mode) {
    if (mode == MODE_INTL) return (cl & PUNCT) != 0;
    return c == 0x2E || c == 0x2C;
}

static inline int is_alone(int64_t c, uint8_t cl, int64_t mode) {
    if (mode == MODE_INTL) return (cl & SYMBOL) != 0;
    if (mode == MODE_ZH && (cl & CJK) != 0) return 1;
    return in_class_13a(c);
}

/* The tokens of a[first:k] under 13a, zh or intl in one scan, from the token boundaries their rules create
   (harness/text/tokenizers.py derives each case; the tests hold this to sacrebleu). Token t is
   a[bnd[2t]:bnd[2t + 1]]; returns the number of tokens. */
static int64_t rule_tokens(const uint32_t *a, int64_t first, int64_t k, int64_t mode, const uint8_t *table,
                           int64_t n_cls, int64_t *bnd) {
    int padded = mode == MODE_13A;
    uint8_t special;
    if (mode == MODE_INTL) special = WS | PUNCT | SYMBOL;
    else if (mode == MODE_ZH) special = WS | RULES_13A | CJK;
    else special = WS | RULES_13A;
    int64_t n_tok = 0, t0 = -1, i = first;
    while (i < k) {
        int64_t c = a[i];
        uint8_t cl = cls(table, n_cls, c);
        if ((cl & special) == 0) {
            if (t0 < 0) t0 = i;
            i += 1;
            continue;
        }
        if ((cl & WS) != 0) {
            if (t0 >= 0) {
                n_tok = add(bnd, n_tok, t0, i);
                t0 = -1;
            }
            i += 1;
            continue;
        }
        int alone = is_alone(c, cl, mode);
        if (!alone && mode != MODE_INTL && c == 0x2D && i > first && 0x30 <= a[i - 1] && a[i - 1] <= 0x39) alone = 1;
        if (alone) {
            if (t0 >= 0) {
                n_tok = add(bnd, n_tok, t0, i);
                t0 = -1;
            }
            n_tok = add(bnd, n_tok, i, i + 1);
            i += 1;
            continue;
        }
        if (is_mark(c, cl, mode)) {
            int64_t j = i + 1;
            while (j < k && is_mark(a[j], cls(table, n_cls, a[j]), mode)) j += 1;
            int64_t run = j - i;
            int c_non = i > first ? !is_digit(a[i - 1], cls(table, n_cls, a[i - 1]), mode) : padded;
            int d_non = j < k ? !is_digit(a[j], cls(table, n_cls, a[j]), mode) : padded;
            if (run == 1 && !c_non && !d_non) { /* glued to both sides */
                if (t0 < 0) t0 = i;
                i = j;
                continue;
            }
            if (t0 >= 0) {
                n_tok = add(bnd, n_tok, t0, i);
                t0 = -1;
            }
            for (int64_t q = i; q < j - 1; q++) n_tok = add(bnd, n_tok, q, q + 1);
            if (run >= 2 && !d_non && (run + (c_non ? 1 : 0)) % 2 == 1) t0 = j - 1; /* glued to what follows */
            else n_tok = add(bnd, n_tok, j - 1, j);
            i = j;
            continue;
        }
        if (t0 < 0) t0 = i;
        i += 1;
    }
    if (t0 >= 0) n_tok = add(bnd, n_tok, t0, k);
    return n_tok;
}

/* str.split() of a[:k] (none), or every non-whitespace character (char) */
static int64_t split_tokens(const uint32_t *a, int64_t k, int single, const uint8_t *table, int64_t n_cls,
                            int64_t *bnd) {
    int64_t n_tok = 0, t0 = -1;
    for (int64_t i = 0; i < k; i++) {
        if ((cls(table, n_cls, a[i]) & WS) != 0) {
            if (t0 >= 0) {
                n_tok = add(bnd, n_tok, t0, i);
                t0 = -1;
            }
        } else if (single) {
            n_tok = add(bnd, n_tok, i, i + 1);
        } else if (t0 < 0) {
            t0 = i;
        }
    }
    if (t0 >= 0) n_tok = add(bnd, n_tok, t0, k);
    return n_tok;
}

static const uint32_t SKIPPED[] = {'<', 's', 'k', 'i', 'p', 'p', 'e', 'd', '>'};
static const uint32_t QUOT[] = {'&', 'q', 'u', 'o', 't', ';'};
static const uint32_t AMP[] = {'&', 'a', 'm', 'p', ';'};
static const uint32_t LT[] = {'&', 'l', 't', ';'};
static const uint32_t GT[] = {'&', 'g', 't', ';'};
static const uint32_t C_QUOT[] = {'"'};
static const uint32_t C_AMP[] = {'&'};
static const uint32_t C_LT[] = {'<'};
static const uint32_t C_GT[] = {'>'};

static int64_t encode(const uint8_t *text, const int64_t *bounds, const int64_t *params, const uint8_t *table,
                      const uint8_t *line_flags, int64_t *slots, int64_t *starts, int64_t *lens, uint32_t *chars,
                      int64_t *ids, int64_t *tok_off, uint32_t *a, int64_t *bnd, int64_t *state, int64_t *empty) {
    int64_t n_streams = params[P_STREAMS], n_lines = params[P_LINES], mode = params[P_MODE];
    int64_t flags = params[P_FLAGS], n_cls = params[P_CLASSES];
    int validate = (flags & F_VALIDATE) != 0, lower = (flags & F_LOWER_ASCII) != 0;
    int insert = (flags & F_INSERT) != 0, has_flags = (flags & F_LINE_FLAGS) != 0;
    int64_t size = params[P_SLOTS], mask = size - 1, scratch = params[P_SCRATCH];
    int64_t g = state[S_LINE], pos = state[S_POS], n_ids = state[S_IDS], n_vocab = state[S_VOCAB];
    int64_t n_chars = state[S_CHARS];
    int64_t total = n_streams * n_lines;
    if (g == 0) tok_off[0] = 0;
    while (g < total) {
        int64_t s = g / n_lines, i = g - s * n_lines, end = bounds[n_streams + s];
        if (i == 0) {
            if (g > 0 && pos < bounds[n_streams + s - 1]) {
                state[S_LINE] = g;
                state[S_POS] = pos;
                state[S_STREAM] = s - 1;
                return MORE_LINES;
            }
            pos = bounds[s];
        }
        if (pos >= end) {
            state[S_LINE] = g;
            state[S_POS] = pos;
            state[S_STREAM] = s;
            return FEWER_LINES;
        }
        int64_t e = pos;
        while (e < end && text[e] != 10) e++;
        int terminated = e < end;
        int64_t m = e - pos;
        /* worst case of this line: one token and one code point per byte */
        int64_t need = 0, status = OK;
        if (n_ids + m > params[P_IDS]) {
            status = NEED_IDS;
            need = n_ids + m;
        } else if (insert && (2 * (n_vocab + m) > size || n_chars + m > params[P_CHARS] ||
                              n_vocab + m > params[P_TOKENS])) {
            status = NEED_TABLE;
            need = m;
        } else if (2 * m + 16 > scratch) {
            status = NEED_SCRATCH;
            need = 2 * m + 16;
        }
        if (status != OK) {
            state[S_LINE] = g;
            state[S_POS] = pos;
            state[S_IDS] = n_ids;
            state[S_VOCAB] = n_vocab;
            state[S_CHARS] = n_chars;
            state[S_NEED] = need;
            return status;
        }
        if ((bounds[2 * n_streams + s] & F_CRLF) != 0) {
            if (m > 0 && text[e - 1] == 13) {
                m -= 1;
            } else if (terminated) { /* a LF without CR in a CRLF file */
                state[S_LINE] = g;
                state[S_POS] = pos;
                state[S_STREAM] = s;
                state[S_OFFSET] = pos;
                return IRREGULAR;
            }
        }
        uint8_t lflag = has_flags ? line_flags[g] : 0;
        int pretok = (lflag & LF_PRETOKENIZED) != 0;
        int seen = 0;
        int64_t k = decode(text, pos, pos + m, validate, lower && !pretok, table, n_cls, a, &seen);
        if (k < 0) {
            state[S_LINE] = g;
            state[S_POS] = pos;
            state[S_STREAM] = s;
            state[S_OFFSET] = pos;
            return IRREGULAR;
        }
        if (m == 0) empty[s] += 1;
        pos = terminated ? e + 1 : end;
        if ((lflag & LF_ABSENT) == 0) {
            while (k > 0 && (cls(table, n_cls, a[k - 1]) & WS) != 0) k--; /* str.rstrip() */
            int64_t n_tok;
            if (pretok || mode == MODE_NONE || mode == MODE_CHAR) {
                n_tok = split_tokens(a, k, mode == MODE_CHAR && !pretok, table, n_cls, bnd);
            } else {
                if (mode == MODE_13A) {
                    if ((seen & HAS_LT) != 0) k = replace(a, k, SKIPPED, 9, NULL, 0);
                    if ((seen & HAS_AMP) != 0) {
                        k = replace(a, k, QUOT, 6, C_QUOT, 1);
                        k = replace(a, k, AMP, 5, C_AMP, 1);
                        k = replace(a, k, LT, 4, C_LT, 1);
                        k = replace(a, k, GT, 4, C_GT, 1);
                    }
                }
                int64_t first = 0;
                if (mode == MODE_ZH) {
                    while (first < k && (cls(table, n_cls, a[first]) & WS) != 0) first++; /* str.strip() */
                }
                n_tok = rule_tokens(a, first, k, mode, table, n_cls, bnd);
            }
            for (int64_t t = 0; t < n_tok; t++) {
                int64_t t0 = bnd[2 * t], t1 = bnd[2 * t + 1], tl = t1 - t0;
                /* a token of at most 7 code points below 256 is its own key (length in the low byte); any other
                   token's key is its FNV-1a hash with the low byte cleared, confirmed by comparing code points */
                int short_ = tl <= 7;
                int64_t key = tl;
                if (short_) {
                    for (int64_t q = 0; q < tl; q++) {
                        uint32_t c = a[t0 + q];
                        if (c >= 256) {
                            short_ = 0;
                            break;
                        }
                        key |= (int64_t)c << (8 * (q + 1));
                    }
                }
                if (!short_) {
                    uint64_t h = FNV_OFFSET;
                    for (int64_t q = t0; q < t1; q++) h = (h ^ (uint64_t)a[q]) * FNV_PRIME;
                    key = (int64_t)(h & ~UINT64_C(0xFF));
                }
                int64_t slot = mix(key) & mask, found = -1;
                for (;;) {
                    int64_t v = slots[2 * slot + 1];
                    if (v == -1) break;
                    if (slots[2 * slot] == key) {
                        if (short_) {
                            found = v;
                            break;
                        }
                        if (lens[v] == tl) {
                            int64_t st = starts[v];
                            int same = 1;
                            for (int64_t q = 0; q < tl; q++) {
                                if (chars[st + q] != a[t0 + q]) {
                                    same = 0;
                                    break;
                                }
                            }
                            if (same) {
                                found = v;
                                break;
                            }
                        }
                    }
                    slot = (slot + 1) & mask;
                }
                if (found == -1 && insert) {
                    found = n_vocab;
                    for (int64_t q = 0; q < tl; q++) chars[n_chars + q] = a[t0 + q];
                    starts[n_vocab] = n_chars;
                    lens[n_vocab] = tl;
                    n_chars += tl;
                    slots[2 * slot] = key;
                    slots[2 * slot + 1] = n_vocab;
                    n_vocab++;
                }
                ids[n_ids++] = found;
            }
        }
        tok_off[g + 1] = n_ids;
        g++;
    }
    state[S_IDS] = n_ids;
    state[S_VOCAB] = n_vocab;
    state[S_CHARS] = n_chars;
    if (n_streams > 0 && pos < bounds[2 * n_streams - 1]) {
        state[S_LINE] = g;
        state[S_POS] = pos;
        state[S_STREAM] = n_streams - 1;
        return MORE_LINES;
    }
    state[S_LINE] = g;
    state[S_POS] = pos;
    return OK;
}

/* The (key, id) pairs of a table of old_size slots into an empty one (all -1) of size slots */
static int64_t rehash(const int64_t *old, int64_t old_size, int64_t *out, int64_t size) {
    int64_t mask = size - 1;
    for (int64_t s = 0; s < old_size; s++) {
        if (old[2 * s + 1] != -1) {
            int64_t key = old[2 * s], sl = mix(key) & mask;
            while (out[2 * sl + 1] != -1) sl = (sl + 1) & mask;
            out[2 * sl] = key;
            out[2 * sl + 1] = old[2 * s + 1];
        }
    }
    return 0;
}

/* The position just after the n-th LF of text[start:end], or -1 - found if there are fewer */
static int64_t lines_end(const uint8_t *text, int64_t start, int64_t end, int64_t n) {
    int64_t found = 0;
    if (n <= 0) return start;
    for (int64_t p = start; p < end; p++) {
        if (text[p] == 10 && ++found == n) return p + 1;
    }
    return -1 - found;
}

/* sacrebleu's clipped n-gram matching of every segment (harness.text.token_ids.count_ids says what the
   arguments are): per segment and order, the distinct reference n-grams fill an open-addressing table keyed by
   the slot of their first n - 1 tokens in the previous order's table and their last token */
static int64_t count(const int64_t *h_ids, const int64_t *h_off, const int64_t *r_ids, const int64_t *r_off,
                     const int64_t *params, int64_t *matches, int64_t *totals, int64_t *slot_key, int64_t *slot_ref,
                     int64_t *slot_cur, int64_t *slot_max, int64_t *slot_hyp, int64_t *used, int64_t *r_gram,
                     int64_t *h_gram) {
    int64_t n_refs = params[0], n_lines = params[1], max_order = params[2], cap = params[3];
    int64_t stride_k = params[6], stride_i = params[7], mask = cap - 1;
    for (int64_t i = 0; i < n_lines; i++) {
        int64_t hs = h_off[i], he = h_off[i + 1], length = he - hs;
        for (int64_t n = 1; n <= max_order; n++) {
            int64_t n_used = 0, q = 0;
            for (int64_t k = 0; k < n_refs; k++) {
                int64_t rs = r_off[k * stride_k + i * stride_i], re_ = r_off[k * stride_k + i * stride_i + 1];
                for (int64_t p = rs; p < re_; p++) {
                    if (p + n <= re_) {
                        int64_t key = n == 1 ? r_ids[p] : (int64_t)(((uint64_t)r_gram[q] << 32) | (uint64_t)r_ids[p + n - 1]);
                        int64_t slot = mix(key) & mask;
                        for (;;) {
                            int64_t kk = slot_key[slot];
                            if (kk == -1) {
                                slot_key[slot] = key;
                                slot_ref[slot] = k;
                                slot_cur[slot] = 1;
                                slot_max[slot] = 1;
                                used[n_used++] = slot;
                                break;
                            }
                            if (kk == key) {
                                if (slot_ref[slot] != k) {
                                    slot_ref[slot] = k;
                                    slot_cur[slot] = 0;
                                }
                                slot_cur[slot] += 1;
                                if (slot_cur[slot] > slot_max[slot]) slot_max[slot] = slot_cur[slot];
                                break;
                            }
                            slot = (slot + 1) & mask;
                        }
                        r_gram[q] = slot;
                    }
                    q++;
                }
            }
            int64_t matched = 0;
            for (int64_t p = hs; p < he - n + 1; p++) {
                int64_t h = p - hs, key;
                if (n == 1) {
                    key = h_ids[p];
                    if (key < 0) {
                        h_gram[h] = -1;
                        continue;
                    }
                } else {
                    int64_t last = h_ids[p + n - 1];
                    if (h_gram[h] < 0 || last < 0) {
                        h_gram[h] = -1;
                        continue;
                    }
                    key = (int64_t)(((uint64_t)h_gram[h] << 32) | (uint64_t)last);
                }
                int64_t found = -1;
                if (n_used > 0) {
                    int64_t slot = mix(key) & mask;
                    for (;;) {
                        int64_t kk = slot_key[slot];
                        if (kk == -1) break;
                        if (kk == key) {
                            found = slot;
                            break;
                        }
                        slot = (slot + 1) & mask;
                    }
                }
                h_gram[h] = found;
                if (found >= 0) {
                    slot_hyp[found] += 1;
                    if (slot_hyp[found] <= slot_max[found]) matched++;
                }
            }
            for (int64_t u = 0; u < n_used; u++) {
                slot_key[used[u]] = -1;
                slot_hyp[used[u]] = 0;
            }
            matches[i * max_order + n - 1] = matched;
            totals[i * max_order + n - 1] = length >= n ? length - n + 1 : 0;
        }
    }
    return 0;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
/* a loop compiled three times, for AVX-512 (e.g. 16 float comparisons per instruction), AVX2 (8) and the baseline
   (SSE2: 4); the loader picks one for the CPU at start-up (GCC's ifunc). All do the same operations in the same
   order: the same numbers. The AVX-512 copy (1 s more to compile) made signed_sums 12% faster on this machine's
   AMD EPYC (6.9 -> 6.05 ms on one core, 320 columns x 3000 segments x 1000 permutations) and soft pairwise
   accuracy's tests of the synthetic study 7% (5.8 -> 5.4 s on two cores) */
#define HARNESS_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define HARNESS_CLONES
#endif

/* Kendall tau-b of resampled weightings (harness.core.correlation.tau_b), TAU_LANES resamples at a time: the weights
   of block k are weights[k * n * TAU_LANES:(k + 1) * n * TAU_LANES], item-major (item i's weight in resample
   k * TAU_LANES + l at [i * TAU_LANES + l]), its tau-b values out[k * TAU_LANES + l], for the blocks k0 <= k < k1.
   For each resample: concordant minus discordant pairs from a Fenwick tree over the dense y ranks of the items
   sorted by x, the earlier items tied in y from the weight of each y rank in the groups before the current one
   (y_before), the tie counts from the weighted group sizes, as scipy.stats.kendalltau(variant='b') on the resample.
   Every node of the tree and of y_before holds the TAU_LANES resamples' sums side by side, one cache line: a large
   tree (tens of thousands of y ranks) is read once per item for all of them, where one resample at a time read it
   once per resample, and the lanes are one vector operation. Items of weight 0 go through the same steps, adding
   0: a bootstrap resample leaves out a third of the items at random, and a branch skipping them, mispredicted that
   often, cost more than their work. The weights are counts, int32, and a resample's total weight is below 2^31
   (the caller checks): every tree and group sum is then an exact int32, the concordance sums exact int64, and the
   values are those of one resample at a time in float64 (16 int32 lanes to a line where 8 doubles were: the
   tree is walked half as often). tree: (n_y + 1) * TAU_LANES int32, y_before: n_y * TAU_LANES. */
#define TAU_LANES 16

HARNESS_CLONES
static int64_t tau_b(const int64_t *y_rank, const int64_t *starts, const int32_t *weights, const int64_t *params,
                     double *out, int32_t *tree, int32_t *y_before) {
    int64_t n_y = params[0], n_groups = params[1] - 1, n = params[2], k0 = params[3], k1 = params[4];
    for (int64_t blk = k0; blk < k1; blk++) {
        const int32_t *w = weights + blk * n * TAU_LANES;
        memset(tree, 0, (size_t)(n_y + 1) * TAU_LANES * sizeof(int32_t));
        memset(y_before, 0, (size_t)n_y * TAU_LANES * sizeof(int32_t));
        int32_t seen[TAU_LANES] = {0};
        double s[TAU_LANES] = {0}, total[TAU_LANES] = {0}, x_ties[TAU_LANES] = {0};
        for (int64_t g = 0; g < n_groups; g++) {
            int32_t group[TAU_LANES] = {0};
            for (int64_t k = starts[g]; k < starts[g + 1]; k++) {
                const int32_t *wk = w + k * TAU_LANES;
                int64_t r = y_rank[k], i = r;
                int32_t less[TAU_LANES] = {0};
                while (i > 0) {
                    for (int l = 0; l < TAU_LANES; l++) less[l] += tree[i * TAU_LANES + l];
                    i -= i & (-i);
                }
                const int32_t *tied = y_before + r * TAU_LANES;
                for (int l = 0; l < TAU_LANES; l++) {
                    int32_t greater = seen[l] - less[l] - tied[l];
                    s[l] += (double)wk[l] * (double)(less[l] - greater);
                    group[l] += wk[l];
                }
            }
            for (int64_t k = starts[g]; k < starts[g + 1]; k++) {
                const int32_t *wk = w + k * TAU_LANES;
                for (int64_t i = y_rank[k] + 1; i <= n_y; i += i & (-i)) {
                    for (int l = 0; l < TAU_LANES; l++) tree[i * TAU_LANES + l] += wk[l];
                }
                for (int l = 0; l < TAU_LANES; l++) y_before[y_rank[k] * TAU_LANES + l] += wk[l];
            }
            for (int l = 0; l < TAU_LANES; l++) {
                double gw = (double)group[l];
                seen[l] += group[l];
                total[l] += gw;
                x_ties[l] += gw * (gw - 1.0) / 2.0;
            }
        }
        double y_ties[TAU_LANES] = {0}; /* y_before now holds every item: the weight of each y rank */
        for (int64_t r = 0; r < n_y; r++) {
            for (int l = 0; l < TAU_LANES; l++) {
                double c = (double)y_before[r * TAU_LANES + l];
                y_ties[l] += c * (c - 1.0) / 2.0;
            }
        }
        for (int l = 0; l < TAU_LANES; l++) {
            double pairs = total[l] * (total[l] - 1.0) / 2.0;
            double denominator = (pairs - x_ties[l]) * (pairs - y_ties[l]);
            out[blk * TAU_LANES + l] = denominator > 0 ? s[l] / sqrt(denominator) : NAN;
        }
    }
    return 0;
}

/* For every matrix b0 <= b < b1 and system pair i < j: how many permutations p have
   partial[b, i, p] - partial[b, j, p] >= sys_scores[b, i] - sys_scores[b, j], all float32 (MTME's numpy) */

/* One matrix's counts: for every system pair i < j of part[s, n_p] (system scores tot[s]), how many permutations p
   have part[i, p] - part[j, p] >= tot[i] - tot[j], in float32 (MTME's numpy); out[pair], np.triu_indices order.
   Inlined into each compiled copy of its callers, so it is vectorised for the CPU each copy is for. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline void pair_exceed_counts(const float *part, const float *tot, int64_t s, int64_t n_p, int64_t *out) {
    int64_t k = 0;
    for (int64_t i = 0; i < s - 1; i++) {
        const float *row_i = part + i * n_p;
        int64_t j = i + 1;
        /* four pairs (i, j..j+3) at a time: row i loaded once for the four, four independent counts */
        for (; j + 3 < s; j += 4) {
            const float *r0 = part + j * n_p, *r1 = r0 + n_p, *r2 = r1 + n_p, *r3 = r2 + n_p;
            float d0 = tot[i] - tot[j], d1 = tot[i] - tot[j + 1], d2 = tot[i] - tot[j + 2], d3 = tot[i] - tot[j + 3];
            int32_t c0 = 0, c1 = 0, c2 = 0, c3 = 0; /* 32-bit lanes: twice the comparisons per instruction of 64 */
            for (int64_t p = 0; p < n_p; p++) {
                float x = row_i[p];
                c0 += (float)(x - r0[p]) >= d0;
                c1 += (float)(x - r1[p]) >= d1;
                c2 += (float)(x - r2[p]) >= d2;
                c3 += (float)(x - r3[p]) >= d3;
            }
            out[k++] = c0;
            out[k++] = c1;
            out[k++] = c2;
            out[k++] = c3;
        }
        for (; j < s; j++) {
            const float *row_j = part + j * n_p;
            float test_delta = tot[i] - tot[j];
            int32_t c = 0;
            for (int64_t p = 0; p < n_p; p++) c += (float)(row_i[p] - row_j[p]) >= test_delta;
            out[k++] = c;
        }
    }
}

HARNESS_CLONES
static int64_t exceed_counts(const float *partial, const float *sys_scores, const int64_t *params, int64_t *out) {
    int64_t s = params[0], n_p = params[1], b0 = params[2], b1 = params[3];
    int64_t n_pairs = s * (s - 1) / 2;
    for (int64_t b = b0; b < b1; b++)
        pair_exceed_counts(partial + b * s * n_p, sys_scores + b * s, s, n_p, out + b * n_pairs);
    return 0;
}

/* Soft pairwise accuracy's permutation counts of swapped metrics, without building them in memory
   (harness.core.mtme.sig_matrix.soft_pairwise_accuracy_tester, whose numpy path does the same float32 operations):
   for every test q0 <= q < q1 with idx[q] = (a, b, ra, rb), d = moved[rb] - moved[ra] ([S, P], the permuted sums
   a swap moves) and dt = moved_totals[rb] - moved_totals[ra] ([S]); the swapped metrics' permuted sums are
   whole[a] + d and whole[b] - d, their system scores totals[a] + dt and totals[b] - dt; out[q, 0, pair] and
   out[q, 1, pair] count as exceed_counts does. buf: this call's scratch, 2 * S * P floats. S <= 512. */
HARNESS_CLONES
static int64_t hybrid_counts(const float *whole, const float *moved, const float *totals, const float *moved_totals,
                             const int64_t *idx, const int64_t *params, float *buf, int64_t *out) {
    int64_t s = params[0], n_p = params[1], q0 = params[2], q1 = params[3];
    int64_t n_pairs = s * (s - 1) / 2, sp = s * n_p;
    float *h0 = buf, *h1 = buf + sp;
    float t0[512], t1[512];
    if (s > 512) return -1;
    for (int64_t q = q0; q < q1; q++) {
        int64_t a = idx[4 * q], b = idx[4 * q + 1], ra = idx[4 * q + 2], rb = idx[4 * q + 3];
        const float *wa = whole + a * sp, *wb = whole + b * sp, *ma = moved + ra * sp, *mb = moved + rb * sp;
        for (int64_t e = 0; e < sp; e++) {
            float d = mb[e] - ma[e];
            h0[e] = wa[e] + d;
            h1[e] = wb[e] - d;
        }
        for (int64_t i = 0; i < s; i++) {
            float dt = moved_totals[rb * s + i] - moved_totals[ra * s + i];
            t0[i] = totals[a * s + i] + dt;
            t1[i] = totals[b * s + i] - dt;
        }
        pair_exceed_counts(h0, t0, s, n_p, out + 2 * q * n_pairs);
        pair_exceed_counts(h1, t1, s, n_p, out + (2 * q + 1) * n_pairs);
    }
    return 0;
}

/* Soft pairwise accuracy's permuted sums of many vectors (harness.core.mtme.sig_matrix._signed_sums, whose numpy
   path does the same float32 operations in the same order): out[c, p] = sum over segments k of sign[p, k] * x[c, k],
   sign = +1 where bit k % 8 of bits[p, k / 8] is set and -1 where not, for the columns c of the tiles t0 <= t < t1
   (16 columns a tile). A product with a +-1 matrix needs no multiplication: for every block of 8 segments the 256
   signed sums of a column's 8 values are tabled once (pairs, then fours, then eights), and each permutation adds
   the entry its byte picks, one addition per 8 segments where a matrix product makes 8 multiply-adds. Per column
   and permutation: the entries of 16 blocks added left to right, those group sums added left to right. The
   segments past n count as 0. bits holds each group's bytes of every permutation together, [ceil(NB / 16)][P][16]
   (harness.core.mtme.kernels.grouped_bits: a group's 16 KB for 1,000 permutations read in order, not 16 bytes of
   each of 1,000 rows; 8% faster). params = C, n, P, NB (bytes per permutation), t0, t1, the floats of buf (this
   call's scratch, at least SS_SCRATCH(P); -1 and nothing done if it is smaller). */
#define SS_LANES 16
#define SS_GROUP 16
#define SS_SCRATCH(n_p) ((n_p) * SS_LANES + SS_GROUP * 256 * SS_LANES)

#if defined(__GNUC__)
/* a tile's 16 lanes as one vector (GCC and clang): one AVX-512 instruction in the AVX-512 copy, two AVX2 ones in
   the AVX2 copy, four SSE2 ones in the baseline; lane by lane the same float32 operations as the plain C below */
typedef float ss_lanes __attribute__((vector_size(64), aligned(4)));
#define SS_W 16
#define SS_LOAD(ptr) (*(const ss_lanes *)(ptr))
#define SS_STORE(ptr, val) (*(ss_lanes *)(ptr) = (val))
#else
#endif

HARNESS_CLONES
static int64_t signed_sums(const float *x, const uint8_t *bits, const int64_t *params, float *buf, float *out) {
    int64_t n_c = params[0], n = params[1], n_p = params[2], nb = params[3], t0 = params[4], t1 = params[5];
    float *sums = buf;                     /* [P][16]: the tile's running sums */
    float *tab = buf + n_p * SS_LANES;     /* [SS_GROUP][256][16]: a group's tables */
    if (nb * 8 < n || params[6] < SS_SCRATCH(n_p)) return -1;
    for (int64_t tile = t0; tile < t1; tile++) {
        int64_t c0 = tile * SS_LANES, lanes = n_c - c0 < SS_LANES ? n_c - c0 : SS_LANES;
        if (nb == 0) memset(sums, 0, (size_t)n_p * SS_LANES * sizeof(float));
        for (int64_t g0 = 0; g0 < nb; g0 += SS_GROUP) {
            int64_t gb = nb - g0 < SS_GROUP ? nb - g0 : SS_GROUP;
            for (int64_t b = 0; b < gb; b++) {  /* block b's table: the 256 signed sums of its 8 segments */
                float v[8][SS_LANES];
                float *tb = tab + b * 256 * SS_LANES;
                for (int t = 0; t < 8; t++) {
                    int64_t k = (g0 + b) * 8 + t;
                    for (int l = 0; l < SS_LANES; l++) v[t][l] = (l < lanes && k < n) ? x[(c0 + l) * n + k] : 0.0f;
                }
#if defined(__GNUC__)
                for (int w = 0; w < SS_LANES; w += SS_W) {
                    ss_lanes q[4][4], lo[16], hi[16];
                    for (int h = 0; h < 4; h++) {  /* segments 2h, 2h + 1: signs (-,-), (+,-), (-,+), (+,+) */
                        ss_lanes a = SS_LOAD(&v[2 * h][w]), c = SS_LOAD(&v[2 * h + 1][w]);
                        q[h][0] = -a - c;
                        q[h][1] = a - c;
                        q[h][2] = c - a;
                        q[h][3] = a + c;
                    }
                    for (int e = 0; e < 16; e++) {  /* segments 0-3 and 4-7 */
                        lo[e] = q[0][e & 3] + q[1][e >> 2];
                        hi[e] = q[2][e & 3] + q[3][e >> 2];
                    }
                    for (int eh = 0; eh < 16; eh++) {
                        for (int el = 0; el < 16; el++) SS_STORE(tb + (eh * 16 + el) * SS_LANES + w, lo[el] + hi[eh]);
                    }
                }
#else
                for (int l = 0; l < SS_LANES; l++) {
                    float q[4][4], lo[16], hi[16];
                    for (int h = 0; h < 4; h++) {
                        float a = v[2 * h][l], c = v[2 * h + 1][l];
                        q[h][0] = -a - c;
                        q[h][1] = a - c;
                        q[h][2] = c - a;
                        q[h][3] = a + c;
                    }
                    for (int e = 0; e < 16; e++) {
                        lo[e] = q[0][e & 3] + q[1][e >> 2];
                        hi[e] = q[2][e & 3] + q[3][e >> 2];
                    }
                    for (int e = 0; e < 256; e++) tb[e * SS_LANES + l] = lo[e & 15] + hi[e >> 4];
                }
#endif
            }
            for (int64_t p = 0; p < n_p; p++) {  /* each permutation: the entries its bytes pick, left to right */
                const uint8_t *bp = bits + g0 * n_p + p * SS_GROUP;  /* group g0 / SS_GROUP's bytes of p */
                float *s = sums + p * SS_LANES;
#if defined(__GNUC__)
                const float *e = tab + (int64_t)bp[0] * SS_LANES;
                ss_lanes a0 = SS_LOAD(e);
                for (int64_t b = 1; b < gb; b++) {
                    e = tab + (b * 256 + bp[b]) * SS_LANES;
                    a0 += SS_LOAD(e);
                }
                if (g0 > 0) a0 = SS_LOAD(s) + a0;
                SS_STORE(s, a0);
#else
                float acc[SS_LANES];
                for (int l = 0; l < SS_LANES; l++) acc[l] = tab[(int64_t)bp[0] * SS_LANES + l];
                for (int64_t b = 1; b < gb; b++) {
                    for (int l = 0; l < SS_LANES; l++) acc[l] += tab[(b * 256 + bp[b]) * SS_LANES + l];
                }
                for (int l = 0; l < SS_LANES; l++) s[l] = g0 > 0 ? s[l] + acc[l] : acc[l];
#endif
            }
        }
        for (int64_t l = 0; l < lanes; l++) {
            float *o = out + (c0 + l) * n_p;
            for (int64_t p = 0; p < n_p; p++) o[p] = sums[p * SS_LANES + l];
        }
    }
    return 0;
}

/* acc_eq's pair-swap draws (harness.core.mtme.sig_matrix.acc_eq_tester, variants acc23 and 23): the float64
   operations of its numpy path, in numpy's order, without its arrays of every test's item values. For draw kk and
   test l (idx[4 l:4 l + 4] = a, b, ua, ub), shift[g] = moved[kk, ub, g] - moved[kk, ua, g]; the items' values
   f[g] / t[g] of f = counts[a, g] + shift[g] and of f = counts[b, g] - shift[g] (23: 2 f - tot[g] instead of f),
   each averaged as numpy's mean (its pairwise sum, started from 0, then / g); out[kk, l] = the first average
   minus the second. params = n_items, U, k, L, variant (0: acc23, 1: 23), l0, l1: the tests l0 <= l < l1 of every
   draw. */
typedef struct {
    const int64_t *ca, *cb, *ma, *mb, *tot;
    const double *t;
    int64_t twenty_three;
} AccTest;

static inline void acc_values(const AccTest *r, int64_t g, double *va, double *vb) {
    int64_t shift = r->mb[g] - r->ma[g];
    int64_t fa = r->ca[g] + shift, fb = r->cb[g] - shift;
    if (r->twenty_three) {
        fa = 2 * fa - r->tot[g];
        fb = 2 * fb - r->tot[g];
    }
    *va = (double)fa / r->t[g];
    *vb = (double)fb / r->t[g];
}

/* numpy's pairwise summation (DOUBLE_pairwise_sum: blocks of at most 128 in 8 partial sums, halves above) of both
   tests' values over the items lo <= g < lo + n */
static void acc_sums(const AccTest *r, int64_t lo, int64_t n, double *sa, double *sb) {
    double va, vb;
    if (n < 8) {
        double ra = 0.0, rb = 0.0;
        for (int64_t i = 0; i < n; i++) {
            acc_values(r, lo + i, &va, &vb);
            ra += va;
            rb += vb;
        }
        *sa = ra;
        *sb = rb;
    } else if (n <= 128) {
        double pa[8], pb[8];
        int64_t i;
        for (int64_t j = 0; j < 8; j++) acc_values(r, lo + j, &pa[j], &pb[j]);
        for (i = 8; i < n - (n % 8); i += 8) {
            for (int64_t j = 0; j < 8; j++) {
                acc_values(r, lo + i + j, &va, &vb);
                pa[j] += va;
                pb[j] += vb;
            }
        }
        double ra = ((pa[0] + pa[1]) + (pa[2] + pa[3])) + ((pa[4] + pa[5]) + (pa[6] + pa[7]));
        double rb = ((pb[0] + pb[1]) + (pb[2] + pb[3])) + ((pb[4] + pb[5]) + (pb[6] + pb[7]));
        for (; i < n; i++) {
            acc_values(r, lo + i, &va, &vb);
            ra += va;
            rb += vb;
        }
        *sa = ra;
        *sb = rb;
    } else {
        int64_t n2 = n / 2;
        double a1, b1, a2, b2;
        n2 -= n2 % 8;
        acc_sums(r, lo, n2, &a1, &b1);
        acc_sums(r, lo + n2, n - n2, &a2, &b2);
        *sa = a1 + a2;
        *sb = b1 + b2;
    }
}

static int64_t acc_eq_draws(const int64_t *counts, const int64_t *moved, const int64_t *tot, const double *t,
                            const int64_t *idx, const int64_t *params, double *out) {
    int64_t g = params[0], u = params[1], k = params[2], n_tests = params[3], l0 = params[5], l1 = params[6];
    AccTest r;
    r.tot = tot;
    r.t = t;
    r.twenty_three = params[4] == 1;
    for (int64_t kk = 0; kk < k; kk++) {
        for (int64_t l = l0; l < l1; l++) {
            double sa, sb;
            r.ca = counts + idx[4 * l] * g;
            r.cb = counts + idx[4 * l + 1] * g;
            r.ma = moved + (kk * u + idx[4 * l + 2]) * g;
            r.mb = moved + (kk * u + idx[4 * l + 3]) * g;
            acc_sums(&r, 0, g, &sa, &sb);
            out[kk * n_tests + l] = (0.0 + sa) / (double)g - (0.0 + sb) / (double)g;
        }
    }
    return 0;
}

/* Pairwise agreement of every row of metric[v, s] with human[s] (MTME stats.Agreement): see
   harness.core.mtme.accuracy._agreement for what out holds */
static int64_t agreement(const double *metric, const double *human, int64_t v, int64_t s, double *out) {
    int64_t present = 0, missing = 0;
    for (int64_t i = 0; i < s; i++) present += human[i] == human[i];
    int64_t n_pairs = present * (present - 1) / 2;
    for (int64_t b = 0; b < v; b++) {
        const double *row = metric + b * s;
        int64_t c = 0;
        for (int64_t i = 0; i < s; i++) {
            double hi = human[i];
            if (hi != hi) continue;
            double mi = row[i];
            missing += mi != mi;
            for (int64_t j = i + 1; j < s; j++) {
                double hj = human[j];
                if (hj != hj) continue;
                double dh = hi - hj, dm = mi - row[j];
                c += (dh == dh) & (dm == dm) & ((dh > 0) == (dm > 0)) & ((dh < 0) == (dm < 0));
            }
        }
        out[v + b] = (double)c;
        out[b] = n_pairs ? (double)c / (double)n_pairs : NAN;
    }
    out[2 * v] = (double)n_pairs;
    out[2 * v + 1] = (double)missing;
    return 0;
}

/* ================================================================================================= Python */

#define MAX_ARGS 15

/* The arguments of a call: 'p' = an array (an int address, or an object with the buffer protocol), 'i' = an
   int64. Buffers are held until the call ends. */
typedef struct {
    void *ptr[MAX_ARGS];
    int64_t num[MAX_ARGS];
    Py_buffer view[MAX_ARGS];
    int held[MAX_ARGS];
    Py_ssize_t n;
} Args;

static void release(Args *a) {
    for (Py_ssize_t i = 0; i < a->n; i++) {
        if (a->held[i]) PyBuffer_Release(&a->view[i]);
    }
}

static int parse(const char *name, const char *spec, PyObject *const *args, Py_ssize_t nargs, Args *a) {
    Py_ssize_t want = (Py_ssize_t)strlen(spec);
    a->n = 0;
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", name, want, nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        a->held[i] = 0;
        a->n = i + 1;
        if (spec[i] == 'i') {
            a->num[i] = PyLong_AsLongLong(args[i]);
            if (a->num[i] == -1 && PyErr_Occurred()) return -1;
        } else if (PyLong_Check(args[i])) {
            a->ptr[i] = PyLong_AsVoidPtr(args[i]);
            if (a->ptr[i] == NULL && PyErr_Occurred()) return -1;
        } else {
            if (PyObject_GetBuffer(args[i], &a->view[i], PyBUF_SIMPLE) < 0) return -1;
            a->held[i] = 1;
            a->ptr[i] = a->view[i].buf;
        }
    }
    return 0;
}

#define P(k, type) ((type *)a.ptr[k])
#define N(k) (a.num[k])

static PyObject *py_encode(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Args a;
    if (parse("encode", "ppppppppppppppp", args, nargs, &a) < 0) {
        release(&a);
        return NULL;
    }
    int64_t r;
    Py_BEGIN_ALLOW_THREADS
    r = encode(P(0, const uint8_t), P(1, const int64_t), P(2, const int64_t), P(3, const uint8_t),
               P(4, const uint8_t), P(5, int64_t), P(6, int64_t), P(7, int64_t), P(8, uint32_t), P(9, int64_t),
               P(10, int64_t), P(11, uint32_t), P(12, int64_t), P(13, int64_t), P(14, int64_t));
    Py_END_ALLOW_THREADS
    release(&a);
    return PyLong_FromLongLong(r);
}

static PyObject *py_rehash(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Args a;
    if (parse("rehash", "pipi", args, nargs, &a) < 0) {
        release(&a);
        return NULL;
    }
    int64_t r;
    Py_BEGIN_ALLOW_THREADS
    r = rehash(P(0, const int64_t), N(1), P(2, int64_t), N(3));
    Py_END_ALLOW_THREADS
    release(&a);
    return PyLong_FromLongLong(r);
}

static PyObject *py_count(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Args a;
    if (parse("count", "ppppppppppppppp", args, nargs, &a) < 0) {
        release(&a);
        return NULL;
    }
    int64_t r;
    Py_BEGIN_ALLOW_THREADS
    r = count(P(0, const int64_t), P(1, const int64_t), P(2, const int64_t), P(3, const int64_t),
              P(4, const int64_t), P(5, int64_t), P(6, int64_t), P(7, int64_t), P(8, int64_t), P(9, int64_t),
              P(10, int64_t), P(11, int64_t), P(12, int64_t), P(13, int64_t), P(14, int64_t));
    Py_END_ALLOW_THREADS
    release(&a);
    return PyLong_FromLongLong(r);
}

static PyObject *py_lines_end(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Args a;
    if (parse("lines_end", "piii", args, nargs, &a) < 0) {
        release(&a);
        return NULL;
    }
    int64_t r;
    /* a scan of a chunk: microseconds; the GIL is released all the same, as the other kernels */
    Py_BEGIN_ALLOW_THREADS
    r = lines_end(P(0, const uint8_t), N(1), N(2), N(3));
    Py_END_ALLOW_THREADS
    release(&a);
    return PyLong_FromLongLong(r);
}

static PyObject *py_tau_b(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Args a;
    if (parse("tau_b", "ppppppp", args, nargs, &a) < 0) {
        release(&a);
        return NULL;
    }
    int64_t r;
    Py_BEGIN_ALLOW_THREADS
    r = tau_b(P(0, const int64_t), P(1, const int64_t), P(2, const int32_t), P(3, const int64_t), P(4, double),
              P(5, int32_t), P(6, int32_t));
    Py_END_ALLOW_THREADS
    release(&a);
    return PyLong_FromLongLong(r);
}

static PyObject *py_exceed_counts(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Args a;
    if (parse("exceed_counts", "pppp", args, nargs, &a) < 0) {
        release(&a);
        return NULL;
    }
    int64_t r;
    Py_BEGIN_ALLOW_THREADS
    r = exceed_counts(P(0, const float), P(1, const float), P(2, const int64_t), P(3, int64_t));
    Py_END_ALLOW_THREADS
    release(&a);
    return PyLong_FromLongLong(r);
}

static PyObject *py_hybrid_counts(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Args a;
    if (parse("hybrid_counts", "pppppppp", args, nargs, &a) < 0) {
        release(&a);
        return NULL;
    }
    int64_t r;
    Py_BEGIN_ALLOW_THREADS
    r = hybrid_counts(P(0, const float), P(1, const float), P(2, const float), P(3, const float),
                      P(4, const int64_t), P(5, const int64_t), P(6, float), P(7, int64_t));
    Py_END_ALLOW_THREADS
    release(&a);
    return PyLong_FromLongLong(r);
}

static PyObject *py_signed_sums(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Args a;
    if (parse("signed_sums", "ppppp", args, nargs, &a) < 0) {
        release(&a);
        return NULL;
    }
    int64_t r;
    Py_BEGIN_ALLOW_THREADS
    r = signed_sums(P(0, const float), P(1, const uint8_t), P(2, const int64_t), P(3, float), P(4, float));
    Py_END_ALLOW_THREADS
    release(&a);
    return PyLong_FromLongLong(r);
}

static PyObject *py_agreement(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Args a;
    if (parse("agreement", "ppiip", args, nargs, &a) < 0) {
        release(&a);
        return NULL;
    }
    int64_t r;
    Py_BEGIN_ALLOW_THREADS
    r = agreement(P(0, const double), P(1, const double), N(2), N(3), P(4, double));
    Py_END_ALLOW_THREADS
    release(&a);
    return PyLong_FromLongLong(r);
}

static PyObject *py_acc_eq_draws(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Args a;
    if (parse("acc_eq_draws", "ppppppp", args, nargs, &a) < 0) {
        release(&a);
        return NULL;
    }
    int64_t r;
    Py_BEGIN_ALLOW_THREADS
    r = acc_eq_draws(P(0, const int64_t), P(1, const int64_t), P(2, const int64_t), P(3, const double),
                     P(4, const int64_t), P(5, const int64_t), P(6, double));
    Py_END_ALLOW_THREADS
    release(&a);
    return PyLong_FromLongLong(r);
}

static PyMethodDef methods[] = {
    {"encode", (PyCFunction)(void (*)(void))py_encode, METH_FASTCALL, "UTF-8 lines -> token ids (15 arguments)"},
    {"rehash", (PyCFunction)(void (*)(void))py_rehash, METH_FASTCALL, "grow the token table"},
    {"count", (PyCFunction)(void (*)(void))py_count, METH_FASTCALL, "clipped n-gram matches and totals"},
    {"lines_end", (PyCFunction)(void (*)(void))py_lines_end, METH_FASTCALL, "the end of the n-th line"},
    {"tau_b", (PyCFunction)(void (*)(void))py_tau_b, METH_FASTCALL, "resampled Kendall tau-b"},
    {"exceed_counts", (PyCFunction)(void (*)(void))py_exceed_counts, METH_FASTCALL, "MTME permutation counts"},
    {"signed_sums", (PyCFunction)(void (*)(void))py_signed_sums, METH_FASTCALL, "sums of +-1 permutations"},
    {"agreement", (PyCFunction)(void (*)(void))py_agreement, METH_FASTCALL, "MTME pairwise agreement"},
    {"hybrid_counts", (PyCFunction)(void (*)(void))py_hybrid_counts, METH_FASTCALL, "MTME counts of swapped metrics"},
    {"acc_eq_draws", (PyCFunction)(void (*)(void))py_acc_eq_draws, METH_FASTCALL, "MTME acc_eq pair-swap draws"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "harness._kernels",
    "The compiled kernels of bleu-harness (C, built at install; see harness/native.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&module); }
