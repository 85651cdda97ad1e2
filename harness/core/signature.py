"""The reproducibility signature of a BLEU score: sacrebleu's fields plus the ones sacrebleu leaves out.

``nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|order:4|reflen:closest|profile:sacrebleu|harness:0.1.0``:
sacrebleu's ``nrefs``, ``case``, ``eff``, ``tok``, ``smooth`` (and ``bs``/``ar``/``seed`` of paired tests, right
after ``nrefs``), then what changes the number but sacrebleu does not print: n-gram ``order`` (sacrebleu #251),
the ``reflen`` rule, ``w`` (weights), ``reweigh``, ``profile``; our version last, where sacrebleu has ``version``.
:func:`parse_signature` inverts it.

The ``tok`` value of an optional tokenizer carries its library's version (``ja-mecab-0.996-IPA``); only the text
layer can know it, and registers it here when it builds that tokenizer (:func:`register_tokenizer_label`).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import ConfigError
from ..version import __version__
from .options import TOKENIZERS, BleuOptions

_ABBR = {"nrefs": "#", "bs": "bs", "ar": "ar", "seed": "rs", "case": "c", "eff": "e", "tok": "tok", "smooth": "s",
         "order": "n", "reflen": "r", "w": "w", "reweigh": "rw", "profile": "p", "harness": "v"}

# sacrebleu shows 'flores101' for 'spm' (renamed); the MeCab tokenizers register their versioned label.
_TOKENIZER_LABELS: dict[str, str] = {"spm": "flores101"}


def register_tokenizer_label(name: str, label: str) -> None:
    """Record what ``tok:`` shows for tokenizer ``name`` (called by the text layer when it builds one)."""
    _TOKENIZER_LABELS[name] = label


def tokenizer_label(name: str) -> str:
    return _TOKENIZER_LABELS.get(name, name)


def smooth_label(opts: BleuOptions) -> str:
    """``exp``, ``none``, ``floor[0.10]``, ``add-k[1.00]`` (sacrebleu), ``method1[0.10]`` (nltk epsilon)."""
    if opts.smooth_method in ("floor", "add-k") or (opts.smooth_method == "method1" and opts.smooth_value
                                                    is not None):
        value = opts.smooth_value if opts.smooth_value is not None else 0.1
        return f"{opts.smooth_method}[{value:.2f}]"
    return str(opts.smooth_method)


def signature_fields(opts: BleuOptions, nrefs: int | str, extra: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The signature as ordered fields (``extra``, e.g. ``bs``, ``ar``, ``seed``, goes after ``nrefs``)."""
    out: dict[str, str] = {"nrefs": str(nrefs)}
    for key, value in (extra or {}).items():
        out[key] = str(value)
    out["case"] = "lc" if opts.lowercase else "mixed"
    out["eff"] = "yes" if opts.effective_order else "no"
    out["tok"] = tokenizer_label(str(opts.tokenize))
    out["smooth"] = smooth_label(opts)
    out["order"] = str(opts.max_ngram_order)
    out["reflen"] = str(opts.ref_length)
    if opts.weights is not None:
        out["w"] = ",".join(f"{w:g}" for w in opts.weights)
    if opts.auto_reweigh:
        out["reweigh"] = "yes"
    out["profile"] = opts.profile
    out["harness"] = __version__
    return out


def format_signature(fields: Mapping[str, str], short: bool = False) -> str:
    return "|".join(f"{_ABBR.get(k, k) if short else k}:{v}" for k, v in fields.items())


def signature(opts: BleuOptions, nrefs: int | str, extra: Mapping[str, Any] | None = None,
              short: bool = False) -> str:
    """The reproducibility signature, e.g.
    ``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|order:4|reflen:closest|profile:sacrebleu|harness:0.1.0``."""
    return format_signature(signature_fields(opts, nrefs, extra), short)


def split_signature(text: str) -> dict[str, str]:
    """The fields of a signature (long or short form) by their long names."""
    long_of = {v: k for k, v in _ABBR.items()}
    out: dict[str, str] = {}
    for part in text.split("|"):
        key, sep, value = part.partition(":")
        if not sep:
            raise ConfigError("signature", f"malformed field {part!r} in {text!r}", got=text)
        out[key if key in _ABBR else long_of.get(key, key)] = value
    return out


def parse_signature(text: str) -> dict[str, Any]:
    """Options that reproduce a score from its signature (long or short form); inverse of :func:`signature`.

    Returns ``{"options": kwargs for make_options, "nrefs": ..., "harness": version}``.
    """
    fields = split_signature(text)
    tok_of = {tokenizer_label(t): t for t in TOKENIZERS}
    tok = fields.get("tok", "13a")
    # a MeCab label carries the library version (ja-mecab-0.996-IPA) even when it was not registered here
    tokenize = tok_of.get(tok) or next((t for t in ("ja-mecab", "ko-mecab") if tok.startswith(t + "-")), tok)
    smooth = fields.get("smooth", "exp")
    method, _, value = smooth.partition("[")
    options: dict[str, Any] = {
        "profile": fields.get("profile", "sacrebleu"),
        "tokenize": tokenize,
        "lowercase": fields.get("case", "mixed") == "lc",
        "effective_order": fields.get("eff", "no") == "yes",
        "smooth_method": method,
        "smooth_value": float(value.rstrip("]")) if value else None,
        "max_ngram_order": int(fields.get("order", "4")),
        "ref_length": fields.get("reflen", "closest"),
    }
    if "w" in fields:
        options["weights"] = tuple(float(w) for w in fields["w"].split(","))
    if fields.get("reweigh") == "yes":
        options["auto_reweigh"] = True
    return {"options": options, "nrefs": fields.get("nrefs"), "harness": fields.get("harness")}
