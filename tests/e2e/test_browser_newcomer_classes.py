"""Issue 27, stopper 3, in the browser: mapping a new class never overwrites another by accident.

A newcomer imports targets of ``my_ball`` (no ImageNet name) on a workspace whose classes ``disc`` and
``square`` are mapped and scored by a run. Data › Classes then opens "Class to map" on ``my_ball``
(before the fix: on ``disc``, the first class, with its mapping pre-filled, and one click on Save
replaced it). Changing ``disc``'s mapping asks first, saying which runs it makes stale (none: an
ImageNet index does not change how the custom-label model scores ``disc``); the database keeps the
old mapping until the tick and the click, and the run stays current.
"""

from __future__ import annotations

import re
import shutil
import zipfile

import cv2
import numpy as np
import pytest
from playwright.sync_api import Page, expect

from analytics.data import ClassMapping, list_class_mappings, set_class_mapping
from analytics.runs import current_runs, start_runs
from analytics.workspace import Workspace
from tests.e2e.test_browser_own_data import _png, choose, click_until, import_zip, open_page, settle
from tests.fixtures.models import TINY_SUITE, add_tiny_models, write_tiny_model_files
from tests.fixtures.workspace import SIZE

CLASS = "my_ball"
INDEX = 430  # basketball


@pytest.fixture
def mapped_server(server_per_test, e2e_workspace, tmp_path_factory):
    """The small e2e workspace with ``disc`` and ``square`` mapped to labels and a run of ``tiny`` scored
    with them; one per test run, so that a rerun (tests/e2e/conftest.py) imports and maps afresh."""
    root = tmp_path_factory.mktemp("newcomer-classes")
    shutil.copytree(e2e_workspace.root, root / "ws")
    workspace = add_tiny_models(Workspace(root / "ws", create=False), write_tiny_model_files(root / "models"))
    for name in ("disc", "square"):
        set_class_mapping(workspace, name, label=name)
    start_runs(workspace, ["tiny"], TINY_SUITE, device="cpu")
    return server_per_test(workspace)


@pytest.fixture(scope="module")
def ball_zip(tmp_path_factory):
    """A folder-layout zip of two ``my_ball`` photos with their masks."""
    path = tmp_path_factory.mktemp("ball") / "my_ball.zip"
    rng = np.random.default_rng(1)
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(2):
            image = rng.integers(0, 80, (SIZE + 16, SIZE + 16, 3), dtype=np.uint8)
            mask = np.zeros(image.shape[:2], np.uint8)
            cv2.circle(mask, (SIZE // 2 + 8, SIZE // 2 + 8), SIZE // 3, 255, -1)
            image[mask > 0] = (230, 120, 20)
            archive.writestr(f"images/{CLASS}/b{i}.png", _png(image))
            archive.writestr(f"masks/{CLASS}/b{i}.png", _png(mask))
    return path


def test_the_class_editor_opens_on_the_new_class_and_asks_before_replacing_a_used_mapping(page: Page, mapped_server, ball_zip):
    workspace = Workspace(mapped_server.workspace, create=False)
    old = list_class_mappings(workspace)["disc"]
    assert old == ClassMapping(label="disc") and len(current_runs(workspace)) == 1

    open_page(page, f"{mapped_server.url}/Data", "Data")
    page.get_by_role("tab", name="Import", exact=True).click()
    panel = page.get_by_role("tabpanel", name="Import", exact=True)
    import_zip(page, panel, "Target set", ball_zip, 2)
    expect(page.get_by_text(f"No model output is known yet for class {CLASS}")).to_be_visible()

    page.get_by_role("tab", name="Classes", exact=True).click()
    panel = page.get_by_role("tabpanel", name="Classes", exact=True)
    expect(panel.get_by_text(f"Not mapped yet: {CLASS}")).to_be_visible()
    expect(panel.get_by_role("button", name=f"Save mapping of {CLASS}")).to_be_visible()  # the unmapped class, not disc
    expect(panel.get_by_role("button", name="Save mapping of disc")).to_have_count(0)

    choose(page, panel, "Class to map", "disc")
    choose(page, panel, "ImageNet-1k indices", re.compile(rf"^{INDEX} · "))
    page.keyboard.press("Escape")
    settle(page)
    save = panel.get_by_role("button", name="Save mapping of disc")
    expect(save).to_be_disabled()  # replacing a mapping: no save without the tick
    # tiny scores disc by its own label: an ImageNet index changes no run's numbers (a label change
    # does, and names the runs: tests/app/test_data_page.py)
    confirm = panel.get_by_text("Replace the mapping of disc (label 'disc'): no run's scoring changes")
    expect(confirm).to_be_visible()
    assert list_class_mappings(workspace)["disc"] == old

    confirm.click()
    settle(page)
    assert list_class_mappings(workspace)["disc"] == old  # the tick alone saves nothing
    expect(save).to_be_enabled()
    click_until(page, save, page.get_by_text(re.compile(rf"^Saved disc: ImageNet \[{INDEX}\]")))
    settle(page)
    assert list_class_mappings(workspace)["disc"].imagenet == (INDEX,)
    assert len(current_runs(workspace)) == 1  # the run stays current: its scoring did not change
