"""Which methods a model can run, and the saliency survey over many targets (the ``saliency`` job's work)."""

from __future__ import annotations

import numpy as np
import pytest

from analytics import jobs
from analytics.data import list_targets
from analytics.exceptions import InvalidInputError
from analytics.jobs.kinds import JOB_KINDS
from analytics.models import load_model
from analytics.saliency import CLEAREST_FIRST, METHODS, available_methods, survey
from tests.fixtures.models import TINY_SUITE, TINY_SUITE_N

HOOKED = {"gradcam", "gradcam_plus_plus", "guided_backprop"}  # need layers or hooks TorchScript does not give


def test_clearest_first_orders_every_method_once():
    assert sorted(CLEAREST_FIRST) == sorted(METHODS) and CLEAREST_FIRST[0] == "gradcam"


def test_torchscript_models_are_offered_no_hooked_method(tiny_cnn_workspace):
    scripted = available_methods(load_model(tiny_cnn_workspace, "fg-only", device="cpu"))
    eager = available_methods(load_model(tiny_cnn_workspace, "tiny-cnn", device="cpu"))
    assert scripted == [k for k in CLEAREST_FIRST if k not in HOOKED]
    assert eager == list(CLEAREST_FIRST) and eager[0] == "gradcam"


def test_object_share_matches_the_explanations_and_skips_what_a_model_cannot_run(tiny_cnn_workspace):
    targets = list_targets(tiny_cnn_workspace)["id"].tolist()[:2]
    result = survey.object_share(
        tiny_cnn_workspace, models=["tiny-cnn", "fg-only"], methods=["gradcam", "saliency"], target_ids=targets,
        suite_id=TINY_SUITE, n_composites=5, device="cpu",
    )  # fmt: skip
    assert [(r["model"], r["method"]) for r in result["rows"]] == [("tiny-cnn", "gradcam"), ("tiny-cnn", "saliency"), ("fg-only", "saliency")]
    assert result["skipped"] == [["fg-only", "gradcam"]]
    model = load_model(tiny_cnn_workspace, "fg-only", device="cpu")
    shares = []
    for target in targets:
        backgrounds = survey.suite_backgrounds(tiny_cnn_workspace, TINY_SUITE, target, 5)
        shares.append(survey.explain_target(tiny_cnn_workspace, model, target, method="saliency", backgrounds=backgrounds)[2].alignment.inside_share)
    row = result["rows"][2]
    assert row["originals"] == 2 and row["composites"] == 2 * TINY_SUITE_N
    assert row["inside_share_originals"] == pytest.approx(np.nanmean([s[0] for s in shares]))
    assert row["inside_share_composites"] == pytest.approx(np.nanmean(np.concatenate([s[1:] for s in shares])))


class Stop(Exception):
    """Raised by the test's progress callback, as a cancelled job's progress raises JobCancelled."""


def test_a_stopped_survey_resumes_without_explaining_done_targets_again(tiny_cnn_workspace, monkeypatch):
    targets = list_targets(tiny_cnn_workspace)["id"].tolist()[:3]
    explained = []
    real = survey.explain_target
    monkeypatch.setattr(survey, "explain_target", lambda ws, model, target, **kw: explained.append(target) or real(ws, model, target, **kw))

    def stop_at_the_second(done, total, message):
        if done == 1:
            raise Stop

    kwargs = {"models": ["fg-only"], "methods": ["saliency"], "target_ids": targets, "device": "cpu"}
    with pytest.raises(Stop):
        survey.object_share(tiny_cnn_workspace, **kwargs, progress=stop_at_the_second)
    assert explained == targets[:1]
    steps = []
    resumed = survey.object_share(tiny_cnn_workspace, **kwargs, progress=lambda done, total, message: steps.append((done, total)))
    assert explained == targets  # the first target came from the workspace's cache
    assert steps == [(0, 3), (1, 3), (2, 3), (3, 3)] and resumed["rows"][0]["originals"] == 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"models": [], "methods": ["saliency"]}, "at least one model, method and target"),
        ({"models": ["fg-only"], "methods": ["nope"]}, "unknown saliency method"),
        ({"models": ["fg-only"], "methods": ["saliency"], "n_composites": -1}, "n_composites must be an integer >= 0"),
    ],
)
def test_bad_survey_requests_raise(tiny_model_workspace, kwargs, message):
    targets = list_targets(tiny_model_workspace)["id"].tolist()[:1]
    with pytest.raises(InvalidInputError, match=message):
        survey.object_share(tiny_model_workspace, target_ids=targets, **kwargs)


def test_the_saliency_job_kind_checks_its_parameters(tiny_model_workspace):
    assert JOB_KINDS["saliency"].permission == "run_models"
    with pytest.raises(InvalidInputError, match="unknown parameter"):
        jobs.start(tiny_model_workspace, "saliency", {"models": ["fg-only"], "threshold": 0.2})
    assert jobs.list_jobs(tiny_model_workspace).empty
