"""The public API (``analytics.api``) on a small real workspace (tests/fixtures/tour.py): each call
returns what its page or CLI subcommand shows, and the figures are the pages' Plotly figures."""

from __future__ import annotations

import inspect
import json

import numpy as np
import plotly.graph_objects as go
import pytest

from analytics import api as bd
from analytics.cli import main
from analytics.exceptions import NotFoundError, WorkspaceError
from analytics.findings import failure_table, keyword_model_matrix
from analytics.judging import latest_judgments, measure_agreement
from analytics.models import list_models
from analytics.runs import list_runs, run_matrices
from analytics.suites import suite_labels_of
from tests.fixtures.models import TINY_MODELS, TINY_SUITE
from tests.fixtures.tour import TOUR_POLICY


@pytest.fixture(scope="module")
def run_ids(tour_workspace) -> dict[str, str]:
    runs = list_runs(tour_workspace)
    return dict(zip(runs["model"], runs["id"]))


def test_every_public_name_exists_and_every_call_is_documented():
    assert 15 <= len(bd.__all__) <= 32  # the read calls, the six write calls (issue 46.4) and a few names they take
    for name in bd.__all__:
        value = getattr(bd, name)
        if inspect.isfunction(value):
            assert value.__doc__ and value.__doc__.strip(), name
    assert bd.figures.variance_heatmap is not None and "bd.open_workspace" in bd.__doc__


def test_open_workspace_opens_an_existing_folder_only(tour_workspace, tmp_path):
    assert bd.open_workspace(tour_workspace.root).root == tour_workspace.root
    with pytest.raises(WorkspaceError, match="no workspace at"):
        bd.open_workspace(tmp_path / "none")


def test_models_suites_and_runs_list_what_the_workspace_holds(tour_workspace, run_ids):
    assert list(bd.models(tour_workspace)["name"]) == [spec.name for spec in list_models(tour_workspace)] == sorted(TINY_MODELS)
    assert list(bd.suites(tour_workspace)["id"]) == [TINY_SUITE]
    runs = bd.runs(tour_workspace)
    assert set(runs["model"]) == set(TINY_MODELS) and (runs["status"] == "done").all()
    label = suite_labels_of(tour_workspace)[TINY_SUITE]
    assert list(bd.runs(tour_workspace, model="tiny", suite=label)["id"]) == [run_ids["tiny"]]  # a suite by its label


def test_latest_run_is_the_models_finished_run_or_says_how_to_start_one(tour_workspace, run_ids):
    assert bd.latest_run(tour_workspace, model="bg-only", suite=TINY_SUITE) == run_ids["bg-only"]
    assert bd.latest_run(tour_workspace, model="tiny") == run_ids["tiny"]
    with pytest.raises(NotFoundError, match="no finished current run.*python -m analytics run"):
        bd.latest_run(tour_workspace, model="nobody")


def test_matrices_are_the_runs_and_draw_as_the_matrices_page_does(tour_workspace, run_ids):
    matrices = bd.matrices(tour_workspace, run_ids["bg-only"])
    expected = run_matrices(tour_workspace, run_ids["bg-only"])
    assert list(matrices) == list(bd.SIGNALS) == list(expected)
    for signal in bd.SIGNALS:
        np.testing.assert_array_equal(matrices[signal].matrix, expected[signal].matrix)
    figure = bd.figures.variance_heatmap(matrices["true_prob"], title=bd.SIGNALS["true_prob"])
    assert isinstance(figure, go.Figure) and [trace.type for trace in figure.data] == ["heatmap"]
    scale = bd.colour_scale(tour_workspace, TINY_SUITE)
    figures = bd.figures.suite_scale_heatmaps(matrices, scale)
    assert [f.data[0].zmax for f in figures] == [scale.tops[s] for s in bd.SIGNALS]
    cloud = bd.point_clouds(tour_workspace, run_ids["bg-only"])["true_prob"]
    assert [t.type for t in bd.figures.point_scatter(cloud.points, cloud.values).data] == ["heatmap", "scattergl"]


