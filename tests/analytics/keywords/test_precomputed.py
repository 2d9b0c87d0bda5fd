"""Keyword tables: the reference HDF5, CSV and Backdrop HDF5 readers, the precomputed backend, the store."""

from __future__ import annotations

import h5py
import numpy as np
import pandas as pd
import pytest

from analytics.data import list_backgrounds, load_backgrounds
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.keywords import KeywordTable, import_keyword_table, list_keyword_tables, load_keyword_table, read_keyword_csv, read_keyword_file, readers, save_keyword_table
from analytics.keywords._base import BACKENDS, KeywordBackend
from analytics.keywords.precomputed import PrecomputedBackend, image_digest
from analytics.keywords.readers import write_keyword_file

OBJECTS = "Idx,Ratio,Train,Val,Stuff,Name\n1,0.1,1,1,1,sky\n2,0.1,1,1,1,screen;door;screen\n3,0.1,1,1,0,screen;silver\n"
SCENES = "/b/beach 0\n/s/sky 1\n"


def write_reference(folder, data: np.ndarray, *, names: bool = True):
    """A reference-format HDF5 with 3 ADE20K objects and 2 Places365 scenes (width 6)."""
    path = folder / "items.hdf5"
    with h5py.File(path, "w") as handle:
        handle.create_dataset("val/data", data=np.asarray(data, dtype=np.float32))
    if names:
        (folder / "object150_info.csv").write_text(OBJECTS)
        (folder / "categories_places365.txt").write_text(SCENES)
    return path


# label, sky, screen(59), screen(131) shares in percent, then beach / sky logits
PERCENT = np.array([[0, 90.0, 9.5, 0.5, 2.0, 1.0], [1, 40.0, 60.0, 0.0, -1.0, 3.0]])


def test_reference_format_names_and_presence(tmp_path):
    table = read_keyword_file(write_reference(tmp_path, PERCENT))
    assert table.vocabulary == ["ade:sky", "ade:screen-2", "ade:screen-3", "places:beach", "places:sky"]
    assert table.labels == ["0", "1"] and table.ids == ["0", "1"]
    assert table.params["share_scale"] == "percent"
    # 0.5 % is below the 1 % share; the top-1 scene is the arg-max logit
    assert table.keywords_of(0) == ["ade:sky", "ade:screen-2", "places:beach"]
    assert table.keywords_of(1) == ["ade:sky", "ade:screen-2", "places:sky"]
    np.testing.assert_array_equal(table.scores, PERCENT[:, 1:].astype(np.float32))


def test_reference_fractions_are_detected(tmp_path):
    fractions = PERCENT.copy()
    fractions[:, 1:4] /= 100
    table = read_keyword_file(write_reference(tmp_path, fractions))
    assert table.params["share_scale"] == "fraction"
    np.testing.assert_array_equal(table.present, read_keyword_file(write_reference(tmp_path, PERCENT)).present)


def test_reference_places_top_k(tmp_path):
    table = read_keyword_file(write_reference(tmp_path, PERCENT), places_top_k=2)
    assert table.present[:, 3:].all()


def test_real_reference_file(reference_keywords_path):
    table = read_keyword_file(reference_keywords_path)
    assert table.n_items == 1712 and len(table.vocabulary) == 515 == len(set(table.vocabulary))
    assert table.params["share_scale"] == "percent"
    np.testing.assert_array_equal(table.present[:, :150], table.scores[:, :150] > 1.0)
    assert (table.present[:, 150:].sum(axis=1) == 1).all()
    assert table.present[np.arange(table.n_items), 150 + table.scores[:, 150:].argmax(axis=1)].all()
    assert set(table.labels) == {str(label) for label in range(9)}


@pytest.mark.parametrize(
    "data, match",
    [
        (np.zeros((2, 5)), "has 5 columns; the reference format needs 1 label \\+ 3 ADE20K \\+ 2 Places365 = 6"),
        (np.where(np.eye(2, 6, 2) > 0, np.nan, PERCENT), "2 rows hold NaN"),
        (PERCENT - [0, 200, 0, 0, 0, 0], "shares must lie in"),
    ],
)
def test_reference_bad_input(tmp_path, data, match):
    with pytest.raises(InvalidInputError, match=match) as info:
        read_keyword_file(write_reference(tmp_path, data))
    assert "items.hdf5" in str(info.value)


