"""The report of the paper's validation, computed from the job's numbers (in process, on the demo)."""

from __future__ import annotations

import re

import pytest

from harness.job import figures, report
from harness.job.analysis import analyse
from harness.job.inputs import layout_of, load_inputs
from harness.job.spec import build_spec, bundled_data
from harness.job.statistics import StatisticsCache, compute_statistics

from support import base_config


@pytest.fixture(scope="module")
def paper(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("paper")
    cfg = base_config(tmp, bleu=["paper", "sacrebleu", "char"], n_samples=200, paper_protocol=True,
                      dataset={"root": bundled_data("wmt21_news_ende"), "refsets": "each"}, experiment_name="pv")
    spec = build_spec(cfg)
    inputs = load_inputs(spec, layout_of(spec))
    result = analyse(spec, inputs, compute_statistics(inputs, spec.variants, StatisticsCache(tmp / "c")), "pv")
    return result, tmp


def test_paper_protocol_sections(paper):
    result, _ = paper
    text = report.render(result)
    for heading in ("## Correlation with human judgments: mqm", "Table 1 analogue", "### Table 2 analogue",
                    "### One reference against all", "## Which variant agrees best", "## Discussion"):
        assert heading in text, heading
    assert "Papineni et al. (2002) report r = 0.99" in text and "the paper's 0.96 is" in text
    blocks = text.split("### Table 2 analogue")[1].split("###")[0]
    assert not re.search(r"\| 0\.00 \|$", blocks, re.M)  # p-values are never printed as 0.00
    assert "Variant `sacrebleu` gives exactly the scores of `paper` on this data" in text
    assert "| sacrebleu |" not in text.split("## Correlation")[1]  # shown once, as paper
    shown = [a for a in result.agreement if a.variant != "sacrebleu"]
    kept = sum(a.agreement.identical_order for a in shown)
    assert f"{kept} of {len(shown)} single-reference rankings" in text


def test_figures_for_a_paper(paper):
    result, tmp = paper
    names = figures.draw(result, tmp)
    assert {"bleu_by_system.png", "bleu_by_system.pdf", "bleu_vs_human_mqm.png", "bleu_vs_human_mqm.pdf",
            "blocks.png", "blocks.pdf"} <= set(names)
    from PIL import Image

    with Image.open(tmp / "bleu_by_system.png") as img:
        dpi = img.info.get("dpi", (0, 0))
        assert round(dpi[0]) == 200 and img.size[0] > 1000
    assert (tmp / "bleu_vs_human_mqm.pdf").read_bytes().startswith(b"%PDF")
