"""The one importer core of instance masks (:mod:`analytics.data.instances`): COCO and VOC choose the
same instances and skip them for the same reasons (a VOC tree and a COCO file of the same masks
import alike); COCO RLE goes through pycocotools, its counts checked first and its warnings caught;
a COCO JSON past its size limit is refused in one line before it is read."""

from __future__ import annotations

import json
import tracemalloc
import warnings

import numpy as np
import pytest
from pycocotools import mask as coco_mask

from analytics.data import INSTANCE_LAYOUTS, TARGET_LAYOUTS, coco, instances, voc
from analytics.data.coco import read_coco
from analytics.data.instances import CROWD, NO_MASK, NOT_LARGEST, OTHER_CATEGORY, SKIP_REASONS, TOO_SMALL, Instance, choose
from analytics.data.results import ImportResult
from analytics.data.voc import read_voc
from analytics.exceptions import InvalidInputError
from tests.analytics.data.test_coco_sizes import compress
from tests.analytics.data.test_voc import FIRST, SECOND, VocFolder, write_voc
from tests.fixtures.coco import column_runs

SIZE = 36


def test_every_layout_sees_one_list_and_one_set_of_reasons():
    assert INSTANCE_LAYOUTS == ("coco", "voc") and TARGET_LAYOUTS[-2:] == INSTANCE_LAYOUTS
    assert coco.NO_MASK is NO_MASK and len({CROWD, NO_MASK, OTHER_CATEGORY, TOO_SMALL, NOT_LARGEST}) == 5  # the reasons live in instances
    assert coco.choose is voc.choose is choose and coco.instance_limit is voc.instance_limit is instances.instance_limit


def test_the_largest_wins_the_lowest_number_on_a_tie_and_skips_keep_the_listing_order():
    def instance(image: int, number: int, area: float, order: int) -> Instance:
        return Instance(image, number, f"instance {number}", f"image {image}", f"i{image}", "cat", area, order)

    found = [instance(1, 5, 0.2, 1), instance(1, 3, 0.2, 2), instance(1, 4, 0.001, 3), instance(2, 1, 0.5, 5)]
    result = ImportResult()
    picked = choose("set", found, [(4, OTHER_CATEGORY, "instance 9 (image 2)"), (0, CROWD, "instance 8 (image 1)")], result, min_area=0.01, all_instances=False, limit=2)
    assert [(i.image, i.number) for i in picked] == [(1, 3), (2, 1)]
    assert list(result.skipped) == [CROWD, TOO_SMALL, OTHER_CATEGORY, NOT_LARGEST]
    assert result.skipped[NOT_LARGEST] == ["instance 5 (image 1)"] and picked[0].target_id == "cat/i1-3"
    with pytest.raises(InvalidInputError, match=r"^set: 3 instances to import, past the limit of 2 targets per import; import the largest"):
        choose("set", found, [], ImportResult(), min_area=0.01, all_instances=True, limit=2)


def as_coco(tree: VocFolder) -> tuple[str, dict[int, tuple[str, int]]]:
    """A COCO file of ``tree``'s instances (their classes by name, masks as compressed RLE) over its
    JPEGImages; and annotation id -> (image id, instance)."""
    classes = {(FIRST, 1): "person", (FIRST, 2): "cat", (FIRST, 3): "bottle", (SECOND, 1): "aeroplane"}
    names = sorted(set(classes.values()))
    images = [{"id": n, "file_name": f"{image_id}.jpg", "height": 36, "width": 36 if image_id == FIRST else 48} for n, image_id in enumerate((FIRST, SECOND), 1)]
    annotations, ids = [], {}
    for number, ((image_id, index), mask) in enumerate(tree.masks.items(), 1):
        counts = coco_mask.encode(np.asfortranarray(mask.astype(np.uint8)))["counts"].decode()
        annotations.append({"id": number, "image_id": 1 + (image_id == SECOND), "category_id": names.index(classes[image_id, index]), "segmentation": {"size": list(mask.shape), "counts": counts}})
        ids[number] = (image_id, index)
    path = tree.root / "instances.json"
    path.write_text(json.dumps({"images": images, "annotations": annotations, "categories": [{"id": i, "name": n} for i, n in enumerate(names)]}))
    return str(path), ids


