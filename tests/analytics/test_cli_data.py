"""``python -m analytics`` info / add-targets / add-backgrounds / demo, through ``main([...])``."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

import analytics.demo.steps as demo_steps
from analytics.cli import EXIT_USER_ERROR, main
from analytics.data import ClassMapping, list_class_mappings, list_classes, set_class_mapping
from analytics.demo.steps import DemoStep
from analytics.workspace import Workspace, class_mapping_key


def run(capsys, *argv: str) -> tuple[int, dict | None, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 and out.strip() else None), err


def snapshot(workspace: Workspace) -> tuple:
    """Everything an import could change: row counts, classes and stored array files."""
    counts = tuple(workspace.query_one(f"SELECT COUNT(*) AS n FROM {t}")["n"] for t in ("targets", "classes", "backgrounds"))
    return counts, list_classes(workspace), sorted(p.name for p in workspace.arrays_dir.rglob("*.npy"))


def target_folder(root: Path, classes=("tennis_ball", "widget"), empty_masks: bool = False) -> Path:
    rng = np.random.default_rng(0)
    for name in classes:
        for i in range(2):
            image = rng.integers(0, 255, (50, 70, 3), dtype=np.uint8)
            mask = np.zeros((50, 70), np.uint8)
            if not empty_masks:
                mask[10:40, 20:50] = 255
            (root / "images" / name).mkdir(parents=True, exist_ok=True)
            (root / "masks" / name).mkdir(parents=True, exist_ok=True)
            cv2.imwrite(str(root / "images" / name / f"item{i}.png"), image)
            cv2.imwrite(str(root / "masks" / name / f"item{i}.png"), mask)
    return root


def photo_folder(root: Path, n: int = 2) -> Path:
    root.mkdir(parents=True)
    rng = np.random.default_rng(1)
    for i in range(n):
        cv2.imwrite(str(root / f"scene{i}.jpg"), rng.integers(0, 255, (300, 400, 3), dtype=np.uint8))
    return root


def test_info_reports_the_workspace(capsys, tiny_workspace):
    code, info, _ = run(capsys, "info", "--workspace", str(tiny_workspace.root), "--json")
    assert code == 0
    assert info["targets"] == 6 and info["classes"] == 2 and info["backgrounds"] == 12
    assert info["models"] == [] and info["schema_version"] == tiny_workspace.schema_version
    assert info["class_counts"] == {"disc": 3, "square": 3} and info["image_size"] == 64


def test_info_lists_model_names(capsys, tiny_workspace):
    with tiny_workspace.transaction() as conn:
        conn.execute("INSERT INTO models(name, source, spec, added) VALUES ('lite0', 'zoo', '{}', 'now')")
    assert run(capsys, "info", "--workspace", str(tiny_workspace.root), "--json")[1]["models"] == ["lite0"]


def test_info_on_a_missing_workspace_is_one_line_and_creates_nothing(capsys, tmp_path):
    code, _, err = run(capsys, "info", "--workspace", str(tmp_path / "none"), "--json")
    assert code == EXIT_USER_ERROR
    assert err.startswith("error: no workspace at") and err.count("\n") == 1
    assert not (tmp_path / "none").exists()


def test_add_targets_creates_classes_with_imagenet_indices(capsys, tiny_workspace, tmp_path):
    folder = target_folder(tmp_path / "set")
    code, out, _ = run(capsys, "add-targets", "--workspace", str(tiny_workspace.root), "--path", str(folder), "--layout", "folder",
                       "--package", "my-set", "--licence", "CC0-1.0", "--json")
    assert code == 0
    assert out["added"] == 4 and out["rejected"] == []
    assert out["new_classes"] == {"tennis_ball": [852], "widget": []}
    assert out["classes_without_imagenet"] == ["widget"]
    classes = list_classes(tiny_workspace)
    assert classes["tennis_ball"] == [852] and classes["widget"] == []
    row = tiny_workspace.query_one("SELECT package, licence FROM targets WHERE id = 'widget/item0'")
    assert (row["package"], row["licence"]) == ("my-set", "CC0-1.0")


def test_an_imagenet_map_names_the_indices(capsys, tiny_workspace, tmp_path):
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({"widget": [409, 892], "tennis_ball": 852}))
    code, out, _ = run(capsys, "add-targets", "--workspace", str(tiny_workspace.root), "--path", str(target_folder(tmp_path / "set")),
                       "--layout", "folder", "--imagenet-map", str(mapping), "--json")
    assert code == 0 and out["new_classes"] == {"tennis_ball": [852], "widget": [409, 892]}


@pytest.mark.parametrize("content, message", [("{", "not a readable JSON file"), ('{"widget": 1000}', "must map to ImageNet-1k indices in 0..999")])
def test_a_bad_imagenet_map_is_refused(capsys, tiny_workspace, tmp_path, content, message):
    mapping = tmp_path / "map.json"
    mapping.write_text(content)
    before = snapshot(tiny_workspace)
    code, _, err = run(capsys, "add-targets", "--workspace", str(tiny_workspace.root), "--path", str(target_folder(tmp_path / "set")),
                       "--layout", "folder", "--imagenet-map", str(mapping))
    assert code == EXIT_USER_ERROR and str(mapping) in err and message in err
    assert snapshot(tiny_workspace) == before


def test_nothing_valid_to_add_exits_2_and_leaves_the_workspace_unchanged(capsys, tiny_workspace, tmp_path):
    before = snapshot(tiny_workspace)
    code, _, err = run(capsys, "add-targets", "--workspace", str(tiny_workspace.root),
                       "--path", str(target_folder(tmp_path / "set", empty_masks=True)), "--layout", "folder", "--json")
    assert code == EXIT_USER_ERROR
    assert err.count("\n") == 1 and "no valid targets to add (4 rejected" in err and "mask is empty" in err
    assert snapshot(tiny_workspace) == before


def test_re_importing_the_same_targets_is_refused_as_duplicates(capsys, tiny_workspace, tmp_path):
    folder = target_folder(tmp_path / "set")
    args = ("add-targets", "--workspace", str(tiny_workspace.root), "--path", str(folder), "--layout", "folder", "--json")
    assert run(capsys, *args)[0] == 0
    before = snapshot(tiny_workspace)
    code, _, err = run(capsys, *args)
    assert code == EXIT_USER_ERROR and "is already in the workspace" in err
    assert snapshot(tiny_workspace) == before


def test_existing_classes_only_rejects_unknown_classes(capsys, tiny_workspace, tmp_path):
    folder = target_folder(tmp_path / "set", classes=("disc", "owl"))
    code, out, _ = run(capsys, "add-targets", "--workspace", str(tiny_workspace.root), "--path", str(folder), "--layout", "folder",
                       "--existing-classes-only", "--json")
    assert code == 0 and out["added"] == 2 and out["new_classes"] == {}
    assert {Path(r["file"]).parent.name for r in out["rejected"]} == {"owl"}
    assert all("unknown class 'owl'; known: disc, square" in r["reason"] for r in out["rejected"])


def test_a_failed_import_does_not_create_a_workspace(capsys, tmp_path):
    code, _, _ = run(capsys, "add-targets", "--workspace", str(tmp_path / "new"),
                     "--path", str(target_folder(tmp_path / "set", empty_masks=True)), "--layout", "folder")
    assert code == EXIT_USER_ERROR and not (tmp_path / "new").exists()
    code, out, _ = run(capsys, "add-targets", "--workspace", str(tmp_path / "new"),
                       "--path", str(target_folder(tmp_path / "ok", classes=("widget",))), "--layout", "folder", "--json")
    assert code == 0 and out["added"] == 2 and (tmp_path / "new" / "backdrop.sqlite").exists()


def test_home_is_for_cutouts_only(capsys, tiny_workspace, tmp_path):
    code, _, err = run(capsys, "add-targets", "--workspace", str(tiny_workspace.root), "--path", str(tmp_path),
                       "--layout", "folder", "--home", "x.jpg")
    assert code == EXIT_USER_ERROR and "--home is only used with --layout cutouts" in err


def test_cutouts_on_a_home_photo(capsys, tiny_workspace, tmp_path):
    rgba = np.zeros((30, 30, 4), np.uint8)
    rgba[5:25, 5:25] = (0, 200, 0, 255)
    (tmp_path / "cuts" / "widget").mkdir(parents=True)
    cv2.imwrite(str(tmp_path / "cuts" / "widget" / "w.png"), rgba)
    home = photo_folder(tmp_path / "homes", n=1) / "scene0.jpg"
    code, out, _ = run(capsys, "add-targets", "--workspace", str(tiny_workspace.root), "--path", str(tmp_path / "cuts"),
                       "--layout", "cutouts", "--home", str(home), "--json")
    assert code == 0 and out["added"] == 1


def test_add_backgrounds_with_crops(capsys, tiny_workspace, tmp_path):
    folder = photo_folder(tmp_path / "pool")
    code, out, _ = run(capsys, "add-backgrounds", "--workspace", str(tiny_workspace.root), "--path", str(folder),
                       "--crops", "3", "--licence", "CC-BY-4.0", "--json")
    assert code == 0 and out["added"] >= 4 and out["rejected"] == []
    rows = tiny_workspace.query("SELECT id, licence FROM backgrounds WHERE id LIKE 'scene%'")
    assert len(rows) == out["added"] and {r["licence"] for r in rows} == {"CC-BY-4.0"}


def test_zero_backgrounds_exit_2_with_one_line(capsys, tiny_workspace, tmp_path):
    (tmp_path / "empty").mkdir()
    before = snapshot(tiny_workspace)
    code, _, err = run(capsys, "add-backgrounds", "--workspace", str(tiny_workspace.root), "--path", str(tmp_path / "empty"), "--json")
    assert code == EXIT_USER_ERROR and err.count("\n") == 1 and "no background photos found" in err and str(tmp_path / "empty") in err
    (tmp_path / "tiny").mkdir()
    cv2.imwrite(str(tmp_path / "tiny" / "speck.png"), np.zeros((8, 8, 3), np.uint8))
    code, _, err = run(capsys, "add-backgrounds", "--workspace", str(tiny_workspace.root), "--path", str(tmp_path / "tiny"))
    assert code == EXIT_USER_ERROR and "no valid background photos to add (1 rejected" in err and "speck.png" in err
    assert snapshot(tiny_workspace) == before


def test_bad_crop_count(capsys, tiny_workspace, tmp_path):
    code, _, err = run(capsys, "add-backgrounds", "--workspace", str(tiny_workspace.root), "--path", str(tmp_path), "--crops", "0")
    assert code == EXIT_USER_ERROR and "--crops must be an integer >= 1; got 0" in err


def test_demo_runs_its_steps_once_with_progress_on_stderr(capsys, tmp_path, monkeypatch):
    calls = []

    def step(workspace, context):
        context.report(1, 2, "fake")
        context.report(2, 2, "fake")
        workspace.set_meta("fake_done", "yes")
        calls.append(workspace.root)

    monkeypatch.setattr(demo_steps, "DEMO_STEPS", [DemoStep("fake", step, lambda ws: ws.get_meta("fake_done") == "yes")])
    code, out, err = run(capsys, "demo", "--workspace", str(tmp_path / "ws"), "--json")
    assert code == 0 and out["steps_run"] == ["fake"] and out["steps_skipped"] == []
    assert "fake" in err and "2/2" in err  # the tqdm bar
    code, out, _ = run(capsys, "demo", "--workspace", str(tmp_path / "ws"), "--json")
    assert out["steps_run"] == [] and out["steps_skipped"] == ["fake"] and len(calls) == 1


# -- class mappings --------------------------------------------------------------------------
def test_add_targets_maps_new_classes_with_the_shared_resolver(capsys, tiny_workspace, tmp_path):
    folder = target_folder(tmp_path / "set", classes=("tennis_ball", "00_dog", "widget"))
    code, out, _ = run(capsys, "add-targets", "--workspace", str(tiny_workspace.root), "--path", str(folder), "--layout", "folder", "--json")
    assert code == 0
    assert out["new_class_mappings"]["00_dog"] == {"imagenet": [], "in9": "dog", "label": None}
    assert out["unmapped_classes"] == ["widget"]  # 00_dog has no ImageNet index but IN-9 and ImageNet models can score it
    assert out["unscored_classes"] == ["widget"]  # no model registered: the classes without a mapping
    assert list_class_mappings(tiny_workspace)["00_dog"] == ClassMapping(in9="dog")


def test_set_class_maps_an_imported_class_and_changes_its_key(capsys, tiny_workspace):
    key = class_mapping_key(tiny_workspace, ["disc"])
    code, out, _ = run(capsys, "set-class", "--workspace", str(tiny_workspace.root), "--class", "disc", "--imagenet", "852, 853", "--json")
    assert code == 0 and out["imagenet"] == [852, 853] and out["in9"] is None and out["mapping_key"] != key
    assert list_classes(tiny_workspace)["disc"] == [852, 853]
    code, out, _ = run(capsys, "set-class", "--workspace", str(tiny_workspace.root), "--class", "disc", "--in9", "dog", "--label", "ball", "--json")
    assert code == 0 and (out["imagenet"], out["in9"], out["label"]) == ([], "dog", "ball")
    assert list_class_mappings(tiny_workspace)["disc"] == ClassMapping(in9="dog", label="ball")


@pytest.mark.parametrize(
    "argv, message",
    [
        (("--class", "nope", "--in9", "dog"), "no class 'nope'"),
        (("--class", "disc"), "give ImageNet indices, an IN-9 class or a custom label"),
        (("--class", "disc", "--imagenet", "tennis"), "--imagenet must be comma-separated ImageNet-1k indices"),
        (("--class", "disc", "--imagenet", "1000"), "0..999"),
    ],
)
def test_set_class_errors_are_one_line_and_change_nothing(capsys, tiny_workspace, argv, message):
    before = snapshot(tiny_workspace)
    code, _, err = run(capsys, "set-class", "--workspace", str(tiny_workspace.root), *argv)
    assert code == EXIT_USER_ERROR and err.count("\n") == 1 and message in err
    assert snapshot(tiny_workspace) == before


def test_classes_lists_mappings_and_searches_imagenet(capsys, tiny_workspace):
    set_class_mapping(tiny_workspace, "disc", imagenet=[852])
    code, out, _ = run(capsys, "classes", "--workspace", str(tiny_workspace.root), "--json")
    assert code == 0
    assert out["classes"]["disc"] == {"imagenet": [852], "in9": None, "label": None, "targets": 3}
    assert out["classes"]["square"]["imagenet"] == []
    code, out, _ = run(capsys, "classes", "--search", "tennis", "--json")
    assert code == 0 and out["matches"][0] == {"index": 852, "wnid": "n04409515", "name": "tennis ball"}


def test_add_backgrounds_streams_in_batches_and_an_interrupted_import_resumes(capsys, tiny_workspace, tmp_path, monkeypatch, sql_trace):
    """Issue 28.5: add-backgrounds held every decoded image until its one transaction (5.3 GB at
    20,000). Each crop now goes to the store as it is read and rows commit per batch: a few crops
    are alive at once, whatever the pool's size. An interruption keeps the committed batches and
    no array of the batch it was writing; running the import again adds the rest."""
    import weakref

    from analytics.data import batched_writes, datasets

    folder, root = photo_folder(tmp_path / "pool", n=9), str(tiny_workspace.root)
    monkeypatch.setattr(batched_writes, "BACKGROUND_BATCH", 2)
    before = snapshot(tiny_workspace)
    alive, most, made, resize = [0], [0], [], datasets.resize_square

    def counted(image, mask, size):
        crop, _ = resize(image, mask, size)
        made.append(1)
        if len(made) == 5:  # the 5th crop: a batch of 2 is half written
            raise KeyboardInterrupt
        alive[0] += 1
        most[0] = max(most[0], alive[0])
        weakref.finalize(crop, lambda: alive.__setitem__(0, alive[0] - 1))
        return crop, None

    monkeypatch.setattr(datasets, "resize_square", counted)
    with pytest.raises(KeyboardInterrupt):
        main(["add-backgrounds", "--workspace", root, "--path", str(folder), "--json"])
    rows = tiny_workspace.query("SELECT id, image_hash FROM backgrounds WHERE id LIKE 'scene%' ORDER BY id")
    assert [r["id"] for r in rows] == ["scene0", "scene1", "scene2", "scene3"]  # two batches committed
    arrays = sorted(p.name for p in tiny_workspace.arrays_dir.rglob("*.npy"))
    assert arrays == sorted(before[2] + [f"{r['image_hash']}.npy" for r in rows])  # scene4's array was removed again
    assert not list(tiny_workspace.arrays_dir.rglob("*.tmp")) and most[0] <= 3

    most[0] = 0
    sql_trace.clear()
    code, out, _ = run(capsys, "add-backgrounds", "--workspace", root, "--path", str(folder), "--json")
    assert code == 0 and out["added"] == 5 and len(out["rejected"]) == 4 and "already in the workspace" in out["rejected"][0]["reason"]
    assert most[0] <= 3  # 9 photos read, never more than a few crops alive
    assert sum(s.sql == "COMMIT" for s in sql_trace) == 3  # 5 new rows in batches of 2
    assert snapshot(tiny_workspace)[0][2] == before[0][2] + 9
