"""``python -m analytics add-targets --layout coco``: COCO instance segmentation from the command line,
what was skipped printed by reason, and every bad input refused in one line with the workspace unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from analytics.data import fit_square, list_classes, list_targets, load_targets
from analytics.data.instances import CROWD, NOT_LARGEST, OTHER_CATEGORY, TOO_SMALL
from tests.analytics.test_cli_data import run, snapshot
from tests.fixtures.coco import BAD_COCO


def coco_args(export, workspace, *extra: str) -> list[str]:
    return ["add-targets", "--layout", "coco", "--annotations", str(export.annotations), "--images", str(export.images),
            "--workspace", str(workspace.root), "--json", *extra]  # fmt: skip


def test_add_targets_from_a_coco_export(capsys, tiny_workspace, coco_export):
    code, out, err = run(capsys, *coco_args(coco_export, tiny_workspace))
    assert code == 0, err
    assert out["added"] == 3 and out["rejected"] == []
    assert out["new_classes"] == {"tennis_ball": [852], "widget": []} and out["unmapped_classes"] == ["widget"]
    assert out["skipped"] == {
        CROWD: {"count": 1, "examples": ["annotation 3 (image 1, a.png)"]},
        TOO_SMALL: {"count": 1, "examples": ["annotation 4 (image 1, a.png)"]},
        NOT_LARGEST: {"count": 1, "examples": ["annotation 2 (image 1, a.png)"]},
    }
    targets = list_targets(tiny_workspace).set_index("id")
    assert {"tennis_ball/a-1", "widget/b-5", "widget/c-6"} <= set(targets.index)
    assert targets.at["widget/c-6", "origin"] == str(coco_export.images / "c.png")
    _, (mask,) = load_targets(tiny_workspace, ["tennis_ball/a-1"])
    assert np.array_equal(mask, fit_square(coco_export.pictures[1], coco_export.masks[1], 64)[1])


def test_all_instances_of_chosen_classes_with_package_and_licence(capsys, tiny_workspace, coco_export):
    code, out, err = run(capsys, *coco_args(coco_export, tiny_workspace, "--all-instances", "--classes", "tennis_ball", "--licence", "CC0-1.0"))
    assert code == 0, err
    assert out["added"] == 2 and set(out["skipped"]) == {CROWD, OTHER_CATEGORY}
    assert out["skipped"][OTHER_CATEGORY]["count"] == 3
    added = list_targets(tiny_workspace).set_index("id").loc[["tennis_ball/a-1", "tennis_ball/a-2"]]
    assert added["licence"].tolist() == ["CC0-1.0", "CC0-1.0"]
    assert "widget" not in list_classes(tiny_workspace)


def test_everything_skipped_is_one_line_with_the_counts(capsys, tiny_workspace, coco_export):
    before = snapshot(tiny_workspace)
    code, _, err = run(capsys, *coco_args(coco_export, tiny_workspace, "--min-area", "0.9"))
    assert code == 2 and err.count("\n") == 1
    assert "no targets to add, every instance was skipped (5 smaller than the minimum area; 1 crowd region (iscrowd=1))" in err
    assert snapshot(tiny_workspace) == before


@pytest.mark.parametrize("how", sorted(BAD_COCO))
def test_bad_input_exits_2_with_one_line_and_imports_nothing(capsys, tiny_workspace, coco_export, broken_coco, how):
    before = snapshot(tiny_workspace)
    broken_coco(coco_export, how)
    code, _, err = run(capsys, *coco_args(coco_export, tiny_workspace))
    assert code == 2 and err.count("\n") == 1 and BAD_COCO[how] in err
    assert snapshot(tiny_workspace) == before


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--layout", "coco", "--path", "x"], "--layout coco reads --annotations (the COCO JSON) and --images (a folder or .zip), not --path"),
        (["--layout", "coco", "--annotations", "x.json"], "--layout coco reads --annotations (the COCO JSON) and --images (a folder or .zip), not --path"),
        (["--layout", "folder", "--path", "x", "--all-instances"], "--all-instances only go with --layout coco"),
        (["--layout", "folder"], "--layout folder reads --path, a folder or .zip"),
    ],
)
def test_sources_must_fit_the_layout(capsys, tiny_workspace, argv, message):
    before = snapshot(tiny_workspace)
    code, _, err = run(capsys, "add-targets", *argv, "--workspace", str(tiny_workspace.root))
    assert code == 2 and message in err
    assert snapshot(tiny_workspace) == before
