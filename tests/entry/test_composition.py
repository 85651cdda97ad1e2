"""The command line is composed and checked before Hydra acts on it (harness.composition): no config runs code,
and every composition error is one line with exit status 2.

The attacks are real: ``builtins.open`` named as a Hydra callback with its arguments would truncate a file when
Hydra instantiates it (before the task function runs), from the command line or from a shared YAML loaded with
``--config-dir``; the victim file must survive with its bytes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.composition import ALLOWED_TARGETS, check_command_line
from harness.errors import ConfigError
from support import harness_here, run_harness

pytestmark = pytest.mark.slow  # end to end: the fast tier (-m 'not slow') leaves it out

EVIL_OPEN = ["+hydra.callbacks.evil._target_=builtins.open", "+hydra.callbacks.evil.file={victim}",
             "+hydra.callbacks.evil.mode=w"]


def one_line(proc) -> str:
    errors = [line for line in proc.stderr.splitlines() if line.startswith("harness: error")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return errors[0]


@pytest.fixture()
def victim(tmp_path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_text("precious\n")
    return path


def test_a_callback_target_on_the_command_line_is_refused_before_hydra_runs_it(tmp_path, victim):
    proc = run_harness(tmp_path, *[a.format(victim=victim) for a in EVIL_OPEN], "tracking=false", check=False)
    assert proc.returncode == 2
    assert "hydra.callbacks.evil._target_: object instantiation is not allowed" in one_line(proc)
    assert victim.read_text() == "precious\n"
    assert not (tmp_path / "runs").exists()


def test_a_shared_experiment_yaml_with_a_callback_target_is_refused(tmp_path, victim):
    shared = tmp_path / "shared" / "experiment"
    shared.mkdir(parents=True)
    (shared / "team.yaml").write_text(
        "# @package _global_\nexperiment_name: team\nhydra:\n  callbacks:\n    evil:\n"
        f"      _target_: shutil.copyfile\n      src: /dev/null\n      dst: {victim}\n")
    proc = run_harness(tmp_path, "--config-dir", str(tmp_path / "shared"), "experiment=team", "tracking=false",
                       check=False)
    assert proc.returncode == 2 and "hydra.callbacks.evil._target_" in one_line(proc)
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("args,where", [
    (["+bleu.sacrebleu._target_=os.system"], "bleu.sacrebleu._target_"),
    (["hydra.job_logging.handlers.console.class=logging.FileHandler",
      "+hydra.job_logging.handlers.console.filename={victim}", "+hydra.job_logging.handlers.console.mode=w"],
     "hydra.job_logging.handlers.console.class"),
    (["hydra.launcher._target_=builtins.exec"], "hydra.launcher._target_"),
    (["+hydra.launcher._target_=builtins.exec"], "hydra.launcher._target_"),  # one line either way
])
def test_other_objects_a_config_could_construct_are_refused(tmp_path, victim, args, where):
    proc = harness_here(tmp_path, *[a.format(victim=victim) for a in args], "tracking=false", check=False)
    assert proc.returncode == 2 and one_line(proc).startswith(f"harness: error: {where}"), proc.stderr
    assert victim.read_text() == "precious\n"


def test_a_logging_factory_from_a_config_file_is_refused(tmp_path, victim):
    shared = tmp_path / "shared" / "experiment"
    shared.mkdir(parents=True)
    (shared / "logs.yaml").write_text(
        "# @package _global_\nhydra:\n  job_logging:\n    handlers:\n      x:\n        (): builtins.open\n"
        f"        file: {victim}\n        mode: w\n")
    proc = harness_here(tmp_path, "--config-dir", str(tmp_path / "shared"), "experiment=logs", "tracking=false",
                        check=False)
    assert proc.returncode == 2 and "hydra.job_logging.handlers.x.(): logging factories" in one_line(proc)
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("args", [[], ["hydra/launcher=joblib"], ["hydra/launcher=submitit_local"],
                                  ["hydra/launcher=slurm"], ["experiment=meta_eval"], ["-m", "bleu=sacrebleu,intl"]])
def test_what_the_project_ships_passes(args):
    check_command_line(args)  # raises nothing


def test_the_allow_list_is_what_the_shipped_configs_name():
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from harness.app import register

    register()
    found = set()
    for launcher in ("basic", "joblib", "submitit_local", "slurm"):
        with initialize_config_module(config_module="harness.conf", version_base="1.3"):
            cfg = OmegaConf.to_container(compose("config", [f"hydra/launcher={launcher}"], return_hydra_config=True),
                                         resolve=False)
        found |= {cfg["hydra"]["launcher"]["_target_"], cfg["hydra"]["sweeper"]["_target_"],
                  *(c["_target_"] for c in cfg["hydra"]["callbacks"].values())}
    assert found == set().union(*ALLOWED_TARGETS.values())


@pytest.mark.parametrize("args,expect", [
    (["foo=1"], "harness: error: foo: unknown configuration key"),
    (["seed=abc"], "harness: error: seed: Value 'abc' of type 'str' could not be converted to Integer"),
    (["bleu=unknown"], "harness: error: bleu: no bleu config 'unknown' (valid: add-k, char,"),
    (["bleu=sacrebl"], "harness: error: bleu: no bleu config 'sacrebl'; did you mean bleu=sacrebleu?"),
    (["dataset.systems=[null]"], "harness: error: dataset.systems[0]: Invalid type assigned"),
    (["dataset.sytems=[A]"], "harness: error: dataset.sytems: unknown configuration key; did you mean "
                             "dataset.systems?"),
    (["+bleu.mine={tokenize:intl}"], "harness: error: bleu.mine: a new BLEU variant starts from a shipped one: "
                                     "+bleu@bleu.mine=intl"),
    (["experiment=nope"], "harness: error: experiment: no experiment config 'nope'"),
    (["figure_formats=pdf"], "harness: error: figure_formats: expected a list in brackets, e.g. "
                             "figure_formats=[a,b] (one item: [a])"),
    (["bleu=[sacrebleu,"], "harness: error: override: cannot parse"),
    (["-m", "bleu=sacrebleu,bogus"], "harness: error: bleu: no bleu config 'bogus'"),
])
def test_hydra_config_errors_are_one_line_with_exit_2(tmp_path, args, expect):
    """Before, these ran to 6-24 lines of Hydra's report and exit status 1."""
    proc = harness_here(tmp_path, *args, "tracking=false", check=False)
    assert proc.returncode == 2
    assert one_line(proc).startswith(expect), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "runs").exists()


def test_one_line_errors_name_the_key_for_the_api_too():
    with pytest.raises(ConfigError) as err:
        check_command_line(["dataset.refz=[A]"])
    assert err.value.key == "dataset.refz" and "did you mean dataset.refs?" in str(err.value)
