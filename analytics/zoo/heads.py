"""The zoo read back from the registered heads: the list, the construction labels, the layout, the
held-out suite, and the demo step that runs the heads on it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analytics._progress import Progress, with_message
from analytics._validation import check_fraction, check_positive_int
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.inference import class_problems
from analytics.models import list_models
from analytics.runs import current_runs, start_runs
from analytics.suites import Suite, build_suite
from analytics.workspace import Workspace

from .layout import FIGURE8_FAMILY, GRID_FAMILY, ZOO_KIND, ZooLayout

logger = logging.getLogger(__name__)

CONSTRUCTION_LABEL = "construction_label"


# -- reading the zoo back -----------------------------------------------------------------------------
def list_zoo(workspace: Workspace) -> pd.DataFrame:
    """The registered zoo heads: name, strength, augment, seed, backbone, family, temperature (sorted by name).

    ``family`` is 'reliance' for the strength grid (temperature 1) and 'figure8' for the matched family.
    """
    rows = [
        (
            spec.name, float(spec.construction["strength"]), bool(spec.construction["augment"]), int(spec.construction["seed"]), spec.backbone,
            spec.construction.get("family", GRID_FAMILY), float(spec.construction.get("temperature", 1.0)),
        )
        for spec in list_models(workspace)
        if is_zoo_head(spec.construction)
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["name", "strength", "augment", "seed", "backbone", "family", "temperature"])


def is_zoo_head(construction: object) -> bool:
    """Whether a model's construction record (``ModelSpec.construction``, the ``construction`` column of
    :func:`analytics.runs.list_runs`) makes it a head of this zoo: synthetic, not a registered real model."""
    return isinstance(construction, dict) and construction.get("kind") == ZOO_KIND and "strength" in construction


def real_models_first(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` (rows with a ``construction`` column, e.g. of :func:`analytics.runs.list_runs`) with the
    registered real models before the zoo heads (:func:`is_zoo_head`), each group in its given order:
    the order every listing of models shows them in (the models people deploy first)."""
    return runs.sort_values("construction", key=lambda c: c.map(is_zoo_head), kind="stable")


def models_to_open_on(workspace: Workspace) -> list[str]:
    """The models a page preselects: the registered real models (not zoo heads) that can score every
    class of the workspace's targets, in listing order; where none can, the zoo heads that can. A
    model that cannot score a class would open a page on an error (issue 42.7, 42.9), and the
    demo's three real models, not two of them or a zoo head, are what a newcomer compares first.
    """
    specs = list_models(workspace)
    cannot = class_problems(workspace, [spec.name for spec in specs])
    scoring = [spec for spec in specs if spec.name not in cannot]
    real = [spec.name for spec in scoring if not is_zoo_head(spec.construction)]
    return real or [spec.name for spec in scoring]


def construction_labels(workspace: Workspace, *, invariant_max: float = 0.25, variant_min: float = 0.75) -> pd.Series:
    """The label each zoo head's construction implies: a ground truth for the assessor, never a judgment.

    Strength grid: s <= ``invariant_max`` -> 'invariant', s >= ``variant_min`` -> 'variant', in
    between -> 'borderline'. Figure-8 family (decided by its temperature T alone, see module
    notes): T < 1 -> 'invariant', T = 1 -> 'borderline', T > 1 -> 'variant'.

    Returns
    -------
    Series of str
        Index = model name, name ``construction_label``; empty when the workspace has no zoo.
    """
    invariant_max = check_fraction(invariant_max, "invariant_max", low_open=False)
    variant_min = check_fraction(variant_min, "variant_min", low_open=False)
    if not invariant_max < variant_min:
        raise InvalidInputError(f"invariant_max must be < variant_min; got {invariant_max} and {variant_min}")
    zoo = list_zoo(workspace)
    by_strength = np.where(zoo["strength"] <= invariant_max, "invariant", np.where(zoo["strength"] >= variant_min, "variant", "borderline"))
    by_temperature = np.where(zoo["temperature"] < 1, "invariant", np.where(zoo["temperature"] > 1, "variant", "borderline"))
    labels = np.where(zoo["family"] == FIGURE8_FAMILY, by_temperature, by_strength)
    return pd.Series(labels, index=pd.Index(zoo["name"], name="model"), name=CONSTRUCTION_LABEL, dtype=object)


def zoo_layout_of(workspace: Workspace) -> ZooLayout:
    """The layout the registered zoo was trained with (from its heads' construction).

    Raises
    ------
    NotFoundError
        The workspace has no zoo (build it with ``python -m analytics zoo``).
    """
    hashes = {spec.construction["layout"] for spec in list_models(workspace) if is_zoo_head(spec.construction)}
    if not hashes:
        raise NotFoundError(f"workspace {workspace.root} has no model zoo; build it with `analytics.zoo.build_zoo(workspace)`, on the Models page or with `python -m analytics zoo`")
    if len(hashes) > 1:
        logger.warning("zoo heads of %d different layouts; using the first", len(hashes))
    return ZooLayout.from_json(workspace.get_json(min(hashes)))


