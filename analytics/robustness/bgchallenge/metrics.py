"""Backgrounds Challenge metrics on a prediction table (one row per generated or published image).

The table has the columns of :data:`CHALLENGE_PREDICTION_COLUMNS`: ``variant``, ``source_id`` (the target
whose object or scene the image shows), ``background_id`` (whose background; the source itself
outside Mixed-*, ``''`` when unknown), ``class_name``, ``background_class``, ``predicted`` (the
model's top output index), ``predicted_class`` (the class that output counts as, ``''`` for none),
``correct`` and ``to_background`` (predicted the background's class, which differs from the
object's).

- accuracy per variant and per class; BG-Gap = acc(Mixed-Same) − acc(Mixed-Rand) and
  acc(Mixed-Same) − acc(Mixed-Next) (Xiao et al., Table 2 and Appendix D);
- per-image categories (their Table 3) from the correctness on Original (full image), Mixed-Rand
  (the foreground's signal) and Only-BG-T (the background's): images whose full-image correctness
  equals the foreground's are *BG Irrelevant*; the other four combinations are *BG Required*
  (full ✓, fg ✗, bg ✓), *BG+FG Required* (✓ ✗ ✗), *BG Fools* (✗ ✓ ✗) and *BG+FG Fools* (✗ ✓ ✓).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analytics.exceptions import InvalidInputError

from .variants import VARIANT_NAMES, VARIANTS

CHALLENGE_PREDICTION_COLUMNS = (
    "variant", "source_id", "background_id", "class_name", "background_class", "predicted", "predicted_class", "correct", "to_background",
)  # fmt: skip
CATEGORIES = ("BG Irrelevant", "BG Required", "BG+FG Required", "BG Fools", "BG+FG Fools")
# (full correct, foreground correct, background correct) -> category, for full != foreground
_CATEGORY_OF = {
    (True, False, True): "BG Required",
    (True, False, False): "BG+FG Required",
    (False, True, False): "BG Fools",
    (False, True, True): "BG+FG Fools",
}


def check_predictions(table: pd.DataFrame) -> pd.DataFrame:
    """The table itself after checking its columns and variants (InvalidInputError naming what is missing).

    Parameters
    ----------
    table : DataFrame
        Columns :data:`CHALLENGE_PREDICTION_COLUMNS`: ``predicted`` (int64: the top output), ``correct`` and ``to_background`` (bool), the others str.

    Returns
    -------
    DataFrame
        ``table`` itself.
    """
    missing = [c for c in CHALLENGE_PREDICTION_COLUMNS if c not in table.columns]
    if missing:
        raise InvalidInputError(f"prediction table lacks the columns {missing}; build it with analytics.robustness.bgchallenge.evaluate_model")
    unknown = sorted(set(table["variant"]) - set(VARIANTS))
    if unknown:
        raise InvalidInputError(f"prediction table has unknown variants {unknown}; variants are {', '.join(VARIANTS)}")
    return table


def variant_accuracy(table: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per variant.

    Parameters
    ----------
    table : DataFrame
        Predictions (:data:`CHALLENGE_PREDICTION_COLUMNS`, see :func:`check_predictions`).

    Returns
    -------
    accuracy : DataFrame
        Columns ``variant``, ``name`` (str, the paper's), ``n`` (int64), ``accuracy`` (float64, NaN
        for a variant with no image); one row per variant, in :data:`VARIANTS` order.
    """
    grouped = check_predictions(table).groupby("variant")["correct"]
    n, accuracy = grouped.size(), grouped.mean()
    return pd.DataFrame({
        "variant": list(VARIANTS),
        "name": [VARIANT_NAMES[v] for v in VARIANTS],
        "n": [int(n.get(v, 0)) for v in VARIANTS],
        "accuracy": [float(accuracy.get(v, np.nan)) for v in VARIANTS],
    })