def test_reference_without_names_files(tmp_path):
    with pytest.raises(InvalidInputError, match="object150_info.csv"):
        read_keyword_file(write_reference(tmp_path, PERCENT, names=False))


def test_unknown_format_and_missing_file(tmp_path):
    path = tmp_path / "keywords.txt"
    path.write_text("hello")
    with pytest.raises(InvalidInputError, match="keywords.txt: unknown format"):
        read_keyword_file(path)
    with pytest.raises(InvalidInputError, match="does not exist"):
        read_keyword_file(tmp_path / "nope.csv")


def test_csv_one_hot_and_scores(tmp_path):
    path = tmp_path / "kw.csv"
    pd.DataFrame({"id": ["a", "b"], "label": ["x", "y"], "sky": [1, 0], "sea": [0, 1]}).to_csv(path, index=False)
    table = read_keyword_file(path)
    assert table.vocabulary == ["sky", "sea"] and table.labels == ["x", "y"]
    assert table.keywords_of(0) == ["sky"] and table.keywords_of(1) == ["sea"]

    pd.DataFrame({"id": ["a", "b"], "sky": [0.9, 0.2], "sea": [0.4, 0.3]}).to_csv(path, index=False)
    with pytest.raises(InvalidInputError, match="kw.csv: scores are not 0/1, so the presence rule is unknown; give `threshold` or `top_k`$"):
        read_keyword_file(path)
    assert read_keyword_file(path, threshold=0.35).present.tolist() == [[True, True], [False, False]]
    assert read_keyword_file(path, top_k=1).present.tolist() == [[True, False], [False, True]]


def test_the_command_line_names_its_flags_where_python_names_parameters(tiny_workspace, tmp_path, capsys):
    from tests.fixtures.cli import cli_error

    path = tmp_path / "kw.csv"
    pd.DataFrame({"id": ["a", "b"], "sky": [0.9, 0.2], "sea": [0.4, 0.3]}).to_csv(path, index=False)
    argv = ["keywords", "--workspace", str(tiny_workspace.root), "--backend", "precomputed", "--file", str(path), "--items", "backgrounds"]
    assert cli_error(argv, capsys).endswith("give --threshold or --top-k")


@pytest.mark.parametrize(
    "frame, match",
    [
        (pd.DataFrame({"id": ["a"], "label": ["x"]}), "vocabulary is empty"),
        (pd.DataFrame({"id": ["a", "b"], "sky": [1, None]}), "NaN or empty value in column 'sky', row 2"),
        (pd.DataFrame({"sky": [1]}), r"needs an 'image' \(or 'id'\) column"),
        (pd.DataFrame({"id": ["a", "a"], "sky": [1, 0]}), "item ids must be unique; duplicated: 'a'"),
        (pd.DataFrame({"id": ["a"], "sky": ["yes"]}), "must be numeric"),
    ],
)
def test_csv_bad_input(tmp_path, frame, match):
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InvalidInputError, match=match) as info:
        read_keyword_file(path)
    assert "bad.csv" in str(info.value)


def test_export_round_trip(tmp_path, tiny_keywords):
    path = write_keyword_file(tiny_keywords, tmp_path / "export.h5")
    back = read_keyword_file(path)
    assert back.ids == tiny_keywords.ids and back.vocabulary == tiny_keywords.vocabulary
    assert back.labels == tiny_keywords.labels and back.params == tiny_keywords.params
    np.testing.assert_array_equal(back.present, tiny_keywords.present)
    np.testing.assert_array_equal(back.scores, tiny_keywords.scores)


def test_table_checks(tiny_keywords):
    with pytest.raises(InvalidInputError, match=r"present must have shape \(n_items, n_keywords\) = \(4, 5\)"):
        KeywordTable(ids=tiny_keywords.ids, vocabulary=tiny_keywords.vocabulary, scores=tiny_keywords.scores, present=tiny_keywords.present[:, :2])
    with pytest.raises(InvalidInputError, match="keyword names must be unique"):
        KeywordTable(ids=["a"], vocabulary=["x", "x"], scores=np.zeros((1, 2), np.float32), present=np.zeros((1, 2), bool))


