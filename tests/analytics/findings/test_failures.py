"""Failure patterns per scene keyword and ontology level (analytics/findings/failures.py, CLI ``failures``).

The hand-made run: every target of the tiny workspace gets the same four backgrounds of the suite
fixtures' keyword table (``bg00`` sky tree, ``bg02`` sky grass, ``bg05`` sea sand, ``bg10`` tree
grass); the model fails exactly on the backgrounds carrying ``tree`` (probability 0.2 there, 0.8 on
the others, 0.9 on the original). So ``tree`` is the only keyword present only on failing
composites: error rate 1 over 2 x 6 composites, drop 0.7.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from analytics.cli import main
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.findings import failure_table, keyword_model_matrix
from analytics.findings.failures import KEYWORD_COLUMNS, LEVEL_COLUMNS, group_statistics
from analytics.keywords.store import delete_keyword_table
from analytics.workspace import Workspace, now
from tests.fixtures.suites import BACKGROUND_TABLE

HAND_SUITE = "hand-suite"
#: position -> (background, drawn keyword, level, fails)
ITEMS = {1: ("bg00", "sky", 0, True), 2: ("bg02", "grass", 1, False), 3: ("bg05", "", -1, False), 4: ("bg10", "tree", 1, True)}
ORIGINAL_PROB, FAIL_PROB, PASS_PROB = 0.9, 0.2, 0.8


def add_hand_run(workspace: Workspace, run_id: str, model: str, *, flip: bool = False) -> str:
    """A finished run of ``model`` over :data:`HAND_SUITE` (created when missing) with the outcomes
    of :data:`ITEMS`; ``flip`` makes it fail on the other composites instead."""
    targets = workspace.query("SELECT id, class_name FROM targets ORDER BY id")
    params = {"keyword_tables": {"background": {"name": BACKGROUND_TABLE}}}
    rows = []
    for target in targets:
        other = "square" if target["class_name"] == "disc" else "disc"
        rows.append((run_id, target["id"], 0, target["class_name"], ORIGINAL_PROB, ORIGINAL_PROB, 1, 0.0, 0.0, 0.0, 0.0))
        for position, (_, _, _, fails) in ITEMS.items():
            fails = fails != flip
            prob = FAIL_PROB if fails else PASS_PROB
            rows.append((run_id, target["id"], position, other if fails else target["class_name"], prob, 0.8, int(not fails), 0.0, 0.0, 0.0, 0.5))
    with workspace.transaction() as conn:
        if conn.execute("SELECT 1 FROM suites WHERE id = ?", (HAND_SUITE,)).fetchone() is None:
            conn.execute("INSERT INTO suites(id, method, n, seed, params, created) VALUES (?, 'ontology', 4, 7, ?, ?)", (HAND_SUITE, json.dumps(params), now()))
            conn.executemany(
                "INSERT INTO suite_items(suite_id, target_id, position, background_id, keyword, level, distance) VALUES (?, ?, ?, ?, ?, ?, 0.5)",
                [(HAND_SUITE, t["id"], p, bg, kw, level) for t in targets for p, (bg, kw, level, _) in ITEMS.items()],
            )
        conn.execute("INSERT INTO runs(id, model, suite_id, status, created, finished) VALUES (?, ?, ?, 'done', ?, ?)", (run_id, model, HAND_SUITE, now(), now()))
        conn.executemany(
            "INSERT INTO run_images(run_id, target_id, position, predicted, true_prob, max_prob, correct, emb_topk_mean, emb_max, emb_mean, distance) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
    return run_id


@pytest.fixture
def hand_workspace(suite_workspace) -> Workspace:
    """``suite_workspace`` with the hand-made runs ``hand-tiny`` (model tiny) and ``hand-flip`` (bg-only, flipped)."""
    add_hand_run(suite_workspace, "hand-tiny", "tiny")
    add_hand_run(suite_workspace, "hand-flip", "bg-only", flip=True)
    return suite_workspace


def test_keyword_only_on_failing_composites_comes_first_with_its_count_and_interval(hand_workspace):
    table = failure_table(hand_workspace, "hand-tiny")
    keywords = table.keywords
    assert list(keywords.columns) == KEYWORD_COLUMNS
    assert table.keyword_source == f"table {BACKGROUND_TABLE}"
    n_targets = 6
    top = keywords.iloc[0]
    assert top["keyword"] == "tree"
    assert (top["count"], top["errors"], top["targets"], top["level"]) == (2 * n_targets, 2 * n_targets, n_targets, 1)
    assert top["error_rate"] == 1.0
    low, high = proportion_confint(2 * n_targets, 2 * n_targets, alpha=0.05, method="wilson")
    assert (top["error_low"], top["error_high"]) == pytest.approx((low, high))
    assert top["mean_drop"] == pytest.approx(ORIGINAL_PROB - FAIL_PROB)
    assert (top["drop_low"], top["drop_high"]) == pytest.approx((ORIGINAL_PROB - FAIL_PROB,) * 2)
    # sky and grass: half failing; sea and sand: never
    rates = dict(zip(keywords["keyword"], keywords["error_rate"]))
    assert rates == pytest.approx({"tree": 1.0, "sky": 0.5, "grass": 0.5, "sea": 0.0, "sand": 0.0})
    assert list(keywords["error_rate"]) == sorted(keywords["error_rate"], reverse=True)
    assert table.composites == 4 * n_targets
    assert table.error_rate == pytest.approx(0.5)


def test_every_interval_is_statsmodels_wilson_and_the_bootstrap_covers_the_mean(hand_workspace):
    keywords = failure_table(hand_workspace, "hand-tiny").keywords
    for row in keywords.itertuples(index=False):
        low, high = proportion_confint(row.errors, row.count, alpha=0.05, method="wilson")
        assert (row.error_low, row.error_high) == pytest.approx((low, high))
        assert row.drop_low <= row.mean_drop <= row.drop_high
    sky = keywords.set_index("keyword").loc["sky"]
    assert sky["drop_low"] < sky["mean_drop"] < sky["drop_high"]  # mixed drops: a real interval


def test_levels_group_by_the_drawn_keywords_level(hand_workspace):
    levels = failure_table(hand_workspace, "hand-tiny").levels
    assert list(levels.columns) == LEVEL_COLUMNS
    assert list(levels["level"]) == [0, 1, -1]  # by effect: 1.0, 0.5, 0.0
    assert list(levels["count"]) == [6, 12, 6]
    assert list(levels["error_rate"]) == pytest.approx([1.0, 0.5, 0.0])


def test_min_count_drops_rare_keywords(hand_workspace):
    keywords = failure_table(hand_workspace, "hand-tiny", min_count=7).keywords
    assert set(keywords["keyword"]) == {"tree", "sky", "grass"}  # 12 composites each; sea, sand 6
    with pytest.raises(InvalidInputError, match="min_count"):
        failure_table(hand_workspace, "hand-tiny", min_count=0)


def test_bootstrap_is_seeded():
    rng = np.random.default_rng(3)
    correct, drop = rng.random(40) > 0.5, rng.normal(0.2, 0.1, 40)
    assert group_statistics(correct, drop) == group_statistics(correct, drop)
    assert group_statistics(correct, drop, seed=1)["drop_low"] != group_statistics(correct, drop, seed=2)["drop_low"]


def test_keyword_model_matrix_puts_models_side_by_side(hand_workspace):
    matrix = keyword_model_matrix(hand_workspace, ["hand-tiny", "hand-flip"])
    assert list(matrix.columns) == ["tiny", "bg-only"]
    assert matrix.loc["tree"].tolist() == pytest.approx([1.0, 0.0])
    assert matrix.loc["sea"].tolist() == pytest.approx([0.0, 1.0])
    assert matrix.attrs["counts"]["tree"] == 12 and matrix.attrs["suite_id"] == HAND_SUITE
    assert set(keyword_model_matrix(hand_workspace, ["hand-tiny", "hand-flip"], min_count=7).index) == {"tree", "sky", "grass"}
    with pytest.raises(InvalidInputError, match="one run per model"):
        keyword_model_matrix(hand_workspace, ["hand-tiny", "hand-tiny"])
    with pytest.raises(InvalidInputError, match="no runs nope"):
        keyword_model_matrix(hand_workspace, ["nope"])


def test_a_class_filter_counts_only_its_composites(hand_workspace):
    discs = hand_workspace.query_one("SELECT COUNT(*) AS n FROM targets WHERE class_name = 'disc'")["n"]
    assert 0 < discs < 6
    table = failure_table(hand_workspace, "hand-tiny", classes=["disc"])
    assert table.composites == 4 * discs and failure_table(hand_workspace, "hand-tiny").composites == 4 * 6
    assert table.keywords.set_index("keyword").loc["tree", "count"] == 2 * discs
    matrix = keyword_model_matrix(hand_workspace, ["hand-tiny", "hand-flip"], classes=["disc"])
    assert matrix.attrs["counts"]["tree"] == 2 * discs and matrix.loc["tree"].tolist() == pytest.approx([1.0, 0.0])
    with pytest.raises(InvalidInputError, match="circle not among the classes of run hand-tiny; its classes are disc, square"):
        failure_table(hand_workspace, "hand-tiny", classes=["circle"])
    with pytest.raises(InvalidInputError, match="none given"):
        failure_table(hand_workspace, "hand-tiny", classes=[])


def test_without_a_keyword_table_the_drawn_keywords_count(hand_workspace):
    delete_keyword_table(hand_workspace, BACKGROUND_TABLE)
    table = failure_table(hand_workspace, "hand-tiny")
    assert table.keyword_source == "suite items"
    assert list(table.keywords["keyword"]) == ["sky", "tree", "grass"]  # sky, tree: only on failures; ties by name
    assert list(table.keywords["count"]) == [6, 6, 6]
    assert list(table.keywords["level"]) == [0, 1, 1]
    matrix = keyword_model_matrix(hand_workspace, ["hand-tiny", "hand-flip"], min_count=7)
    assert matrix.empty and list(matrix.columns) == ["tiny", "bg-only"]


def test_unknown_run_names_the_recent_ones(hand_workspace):
    with pytest.raises(NotFoundError, match="hand-"):
        failure_table(hand_workspace, "nope")


def test_cli_prints_the_keyword_table_as_one_json_object(hand_workspace, capsys):
    code = main(["failures", "--workspace", str(hand_workspace.root), "--run", "hand-tiny", "--min-count", "7", "--json"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["run"] == "hand-tiny" and result["model"] == "tiny"
    assert [row["keyword"] for row in result["keywords"]][0] == "tree"
    assert {row["keyword"] for row in result["keywords"]} == {"tree", "sky", "grass"}


def test_cli_counts_only_the_classes_given(hand_workspace, capsys):
    discs = hand_workspace.query_one("SELECT COUNT(*) AS n FROM targets WHERE class_name = 'disc'")["n"]
    assert main(["failures", "--workspace", str(hand_workspace.root), "--run", "hand-tiny", "--classes", "disc", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["composites"] == 4 * discs
    assert main(["failures", "--workspace", str(hand_workspace.root), "--run", "hand-tiny", "--classes", "circle"]) == 2
    assert "circle not among the classes" in capsys.readouterr().err


def test_cli_unknown_run_is_a_one_line_error(hand_workspace, capsys):
    code = main(["failures", "--workspace", str(hand_workspace.root), "--run", "nope", "--json"])
    assert code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
