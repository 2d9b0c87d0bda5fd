"""analytics/data/sources.py: targets and backgrounds per source package and licence (Home's table)."""

from __future__ import annotations

from analytics.data import image_sources
from analytics.data.sources import IMPORTED, NOT_RECORDED, SOURCE_COLUMNS
from analytics.workspace import Workspace


def test_images_per_package_and_licence(tiny_workspace):
    with tiny_workspace.transaction() as conn:  # two backgrounds from a package with a licence
        conn.execute("UPDATE backgrounds SET package = 'pkg', licence = 'CC0' WHERE id IN (SELECT id FROM backgrounds ORDER BY id LIMIT 2)")
    table = image_sources(tiny_workspace)
    assert list(table.columns) == SOURCE_COLUMNS
    assert table.to_dict("records") == [
        {"package": IMPORTED, "targets": 6, "backgrounds": 10, "licence": NOT_RECORDED},
        {"package": "pkg", "targets": 0, "backgrounds": 2, "licence": "CC0"},
    ]


def test_a_workspace_without_images_has_no_sources(tmp_path):
    table = image_sources(Workspace(tmp_path / "ws"))
    assert table.empty and list(table.columns) == SOURCE_COLUMNS
