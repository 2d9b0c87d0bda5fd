"""The Assessor page (``pages/10_Assessor.py``): evaluation, predictions for unjudged models,
Shapley explanations, construction labels, and the polite refusal with too few labels."""

from __future__ import annotations

import json

import pytest

from analytics.judgments import add_judgment
from analytics.zoo import ZOO_KIND
from tests.fixtures.judging import JUDGING_MODELS, UNJUDGED

ASSESSOR = "pages/10_Assessor.py"


def mark_zoo(workspace, strengths: dict[str, float]) -> None:
    """Give models a zoo construction record (as ``analytics.zoo`` registers its heads)."""
    with workspace.transaction() as conn:
        for name, strength in strengths.items():
            spec = json.loads(conn.execute("SELECT spec FROM models WHERE name = ?", (name,)).fetchone()[0])
            spec["construction"] = {"kind": ZOO_KIND, "strength": strength, "augment": False, "seed": 0}
            conn.execute("UPDATE models SET spec = ? WHERE name = ?", (json.dumps(spec), name))


def test_human_labels_evaluate_predict_and_explain(judged_workspace, app_runner):
    app = app_runner(ASSESSOR, judged_workspace)
    assert not app.exception, app.exception
    report = app.dataframe[0].value
    assert report["Assessor"].tolist() == ["Random forest", "AdaBoost", "Worst-case accuracy only"]
    assert report["Accuracy"].between(0, 1).all() and (report["± std"] >= 0).all()
    assert "8 labelled models" in "\n".join(m.value for m in app.markdown)
    predictions = app.dataframe[1].value
    assert predictions["model"].tolist() == [UNJUDGED]
    probabilities = predictions[["p_invariant", "p_borderline", "p_variant"]].sum(axis=1)
    assert probabilities.iloc[0] == pytest.approx(1.0)
    assert predictions["label"].iloc[0] in ("invariant", "borderline", "variant")
    charts = app.get("plotly_chart")
    assert len(charts) == 2  # accuracy bars, Shapley bars
    assert f"Why {UNJUDGED} is predicted" in charts[-1].proto.spec
    assert "Human labels" in "\n".join(c.value for c in app.caption)


def test_too_few_judged_models_is_refused_politely(judging_workspace, app_runner):
    for model, label in zip(JUDGING_MODELS[:3], ("invariant", "variant", "variant")):
        add_judgment(judging_workspace, annotator="ana", model=model, label=label)
    app = app_runner(ASSESSOR, judging_workspace)
    assert not app.exception, app.exception
    assert not app.error
    message = app.info[0].value
    assert "Not enough labelled models" in message and "at least 6" in message


def test_construction_labels_are_labelled_as_such(judging_workspace, app_runner):
    strengths = [0.0, 0.0, 0.25, 0.5, 0.5, 0.75, 1.0, 1.0]
    mark_zoo(judging_workspace, dict(zip(JUDGING_MODELS, strengths)))
    app = app_runner(ASSESSOR, judging_workspace)
    app.radio(key="assessor.labels").set_value("construction").run()
    assert not app.exception, app.exception
    captions = "\n".join(c.value for c in app.caption)
    assert "Construction labels" in captions and "not anyone's judgment" in captions
    assert app.dataframe[1].value["model"].tolist() == [JUDGING_MODELS[-1]]  # the one model outside the zoo