@pytest.mark.parametrize("choice", [{}, {"all_instances": True}, {"classes": ["cat", "person", "aeroplane"], "all_instances": True}, {"min_area": 0}])
def test_a_voc_tree_and_a_coco_file_of_the_same_masks_import_alike(tmp_path, choice):
    tree = write_voc(tmp_path / "VOC2012")
    annotations, ids = as_coco(tree)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pycocotools' NumPy 2 warnings are caught inside
        from_voc = read_voc(tree.root, size=SIZE, **choice)
        from_coco = read_coco(annotations, tree.root / "JPEGImages", size=SIZE, **choice)
    assert from_voc.rejected == from_coco.rejected == [] and from_voc.accepted
    for a, b in zip(from_voc.accepted, from_coco.accepted, strict=True):
        number = int(b.id.rsplit("-", 1)[1])
        assert a.id == f"{a.class_name}/{ids[number][0]}-{ids[number][1]}" and (a.class_name, a.origin) == (b.class_name, b.origin)
        assert np.array_equal(a.mask, b.mask) and np.array_equal(a.image, b.image)
    assert {r: len(e) for r, e in from_voc.skipped.items()} == {r: len(e) for r, e in from_coco.skipped.items()}
    assert set(from_voc.skipped) <= set(SKIP_REASONS)


@pytest.fixture
def pycocotools_calls(monkeypatch) -> list[tuple[str, object]]:
    """``(function, counts)`` of every RLE pycocotools is handed."""
    calls: list[tuple[str, object]] = []
    for name in ("frPyObjects", "area", "decode"):

        def recorded(objects, *rest, _name=name, _real=getattr(coco_mask, name)):
            if isinstance(objects, dict):
                calls.append((_name, objects["counts"]))
            return _real(objects, *rest)

        monkeypatch.setattr(coco_mask, name, recorded)
    return calls


def test_rle_is_decoded_by_pycocotools_from_the_runs_checked(coco_export, pycocotools_calls):
    result = read_coco(coco_export.annotations, coco_export.images, size=SIZE, all_instances=True)
    disc = next(t for t in result.accepted if t.id == "widget/c-6")  # the compressed RLE string
    assert np.array_equal(disc.mask, coco_export.masks[6])
    assert ("frPyObjects", column_runs(coco_export.masks[6])) in pycocotools_calls  # the runs read from the string and checked
    assert not any(isinstance(counts, str) for _, counts in pycocotools_calls)  # never the file's own string
    assert sum(name == "decode" and isinstance(counts, bytes) for name, counts in pycocotools_calls) == len(result.accepted)


BAD_COUNTS = {
    "a negative run": compress([10, 5, -3, 1284]),  # adds up to 36 x 36
    "a string cut inside a run": compress([100, 50, 1146]) + "P",
    "runs one pixel short": [100, 50, 1145],
}


@pytest.mark.parametrize("how", BAD_COUNTS)
def test_bad_rle_counts_are_refused_before_pycocotools_sees_them(coco_export, pycocotools_calls, how):
    coco_export.rewrite(lambda d: next(a for a in d["annotations"] if a["id"] == 6)["segmentation"].update(counts=BAD_COUNTS[how]))
    with pytest.raises(InvalidInputError, match=r"annotation 6: RLE counts (must be a COCO-compressed string or a list of non-negative|cover 1295 pixels)") as caught:
        read_coco(coco_export.annotations, coco_export.images, size=SIZE)
    assert "\n" not in str(caught.value) and pycocotools_calls == []


def test_a_coco_json_past_the_size_limit_is_refused_unread(coco_export, monkeypatch):
    huge = coco_export.annotations.with_name("huge.json")
    with huge.open("wb") as file:
        file.truncate(1 << 30)  # a sparse GiB: past the default 128 MiB
    tracemalloc.start()
    try:
        with pytest.raises(InvalidInputError) as caught:
            read_coco(huge, coco_export.images)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(caught.value) == (
        f"{huge}: the COCO JSON file is 1024.0 MiB (1073741824 bytes), past the limit of 128.0 MiB (134217728 bytes); "
        "split it into files of fewer images (each imported on its own), or raise the limit: "
        "BACKDROP_MAX_COCO_JSON_BYTES=<bytes> where Backdrop runs (the Data page: where the server starts)"
    )
    assert peak < 2**20
    size = coco_export.annotations.stat().st_size
    monkeypatch.setenv("BACKDROP_MAX_COCO_JSON_BYTES", str(size - 1))
    with pytest.raises(InvalidInputError, match=rf"instances\.json: the COCO JSON file is .* \({size} bytes\), past the limit of .* \({size - 1} bytes\)"):
        read_coco(coco_export.annotations, coco_export.images)
    monkeypatch.setenv("BACKDROP_MAX_COCO_JSON_BYTES", str(size))
    assert read_coco(coco_export.annotations, coco_export.images, size=SIZE).accepted
    monkeypatch.setenv("BACKDROP_MAX_COCO_JSON_BYTES", "lots")
    with pytest.raises(InvalidInputError, match=r"^BACKDROP_MAX_COCO_JSON_BYTES must be a positive whole number of bytes; got 'lots'; unset it for the default 134217728$"):
        read_coco(coco_export.annotations, coco_export.images)
