"""Imports stream into the workspace (:mod:`analytics.data.batched_writes`, issue 48.2): a COCO import
of every instance held a decoded image and mask per instance until its one transaction (0.25 MB each:
40,000 instances took 4 GB). Targets now go to the array store as they are read, a batch at a time,
their rows commit once at the end, and a failure anywhere leaves the workspace as it was."""

from __future__ import annotations

import weakref

import numpy as np
import pytest

from analytics.cli import main
from analytics.data import Target, batched_writes, instances, list_classes, list_targets, load_targets, store_targets
from analytics.exceptions import InvalidInputError
from analytics.workspace import Workspace
from benchmarks.coco_import import write_many_instances
from tests.analytics.test_cli_data import snapshot

SIZE = 32


@pytest.fixture
def workspace(tmp_path) -> Workspace:
    workspace = Workspace(tmp_path / "ws")
    workspace.set_meta("image_size", str(SIZE))
    return workspace


def test_every_instance_streams_a_batch_at_a_time_and_commits_once(workspace, tmp_path, monkeypatch, sql_trace):
    """300 instances in batches of 4: all stored, and never more than 4 decoded targets alive at once
    (an import that read every target first would hold 300)."""
    annotations, images = write_many_instances(tmp_path / "export", 300, images=3, side=48)
    monkeypatch.setattr(batched_writes, "TARGET_BATCH", 4)
    alive, most, made, fit = [0], [0], [0], instances.fit_target

    def counted(image, mask, size, **options):  # each decoded target's image, followed until it is freed
        image, mask = fit(image, mask, size, **options)
        made[0] += 1
        alive[0] += 1
        most[0] = max(most[0], alive[0])
        weakref.finalize(image, lambda: alive.__setitem__(0, alive[0] - 1))
        return image, mask

    monkeypatch.setattr(instances, "fit_target", counted)
    sql_trace.clear()
    argv = ["add-targets", "--layout", "coco", "--annotations", str(annotations), "--images", str(images), "--all-instances", "--workspace", str(workspace.root)]
    assert main(argv) == 0
    stored = list_targets(workspace)
    assert len(stored) == made[0] == 300 and set(stored["class_name"]) == {"widget"}
    assert 1 <= most[0] <= 4
    (connection,) = {s.connection for s in sql_trace if s.sql.startswith("INSERT OR IGNORE INTO targets")}  # the 300 rows: one transaction
    assert [s.sql for s in sql_trace if s.connection == connection and s.sql in ("BEGIN IMMEDIATE", "COMMIT")] == ["BEGIN IMMEDIATE", "COMMIT"]
    _, masks = load_targets(workspace, ["widget/scene1-1", "widget/scene3-300"])
    assert masks.any(axis=(1, 2)).all()


def test_a_failure_after_several_batches_leaves_the_workspace_as_it_was(workspace):
    """The 8th target is refused after two batches of 3 were written: no row, no class and no array of
    this import stays; an array the workspace held before (a target already stored) is kept."""
    rng = np.random.default_rng(0)

    def target(index: int) -> Target:
        mask = np.zeros((SIZE, SIZE), bool)
        mask[8:24, 8:24] = True
        return Target(f"thing/{index}", "thing", rng.integers(0, 255, (SIZE, SIZE, 3), dtype=np.uint8), mask, origin=f"thing{index}.png")

    first = target(0)
    store_targets(workspace, [first], classes={"thing": []})
    before = snapshot(workspace)
    made: list[int] = []

    def targets():
        yield first  # its arrays were stored before this import: they must stay
        for index in range(1, 10):
            made.append(index)
            if index == 7:
                yield Target("thing/7", "thing", np.zeros((SIZE, SIZE - 1, 3), np.uint8), first.mask, origin="thing7.png")
            yield target(index)

    with pytest.raises(InvalidInputError, match=r"thing7.png: image is \(32, 31, 3\), the workspace stores 32x32x3"):
        store_targets(workspace, targets(), classes=lambda name: [], batch_size=3)
    assert made == list(range(1, 8))  # read as a stream, up to the bad one
    assert snapshot(workspace) == before and list(list_targets(workspace)["id"]) == ["thing/0"]
    assert not list(workspace.arrays_dir.rglob("*.tmp"))


def test_classes_met_while_streaming_are_resolved_once_and_stored_with_the_rows(workspace):
    rng = np.random.default_rng(1)
    mask = np.zeros((SIZE, SIZE), bool)
    mask[4:20, 4:20] = True
    asked: list[str] = []

    def resolve(name: str) -> list[int]:
        asked.append(name)
        return [852] if name == "ball" else []

    stream = (Target(f"{name}/{i}", name, rng.integers(0, 255, (SIZE, SIZE, 3), dtype=np.uint8), mask, origin=f"{name}{i}") for i in range(5) for name in ("ball", "box"))
    assert store_targets(workspace, stream, classes=resolve, batch_size=2) == 10
    assert asked == ["ball", "box"] and list_classes(workspace) == {"ball": [852], "box": []}
