"""The job spec: every config file composes against the schema and validates; bad values fail before any work,
with the key and the valid choices; names and places of jobs."""

from __future__ import annotations

import dataclasses
from importlib import resources
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from harness.app import register
from harness.errors import ConfigError
from harness.job.config import BleuVariantConfig
from harness.job.inputs import dataset_name, layout_of
from harness.job.spec import build_spec, build_variants, job_name, parse_refsets
from support import DEMO, base_config, bleu_config

CONF = Path(str(resources.files("harness.conf")))
#: The variants docs/contracts.md §5 promises.
CONTRACT_VARIANTS = ["sacrebleu", "intl", "zh", "char", "none", "lowercase", "floor", "add-k", "nosmooth", "paper",
                     "shortest", "nltk", "hf", "multi-bleu", "mteval-v13a"]


@pytest.fixture()
def composed():
    """Compose ``conf/`` with overrides, as the app does; returns (plain config, overrides)."""
    register()
    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="harness.conf", version_base="1.3"):
        def run(*overrides: str):
            cfg = compose("config", overrides=list(overrides))
            return OmegaConf.to_container(cfg, resolve=True), list(overrides)

        yield run
    GlobalHydra.instance().clear()


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


def test_every_design_variant_is_shipped():
    assert set(CONTRACT_VARIANTS) <= set(options("bleu"))


def test_the_variant_schema_is_the_option_list():
    from dataclasses import fields

    from harness.core.options import OPTION_NAMES, SENTENCE_EFFECTIVE_ORDER

    assert [f.name for f in fields(BleuVariantConfig)] == ["name", *OPTION_NAMES, SENTENCE_EFFECTIVE_ORDER,
                                                         "language_tokenizer"]


@pytest.mark.parametrize("variant,override,want", [
    ("sacrebleu", None, True), ("paper", None, True), ("intl", None, True), ("sacrebleu", "false", False),
    ("nltk", None, False), ("hf", None, False), ("mteval-v13a", None, False), ("multi-bleu", None, False)])
@pytest.mark.slow
def test_the_segment_level_is_sentbleu_unless_a_key_says_otherwise(composed, tmp_path, variant, override, want):
    """WMT's sentBLEU (sacrebleu's sentence_bleu) turns effective order on; profiles without effective order keep
    their tools' sentence-level formula; the corpus options are untouched either way."""
    extra = [] if override is None else [f"bleu.{variant}.sentence_effective_order={override}"]
    config, overrides = composed(f"bleu={variant}", f"runs_dir={tmp_path}", *extra)
    (v,) = build_spec(config, overrides).variants
    assert v.sentence.effective_order is want and v.options.effective_order is False
    assert dataclasses.replace(v.sentence, effective_order=False) == v.options


def test_effective_order_at_segment_level_needs_a_profile_that_has_it(composed, tmp_path):
    config, overrides = composed("bleu=nltk", f"runs_dir={tmp_path}", "bleu.nltk.sentence_effective_order=true")
    with pytest.raises(ConfigError) as err:
        build_spec(config, overrides)
    assert err.value.key == "bleu.nltk.sentence_effective_order" and "no effective order" in str(err.value)


@pytest.mark.slow
@pytest.mark.parametrize("variant", options("bleu"))
def test_every_bleu_variant_composes_and_validates(composed, variant, tmp_path):
    config, overrides = composed(f"bleu={variant}", f"runs_dir={tmp_path}")
    (v,) = build_spec(config, overrides).variants
    assert v.name == variant and v.options.tokenize and v.options.smooth_method


def test_several_variants_in_one_job(composed):
    config, _ = composed("bleu=[sacrebleu,intl,nltk]")
    assert [v.name for v in build_variants(config["bleu"])] == ["sacrebleu", "intl", "nltk"]


@pytest.mark.parametrize("experiment", options("experiment"))
def test_every_experiment_composes_into_a_spec(composed, experiment, tmp_path):
    config, overrides = composed(f"experiment={experiment}", f"runs_dir={tmp_path}")
    spec = build_spec(config, overrides)
    assert spec.experiment == experiment and spec.dataset_root is not None


