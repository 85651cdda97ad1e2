"""The layer contracts of pyproject.toml's ``[tool.importlinter]`` hold (``.ci/run`` runs ``lint-imports`` too; this
test keeps the README's test command sufficient on its own), and every package of the tree ships in the wheel."""

from __future__ import annotations

import subprocess

import pytest

from support import REPO, executable


def test_import_contracts_are_kept():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    proc = subprocess.run([executable("lint-imports"), "--no-cache"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{len(contracts)} kept, 0 broken" in proc.stdout


def test_every_package_of_the_tree_is_declared():
    """setuptools lists packages by hand (conf/ ships as harness.conf): a new sub-package missing from the list
    would work in the editable install and be absent from a wheel."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    declared = set(config["packages"])
    on_disk = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "harness").rglob("__init__.py")}
    assert on_disk <= declared, sorted(on_disk - declared)
    assert config["package-dir"]["harness.conf"] == "conf"
