"""Suites end to end on the tiny workspace, ontology suites on the reference keyword file, the
classifier-patch keyword backend and the CLI."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from analytics.cli import main
from analytics.data import imagenet_label_space, list_targets, load_backgrounds, load_targets
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.keywords import ClassifierPatchBackend, compute_keywords, fill_objects, keyword_table_name, list_keyword_tables, load_keyword_table, save_keyword_table
from analytics.keywords._base import BACKENDS
from analytics.keywords.classifier_patch import SCENE_CLASSES
from analytics.models import load_model
from analytics.ontology import DEFAULT_MIN_SUPPORT, build_ontology, list_ontologies, ontologies_from, ontology_record, save_ontology
from analytics.suites import SAMPLERS, build_suite, ensure_ontology, list_suites, load_suite, select_targets, suite_params, suite_stats
from analytics.suites.ranking import expanded_keywords
from analytics.suites.sampling import SamplingContext, SeamHarmony
from analytics.suites.store import ITEM_COLUMNS, images_of, topup_record
from tests.fixtures.suites import BACKGROUND_TABLE, SUITE_VOCABULARY, TARGET_TABLE, onehot_table

N = 4


def build(workspace, method, **options):
    options.setdefault("realism_threshold", 0.0)
    return build_suite(workspace, method=method, n=N, seed=0, **options)


@pytest.mark.parametrize("method", sorted(SAMPLERS))
def test_every_method_builds_saves_and_reloads(suite_workspace, method):
    suite = build(suite_workspace, method)
    assert suite.created and list(suite.items.columns) == ITEM_COLUMNS
    assert suite.items.groupby("target_id").size().tolist() == [N] * 6
    assert not suite.items.duplicated(["target_id", "background_id"]).any()
    assert (suite.items["distance"] > 0).all()
    reloaded = load_suite(suite_workspace, suite.id)
    assert reloaded.method == method and reloaded.params == suite.params and reloaded.warnings == suite.warnings
    assert reloaded.items.equals(suite.items)
    assert suite.id in list_suites(suite_workspace)["id"].tolist()
    assert suite_params(suite_workspace)[suite.id] == suite.params  # without loading the items
    jobs = images_of(reloaded)
    assert len(jobs) == 6 * (N + 1)
    assert [job.position for job in jobs[: N + 1]] == list(range(N + 1)) and jobs[0].background_id is None


def test_same_inputs_same_suite_and_seed_matters(suite_workspace):
    preview = build(suite_workspace, "random", save=False)
    assert preview.created == "" and len(list_suites(suite_workspace)) == 1  # only the fixture's tiny-suite
    first = build(suite_workspace, "random")
    assert preview.id == first.id and preview.items.equals(first.items) and first.created
    assert build(suite_workspace, "random", save=False).created == first.created  # saved: loaded, not rebuilt
    other = build_suite(suite_workspace, method="random", n=N, seed=1, realism_threshold=0.0)
    assert other.id != first.id and not other.items["background_id"].equals(first.items["background_id"])
    assert len(list_suites(suite_workspace)) == 3  # tiny-suite + two


def test_a_class_selection_covers_only_its_targets_and_is_recorded(suite_workspace):
    discs = list_targets(suite_workspace, class_name="disc")["id"].tolist()
    suite = build(suite_workspace, "ontology", classes=["disc"])
    assert suite.target_ids == discs and 0 < len(discs) < 6
    assert load_suite(suite_workspace, suite.id).params["selection"] == {"classes": ["disc"], "target_ids": None}
    narrowed = build(suite_workspace, "random", classes=["disc"], target_ids=discs[:1])
    assert narrowed.target_ids == discs[:1] and narrowed.params["selection"]["target_ids"] == discs[:1]
    assert "selection" not in build(suite_workspace, "random").params  # every class: the id suites had before


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"classes": ["dics"]}, "dics is not a class"),
        ({"classes": []}, "at least one class"),
        ({"target_ids": []}, "at least one"),
        ({"target_ids": ["nope"]}, "nope"),
    ],
)
def test_a_bad_selection_is_refused_by_name(suite_workspace, options, message):
    with pytest.raises(InvalidInputError, match=message):
        build(suite_workspace, "random", **options)


def test_a_target_outside_the_selected_classes_is_refused(suite_workspace):
    square = list_targets(suite_workspace, class_name="square")["id"].iloc[0]
    with pytest.raises(InvalidInputError, match=f"not targets of the classes disc.*{square}"):
        select_targets(suite_workspace, classes=["disc"], target_ids=[square])
    with pytest.raises(InvalidInputError, match="analytics info"):
        select_targets(suite_workspace, classes=["nope"])


def test_ontology_suites_are_more_diverse_than_detected_keyword_suites(suite_workspace):
    keyword = suite_stats(build(suite_workspace, "keyword"))
    ontology = suite_stats(build(suite_workspace, "ontology"))
    assert keyword.keyword_diversity == 1.0  # every target detects exactly one keyword
    assert ontology.keyword_diversity > keyword.keyword_diversity
    assert set(load_suite(suite_workspace, build(suite_workspace, "ontology").id).items["level"]) >= {0, 1}


def test_nearest_has_the_smallest_mean_distance(suite_workspace):
    """With ``bg-only`` (its embedding is the scene's corners), the proxy ranks the pool exactly as
    the composite distance does, so nearest must have the smallest mean."""
    stats = {m: suite_stats(build(suite_workspace, m, distance_models=["bg-only"])) for m in SAMPLERS}
    assert stats["nearest"].distance_mean == min(s.distance_mean for s in stats.values())
    assert stats["nearest"].distance_mean < stats["random"].distance_mean


def test_realism_threshold_is_respected(suite_workspace):
    suite = build(suite_workspace, "random", realism_threshold=0.6)
    images, masks = load_targets(suite_workspace, suite.items["target_id"].tolist())
    backgrounds = load_backgrounds(suite_workspace, suite.items["background_id"].tolist())
    scorer = SeamHarmony()
    own_scene = scorer.score(images, masks, images)  # the bar never exceeds the target's own photo
    scores = scorer.score(images, masks, backgrounds)
    assert (scores >= np.minimum(0.6, own_scene) - 1e-12).all()
    assert suite.params["realism_threshold"] == 0.6


def test_pool_too_small_is_an_error(suite_workspace):
    with pytest.raises(InvalidInputError, match="exceeds the pool of 12"):
        build_suite(suite_workspace, method="random", n=13)
    with pytest.raises(InvalidInputError, match="method must be one of"):
        build_suite(suite_workspace, method="closest")


def test_missing_keyword_tables_are_explained(tiny_model_workspace):
    with pytest.raises(InvalidInputError, match="no target keyword table"):
        build(tiny_model_workspace, "keyword")
    ids = [row["id"] for row in tiny_model_workspace.query("SELECT id FROM backgrounds")]
    save_keyword_table(tiny_model_workspace, onehot_table(ids, [["sky"]] * len(ids)), name="pool", item_kind="background")
    save_keyword_table(tiny_model_workspace, onehot_table(["disc/0"], [["sky"]]), name="one", item_kind="target")
    with pytest.raises(InvalidInputError, match="needs an ontology"):
        build(tiny_model_workspace, "ontology")
    with pytest.raises(InvalidInputError, match="has no row for 5 items"):
        build(tiny_model_workspace, "keyword")


def test_missing_models_and_suites_are_explained(tiny_workspace):
    with pytest.raises(InvalidInputError, match="at least one registered model"):
        build(tiny_workspace, "nearest")
    with pytest.raises(NotFoundError, match="no suite 'nope'"):
        load_suite(tiny_workspace, "nope")


def test_without_models_distances_are_missing_with_a_warning(tiny_workspace):
    suite = build(tiny_workspace, "random")
    assert suite.items["distance"].isna().all()
    assert any("no registered model" in w for w in suite.warnings)
    assert np.isnan(suite_stats(suite).distance_mean)


def test_a_target_without_keywords_falls_back_to_its_class(suite_workspace):
    workspace = suite_workspace
    table = load_keyword_table(workspace, TARGET_TABLE)
    rows = [table.keywords_of(k) for k in range(table.n_items)]
    rows[0] = []  # disc/0 detects nothing; its class's most frequent keyword is sky
    save_keyword_table(workspace, onehot_table(table.ids, rows, table.labels), name="blank", item_kind="target")
    tables = {"target": "blank", "background": BACKGROUND_TABLE}
    for method in ("keyword", "ontology"):
        suite = build(workspace, method, keyword_tables=tables)
        assert any("disc/0" in w and "class 'disc'" in w for w in suite.warnings), suite.warnings
        assert "sky" in suite.target_items("disc/0")["keyword"].tolist()


def test_keyword_suite_without_top_up_can_be_short(suite_workspace):
    suite = build_suite(suite_workspace, method="keyword", n=6, seed=0, realism_threshold=0.0, top_up=False)
    counts = suite.items.groupby("target_id").size()
    assert counts.to_dict() == {"disc/0": 6, "disc/1": 6, "disc/2": 6, "square/0": 4, "square/1": 4, "square/2": 4}  # 6 carry sky, 4 sea
    short = [w for w in suite.warnings if not w.startswith("pool screening skipped")]  # the fixture has no ImageNet classifier
    assert len(short) == 3 and all("4 of 6" in w for w in short)
    stats = suite_stats(suite)
    assert stats.per_target_min == counts.min() and stats.per_target_max == counts.max()


def test_ontology_suite_records_its_sources_and_top_up_share(suite_workspace):
    """Issue 18.4 / 11.3: the suite's provenance names the ontology (id + parameters) and the keyword
    tables (names + backends) it used, and the share topped up at random. With 8 backgrounds, a
    square's keywords (sea, sand) reach 5 backgrounds and a disc's (sky, tree, grass) 7."""
    suite = build_suite(suite_workspace, method="ontology", n=8, seed=0, realism_threshold=0.0)
    (ontology_id,) = list_ontologies(suite_workspace)["id"]
    record = suite.params["ontology"]
    assert record["id"] == ontology_id and record["tables"] == [TARGET_TABLE, BACKGROUND_TABLE]
    assert (record["algorithm"], record["min_support"], record["min_confidence"]) == ("fpgrowth", 0.1, 0.3)
    tables = suite.params["keyword_tables"]
    assert {kind: (t["name"], t["backend"]) for kind, t in tables.items()} == {
        "target": (TARGET_TABLE, "precomputed"), "background": (BACKGROUND_TABLE, "precomputed")
    }  # fmt: skip
    random = suite.items["keyword"] == ""
    assert random.sum() == 3 * 3 + 3 * 1
    assert suite.params["topped_up"] == 12 and suite.params["topped_up_targets"] == 6
    assert suite.params["topup_share"] == pytest.approx(12 / 48)
    assert load_suite(suite_workspace, suite.id).params == suite.params  # stored in suites.params
    stats = suite_stats(suite)
    assert (stats.topped_up, stats.topup_share) == (12, pytest.approx(0.25))
    assert suite_stats(build(suite_workspace, "random")).topup_share is None  # no keywords, no top-up


def test_an_ontology_of_other_keywords_is_refused_and_the_matching_one_used(suite_workspace):
    """Issue 11.3: an ontology mined from another vocabulary (here ADE20K-prefixed names) expands no
    target: it is refused when named, passed over by default, and ensure_ontology never returns it."""
    (matching,) = list_ontologies(suite_workspace)["id"]
    other_table = onehot_table(["x0", "x1", "x2"], [["sky", "tree"], ["sky", "tree"], ["sea"]])
    other_table = replace(other_table, vocabulary=[f"ade:{word}" for word in SUITE_VOCABULARY])
    other = save_ontology(suite_workspace, build_ontology(other_table, min_support=0.3), tables=["ade-table"])
    with suite_workspace.transaction() as conn:
        conn.execute("UPDATE ontologies SET created = '2999-01-01T00:00:00+00:00' WHERE id = ?", (other,))
    with pytest.raises(InvalidInputError, match=r"expands only 0 of 6 targets.*would be a keyword suite.*leave the ontology unset") as refused:
        build(suite_workspace, "ontology", ontology_id=other)
    assert "--" not in str(refused.value)  # no flag: the Suites page, Python and the command line all show it
    assert build(suite_workspace, "ontology").params["ontology"]["id"] == matching  # the newest is the other one
    tables = {"target": TARGET_TABLE, "background": BACKGROUND_TABLE}
    assert ensure_ontology(suite_workspace, tables) == (matching, False)
    with suite_workspace.transaction() as conn:
        conn.execute("DELETE FROM ontologies WHERE id = ?", (matching,))
    built, was_built = ensure_ontology(suite_workspace, tables)
    assert was_built and built != other and ontologies_from(suite_workspace, [BACKGROUND_TABLE, TARGET_TABLE]) == [built]
    assert ontology_record(suite_workspace, built)["min_support"] == DEFAULT_MIN_SUPPORT


def test_reference_ontology_suites_use_a_distinct_keyword_per_background(reference_keywords_path):
    """Issue 18.4 on the paper's keyword file (targets: every 29th image; pool: all 1712): with the
    default ontology a 32-background ontology sample takes 32 distinct keywords for every target and
    needs no random top-up (the former defaults cycled about 9 keywords)."""
    from analytics.keywords import read_keyword_file

    table = read_keyword_file(reference_keywords_path)
    rows = list(range(0, table.n_items, 29))
    targets = replace(
        table, ids=[table.ids[k] for k in rows], scores=table.scores[rows], present=table.present[rows], labels=[table.labels[k] for k in rows]
    )
    carriers = {word: np.flatnonzero(table.present[:, j]) for j, word in enumerate(table.vocabulary)}
    context = SamplingContext(target_keywords=expanded_keywords(build_ontology(table), targets), background_keywords=carriers)
    result = SAMPLERS["ontology"]().sample(targets.ids, table.ids, n=32, seed=0, context=context)
    items = pd.DataFrame([(s.target_id, s.keyword) for s in result.items], columns=["target_id", "keyword"])
    assert (items.groupby("target_id")["keyword"].nunique() == 32).all()
    assert topup_record(items) == {"topped_up": 0, "topped_up_targets": 0, "topup_share": 0.0}


# -- classifier-patch keywords ------------------------------------------------------------------
def test_scene_classes_are_imagenet_scene_names():
    names = imagenet_label_space().names
    assert all(names[index] == name for index, name in SCENE_CLASSES.items())


def test_backend_on_a_tiny_classifier(tiny_model_workspace):
    model = load_model(tiny_model_workspace, "tiny")
    backend = ClassifierPatchBackend(model, grid=2, threshold=0.3)
    assert BACKENDS["classifier-patch"] is ClassifierPatchBackend
    assert backend.vocabulary == ["disc", "square"] and backend.scene_like.tolist() == [False, False]
    images, masks = load_targets(tiny_model_workspace, ["disc/0", "square/1"])
    scores = backend.scores(images, masks)
    assert scores.shape == (2, 2) and scores.dtype == np.float32
    assert ((scores >= 0) & (scores <= 1)).all() and (scores.max(axis=1) >= 0.5).all()  # 2 classes: some class >= 0.5
    np.testing.assert_array_equal(backend.present(scores), scores >= 0.3)
    whole = model.predict(images).probabilities
    assert (backend.scores(images) + 1e-6 >= whole).all()  # the whole image is one of the views


def test_backend_masks_the_object_out(tiny_model_workspace):
    """fg-only reads the centre, which is object: masked, it sees the fill colour, the mean of the
    remaining background, on every view that is not mostly fill."""
    backend = ClassifierPatchBackend(load_model(tiny_model_workspace, "fg-only"), grid=1)
    images, masks = load_targets(tiny_model_workspace, ["disc/0"])
    filled = fill_objects(images, masks)
    object_pixels = filled[0][masks[0]]
    assert (object_pixels == object_pixels[0]).all()  # one flat colour over the object
    np.testing.assert_allclose(object_pixels[0], images[0][~masks[0]].mean(axis=0), atol=3)  # ≈ the scene's mean
    np.testing.assert_array_equal(filled[0, :4, :4], images[0, :4, :4])  # the scene itself is untouched
    assert not np.array_equal(backend.scores(images, masks), backend.scores(images))
    np.testing.assert_allclose(backend.scores(images, masks), backend.scores(filled), atol=1e-6)
    with pytest.raises(InvalidInputError, match="masks must have shape"):
        backend.scores(images, masks[:, :10])


def test_compute_keywords_caches_the_table(tiny_model_workspace, monkeypatch):
    backend = ClassifierPatchBackend(load_model(tiny_model_workspace, "tiny"), grid=1)
    table = compute_keywords(tiny_model_workspace, backend=backend, item_kind="target", batch_size=4)
    assert table.n_items == 6 and table.labels == ["disc"] * 3 + ["square"] * 3
    assert table.backend == "classifier-patch" and table.params["grid"] == 1
    name = keyword_table_name(table.backend, "target", table.ids, table.params)
    assert list_keyword_tables(tiny_model_workspace)["name"].tolist() == [name]
    monkeypatch.setattr(backend, "scores", lambda *a, **k: pytest.fail("recomputed"))
    again = compute_keywords(tiny_model_workspace, backend=backend, item_kind="target")
    np.testing.assert_array_equal(again.scores, table.scores)
    monkeypatch.undo()
    pool = compute_keywords(tiny_model_workspace, backend=backend, item_kind="background")
    assert pool.n_items == 12 and pool.labels is None


# -- CLI ----------------------------------------------------------------------------------------
def test_cli_builds_a_suite(suite_workspace, capsys):
    code = main(["suite", "--workspace", str(suite_workspace.root), "--method", "ontology", "--n", str(N), "--realism-threshold", "0", "--json"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert {"suite", "method", "targets", "per_target", "warnings"} <= set(result)
    assert result["method"] == "ontology" and result["targets"] == 6 and result["per_target"] == N
    assert load_suite(suite_workspace, result["suite"]).n == N
    assert (result["topped_up"], result["topup_share"]) == (0, 0.0)  # 4 backgrounds: the keywords suffice
    assert result["ontology"]["id"] == list_ontologies(suite_workspace)["id"].iloc[0]
    assert {kind: t["name"] for kind, t in result["keyword_tables"].items()} == {"target": TARGET_TABLE, "background": BACKGROUND_TABLE}


def test_cli_builds_a_suite_of_selected_classes_and_targets(suite_workspace, capsys):
    root = str(suite_workspace.root)
    base = ["suite", "--workspace", root, "--method", "random", "--n", str(N), "--realism-threshold", "0", "--json"]
    assert main([*base, "--classes", "square"]) == 0
    result = json.loads(capsys.readouterr().out)
    squares = list_targets(suite_workspace, class_name="square")["id"].tolist()
    assert result["selection"] == {"classes": ["square"], "target_ids": None}
    assert load_suite(suite_workspace, result["suite"]).target_ids == squares and result["targets"] == len(squares)
    assert main([*base, "--targets", ",".join(squares[:2])]) == 0
    assert load_suite(suite_workspace, json.loads(capsys.readouterr().out)["suite"]).target_ids == squares[:2]
    assert main([*base, "--classes", "square,circle"]) == 2
    assert "circle is not a class" in capsys.readouterr().err


def test_cli_computes_missing_keywords_and_ontology(tiny_model_workspace, capsys):
    root = str(tiny_model_workspace.root)
    args = ["suite", "--workspace", root, "--method", "ontology", "--n", "3", "--keyword-model", "tiny", "--realism-threshold", "0", "--json"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "computed classifier-patch/target/" in captured.err and "mined" in captured.err
    assert json.loads(captured.out)["per_target"] == 3
    assert len(list_keyword_tables(tiny_model_workspace)) == 2


def test_cli_reports_user_errors(tiny_model_workspace, capsys):
    assert main(["suite", "--workspace", str(tiny_model_workspace.root), "--method", "keyword", "--n", "3"]) == 2
    assert "ImageNet classifier" in capsys.readouterr().err
    assert main(["suite", "--workspace", str(tiny_model_workspace.root), "--method", "random", "--n", "99"]) == 2
    assert "exceeds the pool" in capsys.readouterr().err


def test_realism_reads_the_pool_as_it_goes_and_prepares_each_target_once(tiny_workspace, monkeypatch, sql_trace):
    """Issue 28.5: the realism scorer held every pool image (3.9 GB at 20,000 backgrounds) and redid a
    target's erode / dilate and Lab work for each candidate. A suite of the whole pool scores every
    background for every target: the traced memory peak must not grow with the pool by more than
    the suite's rows and the few backgrounds kept decoded, and each target is prepared once."""
    import tracemalloc

    import analytics.suites.build as build_module
    from analytics.data import store_backgrounds
    from tests.fixtures.workspace import make_background

    monkeypatch.setattr(build_module, "REALISM_BACKGROUNDS", 4)
    prepared = []
    for_target = SeamHarmony.for_target
    monkeypatch.setattr(SeamHarmony, "for_target", lambda self, image, mask: prepared.append(1) or for_target(self, image, mask))
    rng = np.random.default_rng(7)
    store_backgrounds(tiny_workspace, [make_background(i, rng) for i in range(12, 72)])
    pool = tiny_workspace.query("SELECT id FROM backgrounds ORDER BY id")
    image_bytes = load_backgrounds(tiny_workspace, [pool[0]["id"]]).nbytes

    def peak(n_pool: int) -> int:
        prepared.clear()
        sql_trace.clear()
        tracemalloc.start()
        try:
            ids = [r["id"] for r in pool[:n_pool]]
            build_suite(tiny_workspace, method="random", n=n_pool, seed=0, realism_threshold=0.5, pool_ids=ids, save=False)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            assert len(prepared) == 6  # once per target, not per candidate
            statements.append(len(sql_trace))

    statements: list[int] = []
    small, large = peak(12), peak(72)
    assert statements[0] == statements[1]  # a whole suite's SQL: the same for 12 and 72 backgrounds
    assert large - small < 20 * image_bytes  # the old code held all 60 more
