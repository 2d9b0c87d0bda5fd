"""``python -m analytics keywords``: keyword tables of a workspace from a CSV, the reference HDF5 and a classifier."""

from __future__ import annotations

import json

import h5py
import numpy as np

from analytics.cli import EXIT_USER_ERROR, main
from analytics.data import Background, list_backgrounds, list_targets, store_backgrounds
from analytics.keywords import list_keyword_tables, load_keyword_table
from analytics.workspace import Workspace

LONG_CSV = """image,keyword
disc/0,sky
disc/0,tree
square/1,sea
bg00,sky
bg03,sand
ghost,tree
nobody/7,sea
"""


def run(capsys, *argv: str) -> tuple[int, dict | None, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 and out.strip() else None), err


def keywords_by_id(workspace: Workspace, name: str) -> dict[str, list[str]]:
    table = load_keyword_table(workspace, name)
    return {item: table.keywords_of(row) for row, item in enumerate(table.ids)}


def test_long_csv_keyed_by_workspace_ids_builds_both_tables(capsys, tiny_workspace, tmp_path):
    path = tmp_path / "kw.csv"
    path.write_text(LONG_CSV)
    code, out, err = run(capsys, "keywords", "--workspace", str(tiny_workspace.root), "--backend", "precomputed", "--file", str(path), "--json")
    assert code == 0, err
    targets = keywords_by_id(tiny_workspace, out["tables"]["target"])
    assert list(targets) == list_targets(tiny_workspace)["id"].tolist()
    assert targets["disc/0"] == ["sky", "tree"] and targets["square/1"] == ["sea"] and targets["disc/1"] == []
    pool = keywords_by_id(tiny_workspace, out["tables"]["background"])
    assert list(pool) == list_backgrounds(tiny_workspace)["id"].tolist()
    assert pool["bg00"] == ["sky"] and pool["bg03"] == ["sand"] and pool["bg01"] == []
    target_table = load_keyword_table(tiny_workspace, out["tables"]["target"])
    assert target_table.labels == list_targets(tiny_workspace)["class_name"].tolist()
    assert target_table.vocabulary == ["sky", "tree", "sea", "sand"]
    assert out["unknown"] == {"count": 2, "first": ["ghost", "nobody/7"]}
    assert out["without_rows"]["target"]["count"] == 4 and out["without_rows"]["background"]["count"] == 10
    assert out["summary"]["target"]["items_without_keywords"] == 4
    assert "warning: 2 image names of the file match no target or background" in err
    listed = list_keyword_tables(tiny_workspace).set_index("name")
    assert listed.loc[out["tables"]["target"], "source"] == "file kw.csv (csv-long)"
    assert listed.loc[out["tables"]["target"], "vocabulary"] == "4 keywords: sky, tree, sea, sand"


def test_wide_csv_matches_original_file_names_and_covers_every_crop(capsys, tiny_workspace, tmp_path):
    image = np.zeros((64, 64, 3), np.uint8)
    store_backgrounds(tiny_workspace, [Background(f"beach@{i},0,64", image + i, "/photos/beach.jpg", crop=(i, 0, 64)) for i in range(2)])
    path = tmp_path / "wide.csv"
    path.write_text("image,sky,sea\nbeach.jpg,0.9,0.2\n")
    args = ["keywords", "--workspace", str(tiny_workspace.root), "--backend", "precomputed", "--file", str(path), "--items", "backgrounds", "--json"]
    code, _, err = run(capsys, *args)
    assert code == EXIT_USER_ERROR and "scores are not 0/1" in err and "--threshold" in err
    code, out, _ = run(capsys, *args, "--threshold", "0.5")
    assert code == 0 and set(out["tables"]) == {"background"} and out["matched"] == {"background": 2}
    pool = keywords_by_id(tiny_workspace, out["tables"]["background"])
    assert pool["beach@0,0,64"] == pool["beach@1,0,64"] == ["sky"]