@pytest.mark.slow
@pytest.mark.parametrize("group", ["dataset", "system", "refset", "human"])
def test_every_other_config_file_composes(composed, group, tmp_path):
    for name in options(group):
        overrides = [f"{group}={name}", f"runs_dir={tmp_path}"]
        if (group, name) == ("dataset", "folder"):
            overrides.append(f"dataset.root={DEMO}")
        if (group, name) == ("human", "tsv"):
            overrides.append(f"human.seg_path={DEMO / 'human' / 'seg.tsv'}")
        config, _ = composed(*overrides)
        assert config[group] is not None


def test_explicit_system_and_refset(composed, tmp_path):
    config, overrides = composed("system=example", "system.version=step-42", "refset=wmt21_ref-C",
                                 "dataset.root=null", f"runs_dir={tmp_path}")
    spec = build_spec(config, overrides)
    assert (spec.system.name, spec.system.version) == ("Nemo", "step-42")
    assert [p.name for p in spec.refset_paths] == ["ref-C.txt"]


@pytest.mark.parametrize("override,key,valid", [
    ("bleu.sacrebleu.tokenize=bogus", "bleu.sacrebleu.tokenize", "13a"),
    ("bleu.sacrebleu.smooth_method=bogus", "bleu.sacrebleu.smooth_method", "exp"),
    ("bleu.sacrebleu.profile=bogus", "bleu.sacrebleu.profile", "sacrebleu"),
    ("dataset.refsets=some", "dataset.refsets", "each"),
])
def test_bad_values_are_config_errors_listing_choices(composed, override, key, valid, tmp_path):
    config, overrides = composed(override, f"runs_dir={tmp_path}")
    with pytest.raises(ConfigError) as err:
        build_spec(config, overrides)
    assert err.value.key == key and valid in str(err.value)


@pytest.mark.parametrize("override,want", [
    ("figure_formats=[png,eps]", "unknown figure format 'eps' (valid: png, pdf, svg)"),
    ("figure_formats=[pdf]", "png is always written (the report and MLflow show it)"),
    ("figure_formats=[]", "png is always written"),
])
def test_figure_formats_name_known_writers_and_keep_the_png(composed, override, want, tmp_path):
    config, overrides = composed(override, f"runs_dir={tmp_path}")
    with pytest.raises(ConfigError) as err:
        build_spec(config, overrides)
    assert err.value.key == "figure_formats" and want in str(err.value)


def test_figure_formats_are_png_first_then_each_asked_for_once(composed, tmp_path):
    assert build_spec(*composed(f"runs_dir={tmp_path}")).figure_formats == ("png",)
    config, overrides = composed("figure_formats=[svg,png,pdf,svg]", f"runs_dir={tmp_path}")
    assert build_spec(config, overrides).figure_formats == ("png", "pdf", "svg")


@pytest.mark.parametrize("override,key", [("seed=-1", "seed"), ("n_samples=0", "n_samples"),
                                          ("n_samples=-5", "n_samples"), ("seed=99999999999999999999", "seed"),
                                          ("tracking_retries=-1", "tracking_retries")])
@pytest.mark.slow
def test_values_checked_from_the_config(composed, override, key, tmp_path):
    config, overrides = composed(override, f"runs_dir={tmp_path}")
    with pytest.raises(ConfigError) as err:
        build_spec(config, overrides)
    assert err.value.key == key


def test_unknown_keys_are_refused_by_the_schema(composed):
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException, match="bogus"):
        composed("bleu.sacrebleu.bogus=1")


@pytest.mark.parametrize("override,key,hint", [("+n_sampels=5000", "n_sampels", "n_samples"),
                                               ("+dataset.rots=x", "dataset.rots", "dataset.root"),
                                               ("+bleu.sacrebleu.tokenise=13a", "bleu.sacrebleu.tokenise",
                                                "bleu.sacrebleu.tokenize")])
def test_unknown_keys_added_with_plus_are_refused(composed, override, key, hint, tmp_path):
    config, overrides = composed(override, f"runs_dir={tmp_path}")
    with pytest.raises(ConfigError) as err:
        build_spec(config, overrides)
    assert err.value.key == key and f"did you mean {hint}" in str(err.value)


def test_refsets():
    assert parse_refsets("all", ["a", "b"]) == (("a", "b"),)
    assert parse_refsets("each", ["a", "b"]) == (("a",), ("b",), ("a", "b"))
    assert parse_refsets("each", ["a"]) == (("a",),)
    assert parse_refsets([["b"], ["a", "b"]], ["a", "b"]) == (("b",), ("a", "b"))
    with pytest.raises(ConfigError, match="all, each"):
        parse_refsets("some", ["a"])
    with pytest.raises(ConfigError, match="unknown reference 'x'"):
        parse_refsets([["x"]], ["a"])
    with pytest.raises(ConfigError, match="names a reference twice"):
        parse_refsets([["a", "a"]], ["a", "b"])  # would be scored as nrefs:2 against one reference
    with pytest.raises(ConfigError, match="given twice"):
        parse_refsets([["a", "b"], ["a", "b"]], ["a", "b"])