def gaps(table: pd.DataFrame) -> dict[str, float]:
    """``{"bg_gap": acc(Mixed-Same) − acc(Mixed-Rand), "same_minus_next": acc(Mixed-Same) − acc(Mixed-Next)}`` (NaN when a side is missing).

    Parameters
    ----------
    table : DataFrame
        Predictions (:data:`CHALLENGE_PREDICTION_COLUMNS`, see :func:`check_predictions`).
    """
    accuracy = variant_accuracy(table).set_index("variant")["accuracy"]
    return {
        "bg_gap": float(accuracy["mixed_same"] - accuracy["mixed_rand"]),
        "same_minus_next": float(accuracy["mixed_same"] - accuracy["mixed_next"]),
    }


def per_class_accuracy(table: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per class and variant.

    Parameters
    ----------
    table : DataFrame
        Predictions (:data:`CHALLENGE_PREDICTION_COLUMNS`, see :func:`check_predictions`).

    Returns
    -------
    DataFrame of float64, shape (n_classes, 8)
        Index ``class_name`` (the object's class); one column per variant in :data:`VARIANTS`
        order; NaN where none.
    """
    pivot = check_predictions(table).pivot_table(index="class_name", columns="variant", values="correct", aggfunc="mean")
    return pivot.reindex(columns=list(VARIANTS)).astype(float)


def image_categories(table: pd.DataFrame) -> pd.DataFrame:
    """The paper's Table 3 category of each source image seen on Original, Mixed-Rand and Only-BG-T.

    Parameters
    ----------
    table : DataFrame
        Predictions (:data:`CHALLENGE_PREDICTION_COLUMNS`); one row per source and variant for the three variants.

    Returns
    -------
    categories : DataFrame
        Columns ``source_id``, ``class_name`` (str), ``full``, ``foreground``, ``background`` (bool
        correctness on Original, Mixed-Rand, Only-BG-T) and ``category`` (one of
        :data:`CATEGORIES`, str); sources missing any of the three variants are left out.
    """
    table = check_predictions(table)
    wanted = {"original": "full", "mixed_rand": "foreground", "only_bg_t": "background"}
    rows = table[table["variant"].isin(list(wanted))].drop_duplicates(["variant", "source_id"])
    wide = rows.pivot(index="source_id", columns="variant", values="correct").reindex(columns=list(wanted)).rename(columns=wanted).dropna()
    wide = wide.astype(bool)
    classes = rows.drop_duplicates("source_id").set_index("source_id")["class_name"]
    category = [
        "BG Irrelevant" if full == fg else _CATEGORY_OF[(full, fg, bg)]
        for full, fg, bg in zip(wide["full"], wide["foreground"], wide["background"])
    ]
    result = wide.assign(category=category).reset_index()
    result.insert(1, "class_name", result["source_id"].map(classes))
    return result[["source_id", "class_name", "full", "foreground", "background", "category"]]


def category_counts(categories: pd.DataFrame) -> dict[str, int]:
    """Images per category (every category listed, zeros included) from :func:`image_categories`.

    Parameters
    ----------
    categories : DataFrame
        The table of :func:`image_categories`; its ``category`` column (str) is read.
    """
    counts = categories["category"].value_counts()
    return {name: int(counts.get(name, 0)) for name in CATEGORIES}


def summary(table: pd.DataFrame) -> dict:
    """JSON-ready: accuracy per variant (by the paper's names), the two gaps, per-class accuracy and category counts.

    Parameters
    ----------
    table : DataFrame
        Predictions (:data:`CHALLENGE_PREDICTION_COLUMNS`, see :func:`check_predictions`).
    """
    accuracy = variant_accuracy(table)
    per_class = per_class_accuracy(table)
    return {
        "accuracy": {row.name: (None if np.isnan(row.accuracy) else row.accuracy) for row in accuracy.itertuples()},
        "n": {row.name: row.n for row in accuracy.itertuples()},
        **{key: (None if np.isnan(value) else value) for key, value in gaps(table).items()},
        "per_class": {
            name: {VARIANT_NAMES[v]: (None if np.isnan(x) else float(x)) for v, x in row.items()} for name, row in per_class.iterrows()
        },
        "categories": category_counts(image_categories(table)),
    }
