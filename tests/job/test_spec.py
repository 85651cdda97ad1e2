"""Every config file composes against the schema and validates; bad values fail before any work."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra

from harness.config import build_spec, build_variants, parse_refsets, register_configs, register_resolvers
from harness.errors import ConfigError

CONF = Path(str(resources.files("harness.conf")))
DESIGN_VARIANTS = ["sacrebleu", "intl", "zh", "char", "none", "lowercase", "floor", "add-k", "nosmooth", "paper",
                   "shortest", "nltk", "hf", "multi-bleu", "mteval-v13a"]


@pytest.fixture()
def hydra_compose():
    register_resolvers()
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="harness.conf", version_base="1.3"):
        yield lambda *overrides: compose("config", overrides=list(overrides))
    GlobalHydra.instance().clear()


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


def test_every_design_variant_is_shipped():
    assert set(DESIGN_VARIANTS) <= set(options("bleu"))


@pytest.mark.parametrize("variant", options("bleu"))
def test_every_bleu_variant_composes_and_validates(hydra_compose, variant):
    cfg = hydra_compose(f"bleu={variant}")
    (v,) = build_variants(cfg.bleu)
    assert v.name == variant
    assert v.options.tokenize and v.options.smooth_method


def test_several_variants_in_one_job(hydra_compose):
    cfg = hydra_compose("bleu=[sacrebleu,intl,nltk]")
    assert [v.name for v in build_variants(cfg.bleu)] == ["sacrebleu", "intl", "nltk"]


@pytest.mark.parametrize("experiment", options("experiment"))
def test_every_experiment_composes_into_a_spec(hydra_compose, experiment, tmp_path):
    cfg = hydra_compose(f"experiment={experiment}", f"runs_dir={tmp_path}")
    spec = build_spec(cfg)
    assert spec.experiment == experiment and spec.n_segments == 527 and len(spec.systems) == 9


@pytest.mark.parametrize("group", ["dataset", "system", "refset", "human"])
def test_every_other_config_file_composes(hydra_compose, group, tmp_path):
    for name in options(group):
        overrides = [f"{group}={name}", f"runs_dir={tmp_path}"]
        if (group, name) == ("dataset", "folder"):
            overrides.append(f"dataset.root={CONF.parent / 'harness' / 'data' / 'wmt21_news_ende'}"
                             if (CONF.parent / "harness").exists() else "dataset=demo")
        cfg = hydra_compose(*overrides)
        assert cfg[group] is not None


def test_explicit_system_and_refset(hydra_compose, tmp_path):
    cfg = hydra_compose("system=example", "system.version=step-42", "refset=wmt21_ref-C", "dataset.systems=[]",
                        f"runs_dir={tmp_path}")
    spec = build_spec(cfg)
    assert [(s.name, s.version) for s in spec.systems] == [("Nemo", "step-42")]
    assert list(spec.refs) == ["ref-C"]


@pytest.mark.parametrize("override,key,valid", [
    ("bleu.sacrebleu.tokenize=bogus", "bleu.sacrebleu.tokenize", "13a"),
    ("bleu.sacrebleu.smooth_method=bogus", "bleu.sacrebleu.smooth_method", "exp"),
    ("bleu.sacrebleu.profile=bogus", "bleu.sacrebleu.profile", "sacrebleu"),
    ("dataset.refsets=[[ref-X]]", "dataset.refsets", "ref-C"),
    ("dataset.systems=[Nobody]", "dataset.systems", "Nemo"),
])
def test_bad_values_are_config_errors_listing_choices(hydra_compose, override, key, valid, tmp_path):
    cfg = hydra_compose(override, f"runs_dir={tmp_path}")
    with pytest.raises(ConfigError) as err:
        build_spec(cfg)
    assert err.value.key == key and valid in str(err.value)


def test_unknown_keys_are_refused_by_the_schema(hydra_compose):
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException, match="bogus"):
        hydra_compose("bleu.sacrebleu.bogus=1")


def test_refsets():
    assert parse_refsets("all", ["a", "b"]) == (("a", "b"),)
    assert parse_refsets("each", ["a", "b"]) == (("a",), ("b",), ("a", "b"))
    assert parse_refsets("each", ["a"]) == (("a",),)
    assert parse_refsets([["b"], ["a", "b"]], ["a", "b"]) == (("b",), ("a", "b"))
    with pytest.raises(ConfigError, match="all, each"):
        parse_refsets("some", ["a"])


def test_system_name_with_path_is_refused(hydra_compose, tmp_path):
    cfg = hydra_compose("system=example", "system.name=../evil", f"runs_dir={tmp_path}")
    with pytest.raises(ConfigError, match="system.name"):
        build_spec(cfg)


@pytest.mark.parametrize("override", ["+bleu.sacrebleu._target_=builtins.print", "+dataset._target_=os.system"])
def test_no_target_instantiation_from_user_configs(hydra_compose, override, tmp_path):
    """Variants map to options through our registry; a `_target_` smuggled into a config is refused."""
    cfg = hydra_compose(override, f"runs_dir={tmp_path}")
    with pytest.raises(ConfigError, match="_target_.*instantiation is not allowed"):
        build_spec(cfg)
