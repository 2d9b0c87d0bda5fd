"""Home states the demo's point (issue 42.12): the zoo's heads were built with a known reliance on the
background, and their worst-case accuracy against that strength shows Backdrop measures it.

The zoo's runs are made cheaply: the finished runs of ``run_workspace`` get zoo heads' construction
records (:func:`tests.fixtures.runs.mark_as_zoo_head`), no zoo is trained.
"""

from __future__ import annotations

import json

import pytest

from analytics.figures.zoo import RELIANCE_LINE_NAMES
from analytics.zoo import reliance_curve, reliance_ends
from tests.fixtures.runs import mark_as_zoo_head

SUBHEADER = "Known reliance, measured"
SENTENCE_MARK = "known reliance on the background"


def reliance_charts(app) -> list[dict]:
    """The Plotly figures (as JSON) on the page whose lines are the reliance chart's."""
    figures = [json.loads(chart.proto.spec) for chart in app.get("plotly_chart")]
    return [figure for figure in figures if {trace.get("name") for trace in figure["data"]} & set(RELIANCE_LINE_NAMES.values())]


def test_home_states_the_zoos_reliance_in_numbers_with_its_curve(run_workspace, app_runner, spinner_watch):
    import ui.story

    strengths = {"fg-only": 0.0, "tiny": 0.5, "bg-only": 1.0}  # the object reader as the invariant end
    for model, strength in strengths.items():
        mark_as_zoo_head(run_workspace, model, strength=strength)
    curve = reliance_curve(run_workspace)
    (plain,) = reliance_ends(curve)
    assert plain.falls  # bg-only, the background reader, fails more often under new backgrounds than fg-only

    reads = spinner_watch(ui.story, "show_reliance")
    app = app_runner("app.py", run_workspace)

    assert not app.exception, app.exception
    assert len(reads) == 1 and any("zoo's curve" in text for text in reads[0]), reads  # read under Home's spinner
    assert SUBHEADER in [header.value for header in app.subheader]
    sentence = next(m.value for m in app.markdown if SENTENCE_MARK in m.value)
    assert f"plain heads (targets right under every background, mean over the seeds, {len(strengths)} heads)" in sentence, sentence
    assert f"falls from **{plain.at_weakest:.0%}** at strength 0 to **{plain.at_strongest:.0%}** at strength 1" in sentence, sentence
    (figure,) = reliance_charts(app)
    (line,) = figure["data"]
    assert line["name"] == RELIANCE_LINE_NAMES[False]
    assert line["x"] == pytest.approx(sorted(strengths.values()))
    assert line["y"] == pytest.approx(curve["worst_case_accuracy"].tolist())


@pytest.mark.parametrize("zoo_heads", [{}, {"bg-only": 1.0}], ids=["no zoo heads", "one strength: no curve"])
def test_home_shows_no_reliance_curve_without_zoo_runs_at_two_strengths(run_workspace, app_runner, zoo_heads):
    for model, strength in zoo_heads.items():
        mark_as_zoo_head(run_workspace, model, strength=strength)

    app = app_runner("app.py", run_workspace)

    assert not app.exception, app.exception
    assert "Start here" in [header.value for header in app.subheader]  # the finding stays
    assert SUBHEADER not in [header.value for header in app.subheader]
    assert not [m.value for m in app.markdown if SENTENCE_MARK in m.value]
    assert not reliance_charts(app)
