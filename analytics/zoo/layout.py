"""What a zoo is made of: the layout of the workspace's images, the recipe every head shares, and
the plan of heads (the strength grid and the figure-8 family, with their names).

See the package notes (:mod:`analytics.zoo`) for how the layout is dealt and what the family is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from analytics._validation import check_fraction, check_positive_int
from analytics.data import list_backgrounds, list_targets
from analytics.exceptions import InvalidInputError
from analytics.workspace import Workspace

GRID_FAMILY = "reliance"
FIGURE8_FAMILY = "figure8"
ZOO_KIND = "background-reliance zoo"


@dataclass(frozen=True)
class ZooLayout:
    """Home groups and the train / held-out split of a workspace (see the package notes).

    Attributes
    ----------
    classes : tuple of str
        Every workspace class that has targets, sorted: the heads' outputs in this order.
    home : dict of str to tuple of str
        Class -> its home group of background ids (training and held-out ones).
    train_targets : dict of str to tuple of str
        Class -> the target ids the heads train on.
    heldout_targets : tuple of str
    heldout_backgrounds : tuple of str
    seed : int
        The layout seed.
    """

    classes: tuple[str, ...]
    home: dict[str, tuple[str, ...]]
    train_targets: dict[str, tuple[str, ...]]
    heldout_targets: tuple[str, ...]
    heldout_backgrounds: tuple[str, ...]
    seed: int

    def home_train(self, class_name: str) -> tuple[str, ...]:
        """The training backgrounds of a class's home group."""
        held = set(self.heldout_backgrounds)
        return tuple(b for b in self.home[class_name] if b not in held)

    @property
    def train_backgrounds(self) -> tuple[str, ...]:
        """Every training background (all home groups minus the held-out ones), sorted."""
        return tuple(sorted(b for c in self.classes for b in self.home_train(c)))

    def to_json(self) -> dict:
        return {
            "classes": list(self.classes),
            "home": {c: list(ids) for c, ids in self.home.items()},
            "train_targets": {c: list(ids) for c, ids in self.train_targets.items()},
            "heldout_targets": list(self.heldout_targets),
            "heldout_backgrounds": list(self.heldout_backgrounds),
            "seed": self.seed,
        }

    @classmethod
    def from_json(cls, data: dict) -> ZooLayout:
        return cls(
            classes=tuple(data["classes"]),
            home={c: tuple(ids) for c, ids in data["home"].items()},
            train_targets={c: tuple(ids) for c, ids in data["train_targets"].items()},
            heldout_targets=tuple(data["heldout_targets"]),
            heldout_backgrounds=tuple(data["heldout_backgrounds"]),
            seed=int(data["seed"]),
        )


def zoo_layout(workspace: Workspace, *, holdout_backgrounds: float = 0.25, holdout_targets: int = 1, seed: int = 0) -> ZooLayout:
    """Deal background scenes to classes as home groups and hold out test targets and backgrounds.

    Parameters
    ----------
    workspace : Workspace
    holdout_backgrounds : float in [0, 1), default=0.25
        Share of each home group held out of training (at least one background when > 0, never the
        whole group).
    holdout_targets : int, default=1
        Targets per class held out of training (fewer where a class has too few: one always trains).
    seed : int, default=0

    Returns
    -------
    ZooLayout

    Raises
    ------
    InvalidInputError
        Bad parameters, fewer than two classes with targets, or fewer than two backgrounds per class.
    """
    holdout_backgrounds = check_fraction(holdout_backgrounds, "holdout_backgrounds", low_open=False)
    if holdout_backgrounds >= 1:
        raise InvalidInputError(f"holdout_backgrounds must be in [0, 1) so that backgrounds remain for training; got {holdout_backgrounds}")
    holdout_targets = check_positive_int(holdout_targets, "holdout_targets", minimum=0)
    seed = check_positive_int(seed, "seed", minimum=0)
    targets = list_targets(workspace)
    by_class = {c: sorted(ids) for c, ids in targets.groupby("class_name")["id"]}
    if len(by_class) < 2:
        raise InvalidInputError(f"the zoo needs targets of at least two classes; workspace {workspace.root} has {len(by_class)}; add targets on the Data page")
    classes = tuple(sorted(by_class))
    backgrounds = list_backgrounds(workspace)
    if len(backgrounds) < 2 * len(classes):
        raise InvalidInputError(
            f"the zoo needs at least 2 backgrounds per class ({2 * len(classes)} for {len(classes)} classes) to give each class a home "
            f"group with training and held-out scenes; workspace {workspace.root} has {len(backgrounds)}; import more backgrounds"
        )
    rng = np.random.default_rng(seed)
    home = _deal_scenes(_scenes(backgrounds), classes, rng)
    heldout_bg: list[str] = []
    for c in classes:
        group = home[c]
        k = min(max(1, round(holdout_backgrounds * len(group))), len(group) - 1) if holdout_backgrounds > 0 else 0
        heldout_bg += sorted(rng.choice(group, k, replace=False).tolist()) if k else []
    train_targets, heldout_t = {}, []
    for c in classes:
        shuffled = [str(t) for t in rng.permutation(by_class[c])]
        k = min(holdout_targets, len(shuffled) - 1)
        heldout_t += shuffled[:k]
        train_targets[c] = tuple(sorted(shuffled[k:]))
    return ZooLayout(classes, home, train_targets, tuple(sorted(heldout_t)), tuple(sorted(heldout_bg)), seed)