def test_accuracies_are_the_runs_stored_accuracies(tour_workspace, run_ids):
    stored = list_runs(tour_workspace).set_index("id")
    for run_id in run_ids.values():
        accuracies = bd.accuracies(tour_workspace, run_id)
        for key in ("accuracy", "original_accuracy", "worst_case_accuracy"):
            assert accuracies[key] == pytest.approx(stored.loc[run_id, key])
    one_class = bd.accuracies(tour_workspace, run_ids["tiny"], classes=["disc"])
    assert set(one_class) == {"accuracy", "original_accuracy", "worst_case_accuracy"}


def test_failures_are_the_failures_pages_table_and_heat_map(tour_workspace, run_ids):
    table = bd.failures(tour_workspace, run_ids["bg-only"])
    expected = failure_table(tour_workspace, run_ids["bg-only"], min_count=3)  # the page's default minimum
    assert list(table.keywords["keyword"]) == list(expected.keywords["keyword"]) and not table.keywords.empty
    assert list(table.keywords["error_rate"]) == list(expected.keywords["error_rate"])
    rates = bd.keyword_error_rates(tour_workspace, list(run_ids.values()))
    assert rates.equals(keyword_model_matrix(tour_workspace, list(run_ids.values()), min_count=3))
    assert [trace.type for trace in bd.figures.keyword_heatmap(rates).data] == ["heatmap"]


def test_agreement_is_the_agreement_pages(tour_workspace):
    agreement = bd.agreement(tour_workspace, TINY_SUITE)
    expected = measure_agreement(latest_judgments(tour_workspace, TINY_SUITE))
    assert agreement.annotators == ("ann", "bob")
    assert agreement.cohen[("ann", "bob")].value == pytest.approx(expected.cohen[("ann", "bob")].value)
    assert len(bd.judgments(tour_workspace, TINY_SUITE)) == 2 * len(TINY_MODELS)
    assert [trace.type for trace in bd.figures.kappa_heatmap(agreement).data] == ["heatmap"]


def test_check_is_the_clis_verdict(tour_workspace, tmp_path, capsys):
    policy = tmp_path / "policy.toml"
    policy.write_text(TOUR_POLICY)
    result = bd.check(tour_workspace, model="bg-only", policy=policy, suite=TINY_SUITE, out=tmp_path / "api", report=False, device="cpu")
    table = bd.verdict_table(result.results)
    assert list(table["rule"]) == ["worst_case_accuracy_min", "accuracy_drop_max"] and table["passed"].all() and result.passed
    args = ["check", "--workspace", str(tour_workspace.root), "--model", "bg-only", "--policy", str(policy), "--suite", TINY_SUITE,
            "--out", str(tmp_path / "cli"), "--no-report", "--device", "cpu", "--json"]  # fmt: skip
    assert main(args) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [(r["name"], r["passed"], r["value"], r["limit"]) for r in printed["rules"]] == list(
        table[["rule", "passed", "measured", "limit"]].itertuples(index=False, name=None)
    )
    assert [trace.type for trace in bd.figures.verdict_figure(table).data] == ["table"]


def test_check_refusals_name_the_python_parameters(tour_workspace, tmp_path):
    """The gate's messages name ``check``'s keywords here and the command's flags there (tests/analytics/gate)."""
    baseline_rules = tmp_path / "baseline.toml"
    baseline_rules.write_text("[baseline]\naccuracy_margin = 0.05\n")
    with pytest.raises(bd.BackdropError, match=r"need a baseline model; give baseline or remove them$"):
        bd.check(tour_workspace, model="bg-only", policy=baseline_rules, suite=TINY_SUITE, out=tmp_path / "out")
    no_suite = tmp_path / "no-suite.toml"
    no_suite.write_text("[rules]\naccuracy_drop_max = 0.5\n")
    with pytest.raises(bd.BackdropError, match=r"no suite; give suite or \[suite\] id"):
        bd.check(tour_workspace, model="bg-only", policy=no_suite, out=tmp_path / "out")
    (tmp_path / "file").write_text("")
    with pytest.raises(bd.BackdropError, match=r"^out='.*file' is a file; pass a folder"):
        bd.check(tour_workspace, model="bg-only", policy=no_suite, suite=TINY_SUITE, out=tmp_path / "file")
