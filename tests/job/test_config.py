"""The configuration schema (harness.job.config), on plain containers without Hydra: check_keys refuses every key
the schema does not know, at any depth, naming the closest valid one; every BLEU option is a variant key; no
_target_ anywhere; PRESENTATION_KEYS are keys, and changing one changes neither a job's name nor its identity.
(Composing conf/ with Hydra, and the same errors from the command line: tests/job/test_spec.py.)"""

from __future__ import annotations

from dataclasses import asdict, fields

import pytest

from harness.core.options import OPTION_NAMES, SENTENCE_EFFECTIVE_ORDER
from harness.errors import ConfigError
from harness.job.config import PRESENTATION_KEYS, BleuVariantConfig, HarnessConfig, check_keys, refuse_targets
from harness.job.spec import build_spec, identity_digest, job_name
from support import base_config, bleu_config

TOP = sorted(f.name for f in fields(HarnessConfig))


def full_config() -> dict:
    cfg = asdict(HarnessConfig())
    cfg["bleu"] = bleu_config("sacrebleu", "nltk", "char")
    cfg["system"] = {"name": "x", "path": "x.txt", "version": "3", "human": False, "metadata": {"step": "3"}}
    cfg["refset"] = {"name": None, "paths": ["r.txt"]}
    return cfg


def test_the_schema_defaults_and_the_shipped_variants_pass():
    check_keys(full_config())


@pytest.mark.parametrize("path,bad,hint", [
    ((), "n_sampels", "n_samples"),
    ((), "sede", "seed"),
    (("dataset",), "rots", "dataset.root"),
    (("human",), "seg_pth", "human.seg_path"),
    (("system",), "verison", "system.version"),
    (("refset",), "path", "refset.paths"),
    (("bleu", "sacrebleu"), "tokenise", "bleu.sacrebleu.tokenize"),
    (("bleu", "my-own"), "smooth_mthod", "bleu.my-own.smooth_method"),
])
def test_an_unknown_key_names_itself_and_the_closest_valid_one(path, bad, hint):
    cfg = full_config()
    node = cfg
    for key in path:
        node = node.setdefault(key, {})
    node[bad] = 1
    with pytest.raises(ConfigError) as err:
        check_keys(cfg)
    where = ".".join([*path, bad])
    assert err.value.key == where
    assert str(err.value).startswith(f"{where}: unknown configuration key; did you mean {hint}? (valid: ")


def test_an_unknown_key_without_a_close_one_lists_the_valid_keys():
    with pytest.raises(ConfigError) as err:
        check_keys({"seed": 1, "zzzzzz": 1})
    assert err.value.key == "zzzzzz" and "did you mean" not in str(err.value) and err.value.choices == TOP
    with pytest.raises(ConfigError) as err:
        check_keys({"dataset": {"root": None, "qqqq": 1}})
    assert err.value.choices == ["name", "refs", "refsets", "root", "strict", "systems", "target_lang"]


def test_free_form_values_are_not_walked():
    """Values that are data, not schema (system metadata, refsets lists, compare pairs), may hold any key."""
    check_keys({"system": {"name": "x", "metadata": {"anything": "goes", "n_sampels": "1"}},
                "dataset": {"refsets": [["a"], ["a", "b"]]}, "compare": [["a", "b"]]})
    check_keys({"system": None, "refset": None, "bleu": {}})


def test_every_bleu_option_is_a_variant_key():
    """OPTION_NAMES is the one option list: each is a key of a variant's config (so conf/bleu/*.yaml and
    bleu.NAME.OPTION=... accept it), and a near miss of each is refused pointing to it."""
    variant_keys = {f.name for f in fields(BleuVariantConfig)}
    assert set(OPTION_NAMES) <= variant_keys
    assert variant_keys - set(OPTION_NAMES) == {"name", SENTENCE_EFFECTIVE_ORDER, "language_tokenizer"}
    for option in OPTION_NAMES:
        check_keys({"bleu": {"v": {"name": "v", option: None}}})
        with pytest.raises(ConfigError) as err:
            check_keys({"bleu": {"v": {option + "x": None}}})
        assert err.value.key == f"bleu.v.{option}x" and f"did you mean bleu.v.{option}?" in str(err.value)


@pytest.mark.parametrize("node,where", [
    ({"bleu": {"x": {"_target_": "os.system"}}}, "bleu.x._target_"),
    ({"dataset": {"_partial_": True}}, "dataset._partial_"),
    ({"compare": [["a", "b"], {"_target_": "builtins.print"}]}, "compare[1]._target_"),
    ({"system": {"metadata": {"_recursive_": "x"}}}, "system.metadata._recursive_"),
])
def test_instantiation_keys_are_refused_anywhere(node, where):
    with pytest.raises(ConfigError) as err:
        refuse_targets(node)
    assert err.value.key == where and "instantiation is not allowed" in str(err.value)


# ------------------------------------------------------------------------------------------------ presentation


def test_presentation_keys_are_top_level_keys_that_leave_a_job_the_same(tmp_path):
    assert PRESENTATION_KEYS <= set(TOP)
    assert not PRESENTATION_KEYS & {"seed", "n_samples", "bleu", "dataset", "human", "system", "refset"}
    base = build_spec(base_config(tmp_path, seed=7), ["seed=7"])
    values = {"output_dir": str(tmp_path / "elsewhere"), "runs_dir": str(tmp_path / "runs2"),
              "tracking_uri": "http://127.0.0.1:1", "tracking": False, "tracking_retries": 5,
              "tracking_timeout": 3, "force": True, "progress": True, "verbose": True,
              "figure_formats": ["png", "pdf"]}
    assert values.keys() == PRESENTATION_KEYS  # a new presentation key gets a value here
    hashes = {"ref:r": "0" * 64}
    for key, value in values.items():
        cfg = base_config(tmp_path, seed=7, **{key: value})
        spec = build_spec(cfg, ["seed=7", f"{key}={value}"])
        assert spec.job_name == base.job_name, key
        assert identity_digest(spec, hashes) == identity_digest(base, hashes), key
    meaningful = build_spec(base_config(tmp_path, seed=8), ["seed=8"])
    assert meaningful.job_name != base.job_name
    assert identity_digest(meaningful, hashes) != identity_digest(base, hashes)
    assert identity_digest(base, {"ref:r": "1" * 64}) != identity_digest(base, hashes)
    assert job_name(["seed=7", "+verbose=true", "~progress"]) == base.job_name