def _scenes(backgrounds: pd.DataFrame) -> list[list[str]]:
    """Background ids grouped by origin, sorted by origin."""
    return [sorted(ids) for _, ids in sorted(backgrounds.groupby("origin")["id"])]


def _deal_scenes(scenes: list[list[str]], classes: tuple[str, ...], rng: np.random.Generator) -> dict[str, tuple[str, ...]]:
    """Greedy balanced assignment: scenes largest first (seeded order among equals), each to the
    class whose group is smallest so far (first such class in ``classes``)."""
    if len(scenes) < len(classes):
        scenes = [[b] for scene in scenes for b in scene]
    order = rng.permutation(len(scenes))
    order = sorted(order, key=lambda i: -len(scenes[i]))  # stable: the shuffle breaks ties
    groups: dict[str, list[str]] = {c: [] for c in classes}
    for i in order:
        smallest = min(classes, key=lambda c: len(groups[c]))
        groups[smallest] += scenes[i]
    return {c: tuple(sorted(ids)) for c, ids in groups.items()}


# -- the recipe --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ZooRecipe:
    """Settings shared by every head of a zoo build (stored in each head's construction)."""

    backbone: str
    layout: str  # array-store hash of the layout's JSON
    n_train_per_class: int
    n_augment_per_class: int
    background_only: float
    pool_per_target: int
    regularisation: float
    hidden: int  # width of the head's ReLU hidden layer (its own embedding); 0: a linear head


# -- the plan of heads -------------------------------------------------------------------------------
def zoo_model_name(strength: float, augment: bool, seed: int) -> str:
    """``zoo-s0.75-aug-seed1``: the registered name of a zoo head of the strength grid."""
    return f"zoo-s{strength:.2f}-{'aug' if augment else 'plain'}-seed{seed}"


def zoo_family_name(temperature: float, seed: int) -> str:
    """``zoo-fig8-t4.00-seed1``: the registered name of a member of the figure-8 family."""
    return f"zoo-fig8-t{temperature:.2f}-seed{seed}"


@dataclass(frozen=True)
class _Plan:
    """One head to build: grid heads have temperature 1 and family ``reliance``."""

    name: str
    strength: float
    augment: bool
    seed: int
    temperature: float = 1.0
    family: str = GRID_FAMILY

    def construction(self, recipe: ZooRecipe) -> dict:
        grid = {"kind": ZOO_KIND, "strength": self.strength, "augment": self.augment, "seed": self.seed, **asdict(recipe)}
        return grid if self.family == GRID_FAMILY else {**grid, "family": self.family, "temperature": self.temperature}


def _check_grid(strengths, augment, seeds) -> list[tuple[float, bool, int]]:
    values = [float(s) for s in strengths]
    for s in values:
        check_fraction(s, "strengths", low_open=False)
    flags = [bool(a) for a in augment]
    seed_values = [check_positive_int(k, "seeds", minimum=0) for k in seeds]
    grid = [(s, a, k) for s in dict.fromkeys(values) for a in dict.fromkeys(flags) for k in dict.fromkeys(seed_values)]
    if not grid:
        raise InvalidInputError(f"the zoo grid is empty: strengths={list(strengths)}, augment={list(augment)}, seeds={list(seeds)}; give at least one of each")
    return grid


def _check_temperatures(temperatures: Sequence[float]) -> list[float]:
    values = [float(t) for t in temperatures]
    if not all(np.isfinite(t) and t > 0 for t in values):
        raise InvalidInputError(f"temperatures must be finite numbers > 0; got {list(temperatures)}")
    return list(dict.fromkeys(values))


def _plans(grid: list[tuple[float, bool, int]], temperatures: list[float], family_strength: float) -> list[_Plan]:
    """The grid's heads, then per seed of the grid the figure-8 family (plain, ``family_strength``)."""
    family_seeds = dict.fromkeys(k for _, _, k in grid)
    return [_Plan(zoo_model_name(s, a, k), s, a, k) for s, a, k in grid] + [
        _Plan(zoo_family_name(t, k), family_strength, False, k, t, FIGURE8_FAMILY) for k in family_seeds for t in temperatures
    ]
