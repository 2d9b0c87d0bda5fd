"""The model zoo: layout, training grid, idempotence, construction labels, reliance, CLI, the ``zoo`` job."""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pytest

from analytics import jobs
from analytics.assessor.feature_sets import matrix_feature_columns
from analytics.cli import main
from analytics.exceptions import InvalidInputError, JobCancelled, NotFoundError
from analytics.inference import iter_composites, stored_suite_images
from analytics.jobs.process import wait
from analytics.judging import latest_judgments
from analytics.models import LoadedModel, get_model_spec, list_models, load_model, register_head
from analytics.runs import list_runs, load_run, run_matrices, start_runs
from analytics.zoo import build_zoo, construction_labels, list_zoo, reliance_curve, reliance_ends, zoo_built, zoo_job, zoo_layout_of, zoo_runs_done, zoo_runs_step
from analytics.zoo.assessment import default_suite
from analytics.zoo.heads import CONSTRUCTION_LABEL, zoo_suite
from analytics.zoo.layout import ZooLayout, zoo_family_name, zoo_layout, zoo_model_name
from tests.fixtures.models import insert_suite
from tests.fixtures.zoo import ZOO_BACKBONE

SMALL = {"backbone": ZOO_BACKBONE, "n_train_per_class": 12, "n_augment_per_class": 6, "pool_per_target": 4, "temperatures": ()}


# -- layout ------------------------------------------------------------------------------------------
def test_layout_gives_disjoint_home_groups_and_holds_out_targets_and_backgrounds(tiny_workspace):
    layout = zoo_layout(tiny_workspace, holdout_backgrounds=0.25, holdout_targets=1, seed=0)
    groups = [set(layout.home[c]) for c in layout.classes]
    assert layout.classes == ("disc", "square")
    assert set.union(*groups) == {row["id"] for row in tiny_workspace.query("SELECT id FROM backgrounds")}
    assert sum(map(len, groups)) == 12  # disjoint
    assert [len(g) for g in groups] == [6, 6]  # balanced
    for c in layout.classes:
        held = set(layout.heldout_backgrounds) & set(layout.home[c])
        assert 1 <= len(held) < len(layout.home[c])
        assert not held & set(layout.home_train(c))
        assert len(layout.train_targets[c]) == 2
    assert len(layout.heldout_targets) == 2
    assert not set(layout.heldout_targets) & {t for ids in layout.train_targets.values() for t in ids}
    assert set(layout.train_backgrounds).isdisjoint(layout.heldout_backgrounds)
    assert ZooLayout.from_json(json.loads(json.dumps(layout.to_json()))) == layout


def test_layout_is_deterministic_per_seed(tiny_workspace):
    assert zoo_layout(tiny_workspace, seed=3) == zoo_layout(tiny_workspace, seed=3)
    assert zoo_layout(tiny_workspace, seed=3).home != zoo_layout(tiny_workspace, seed=4).home


