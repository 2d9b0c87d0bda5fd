"""The Assessor page (``pages/10_Assessor.py``): evaluation, predictions for unjudged models,
Shapley explanations, construction labels, the polite refusal with too few labels, and agreement
with ``python -m analytics assess`` (same feature columns, same scores)."""

from __future__ import annotations

import json

import pytest

from analytics.assessor import ASSESSORS, SHAP_PERMUTATIONS
from analytics.assessor.features import ACCURACY_COLUMNS, FEATURE_COLUMNS
from analytics.cli import main
from analytics.runs import start_runs
from analytics.workspace import model_keys
from analytics.zoo.layout import ZOO_KIND
from tests.fixtures.judging import JUDGING_MODELS, UNJUDGED, judge

ASSESSOR = "pages/10_Assessor.py"
#: The page fits five assessors over ten splits: give it more than the default 60 s on a busy machine.
TIMEOUT_S = 240


def mark_zoo(workspace, strengths: dict[str, float]) -> None:
    """Give models a zoo construction record (as ``analytics.zoo`` registers its heads).

    The record changes the models' content keys; their runs are re-keyed, as if they had been run
    on the heads so registered (otherwise they would be stale and feed no assessor)."""
    with workspace.transaction() as conn:
        for name, strength in strengths.items():
            spec = json.loads(conn.execute("SELECT spec FROM models WHERE name = ?", (name,)).fetchone()[0])
            spec["construction"] = {"kind": ZOO_KIND, "strength": strength, "augment": False, "seed": 0}
            conn.execute("UPDATE models SET spec = ? WHERE name = ?", (json.dumps(spec), name))
    keys = model_keys(workspace).keys
    with workspace.transaction() as conn:
        conn.executemany("UPDATE runs SET model_key = ? WHERE model = ?", [(keys[name], name) for name in strengths])


def test_human_labels_evaluate_predict_and_explain(judged_workspace_to_read, app_runner):
    app = app_runner(ASSESSOR, judged_workspace_to_read, timeout=TIMEOUT_S)
    assert not app.exception, app.exception
    report = app.dataframe[0].value
    assert report["Assessor"].tolist() == [
        "Random forest · matrices",
        "AdaBoost · matrices",
        "Random forest · accuracy statistics",
        "AdaBoost · accuracy statistics",
        "Worst-case accuracy threshold",
    ]
    assert report["Accuracy"].between(0, 1).all() and (report["± std"] >= 0).all()
    assert "8 labelled models" in "\n".join(m.value for m in app.markdown)
    predictions = app.dataframe[3].value
    assert predictions["model"].tolist() == [UNJUDGED]
    probabilities = predictions[["p_invariant", "p_borderline", "p_variant"]].sum(axis=1)
    assert probabilities.iloc[0] == pytest.approx(1.0)
    assert predictions["label"].iloc[0] in ("invariant", "borderline", "variant")
    charts = app.get("plotly_chart")
    assert len(charts) == 2  # accuracy bars, Shapley bars
    assert f"Why {UNJUDGED} is predicted" in charts[-1].proto.spec
    assert "Human labels" in "\n".join(c.value for c in app.caption)


def test_too_few_judged_models_is_refused_politely(judging_workspace, app_runner):
    judge(judging_workspace, "ana", dict(zip(JUDGING_MODELS[:3], ("invariant", "variant", "variant"))))
    app = app_runner(ASSESSOR, judging_workspace, timeout=TIMEOUT_S)
    assert not app.exception, app.exception
    assert not app.error
    message = app.info[0].value
    assert "Not enough labelled models" in message and "at least 6" in message


def test_construction_labels_are_labelled_as_such(judging_workspace, app_runner):
    strengths = [0.0, 0.0, 0.25, 0.5, 0.5, 0.75, 1.0, 1.0]
    mark_zoo(judging_workspace, dict(zip(JUDGING_MODELS, strengths)))
    app = app_runner(ASSESSOR, judging_workspace, timeout=TIMEOUT_S)
    app.radio(key="assessor.labels").set_value("construction").run(timeout=TIMEOUT_S)
    assert not app.exception, app.exception
    captions = "\n".join(c.value for c in app.caption)
    assert "Construction labels" in captions and "not anyone's judgment" in captions
    assert app.dataframe[3].value["model"].tolist() == [JUDGING_MODELS[-1]]  # the one model outside the zoo


