"""Method comparison (``analytics.comparison.methods``): F1, matrix consistency, precision from judgments,
coverage kept in the workspace, the whole table on tiny models, and nearest vs random coverage on a
small real demo with EfficientNet-Lite0."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import analytics.comparison.methods as methods
from analytics.comparison import PAPER_TABLE, method_comparison, method_requirements
from analytics.comparison.methods import COMPARISON_COLUMNS, cached_suite_coverage, kappa_coverage_f1, matrix_consistency, method_precision, similarity
from analytics.exceptions import InvalidInputError
from analytics.judging import add_judgment, judgment_history, measure_agreement
from analytics.runs import start_runs
from analytics.variance import VarianceMatrix
from tests.fixtures.judging import run_ids_by_model

SECOND_SUITE = "tiny-suite-nearest"


def matrix(values, d_max: float = 1.0) -> VarianceMatrix:
    values = np.asarray(values, dtype=float)
    return VarianceMatrix(values, np.linspace(0, d_max, values.shape[0] + 1), 32, 10.0, 32)


# -- small functions --------------------------------------------------------------------------------
@pytest.mark.parametrize("method", list(PAPER_TABLE))
def test_f1_reproduces_the_papers_table(method):
    row = PAPER_TABLE[method]
    assert kappa_coverage_f1(row.precision, row.recall) == pytest.approx(row.f1, abs=0.002)


def test_f1_edge_cases():
    assert np.isnan(kappa_coverage_f1(float("nan"), 0.5))
    assert kappa_coverage_f1(-0.2, 0.5) == 0.0  # κ below chance: no precision
    assert kappa_coverage_f1(0.0, 0.0) == 0.0


def test_similarity_by_hand():
    a = matrix([[0, 0], [0, 1]])
    b = matrix([[0, 0], [0, 0]])
    assert similarity(a, a) == 1.0
    assert similarity(a, b) == pytest.approx(1 - 0.25 / 1)
    assert similarity(b, b) == 1.0  # no range: identical constant matrices


def test_similarity_compares_matrices_on_a_shared_distance_range():
    grid = 16
    # value = distance along x, on [0, 1] and on [0, 2]: the same function of distance
    near, far = (matrix(np.tile((np.arange(grid) + 0.5) * d / grid, (grid, 1)), d) for d in (1.0, 2.0))
    raw = 1 - np.abs(near.matrix - far.matrix).mean() / (far.matrix.max() - near.matrix.min())
    # resampled, only the first column differs (clamped to far's first centre): 1 - (1/32)/16/(15/16)
    assert similarity(near, far) == pytest.approx(1 - (1 / 32) / 16 / (15 / 16))
    assert raw < 0.8


def test_consistency_averages_signals_and_seed_pairs():
    a, b = matrix([[0, 0], [0, 1]]), matrix([[0, 0], [0, 0]])
    runs = [{"s": a, "t": a}, {"s": a, "t": b}, {"s": a, "t": a}]
    # pairs (0,1), (0,2), (1,2); signal s always 1, signal t: 0.75, 1, 0.75
    assert matrix_consistency(runs) == pytest.approx(np.mean([1, 1, 1, 0.75, 1, 0.75]))
    assert np.isnan(matrix_consistency(runs[:1]))
    with pytest.raises(InvalidInputError, match="same signals"):
        matrix_consistency([{"s": a}, {"t": a}])


# -- precision from judgments -----------------------------------------------------------------------
def add_nearest_suite(workspace) -> str:
    """A second suite (relabelled 'nearest') with runs of three models."""
    from tests.fixtures.models import insert_suite

    insert_suite(workspace, SECOND_SUITE, seed=1)
    with workspace.transaction() as conn:
        conn.execute("UPDATE suites SET method = 'nearest' WHERE id = ?", (SECOND_SUITE,))
    start_runs(workspace, ["tiny", "fg-only", "bg-only"], SECOND_SUITE)
    return SECOND_SUITE


def test_precision_is_fleiss_kappa_of_each_methods_judgments(judged_workspace):
    suite = add_nearest_suite(judged_workspace)
    runs = run_ids_by_model(judged_workspace, suite)
    nearest = {"ana": ["invariant", "variant", "variant"], "ben": ["invariant", "variant", "borderline"]}
    for annotator, labels in nearest.items():
        for model, label in zip(["fg-only", "bg-only", "tiny"], labels):
            add_judgment(judged_workspace, annotator=annotator, model=model, label=label, run_id=runs[model])  # run only
    precision = method_precision(judged_workspace)
    assert set(precision) == {"random", "nearest"}
    frame = pd.DataFrame(
        [(a, m, label) for a, labels in nearest.items() for m, label in zip(["fg-only", "bg-only", "tiny"], labels)],
        columns=["annotator", "model", "label"],
    )
    kappa, n_models, n_annotators = precision["nearest"]
    assert kappa == pytest.approx(measure_agreement(frame).fleiss_kappa)
    assert (n_models, n_annotators) == (3, 2)
    # the later judgments on the nearest suite do not replace those on the random suite
    random_kappa = precision["random"][0]
    history = judgment_history(judged_workspace)
    first = history[history["suite_id"] == "tiny-suite"]
    assert random_kappa == pytest.approx(measure_agreement(first[["annotator", "model", "label"]]).fleiss_kappa)


# -- coverage kept in the workspace -----------------------------------------------------------------
def test_coverage_is_cached_and_rethresholded(tiny_model_workspace, monkeypatch):
    first = cached_suite_coverage(tiny_model_workspace, "tiny", "tiny-suite")

    def no_forward_pass(*args, **kwargs):
        raise AssertionError("coverage should come from the workspace cache")

    monkeypatch.setattr(methods, "suite_coverage", no_forward_pass)
    again = cached_suite_coverage(tiny_model_workspace, "tiny", "tiny-suite")
    assert again.coverage == first.coverage
    assert list(again.maxima) == list(first.maxima)
    for threshold in (0.1, 0.5, 0.9):
        expected = np.mean(first.maxima["embedding"] > threshold)
        assert again.at(threshold).coverage == pytest.approx(expected)


# -- the comparison table ---------------------------------------------------------------------------
def test_requirements_name_what_is_missing(tiny_model_workspace):
    missing = method_requirements(tiny_model_workspace)
    assert missing["random"] == missing["nearest"] == ""
    assert "keyword tables" in missing["keyword"] and "keyword tables" in missing["ontology"]
    with pytest.raises(InvalidInputError, match="method 'keyword' needs keyword tables"):
        method_comparison(tiny_model_workspace, model="tiny", methods=["keyword"])


def test_comparison_table_on_tiny_models(suite_workspace):
    steps = []
    table = method_comparison(
        suite_workspace,
        model="tiny",
        methods=["random", "nearest", "ontology"],
        seeds=2,
        n=4,
        layers=["embedding"],
        recall_layers="embedding",
        progress=lambda done, total, step: steps.append((step, done, total)),
    )
    assert list(table.columns) == COMPARISON_COLUMNS
    assert table["method"].tolist() == ["random", "nearest", "ontology"]
    finished = [done for _, done, _ in steps]
    assert list(dict.fromkeys(finished)) == list(range(3 * 2 * 4 + 1)) and steps[-1] == (steps[-1][0], 24, 24)
    assert finished == sorted(finished) and any("seed 0: run" in step for step, done, _ in steps if done == 1)  # reports during a run
    assert table["seeds"].tolist() == [(0, 1)] * 3
    assert all(len(set(ids)) == 2 for ids in table["suite_ids"])
    assert table["images"].tolist() == [6 * 4] * 3
    assert table["recall"].between(0, 1).all() and (table["recall"] == table["coverage_embedding"]).all()
    assert table["coverage_all"].isna().all()
    assert table["consistency"].between(0, 1).all()
    assert table["precision"].isna().all() and table["f1"].isna().all()  # nobody judged these runs
    # everything is kept: another threshold costs no forward pass and gives coverage at that threshold
    lower = method_comparison(suite_workspace, model="tiny", methods=["random"], seeds=2, n=4, layers=["embedding"], recall_layers="embedding", threshold=0.1)
    assert lower["suite_ids"][0] == table["suite_ids"][0]
    assert lower["recall"][0] >= table["recall"][0]


def test_a_model_that_ignores_the_background_is_perfectly_consistent(suite_workspace):
    table = method_comparison(suite_workspace, model="fg-only", methods=["random"], seeds=2, n=4, layers=["embedding"], recall_layers="embedding")
    assert table["consistency"][0] == pytest.approx(1.0)


def test_all_layers_need_activation_modules(suite_workspace):
    with pytest.raises(InvalidInputError, match="no activation module"):
        method_comparison(suite_workspace, model="tiny", methods=["random"], seeds=1, n=4, layers=["embedding", "all"])


def test_bad_options_are_refused(suite_workspace):
    with pytest.raises(InvalidInputError, match="recall_layers"):
        method_comparison(suite_workspace, model="tiny", layers=["embedding"], recall_layers="all")
    with pytest.raises(InvalidInputError, match="seeds"):
        method_comparison(suite_workspace, model="tiny", seeds=[])
    with pytest.raises(InvalidInputError, match="methods"):
        method_comparison(suite_workspace, model="tiny", methods=["sideways"])
    with pytest.raises(InvalidInputError, match="threshold"):
        method_comparison(suite_workspace, model="tiny", methods=["random"], threshold=1.5)


# -- the check on a small real demo ---------------------------------------------------------
def _demo_assets_ready() -> bool:
    from analytics.demo import is_fetched, load_catalogue

    return all(is_fetched(package) for package in load_catalogue().packages)


@pytest.fixture
def small_demo_workspace(tmp_path, monkeypatch):
    """6 real targets (3 classes) and the crops of 8 real photos at 96 px, with EfficientNet-Lite0."""
    import analytics.demo as demo
    from analytics.demo.steps import DEMO_STEPS
    from analytics.models import register_efficientnet_lite
    from analytics.workspace import Workspace

    full = demo.load_catalogue()
    classes = sorted({t.class_name for t in full.targets})[:3]
    targets = [t for c in classes for t in [x for x in full.targets if x.class_name == c][:2]]
    small = replace(
        full, targets=targets, backgrounds=full.backgrounds[::8][:8], classes={c: full.classes[c] for c in classes}, digest="methods-small"
    )
    monkeypatch.setattr(demo, "load_catalogue", lambda *a, **k: small)
    workspace = Workspace(tmp_path / "demo")
    workspace.set_meta("image_size", "96")
    demo.build_demo(workspace, steps=[step for step in DEMO_STEPS if step.name in ("assets", "targets", "backgrounds")])
    register_efficientnet_lite(workspace, 0)
    return workspace


@pytest.mark.skipif(not _demo_assets_ready(), reason="demo assets not in the cache; run `python -m analytics fetch-assets`")
def test_nearest_suites_cover_fewer_neurons_than_random_ones_on_the_demo(small_demo_workspace):
    table = method_comparison(
        small_demo_workspace,
        model="efficientnet-lite0",
        methods=["random", "nearest"],
        seeds=2,
        n=4,
        layers=["embedding"],
        recall_layers="embedding",
    ).set_index("method")
    print(table[["coverage_embedding", "consistency", "worst_case_accuracy"]].to_string())  # the numbers, for the report
    assert table.at["nearest", "coverage_embedding"] < table.at["random", "coverage_embedding"]


def test_comparison_reports_precision_and_f1_from_judgments(suite_workspace):
    options = dict(model="tiny", methods=["random"], seeds=1, n=4, layers=["embedding"])
    first = method_comparison(suite_workspace, **options).iloc[0]
    suite_id = first["suite_ids"][0]
    start_runs(suite_workspace, ["fg-only", "bg-only"], suite_id)
    runs = run_ids_by_model(suite_workspace, suite_id)
    assert runs["tiny"] == first["run_ids"][0]
    labels = {"ana": ["invariant", "variant", "borderline"], "ben": ["invariant", "variant", "variant"]}
    for annotator, chosen in labels.items():
        for model, label in zip(["fg-only", "bg-only", "tiny"], chosen):
            add_judgment(suite_workspace, annotator=annotator, model=model, label=label, run_id=runs[model], suite_id=suite_id)
    row = method_comparison(suite_workspace, **options).iloc[0]
    kappa = method_precision(suite_workspace)["random"][0]
    assert row["precision"] == pytest.approx(kappa) and not np.isnan(kappa)
    assert (row["n_judged_models"], row["n_annotators"]) == (3, 2)
    assert row["f1"] == pytest.approx(kappa_coverage_f1(kappa, row["recall"]))


def test_precision_counts_each_model_on_each_suite_of_the_method(judged_workspace):
    from tests.fixtures.judging import JUDGMENTS
    from tests.fixtures.models import insert_suite

    second = insert_suite(judged_workspace, "random-seed-1", seed=1)  # a second 'random' suite
    start_runs(judged_workspace, ["tiny", "fg-only", "bg-only"], second)
    runs = run_ids_by_model(judged_workspace, second)
    again = {"ana": ["variant", "invariant", "variant"], "ben": ["borderline", "invariant", "invariant"]}
    for annotator, labels in again.items():
        for model, label in zip(["fg-only", "bg-only", "tiny"], labels):
            add_judgment(judged_workspace, annotator=annotator, model=model, label=label, run_id=runs[model])
    first = [(a, f"{m}@tiny-suite", pair[i]) for m, pair in JUDGMENTS.items() for i, a in enumerate(("ana", "ben"))]
    later = [(a, f"{m}@{second}", label) for a, labels in again.items() for m, label in zip(["fg-only", "bg-only", "tiny"], labels)]
    subjects = pd.DataFrame(first + later, columns=["annotator", "model", "label"])
    kappa, n_models, _ = method_precision(judged_workspace)["random"]
    assert kappa == pytest.approx(measure_agreement(subjects).fleiss_kappa)
    assert n_models == len(JUDGMENTS)
    # the old rule (latest per annotator and model over the method's suites) gives another value
    by_model = subjects.assign(model=subjects["model"].str.split("@").str[0]).drop_duplicates(["annotator", "model"], keep="last")
    assert measure_agreement(by_model).fleiss_kappa != pytest.approx(kappa)


# -- the default size and the estimate (issue 19.1) ---------------------------------------------------
def test_the_default_comparison_is_small():
    """The default is the baseline and the paper's method, 2 seeds, N=4, 12 targets, one layer set."""
    assert methods.comparison_steps(len(methods.DEFAULT_METHODS), methods.DEFAULT_SEED_COUNT, len(methods.DEFAULT_LAYERS)) == 16
    assert methods.DEFAULT_N * methods.DEFAULT_TARGETS < 8 * 60 / 4  # a quarter of the demo suites or less


