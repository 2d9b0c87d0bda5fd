"""The Data page's COCO import at scale (issue 48.2): every instance streams into the workspace, a
batch at a time, as the command line's does; past the instance limit, one error naming the count,
the limit and the ways out, shown before any image is decoded, and nothing imported. The limit is
the server's (``BACKDROP_MAX_INSTANCES``): the page offers no way to raise it."""

from __future__ import annotations

import weakref

from analytics.data import batched_writes, coco, instances, list_targets
from benchmarks.coco_import import write_many_instances
from tests.app.test_coco_import_page import DATA, choose_coco
from tests.fixtures.app import as_shown
from ui.data_import import ImportRequest, import_files


def test_every_instance_streams_into_the_workspace(tiny_workspace, tmp_path, monkeypatch):
    annotations, images = write_many_instances(tmp_path / "export", 120, images=2, side=64)
    monkeypatch.setattr(batched_writes, "TARGET_BATCH", 5)
    alive, most, fit = [0], [0], instances.fit_target

    def counted(image, mask, size, **options):
        image, mask = fit(image, mask, size, **options)
        alive[0] += 1
        most[0] = max(most[0], alive[0])
        weakref.finalize(image, lambda: alive.__setitem__(0, alive[0] - 1))
        return image, mask

    monkeypatch.setattr(instances, "fit_target", counted)
    request = ImportRequest(targets=True, from_upload=False, layout="coco", all_instances=True, licence="CC0-1.0")
    report = import_files(tiny_workspace, request, images, annotations)
    assert report.added == len(report.accepted) == 120 and report.classes == ["widget"]
    assert 1 <= most[0] <= 5
    stored = list_targets(tiny_workspace)
    assert set(stored.loc[stored["class_name"] == "widget", "licence"]) == {"CC0-1.0"}


def test_every_instance_past_the_limit_is_one_error_and_imports_nothing(tiny_workspace, coco_export, app_runner, monkeypatch):
    def decoded(path):
        raise AssertionError(f"{path} decoded before the limit was checked")

    monkeypatch.setenv("BACKDROP_MAX_INSTANCES", "3")  # the export keeps 4 instances on 3 images
    monkeypatch.setattr(coco, "read_image", decoded)
    before = list_targets(tiny_workspace)
    app = choose_coco(app_runner(DATA, tiny_workspace))
    app.checkbox(key="data.import_all_instances").check()
    app.text_input(key="data.import_coco.path").set_value(str(coco_export.annotations))
    app.text_input(key="data.import_source.path").set_value(str(coco_export.images)).run()
    app.button(key="data.import_go").click().run()
    assert not app.exception
    (error,) = [as_shown(e.value) for e in app.error]
    assert "4 instances to import, past the limit of 3 targets per import" in error and "\n" not in error
    assert "largest instance of each image instead of every instance (3 targets)" in error and "BACKDROP_MAX_INSTANCES=4" in error
    assert list_targets(tiny_workspace).equals(before)