def zoo_suite(workspace: Workspace, *, n: int = 16, seed: int = 0, progress: Progress | None = None) -> Suite:
    """A random suite over the zoo's held-out targets and backgrounds (never trained on).

    ``n`` is capped at the number of held-out backgrounds. Built with
    :func:`analytics.suites.build_suite` (so a second call returns the same suite).
    """

    layout = zoo_layout_of(workspace)
    targets = list(layout.heldout_targets) or [t for c in layout.classes for t in layout.train_targets[c]]
    pool = list(layout.heldout_backgrounds) or list(layout.train_backgrounds)
    n = min(check_positive_int(n, "n"), len(pool))
    return build_suite(workspace, method="random", n=n, seed=seed, target_ids=targets, pool_ids=pool, progress=progress)


# -- demo step ---------------------------------------------------------------------------------------
def zoo_runs_step(workspace: Workspace, *, progress: Progress | None = None) -> None:
    """Demo step: build the held-out :func:`zoo_suite` and run every zoo head on it (one backbone pass per image).

    ``progress(done, total, step)`` hears ``'zoo suite'`` and ``'zoo runs'``.
    """
    suite = zoo_suite(workspace, progress=with_message(progress, "zoo suite"))
    start_runs(workspace, list_zoo(workspace)["name"].tolist(), suite.id, progress=with_message(progress, "zoo runs"))


def reliance_curve(workspace: Workspace) -> pd.DataFrame:
    """What the demo's zoo shows: worst-case accuracy against the background reliance it was built with.

    Every strength-grid head (family 'reliance') with a finished, current run; per strength and
    augmentation the mean worst-case accuracy over the seeds and its range. The zoo was built so that
    the answer is known (a head that reads the background more fails more often under new ones), so
    this curve is the check that Backdrop's measurements see it.

    Returns
    -------
    DataFrame
        Columns ``strength`` (float), ``augment`` (bool), ``worst_case_accuracy`` (mean over seeds),
        ``lowest`` and ``highest`` (over seeds), ``heads`` (int); sorted by augment, then strength.
        Empty when the workspace has no zoo runs.
    """
    columns = ["strength", "augment", "worst_case_accuracy", "lowest", "highest", "heads"]
    zoo = list_zoo(workspace)
    zoo = zoo[zoo["family"] == GRID_FAMILY]
    runs = current_runs(workspace)
    runs = runs[(runs["status"] == "done") & runs["model"].isin(zoo["name"])].drop_duplicates("model", keep="first")
    measured = zoo.merge(runs[["model", "worst_case_accuracy"]], left_on="name", right_on="model").dropna(subset=["worst_case_accuracy"])
    if measured.empty:
        return pd.DataFrame(columns=columns)
    curve = measured.groupby(["augment", "strength"])["worst_case_accuracy"].agg(["mean", "min", "max", "size"]).reset_index()
    curve = curve.rename(columns={"mean": "worst_case_accuracy", "min": "lowest", "max": "highest", "size": "heads"})
    return curve[columns].astype({"strength": float, "augment": bool, "heads": int}).reset_index(drop=True)


@dataclass(frozen=True)
class RelianceEnds:
    """One line of :func:`reliance_curve` (plain or augmented heads) read at its two ends: the finding
    Home states in numbers.

    Attributes
    ----------
    augment : bool
        Whether the line's heads were also trained on objects over random backgrounds.
    weakest, strongest : float
        The lowest and highest construction strength with a measured head.
    at_weakest, at_strongest : float
        Mean worst-case accuracy over the seeds at those strengths.
    heads : int
        Heads measured on the line, every strength together.
    """

    augment: bool
    weakest: float
    strongest: float
    at_weakest: float
    at_strongest: float
    heads: int

    @property
    def falls(self) -> bool:
        """Whether worst-case accuracy is lower at the strongest reliance than at the weakest: what the
        zoo was built to show (a sentence must not claim a fall the measurement does not see)."""
        return self.at_strongest < self.at_weakest


def reliance_ends(curve: pd.DataFrame) -> list[RelianceEnds]:
    """Each line of a reliance curve read at its ends, plain heads first.

    Parameters
    ----------
    curve : DataFrame
        :func:`reliance_curve`.

    Returns
    -------
    list of RelianceEnds
        One per augmentation with heads measured at two strengths or more (one strength draws no
        curve); empty when there is none.
    """
    missing = {"strength", "augment", "worst_case_accuracy", "heads"} - set(curve.columns)
    if missing:
        raise InvalidInputError(f"curve must be a reliance_curve table; columns {sorted(missing)} are missing; pass reliance_curve(workspace)")
    ends = []
    for augment, line in curve.sort_values(["augment", "strength"]).groupby("augment", sort=True):
        if len(line) < 2:
            continue
        first, last = line.iloc[0], line.iloc[-1]
        ends.append(
            RelianceEnds(
                bool(augment), float(first["strength"]), float(last["strength"]),
                float(first["worst_case_accuracy"]), float(last["worst_case_accuracy"]), int(line["heads"].sum()),
            )
        )  # fmt: skip
    return ends


def zoo_runs_done(workspace: Workspace) -> bool:
    """Whether every zoo head has a finished, current (not stale) run on one suite."""

    names = list_zoo(workspace)["name"].tolist()
    if not names:
        return False
    runs = current_runs(workspace)
    done = runs[(runs["status"] == "done") & runs["model"].isin(names)]
    return bool((done.groupby("suite_id")["model"].nunique() == len(names)).any())