def test_page_and_cli_assess_read_the_same_columns_and_agree(judged_workspace_to_read, app_runner, capsys):
    assert main(["assess", "--workspace", str(judged_workspace_to_read.root), "--labels", "human", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    app = app_runner(ASSESSOR, judged_workspace_to_read, timeout=TIMEOUT_S)
    assert not app.exception, app.exception
    shown = app.dataframe[2].value.set_index("Assessor")["Columns"]
    page = {name: shown[kind.title].split(", ") for name, kind in ASSESSORS.items()}
    assert page == cli["features_by_assessor"]
    # the matrix assessors learn from the matrices only
    for name in ("random_forest", "adaboost"):
        assert page[name] == FEATURE_COLUMNS and not set(ACCURACY_COLUMNS) & set(page[name])
    # same columns, labels, splits (10, seed 0) and learners: the same scores
    report = app.dataframe[0].value.set_index("Assessor")
    for name, kind in ASSESSORS.items():
        assert report.loc[kind.title, "Accuracy"] == pytest.approx(cli[f"{kind.short}_accuracy_mean"])
        assert report.loc[kind.title, "± std"] == pytest.approx(cli[f"{kind.short}_accuracy_std"])


def test_adaboost_on_the_matrices_is_explained_with_its_sample_budget(judged_workspace_to_read, app_runner):
    app = app_runner(ASSESSOR, judged_workspace_to_read, timeout=TIMEOUT_S)
    app.selectbox(key="assessor.kind").set_value("adaboost").run(timeout=TIMEOUT_S)
    assert not app.exception, app.exception
    assert not app.warning  # the old exact explainer refused 48 features here
    assert f"Why {UNJUDGED} is predicted" in app.get("plotly_chart")[-1].proto.spec
    assert f"{SHAP_PERMUTATIONS} antithetic permutations" in "\n".join(c.value for c in app.caption)


def test_feature_ids_are_explained_in_plain_words(judged_workspace_to_read, app_runner):
    """Issues 19.7 and 27.16: every feature gets a plain label and a one-line meaning, in both feature sets."""
    app = app_runner(ASSESSOR, judged_workspace_to_read, timeout=TIMEOUT_S)
    assert not app.exception, app.exception
    glossary = app.dataframe[1].value.set_index("Column")
    assert list(glossary.index) == FEATURE_COLUMNS and glossary["Meaning"].str.len().gt(0).all()
    assert glossary.loc["max_prob.sstv", "Feature"] == "Max probability (confidence): sensitivity to a subsample"
    bars = json.loads(app.get("plotly_chart")[-1].proto.spec)["data"][0]
    assert all(": " in label and label not in FEATURE_COLUMNS for label in bars["y"]) and all(bars["customdata"])  # plain words, meaning on hover
    app.radio(key="assessor.features").set_value("backdrop").run(timeout=TIMEOUT_S)
    assert not app.exception, app.exception
    glossary = app.dataframe[1].value.set_index("Column")
    assert glossary.loc["true_prob.gradient_diagonal_max", "Feature"] == "True-class probability: diagonal gradient, largest jump"
    assert "true_prob.sstv" not in glossary.index


def test_labels_come_from_the_selected_suite_only(judged_workspace, app_runner, capsys):
    from tests.fixtures.models import insert_suite

    other = insert_suite(judged_workspace, "other-suite", seed=1)  # listed first: as many runs, smaller id
    start_runs(judged_workspace, list(JUDGING_MODELS), other)
    judge(judged_workspace, "ana", dict(zip(JUDGING_MODELS[:3], ("invariant", "variant", "variant"))), suite_id=other)
    app = app_runner(ASSESSOR, judged_workspace, timeout=TIMEOUT_S)
    assert not app.exception, app.exception
    assert app.selectbox(key="assessor.suite").value == other
    assert "Not enough labelled models" in app.info[0].value  # the 8 models judged on tiny-suite do not count here
    assert "3 judged model(s) have features on this suite" in "\n".join(c.value for c in app.caption)
    # the CLI takes the same suite's labels: --suite other-suite has 3, the default is the most judged suite
    assert main(["assess", "--workspace", str(judged_workspace.root), "--labels", "human", "--suite", other, "--json"]) == 2
    assert "got 3 (invariant: 1, variant: 2)" in capsys.readouterr().err
    assert main(["assess", "--workspace", str(judged_workspace.root), "--labels", "human", "--repeats", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["suite"], result["n_models"]) == ("tiny-suite", 8)