@pytest.mark.parametrize(("kwargs", "match"), [({"holdout_backgrounds": 1.0}, "holdout_backgrounds"), ({"holdout_targets": -1}, "holdout_targets")])
def test_layout_rejects_bad_parameters(tiny_workspace, kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        zoo_layout(tiny_workspace, **kwargs)


# -- building ----------------------------------------------------------------------------------------
def test_build_zoo_registers_the_grid_with_its_construction_and_writes_no_judgment(zoo_workspace):
    models = build_zoo(zoo_workspace, strengths=(0, 0.5, 1), augment=(False, True), seeds=(0, 1), **SMALL)
    expected = [(s, a, k) for s in (0.0, 0.5, 1.0) for a in (False, True) for k in (0, 1)]
    assert [(m.strength, m.augment, m.seed) for m in models] == expected
    assert all(m.trained and 0 <= m.accuracy <= 1 for m in models)
    for model in models:
        spec = get_model_spec(zoo_workspace, model.name)
        assert spec.source == "head" and spec.backbone == ZOO_BACKBONE
        assert spec.label_space.names == ("disc", "square")
        assert {k: spec.construction[k] for k in ("strength", "augment", "seed")} == {"strength": model.strength, "augment": model.augment, "seed": model.seed}
    assert sorted(list_zoo(zoo_workspace)["name"]) == sorted(zoo_model_name(s, a, k) for s, a, k in expected)
    assert latest_judgments(zoo_workspace).empty
    assert zoo_layout_of(zoo_workspace) == zoo_layout(zoo_workspace)


def test_build_zoo_is_idempotent_and_refuses_a_changed_construction(zoo_workspace):
    first = build_zoo(zoo_workspace, strengths=(0, 1), augment=(False,), seeds=(0,), **SMALL)
    checkpoints = {spec.name: spec.checkpoint for spec in list_models(zoo_workspace)}
    again = build_zoo(zoo_workspace, strengths=(0, 1), augment=(False,), seeds=(0,), **SMALL)
    assert [m.trained for m in again] == [False, False]
    assert [m.accuracy for m in again] == [m.accuracy for m in first]
    assert {spec.name: spec.checkpoint for spec in list_models(zoo_workspace)} == checkpoints
    changed = {**SMALL, "n_train_per_class": 20}
    with pytest.raises(InvalidInputError, match="another construction .*; retrain it with `replace`, or remove it first"):  # the parameter
        build_zoo(zoo_workspace, strengths=(0,), augment=(False,), seeds=(0,), **changed)
    retrained = build_zoo(zoo_workspace, strengths=(0,), augment=(False,), seeds=(0,), replace=True, **changed)
    assert retrained[0].trained
    assert get_model_spec(zoo_workspace, retrained[0].name).construction["n_train_per_class"] == 20


def test_same_seed_gives_the_same_head(zoo_workspace):
    build_zoo(zoo_workspace, strengths=(0.5,), augment=(True,), seeds=(0,), **SMALL)
    weights = get_model_spec(zoo_workspace, zoo_model_name(0.5, True, 0)).checkpoint
    build_zoo(zoo_workspace, strengths=(0.5,), augment=(True,), seeds=(0,), replace=True, **{**SMALL, "regularisation": 0.5})
    build_zoo(zoo_workspace, strengths=(0.5,), augment=(True,), seeds=(0,), replace=True, **SMALL)
    assert get_model_spec(zoo_workspace, zoo_model_name(0.5, True, 0)).checkpoint == weights


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"strengths": (1.5,)}, "strengths"), ({"seeds": (-1,)}, "seeds"), ({"strengths": ()}, "empty"), ({"background_only": -1.0}, "background_only"),
        ({"temperatures": (0.0,)}, "temperatures"), ({"hidden": -1}, "hidden"), ({"family_strength": 2.0}, "family_strength"),
    ],  # fmt: skip
)
def test_build_zoo_rejects_bad_parameters(zoo_workspace, kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        build_zoo(zoo_workspace, **{**SMALL, **kwargs})


def test_build_zoo_needs_a_registered_backbone(tiny_workspace):
    with pytest.raises(NotFoundError, match="no model 'nope'"):
        build_zoo(tiny_workspace, backbone="nope")


# -- construction labels -----------------------------------------------------------------------------
def test_construction_labels_map_strength_to_labels(zoo_workspace):
    build_zoo(zoo_workspace, strengths=(0, 0.25, 0.5, 0.75, 1), augment=(False,), seeds=(0,), **SMALL)
    labels = construction_labels(zoo_workspace)
    assert labels.name == CONSTRUCTION_LABEL
    assert labels.to_dict() == {
        zoo_model_name(0, False, 0): "invariant",
        zoo_model_name(0.25, False, 0): "invariant",
        zoo_model_name(0.5, False, 0): "borderline",
        zoo_model_name(0.75, False, 0): "variant",
        zoo_model_name(1, False, 0): "variant",
    }
    strict = construction_labels(zoo_workspace, invariant_max=0.0, variant_min=1.0)
    assert strict[zoo_model_name(0.25, False, 0)] == "borderline" and strict[zoo_model_name(1, False, 0)] == "variant"
    with pytest.raises(InvalidInputError, match="invariant_max must be < variant_min"):
        construction_labels(zoo_workspace, invariant_max=0.75, variant_min=0.5)


def test_construction_labels_leave_out_models_outside_the_zoo(tiny_model_workspace):
    labels = construction_labels(tiny_model_workspace)
    assert labels.empty and labels.name == CONSTRUCTION_LABEL


# -- the reliance it induces -------------------------------------------------------------------------
def _heldout_suite(workspace) -> str:
    """Every held-out target on every held-out background, with made-up distances."""
    layout = zoo_layout_of(workspace)
    rng = np.random.default_rng(0)
    rows = [
        ("zoo-test", t, position, b, float(rng.uniform(0.05, 1)))
        for t in layout.heldout_targets
        for position, b in enumerate(layout.heldout_backgrounds, start=1)
    ]
    with workspace.transaction() as conn:
        conn.execute("INSERT INTO suites(id, method, n, seed, params, created) VALUES ('zoo-test', 'random', ?, 0, '{}', '')", (len(layout.heldout_backgrounds),))
        conn.executemany("INSERT INTO suite_items(suite_id, target_id, position, background_id, distance) VALUES (?, ?, ?, ?, ?)", rows)
    return "zoo-test"


def test_strong_background_class_link_makes_heads_follow_the_background(zoo_workspace):
    build_zoo(zoo_workspace, strengths=(0, 1), augment=(False,), seeds=(0, 1), **{**SMALL, "n_train_per_class": 36, "pool_per_target": 8})
    names = [zoo_model_name(s, False, k) for s in (0.0, 1.0) for k in (0, 1)]
    run_ids = dict(zip(names, start_runs(zoo_workspace, names, _heldout_suite(zoo_workspace))))
    spread = {name: load_run(zoo_workspace, run_id).signals["true_prob"].std(axis=1).mean() for name, run_id in run_ids.items()}
    matrix_mean = {name: run_matrices(zoo_workspace, run_id)["true_prob"].matrix.mean() for name, run_id in run_ids.items()}
    for seed in (0, 1):
        invariant, variant = zoo_model_name(0.0, False, seed), zoo_model_name(1.0, False, seed)
        # the s=0 head reads the object (its centre colour never changes across backgrounds)
        assert spread[variant] > 2 * spread[invariant]
        assert matrix_mean[variant] > matrix_mean[invariant]
    # Home's curve of the demo's point (issue 42.12): the same runs, per strength over the seeds
    curve = reliance_curve(zoo_workspace)
    assert list(curve["strength"]) == [0.0, 1.0] and list(curve["heads"]) == [2, 2] and not curve["augment"].any()
    runs = list_runs(zoo_workspace).set_index("model")["worst_case_accuracy"]
    for strength, row in curve.set_index("strength").iterrows():
        seeds = [runs[zoo_model_name(strength, False, k)] for k in (0, 1)]
        assert row["worst_case_accuracy"] == pytest.approx(np.mean(seeds)) and (row["lowest"], row["highest"]) == (min(seeds), max(seeds))



def test_reliance_ends_read_each_line_at_its_ends_plain_first():
    curve = pd.DataFrame(
        {
            "strength": [0.0, 1.0, 0.0, 0.5, 1.0, 0.5],
            "augment": [True, True, False, False, False, False],
            "worst_case_accuracy": [0.7, 0.6, 0.8, 0.5, 0.27, 0.4],
            "lowest": [0.6, 0.5, 0.7, 0.4, 0.2, 0.3],
            "highest": [0.8, 0.7, 0.9, 0.6, 0.3, 0.5],
            "heads": [3, 3, 3, 3, 3, 3],
        }
    ).drop(index=5)  # rows in any order
    plain, augmented = reliance_ends(curve)
    assert (plain.augment, plain.weakest, plain.strongest, plain.at_weakest, plain.at_strongest, plain.heads) == (False, 0.0, 1.0, 0.8, 0.27, 9)
    assert (augmented.augment, augmented.at_weakest, augmented.at_strongest, augmented.heads) == (True, 0.7, 0.6, 6)
    assert plain.falls and augmented.falls
    assert reliance_ends(curve[curve["augment"] | (curve["strength"] == 0)]) == [augmented]  # one strength draws no line
    assert reliance_ends(curve.iloc[:0]) == []
    with pytest.raises(InvalidInputError, match="reliance_curve"):
        reliance_ends(curve.drop(columns="heads"))


# -- each head's own embedding ---------------------------------------------------------------------
EMBEDDING_SIGNALS = ["emb_topk_mean", "emb_max", "emb_mean"]


def _images(workspace, run_id: str) -> pd.DataFrame:
    return pd.DataFrame([dict(r) for r in workspace.query("SELECT * FROM run_images WHERE run_id = ? ORDER BY target_id, position", (run_id,))])


def test_zoo_heads_have_their_own_embedding_signals(zoo_workspace, monkeypatch):
    names = [zoo_model_name(s, False, 0) for s in (0.0, 1.0)]
    build_zoo(zoo_workspace, strengths=(0, 1), augment=(False,), seeds=(0,), hidden=0, **SMALL)
    suite = _heldout_suite(zoo_workspace)
    linear = [_images(zoo_workspace, run_id) for run_id in start_runs(zoo_workspace, names, suite)]
    pd.testing.assert_frame_equal(linear[0][EMBEDDING_SIGNALS], linear[1][EMBEDDING_SIGNALS])  # linear heads: the backbone's, shared

    build_zoo(zoo_workspace, strengths=(0, 1), augment=(False,), seeds=(0,), replace=True, **SMALL)
    spec = get_model_spec(zoo_workspace, names[0])
    assert spec.arch == "mlp" and spec.construction["hidden"] == 128 and "hidden layer" in spec.embedding_layer
    weight = np.random.default_rng(0).normal(size=(2, 15))
    register_head(zoo_workspace, "old-linear", backbone=ZOO_BACKBONE, weight=weight, bias=np.zeros(2), class_names=["disc", "square"])
    calls = []
    original = LoadedModel.run_batch
    monkeypatch.setattr(LoadedModel, "run_batch", lambda self, batch, **options: calls.append(len(batch)) or original(self, batch, **options))
    models = [*names, "old-linear", ZOO_BACKBONE]
    tables = dict(zip(models, (_images(zoo_workspace, run_id) for run_id in start_runs(zoo_workspace, models, suite))))
    jobs, _ = stored_suite_images(zoo_workspace, suite)
    n_targets = len({job.target_id for job in jobs})
    assert sum(calls) == len(jobs) + n_targets  # one backbone pass per image (+ foreground-only) for all four
    assert not np.allclose(tables[names[0]][EMBEDDING_SIGNALS], tables[names[1]][EMBEDDING_SIGNALS])
    pd.testing.assert_frame_equal(tables["old-linear"][EMBEDDING_SIGNALS], tables[ZOO_BACKBONE][EMBEDDING_SIGNALS])  # old heads still load
    images = np.concatenate([batch for _, batch in iter_composites(zoo_workspace, jobs)])
    for name in names:  # the engine reads each head's hidden layer, as the head's own forward pass returns it
        embedding = load_model(zoo_workspace, name).predict(images).embeddings
        assert embedding.shape == (len(jobs), 128)
        np.testing.assert_allclose(tables[name]["emb_max"], embedding.max(1), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(tables[name]["emb_mean"], embedding.mean(1), rtol=1e-4, atol=1e-4)


# -- the figure-8 family -----------------------------------------------------------------------------
MATCH_TOLERANCE = 1e-12  # the members of one seed make the same prediction on every image: equal statistics


def test_figure8_family_matches_accuracy_statistics_while_labels_differ(zoo_workspace):
    temperatures = (0.25, 1.0, 4.0)
    models = build_zoo(zoo_workspace, **{**SMALL, "temperatures": temperatures}, strengths=(0.5,), augment=(False,), seeds=(0, 1))
    family = [m for m in models if m.family == "figure8"]
    assert [(m.name, m.temperature) for m in family] == [(zoo_family_name(t, k), t) for k in (0, 1) for t in temperatures]
    for k in (0, 1):  # built from the grid head of strength 0.5: T = 1 is that head
        assert get_model_spec(zoo_workspace, zoo_family_name(1.0, k)).checkpoint == get_model_spec(zoo_workspace, zoo_model_name(0.5, False, k)).checkpoint
    labels = construction_labels(zoo_workspace)
    run_ids = dict(zip([m.name for m in family], start_runs(zoo_workspace, [m.name for m in family], _heldout_suite(zoo_workspace))))
    runs = list_runs(zoo_workspace).set_index("id")
    for k in (0, 1):
        members = [zoo_family_name(t, k) for t in temperatures]
        assert [labels[m] for m in members] == ["invariant", "borderline", "variant"]
        stats = runs.loc[[run_ids[m] for m in members], ["accuracy", "original_accuracy", "worst_case_accuracy"]].to_numpy(float)
        np.testing.assert_allclose(stats, np.broadcast_to(stats[0], stats.shape), atol=MATCH_TOLERANCE)
        tables = [_images(zoo_workspace, run_ids[m]) for m in members]
        assert all((table["predicted"] == tables[0]["predicted"]).all() for table in tables)
        pd.testing.assert_frame_equal(tables[0][EMBEDDING_SIGNALS], tables[2][EMBEDDING_SIGNALS])
        confidence = np.stack([table["max_prob"].to_numpy() for table in tables])
        assert (np.diff(confidence, axis=0) >= -1e-6).all() and (confidence[2] > confidence[0]).any()  # hesitant -> confident
        wrong = tables[0]["correct"].to_numpy() == 0
        assert wrong.any()  # the background flips some predictions: where, is the same for every member
        true_prob = np.stack([table["true_prob"].to_numpy()[wrong] for table in tables])
        assert (true_prob[0] > true_prob[1]).all() and (true_prob[1] > true_prob[2]).all()  # errors: hesitant -> confident


def test_figure8_family_is_part_of_the_default_zoo(zoo_workspace):
    build_zoo(zoo_workspace, strengths=(0.5,), augment=(False,), seeds=(0,), **{**SMALL, "temperatures": (0.25, 4.0)})
    zoo = list_zoo(zoo_workspace).set_index("name")
    assert zoo.loc[zoo_family_name(4.0, 0), ["family", "temperature", "strength"]].tolist() == ["figure8", 4.0, 0.5]
    assert zoo.loc[zoo_model_name(0.5, False, 0), ["family", "temperature"]].tolist() == ["reliance", 1.0]
    assert not zoo_built(zoo_workspace)  # the default zoo also holds temperature 1 and the full grid


# -- suites and the CLI ------------------------------------------------------------------------------
def test_default_suite_prefers_the_suite_with_most_runs_of_the_models(zoo_workspace):
    with pytest.raises(NotFoundError, match="no suite"):
        default_suite(zoo_workspace)
    insert_suite(zoo_workspace, "older", n=2, seed=1)
    insert_suite(zoo_workspace, "newer", n=2, seed=2)
    build_zoo(zoo_workspace, strengths=(0,), augment=(False,), seeds=(0,), **SMALL)
    start_runs(zoo_workspace, [zoo_model_name(0, False, 0)], "older")
    assert default_suite(zoo_workspace, [zoo_model_name(0, False, 0)]) == "older"


def test_zoo_command_builds_and_reports(zoo_workspace, capsys):
    argv = ["zoo", "--workspace", str(zoo_workspace.root), "--backbone", ZOO_BACKBONE, "--strengths", "0", "1", "--seeds", "0", "--augment", "no",
            "--n-train-per-class", "8", "--temperatures", "--json"]  # fmt: skip
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert [(m["name"], m["strength"]) for m in result["models"]] == [(zoo_model_name(0, False, 0), 0.0), (zoo_model_name(1, False, 0), 1.0)]
    assert all(0 <= m["accuracy"] <= 1 for m in result["models"]) and result["trained"] == 2
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["skipped"] == 2


def test_assess_command_with_construction_labels_runs_missing_models(zoo_workspace, capsys):
    build_zoo(zoo_workspace, strengths=(0, 0.5, 1), augment=(False,), seeds=(0, 1, 2), **SMALL)
    insert_suite(zoo_workspace, "assess-suite", n=4)
    argv = ["assess", "--workspace", str(zoo_workspace.root), "--labels", "construction", "--repeats", "3", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert "running 9 models" in captured.err
    assert result["n_models"] == 9 and result["suite"] == "assess-suite" and len(result["ran"]) == 9
    for key in ("rf_accuracy_mean", "rf_accuracy_std", "ada_accuracy_mean", "baseline_accuracy_mean"):
        assert 0 <= result[key] <= 1
    assert result["class_counts"] == {"invariant": 3, "borderline": 3, "variant": 3}
    assert latest_judgments(zoo_workspace).empty  # construction labels are never stored as judgments
    assert result["feature_set"] == "authors" and result["features_by_assessor"]["random_forest"] == matrix_feature_columns("authors")
    assert main(argv) == 0
    assert "running" not in capsys.readouterr().err  # the runs are reused
    assert main([*argv, "--features", "backdrop"]) == 0
    backdrop = json.loads(capsys.readouterr().out)
    assert backdrop["feature_set"] == "backdrop" and backdrop["features_by_assessor"]["random_forest"] == matrix_feature_columns("backdrop")
    assert main([*argv, "--crops", "8"]) == 0
    assert "true_prob.mean_crop8" in json.loads(capsys.readouterr().out)["features_by_assessor"]["random_forest"]
    assert main([*argv, "--features", "backdrop", "--crops", "8"]) == 2
    assert "authors' feature set" in capsys.readouterr().err


def test_assess_command_refuses_without_labels(zoo_workspace, capsys):
    assert main(["assess", "--workspace", str(zoo_workspace.root), "--labels", "human", "--json"]) == 2
    assert "no judgments" in capsys.readouterr().err
    assert main(["assess", "--workspace", str(zoo_workspace.root), "--labels", "construction", "--json"]) == 2
    assert "no model zoo" in capsys.readouterr().err


def test_zoo_runs_step_runs_every_head_on_the_heldout_suite(zoo_workspace):
    build_zoo(zoo_workspace, strengths=(0, 1), augment=(False,), seeds=(0,), **SMALL)
    assert not zoo_built(zoo_workspace)  # the default grid has 30 heads
    assert not zoo_runs_done(zoo_workspace)
    reports: list[tuple[str, int, int]] = []
    zoo_runs_step(zoo_workspace, progress=lambda done, total, step: reports.append((step, done, total)))
    assert zoo_runs_done(zoo_workspace)
    assert any(step == "zoo runs" for step, _, _ in reports)
    layout = zoo_layout_of(zoo_workspace)
    suite = zoo_suite(zoo_workspace)
    assert set(suite.items["target_id"]) == set(layout.heldout_targets)
    assert set(suite.items["background_id"]) <= set(layout.heldout_backgrounds)


def test_retrained_heads_need_new_zoo_runs(zoo_workspace):
    build_zoo(zoo_workspace, strengths=(0, 1), augment=(False,), seeds=(0,), hidden=0, **SMALL)  # linear, as older zoos
    zoo_runs_step(zoo_workspace)
    assert zoo_runs_done(zoo_workspace)
    build_zoo(zoo_workspace, strengths=(0, 1), augment=(False,), seeds=(0,), replace=True, **SMALL)
    assert not zoo_runs_done(zoo_workspace)  # the linear heads' runs are stale
    zoo_runs_step(zoo_workspace)
    assert zoo_runs_done(zoo_workspace)


# -- the background job ------------------------------------------------------------------------------
JOB_GRID = {"strengths": [0.0, 0.5, 1.0], "augment": [False, True], "seeds": [0, 1], **SMALL, "temperatures": [0.25, 4.0]}
JOB_HEADS = 3 * 2 * 2 + 2 * 2
WAIT_S = 300  # a worker imports torch first: slow on a busy 2-core machine


class _CancelAfter:
    """A stand-in for a job's ``progress`` (:meth:`analytics.jobs.JobProgress.update`) that asks to stop once ``heads`` heads are done."""

    def __init__(self, heads: int | None = None) -> None:
        self.heads, self.reports = heads, []

    def __call__(self, done: int, total: int, message: str = "") -> None:
        self.reports.append((done, total, message))
        if message.startswith("heads") and done == self.heads:
            raise JobCancelled("cancelled by the test")


def test_a_cancelled_zoo_job_resumes_without_retraining_its_finished_heads(zoo_workspace):
    with pytest.raises(JobCancelled):
        zoo_job(zoo_workspace, JOB_GRID, _CancelAfter(heads=3))
    kept = set(list_zoo(zoo_workspace)["name"])
    assert len(kept) == 3  # stopped at the next step: nothing after the third head
    progress = _CancelAfter()
    result = zoo_job(zoo_workspace, JOB_GRID, progress)
    assert len(result["models"]) == JOB_HEADS and result["trained"] == JOB_HEADS - 3
    assert {m["name"] for m in result["models"] if not m["trained"]} == kept
    assert set(list_zoo(zoo_workspace)["name"]) == {m["name"] for m in result["models"]}
    heads = [(done, total) for done, total, message in progress.reports if message.startswith("heads")]
    assert heads[-1] == (JOB_HEADS, JOB_HEADS) and [done for done, _ in heads] == list(range(1, JOB_HEADS + 1))
    assert any(message.startswith("backbone embeddings") for _, _, message in progress.reports)


def test_the_zoo_kind_runs_in_a_worker_that_can_be_cancelled_and_resumed(zoo_workspace):
    job = jobs.start(zoo_workspace, "zoo", JOB_GRID)
    deadline = time.monotonic() + WAIT_S
    while jobs.get_job(zoo_workspace, job.id).status == "queued":  # its worker is importing torch
        assert time.monotonic() < deadline, "the worker never started"
        time.sleep(0.1)
    cancelled = jobs.cancel(zoo_workspace, job.id)
    assert cancelled.status == "cancelled" and cancelled.resumable
    kept = set(list_zoo(zoo_workspace)["name"])
    assert len(kept) < JOB_HEADS
    time.sleep(1.0)
    assert set(list_zoo(zoo_workspace)["name"]) == kept  # no work after the cancel
    jobs.resume(zoo_workspace, job.id)
    finished = wait(zoo_workspace, job.id, timeout=WAIT_S)
    assert finished.status == "done", finished.message
    assert finished.result["trained"] == JOB_HEADS - len(kept)
    assert {m["name"] for m in finished.result["models"] if not m["trained"]} == kept
    assert len(list_zoo(zoo_workspace)) == JOB_HEADS


def test_the_zoo_kind_refuses_unknown_settings(zoo_workspace):
    with pytest.raises(InvalidInputError, match="unknown parameter"):
        jobs.start(zoo_workspace, "zoo", {"strenghts": [0.5]})
