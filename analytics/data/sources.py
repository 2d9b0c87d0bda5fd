"""Where a workspace's images come from: targets and backgrounds per source package and licence."""

from __future__ import annotations

import pandas as pd

from analytics.workspace import Workspace

from .datasets import list_backgrounds, list_targets

#: Columns of :func:`image_sources`.
SOURCE_COLUMNS = ["package", "targets", "backgrounds", "licence"]
#: What :func:`image_sources` writes for images without a package (a user's import) or without a licence.
IMPORTED, NOT_RECORDED = "(imported)", "(not recorded)"


def image_sources(workspace: Workspace) -> pd.DataFrame:
    """Targets and backgrounds per source package and licence (Home's list of sources and licences).

    Returns
    -------
    DataFrame
        Columns :data:`SOURCE_COLUMNS`: ``package`` (:data:`IMPORTED` for a user's own images),
        ``targets`` and ``backgrounds`` (int64), ``licence`` (:data:`NOT_RECORDED` when none), one row per
        (package, licence), sorted by them; empty (the same columns) for a workspace without images.
    """
    frames = [
        list_targets(workspace)[["package", "licence"]].assign(kind="targets"),
        list_backgrounds(workspace)[["package", "licence"]].assign(kind="backgrounds"),
    ]
    rows = pd.concat(frames, ignore_index=True).replace({"package": {"": IMPORTED}, "licence": {"": NOT_RECORDED}})
    if rows.empty:
        return pd.DataFrame({"package": [], "targets": [], "backgrounds": [], "licence": []}).astype({"targets": "int64", "backgrounds": "int64"})
    table = rows.pivot_table(index=["package", "licence"], columns="kind", aggfunc="size", fill_value=0)
    counts = table.reindex(columns=["targets", "backgrounds"], fill_value=0).astype("int64").reset_index()
    return counts[SOURCE_COLUMNS]  # licences are long: last