def test_a_name_shared_by_two_imported_files_is_refused(capsys, tiny_workspace, tmp_path):
    image = np.zeros((64, 64, 3), np.uint8)
    store_backgrounds(tiny_workspace, [Background(f"{folder}-beach", image + i, f"/{folder}/beach.jpg") for i, folder in enumerate("ab")])
    path = tmp_path / "kw.csv"
    path.write_text("image,keyword\nbeach,sea\n")
    code, _, err = run(capsys, "keywords", "--workspace", str(tiny_workspace.root), "--backend", "precomputed", "--file", str(path))
    assert code == EXIT_USER_ERROR and err.count("\n") == 1
    assert "image name 'beach' matches 2 imported files" in err and "workspace id" in err


def test_csv_naming_no_item_of_a_kind_is_an_error(capsys, tiny_workspace, tmp_path):
    path = tmp_path / "kw.csv"
    path.write_text("image,keyword\nbg00,sky\n")
    code, _, err = run(capsys, "keywords", "--workspace", str(tiny_workspace.root), "--backend", "precomputed", "--file", str(path), "--items", "targets")
    assert code == EXIT_USER_ERROR
    assert "names none of the 6 targets" in err and "'disc/0'" in err


def test_options_of_another_backend_are_refused(capsys, tiny_workspace, tmp_path):
    code, _, err = run(capsys, "keywords", "--workspace", str(tiny_workspace.root), "--file", str(tmp_path / "kw.csv"))
    assert code == EXIT_USER_ERROR and "--file do not apply to --backend classifier-patch" in err
    code, _, err = run(capsys, "keywords", "--workspace", str(tiny_workspace.root), "--backend", "precomputed")
    assert code == EXIT_USER_ERROR and "needs --file" in err


def test_reference_hdf5_with_row_names(capsys, tiny_workspace, tmp_path, reference_keywords_path):
    with h5py.File(reference_keywords_path, "r") as handle:
        data = handle["val/data"][()]
    ids = list_targets(tiny_workspace)["id"].tolist()
    rows = [10, 3, 700, 5, 1711, 42]  # reference row of each target
    names = [f"in9-row-{row}" for row in range(len(data))]
    for item, row in zip(ids, rows):
        names[row] = item
    names_file = tmp_path / "rows.txt"
    names_file.write_text("\n".join(names) + "\n")
    base = ["keywords", "--workspace", str(tiny_workspace.root), "--backend", "precomputed", "--file", str(reference_keywords_path), "--items", "targets"]
    code, _, err = run(capsys, *base)
    assert code == EXIT_USER_ERROR and "names no images" in err
    code, out, _ = run(capsys, *base, "--row-names", str(names_file), "--json")
    assert code == 0
    table = load_keyword_table(tiny_workspace, out["tables"]["target"])
    assert table.ids == ids and len(table.vocabulary) == 515 and table.vocabulary[0].startswith("ade:")
    np.testing.assert_array_equal(table.scores, data[rows, 1:])
    assert (table.present[:, 150:].sum(axis=1) == 1).all()  # the top-1 Places365 scene
    assert out["unknown"]["count"] == len(data) - len(ids) and out["unknown"]["first"][0] == "in9-row-0"


def test_classifier_patch_on_a_registered_model(capsys, tiny_model_workspace):
    code, out, err = run(
        capsys, "keywords", "--workspace", str(tiny_model_workspace.root), "--model", "tiny", "--grid", "1", "--items", "targets", "--json"
    )
    assert code == 0, err
    name = out["tables"]["target"]
    assert name.startswith("classifier-patch/target/") and out["backend"] == "classifier-patch"
    table = load_keyword_table(tiny_model_workspace, name)
    assert table.vocabulary == ["disc", "square"] and table.params["model"] == "tiny" and table.params["grid"] == 1
    assert out["summary"]["target"]["n_items"] == 6
    assert list_keyword_tables(tiny_model_workspace).set_index("name").loc[name, "source"] == "model tiny"