def test_store_round_trip(tmp_path, tiny_keywords):
    from analytics.workspace import Workspace

    workspace = Workspace(tmp_path / "ws")
    save_keyword_table(workspace, tiny_keywords, name="tiny")
    listed = list_keyword_tables(workspace)
    assert listed["name"].tolist() == ["tiny"] and listed["n_items"].tolist() == [4] and listed["n_keywords"].tolist() == [5]
    back = load_keyword_table(workspace, "tiny")
    assert (back.ids, back.vocabulary, back.labels, back.params) == (
        tiny_keywords.ids, tiny_keywords.vocabulary, tiny_keywords.labels, tiny_keywords.params
    )
    np.testing.assert_array_equal(back.present, tiny_keywords.present)
    with pytest.raises(InvalidInputError, match="'tiny' already exists"):
        save_keyword_table(workspace, tiny_keywords, name="tiny")
    with pytest.raises(NotFoundError, match="no keyword table 'other'.*known: tiny"):
        load_keyword_table(workspace, "other")
    with pytest.raises(InvalidInputError, match="item_kind must be one of"):
        save_keyword_table(workspace, tiny_keywords, name="t2", item_kind="scene")


def test_registry_holds_precomputed():
    assert BACKENDS["precomputed"] is PrecomputedBackend
    assert issubclass(PrecomputedBackend, KeywordBackend)


def test_precomputed_backend_serves_workspace_backgrounds(tiny_workspace):
    ids = list_backgrounds(tiny_workspace)["id"].tolist()
    images = load_backgrounds(tiny_workspace, ids)
    scores = np.random.default_rng(0).random((len(ids), 3)).astype(np.float32)
    rule = {"start": 0, "stop": 3, "kind": "top-k", "value": 1}
    table = KeywordTable(ids=ids, vocabulary=["a", "b", "c"], scores=scores, present=np.eye(3, dtype=bool)[scores.argmax(1)], params={"rules": [rule]})
    save_keyword_table(tiny_workspace, table, name="pool", item_kind="background")

    backend = PrecomputedBackend.from_workspace(tiny_workspace, "pool")
    order = [5, 0, 3]
    np.testing.assert_array_equal(backend.scores(images[order]), scores[order])
    assert backend.table(images[order], [ids[i] for i in order]).present.tolist() == table.present[order].tolist()
    with pytest.raises(NotFoundError, match="image 0 of the batch has no precomputed keywords"):
        backend.scores(255 - images[:1])


def test_the_newest_table_of_each_kind(tmp_path, tiny_keywords):
    from analytics.keywords import newest_keyword_tables
    from analytics.workspace import Workspace

    workspace = Workspace(tmp_path / "ws")
    assert newest_keyword_tables(workspace) == {}
    for name, kind in (("pool", "background"), ("a", "target"), ("z", "target")):
        save_keyword_table(workspace, tiny_keywords, name=name, item_kind=kind)
    assert newest_keyword_tables(workspace) == {"background": "pool", "target": "z"}  # the last saved (same second: the last name)


def test_image_digest_matches_the_workspace_store(tiny_workspace):
    image = np.arange(2 * 2 * 3, dtype=np.uint8).reshape(2, 2, 3)
    assert image_digest(image) == tiny_workspace.put_array(image)


def test_long_csv_lists_keywords_per_image():
    table = read_keyword_csv(b"image,keyword\n007,sky\n007,sea\nNA,sand\n", name="long.csv")
    assert table.ids == ["007", "NA"] and table.vocabulary == ["sky", "sea", "sand"]  # names stay text
    assert table.keywords_of(0) == ["sky", "sea"] and table.keywords_of(1) == ["sand"]
    assert table.params == {"file": "long.csv", "format": "csv-long", "rules": [{"start": 0, "stop": 3, "kind": "threshold", "value": 0.5}]}