def test_system_name_with_path_is_refused(composed, tmp_path):
    config, overrides = composed("system=example", "system.name=../evil", f"runs_dir={tmp_path}")
    with pytest.raises(ConfigError, match="system.name"):
        build_spec(config, overrides)


@pytest.mark.parametrize("override", ["+bleu.sacrebleu._target_=builtins.print", "+dataset._target_=os.system"])
def test_no_target_instantiation_from_user_configs(composed, override, tmp_path):
    """Variants map to options through our registry; a `_target_` smuggled into a config is refused."""
    config, overrides = composed(override, f"runs_dir={tmp_path}")
    with pytest.raises(ConfigError, match="_target_.*instantiation is not allowed"):
        build_spec(config, overrides)


def test_output_folders_that_cannot_be_written(tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    for key, value in (("output_dir", a_file), ("output_dir", a_file / "below"), ("runs_dir", a_file),
                       ("runs_dir", a_file / "below")):
        with pytest.raises(ConfigError) as err:
            build_spec(base_config(tmp_path, **{key: str(value)}))
        assert err.value.key == key and "file" in str(err.value)


# ------------------------------------------------------------------------------------------- names and places


def test_job_names_are_flat_readable_and_distinct():
    name = job_name(["dataset.root=/data/wmt21_ted_zhen/", "bleu=[sacrebleu,char]", "progress=false"])
    assert name.startswith("bleu=sacrebleu+char,root=wmt21_ted_zhen-") and "/" not in name
    assert job_name(["bleu=[sacrebleu,char]", "dataset.root=/data/wmt21_ted_zhen/"]) == name  # order-free
    assert job_name(["dataset.root=/a/x", "bleu=char"]) != job_name(["dataset.root=/b/x", "bleu=char"])  # hash
    assert job_name([]).startswith("default-") and job_name(["progress=true"]) == job_name([])
    assert job_name(["output_dir=/somewhere", "tracking=false"]) == job_name([])


def test_experiment_is_the_dataset_name_for_a_dataset_folder(composed, tmp_path):
    ds = tmp_path / "my_corpus"
    (ds / "refs").mkdir(parents=True)
    (ds / "systems").mkdir()
    (ds / "refs" / "r.txt").write_text("a b\n")
    (ds / "systems" / "s.txt").write_text("a b\n")
    config, overrides = composed(f"dataset.root={ds}", f"runs_dir={tmp_path}")
    spec = build_spec(config, overrides)
    layout = layout_of(spec)
    name = dataset_name(spec, layout)
    assert name == "my_corpus" and spec.experiment_for(name) == "my_corpus"
    assert spec.folder("my_corpus").parent == (tmp_path / "my_corpus").resolve()
    config, overrides = composed(f"dataset.root={ds}", "experiment_name=mine", f"runs_dir={tmp_path}")
    assert build_spec(config, overrides).experiment_for(name) == "mine"
    config, overrides = composed(f"runs_dir={tmp_path}")  # the bundle keeps its name
    spec = build_spec(config, overrides)
    assert spec.experiment_for(dataset_name(spec, layout_of(spec))) == "demo"


def test_paths_from_the_command_line_are_allowed_config_paths_are_checked(composed, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    config, overrides = composed(f"dataset.root={DEMO}", "allowed_roots=[/nonexistent]", f"runs_dir={tmp_path}")
    build_spec(config, overrides)  # the command line's dataset.root and the bundled data are allowed
    cfg = base_config(tmp_path, allowed_roots=[str(outside)], system={"name": "x", "path": "/etc/hostname",
                                                                      "version": None, "human": False,
                                                                      "metadata": {}})
    with pytest.raises(ConfigError) as err:
        build_spec(cfg, [])  # a path from a config file, outside the allowed roots
    assert err.value.key == "system.path"


def test_bleu_config_helper_is_the_shipped_yaml():
    assert bleu_config("sacrebleu")["sacrebleu"]["tokenize"] is None  # the target language's, else 13a