def test_comparison_targets_spread_over_the_classes(suite_workspace):
    from analytics.data import list_targets

    targets = list_targets(suite_workspace).set_index("id")["class_name"]
    chosen = methods.comparison_targets(suite_workspace, 2)
    assert len(chosen) == 2 and targets[chosen].nunique() == 2  # one per class, not the first two ids
    assert methods.comparison_targets(suite_workspace, 100) == sorted(targets.index)


def test_default_targets_limit_the_suites(suite_workspace):
    table = method_comparison(suite_workspace, model="fg-only", methods=["random"], n=2, targets=2)
    assert table["images"].tolist() == [2 * 2] and table["seeds"].tolist() == [(0, 1)]


def test_estimate_uses_the_measured_cost_once_there_is_one(suite_workspace):
    size = dict(methods=2, seeds=2, n=4, targets=12, layers=1)
    before = methods.estimate_seconds(suite_workspace, **size)
    assert before == pytest.approx(methods.SECONDS_PER_IMAGE_STEP * 12 * 5 * 16)
    assert methods.estimate_seconds(suite_workspace, **{**size, "seeds": 4}) == pytest.approx(2 * before)
    methods.record_step_cost(suite_workspace, {"methods": ["random"], "seeds": 2, "n": 2, "targets": 6, "layers": ["embedding"]}, 36.0)
    assert methods.estimate_seconds(suite_workspace, methods=1, seeds=2, n=2, targets=6, layers=1) == pytest.approx(36.0)
    methods.record_step_cost(suite_workspace, {"methods": ["random"]}, 0.2)  # all reused: not a measurement
    assert methods.estimate_seconds(suite_workspace, methods=1, seeds=2, n=2, targets=6, layers=1) == pytest.approx(36.0)
    # a job's parameters (what the worker revises from its pace) give the page's estimate
    params = {"methods": ["random"], "seeds": [0, 1], "n": 2, "targets": 6, "layers": ["embedding"]}
    assert methods.params_estimate_seconds(suite_workspace, params) == pytest.approx(36.0)