def test_long_csv_scores_and_presence_rules():
    data = b"image,keyword,score\na,sky,0.9\na,sea,0.2\nb,sea,0.7\nb,sand,0\n"
    assert read_keyword_csv(data, name="s.csv").present.tolist() == [[True, True, False], [False, True, False]]
    assert read_keyword_csv(data, name="s.csv", threshold=0.5).present.tolist() == [[True, False, False], [False, True, False]]
    assert read_keyword_csv(data, name="s.csv", top_k=1).present.tolist() == [[True, False, False], [False, True, False]]
    np.testing.assert_array_equal(read_keyword_csv(data, name="s.csv").scores, np.float32([[0.9, 0.2, 0.0], [0.0, 0.7, 0.0]]))


@pytest.mark.parametrize(
    "text, match",
    [
        ("image,keyword\na,sky\na,sky\n", r"image 'a' lists keyword 'sky' twice \(line 3\)"),
        ("image,keyword,weight\na,sky,1\n", r"unexpected: \['weight'\]"),
        ("image,keyword\na,sky\nb,\n", r"empty 'keyword' on line 3"),
        ("image,keyword\n,sky\n", r"empty 'image' on line 2"),
        ("image,keyword,score\na,sky,high\n", r"must be numeric"),
        ('image,keyword\n"a,sky\n', r"not a readable CSV"),
    ],
)
def test_long_csv_bad_input_is_named(text, match):
    with pytest.raises(InvalidInputError, match=match) as info:
        read_keyword_csv(text.encode(), name="upload.csv")
    assert str(info.value).startswith("keyword file upload.csv: ")


def test_csv_larger_than_the_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "MAX_CSV_BYTES", 2**20)
    path = tmp_path / "big.csv"
    path.write_bytes(b"image,keyword\n" + b"a,sky\n" * 200_000)
    with pytest.raises(InvalidInputError, match=r"big.csv: 1.1 MiB is more than the 1 MiB"):
        read_keyword_file(path)
    with pytest.raises(InvalidInputError, match=r"up.csv: 1.1 MiB is more than the 1 MiB"):
        read_keyword_csv(path.read_bytes(), name="up.csv")


def test_import_keeps_workspace_order_and_reports_unmatched(tiny_workspace):
    table = read_keyword_csv(b"image,keyword\nsquare/0,sea\nbg05,sky\nnowhere,sand\n", name="kw.csv")
    report = import_keyword_table(tiny_workspace, table, item_kinds=["target"])
    assert set(report.tables) == {"target"} and report.matched == {"target": 1}
    assert report.unknown == ["nowhere"]  # bg05 is a background: not unknown, just not asked for
    assert report.without_rows["target"] == ["disc/0", "disc/1", "disc/2", "square/1", "square/2"]
    stored = load_keyword_table(tiny_workspace, report.tables["target"])
    assert stored.keywords_of(3) == ["sea"] and stored.params["matched"] == 1 and stored.params["without_rows"] == 5
    assert report.to_dict()["without_rows"]["target"] == {"count": 5, "first": ["disc/0", "disc/1", "disc/2", "square/1", "square/2"]}
    with pytest.raises(InvalidInputError, match="row names for 3 rows"):
        import_keyword_table(tiny_workspace, table, row_names=["a"])


def test_names_files_of_any_size_are_refused_unread(tmp_path):
    """The names files next to a reference keyword file, and a row-names file, may be named on the
    server: a sparse 8 GiB one is refused from its size, in one line naming it, before it is read."""
    reference = write_reference(tmp_path, PERCENT)
    for name in ("object150_info.csv", "categories_places365.txt"):
        (tmp_path / name).write_text(OBJECTS if name.endswith(".csv") else SCENES)
        with open(tmp_path / name, "r+b") as handle:
            handle.truncate(8 << 30)  # sparse: no disk used
        with pytest.raises(InvalidInputError, match=rf"{name}: the .* is 8192\.0 MiB \(8589934592 bytes\), past the limit of 16\.0 MiB"):
            read_keyword_file(reference)
        (tmp_path / name).write_text(OBJECTS if name.endswith(".csv") else SCENES)
    rows = tmp_path / "rows.txt"
    rows.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InvalidInputError, match=r"row-names file .*rows.txt is not text .*; give one image name per line"):
        readers.read_row_names(rows)
    with open(rows, "r+b") as handle:
        handle.truncate(8 << 30)
    with pytest.raises(InvalidInputError, match=r"rows.txt: the row-names file is 8192\.0 MiB"):
        readers.read_row_names(rows)
