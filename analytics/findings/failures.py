"""Failure patterns by scene semantics: which background keywords and ontology levels break a model.

For one finished run (:func:`analytics.runs.image_table`), every composite (position >= 1) is one
observation: an *error* when the model misclassifies it, and a *drop* of the true-class probability,
its original's minus its own (positive = the background hurt). :func:`failure_table` groups them

* by scene keyword: a composite counts once for **every** keyword of its background (the background
  keyword table of the suite, plus the keyword the sampler drew it for), so the groups overlap;
* by ontology level: the level of the keyword the suite drew the background for (``suite_items.level``;
  0 = a keyword detected on the target, 1.. = reached through the ontology, -1 = drawn at random).

Each group gets its count, error rate with a 95 % Wilson interval
(:func:`statsmodels.stats.proportion.proportion_confint`, ``method="wilson"``) and mean drop with a
95 % percentile bootstrap interval (:func:`scipy.stats.bootstrap`, :data:`FAILURE_BOOTSTRAP_RESAMPLES`
resamples, seeded, so the same run always gives the same interval). Rows are sorted by effect:
error rate, then mean drop, then count, all descending.

Which keyword table: the background table the suite recorded in its provenance
(``suites.params["keyword_tables"]["background"]``), else the newest current background table of the
workspace; a suite drawn without keywords in a workspace without a background table has only the
suite items' keywords (none for a random suite).

:func:`keyword_model_matrix` puts the keyword error rates of several models on one suite side by side.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import bootstrap
from statsmodels.stats.proportion import proportion_confint

from analytics._validation import check_positive_int
from analytics.exceptions import InvalidInputError
from analytics.keywords import list_keyword_tables, load_keyword_table
from analytics.runs import check_run_classes, image_table
from analytics.workspace import Workspace

#: Confidence level of every interval.
FAILURE_CONFIDENCE = 0.95
#: Bootstrap resamples of a mean drop's interval (percentile method); with 2000 the interval ends
#: move by well under 1 % of the spread between seeds.
FAILURE_BOOTSTRAP_RESAMPLES = 2000
#: Seed of the bootstrap (each group starts from it, so a row does not depend on the others).
BOOTSTRAP_SEED = 0
_BATCH = 250  # resamples drawn at once: bounds memory on large groups
_STAT_COLUMNS = ["count", "errors", "error_rate", "error_low", "error_high", "mean_drop", "drop_low", "drop_high"]
#: Columns of :attr:`FailureTable.keywords`.
KEYWORD_COLUMNS = ["keyword", *_STAT_COLUMNS, "targets", "level"]
#: Columns of :attr:`FailureTable.levels`.
LEVEL_COLUMNS = ["level", *_STAT_COLUMNS]
#: Columns of :func:`composite_table`.
COMPOSITE_COLUMNS = [
    "target_id", "class_name", "position", "background_id", "keyword", "level", "predicted", "correct",
    "true_prob", "original_prob", "drop", "keywords",
]  # fmt: skip


@dataclass(frozen=True)
class FailureTable:
    """Error rates and probability drops of one run, per scene keyword and per ontology level.

    Attributes
    ----------
    run_id, model, suite_id : str
    keyword_source : str
        Where the background keywords came from: ``'table <name>'`` or ``'suite items'``.
    composites : int
        Composites of the run (observations).
    error_rate, mean_drop : float
        Over all composites (the baseline a keyword's row compares with; NaN without composites).
    keywords : DataFrame
        Columns :data:`KEYWORD_COLUMNS`, one row per keyword with at least ``min_count`` composites:
        keyword (str), count (int: composites whose background carries it), errors (int),
        error_rate (float), error_low / error_high (float: Wilson interval), mean_drop (float),
        drop_low / drop_high (float: bootstrap interval), targets (int: distinct targets among the
        composites), level (int: lowest ontology level the suite drew a background for this
        keyword at; -1 when it never drew one for it). Sorted by effect.
    levels : DataFrame
        Columns :data:`LEVEL_COLUMNS`, one row per ontology level (int; -1 = random) with at least
        ``min_count`` composites, same statistics, sorted by effect.
    """

    run_id: str
    model: str
    suite_id: str
    keyword_source: str
    composites: int
    error_rate: float
    mean_drop: float
    keywords: pd.DataFrame
    levels: pd.DataFrame

    def to_dict(self) -> dict:
        """JSON-ready form: the attributes, the two tables as lists of records."""
        return {
            "run": self.run_id, "model": self.model, "suite": self.suite_id, "keyword_source": self.keyword_source,
            "composites": self.composites, "error_rate": self.error_rate, "mean_drop": self.mean_drop,
            "keywords": self.keywords.to_dict("records"), "levels": self.levels.to_dict("records"),
        }  # fmt: skip


def background_keywords(workspace: Workspace, suite_id: str, *, table: str | None = None) -> tuple[str, dict[str, list[str]]]:
    """The keywords of every background of the keyword table that describes a suite's backgrounds.

    Parameters
    ----------
    workspace : Workspace
    suite_id : str
    table : str, optional
        A background keyword table by name; default as in the module notes.

    Returns
    -------
    source : str
        ``'table <name>'``, or ``'suite items'`` when no background table is available.
    keywords : dict of str to list of str
        Background id -> its keywords (vocabulary order); empty without a table.
    """
    name = table or _suite_background_table(workspace, suite_id)
    if name is None:
        return "suite items", {}
    loaded = load_keyword_table(workspace, name)
    return f"table {name}", {item: loaded.keywords_of(row) for row, item in enumerate(loaded.ids)}


def _suite_background_table(workspace: Workspace, suite_id: str) -> str | None:
    row = workspace.query_one("SELECT params FROM suites WHERE id = ?", (suite_id,))
    recorded = json.loads(row["params"]).get("keyword_tables", {}).get("background", {}).get("name") if row else None
    listing = list_keyword_tables(workspace)
    if recorded in set(listing["name"]):
        return recorded
    current = listing[(listing["item_kind"] == "background") & ~listing["stale"]].sort_values(["created", "name"])
    return None if current.empty else str(current["name"].iloc[-1])


def composite_table(workspace: Workspace, run_id: str, *, table: str | None = None, classes: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per composite of a run, with its original's probability and its background's keywords.

    Parameters
    ----------
    workspace : Workspace
    run_id : str
    table : str, optional
        Background keyword table (:func:`background_keywords`).
    classes : sequence of str, optional
        Only the composites of targets of these classes (None = every class); a class the run has
        no composite of is refused.

    Returns
    -------
    DataFrame
        Columns :data:`COMPOSITE_COLUMNS`: target_id, class_name, background_id (str), position
        (int, >= 1), keyword (str) / level (int) the suite drew the background
        for ('' / -1 = random), predicted (str: output name), correct (bool), true_prob and original_prob (float), drop =
        original_prob - true_prob (float), keywords (tuple of str: the background's keywords plus
        the drawn keyword). ``attrs["keyword_source"]`` names the table used.
    """
    run = workspace.query_one("SELECT suite_id FROM runs WHERE id = ?", (run_id,))
    images = image_table(workspace, run_id)  # raises NotFoundError for an unknown run
    source, keywords = background_keywords(workspace, run["suite_id"], table=table)
    items = workspace.query("SELECT target_id, position, keyword, level FROM suite_items WHERE suite_id = ?", (run["suite_id"],))
    drawn = pd.DataFrame([tuple(r) for r in items], columns=["target_id", "position", "keyword", "level"])
    originals = images[images["position"] == 0].set_index("target_id")["true_prob"]
    out = images[images["position"] > 0].merge(drawn, on=["target_id", "position"], how="left")
    out["keyword"] = out["keyword"].fillna("")
    out["level"] = out["level"].fillna(-1).astype(int)
    out["original_prob"] = out["target_id"].map(originals).astype(float)
    out["drop"] = out["original_prob"] - out["true_prob"]
    out["keywords"] = [
        tuple(dict.fromkeys([*keywords.get(b, []), *([k] if k else [])])) for b, k in zip(out["background_id"], out["keyword"])
    ]
    out = out.dropna(subset=["original_prob"])[COMPOSITE_COLUMNS].reset_index(drop=True)
    if classes is not None:
        out = _of_classes(out, classes, run_id)
    out.attrs["keyword_source"] = source
    return out


def group_statistics(correct: np.ndarray, drop: np.ndarray, *, seed: int = BOOTSTRAP_SEED, n_resamples: int = FAILURE_BOOTSTRAP_RESAMPLES) -> dict[str, float]:
    """Count, error rate with its Wilson interval and mean drop with its bootstrap interval of one group.

    Parameters
    ----------
    correct : ndarray of shape (n,), bool
        Whether each composite of the group was classified correctly (n >= 1).
    drop : ndarray of shape (n,), float
        Each composite's drop of the true-class probability.
    seed : int, default=0
    n_resamples : int, default=2000

    Returns
    -------
    dict
        Keys count, errors (int), error_rate, error_low, error_high, mean_drop, drop_low, drop_high
        (float; the drop interval of a group whose drops are all equal is that value).
    """
    correct, drop = np.asarray(correct, dtype=bool), np.asarray(drop, dtype=np.float64)
    n, errors = int(correct.size), int((~correct).sum())
    if n == 0 or drop.shape != correct.shape:
        raise InvalidInputError(f"a group needs at least one composite and one drop per composite; got {n} and {drop.size}")
    low, high = proportion_confint(errors, n, alpha=1 - FAILURE_CONFIDENCE, method="wilson")
    mean = float(drop.mean())
    if np.ptp(drop) == 0:  # no spread: every resample has the same mean (scipy would warn, degenerate)
        drop_low = drop_high = mean
    else:
        result = bootstrap(
            (drop,), np.mean, n_resamples=n_resamples, confidence_level=FAILURE_CONFIDENCE, method="percentile",
            rng=np.random.default_rng(seed), batch=_BATCH, vectorized=True,
        )  # fmt: skip
        drop_low, drop_high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    return {
        "count": n, "errors": errors, "error_rate": errors / n, "error_low": float(low), "error_high": float(high),
        "mean_drop": mean, "drop_low": drop_low, "drop_high": drop_high,
    }  # fmt: skip


def failure_table(
    workspace: Workspace, run_id: str, *, min_count: int = 1, table: str | None = None, classes: Sequence[str] | None = None, seed: int = BOOTSTRAP_SEED
) -> FailureTable:
    """Error rate and mean probability drop of a run per scene keyword and per ontology level.

    Parameters
    ----------
    workspace : Workspace
    run_id : str
        A run (any status: the composites stored so far count).
    min_count : int, default=1
        Leave out keywords and levels with fewer composites.
    table : str, optional
        Background keyword table (:func:`background_keywords`).
    classes : sequence of str, optional
        Count only the composites of these classes (None = every class).
    seed : int, default=0
        Bootstrap seed.

    Returns
    -------
    FailureTable
    """
    min_count = check_positive_int(min_count, "min_count")
    run = workspace.query_one("SELECT model, suite_id FROM runs WHERE id = ?", (run_id,))
    composites = composite_table(workspace, run_id, table=table, classes=classes)
    exploded = composites.explode("keywords").dropna(subset=["keywords"])
    keyword_rows = []
    for keyword, group in exploded.groupby("keywords", sort=True):
        if len(group) >= min_count:
            levels = group.loc[group["keyword"] == keyword, "level"]
            keyword_rows.append({
                "keyword": keyword, **_stats(group, seed), "targets": int(group["target_id"].nunique()),
                "level": int(levels.min()) if len(levels) else -1,
            })  # fmt: skip
    level_rows = [{"level": int(level), **_stats(g, seed)} for level, g in composites.groupby("level", sort=True) if len(g) >= min_count]
    return FailureTable(
        run_id=run_id,
        model=run["model"],
        suite_id=run["suite_id"],
        keyword_source=composites.attrs["keyword_source"],
        composites=len(composites),
        error_rate=float((~composites["correct"]).mean()) if len(composites) else float("nan"),
        mean_drop=float(composites["drop"].mean()) if len(composites) else float("nan"),
        keywords=_by_effect(pd.DataFrame(keyword_rows, columns=KEYWORD_COLUMNS), "keyword"),
        levels=_by_effect(pd.DataFrame(level_rows, columns=LEVEL_COLUMNS), "level"),
    )


def _stats(group: pd.DataFrame, seed: int) -> dict[str, float]:
    return group_statistics(group["correct"].to_numpy(bool), group["drop"].to_numpy(float), seed=seed)


def _by_effect(frame: pd.DataFrame, key: str) -> pd.DataFrame:
    """Largest error rate first, then largest mean drop, then most composites; ties by name."""
    frame = frame.astype({"count": int, "errors": int})
    ascending = [False, False, False, True]
    return frame.sort_values(["error_rate", "mean_drop", "count", key], ascending=ascending, kind="stable", ignore_index=True)


def keyword_model_matrix(
    workspace: Workspace, run_ids: Sequence[str], *, min_count: int = 1, table: str | None = None, classes: Sequence[str] | None = None
) -> pd.DataFrame:
    """Keyword x model error rates of several runs over one suite.

    Parameters
    ----------
    workspace : Workspace
    run_ids : sequence of str
        One run per model, all over the same suite.
    min_count : int, default=1
        Keywords with fewer composites (in the run with the most) are left out.
    table : str, optional
        Background keyword table (:func:`background_keywords`).
    classes : sequence of str, optional
        Count only the composites of these classes (None = every class).

    Returns
    -------
    DataFrame of float, shape (n_keywords, n_runs)
        Index ``keyword``, one column per model (in ``run_ids`` order); NaN where a run has no
        composite with that keyword. Rows sorted by mean error rate over the models, descending.
        ``attrs["counts"]`` (dict keyword -> int) holds each keyword's composites,
        ``attrs["suite_id"]`` the suite.
    """
    if not run_ids:
        raise InvalidInputError("keyword_model_matrix needs at least one run id")
    placeholders = ", ".join("?" * len(run_ids))
    rows = {r["id"]: r for r in workspace.query(f"SELECT id, model, suite_id FROM runs WHERE id IN ({placeholders})", tuple(run_ids))}
    missing = [run_id for run_id in run_ids if run_id not in rows]
    if missing:
        raise InvalidInputError(f"no runs {', '.join(missing)} in {workspace.root}; list them with `python -m analytics runs`")
    suites = sorted({rows[run_id]["suite_id"] for run_id in run_ids})
    models = [rows[run_id]["model"] for run_id in run_ids]
    if len(suites) > 1 or len(set(models)) < len(models):
        raise InvalidInputError(f"pass one run per model over one suite; got suites {', '.join(suites)} and models {', '.join(models)}")
    columns, counts = {}, {}
    for run_id, model in zip(run_ids, models):
        exploded = composite_table(workspace, run_id, table=table, classes=classes).explode("keywords").dropna(subset=["keywords"])
        grouped = exploded.groupby("keywords")["correct"]
        columns[model] = 1.0 - grouped.mean().astype(float)
        for keyword, size in grouped.size().items():
            counts[keyword] = max(counts.get(keyword, 0), int(size))
    matrix = pd.DataFrame(columns, columns=models)
    matrix = matrix.loc[[counts[k] >= min_count for k in matrix.index]]  # .loc: an empty mask keeps the columns
    matrix.index.name = "keyword"
    order = matrix.mean(axis=1).sort_values(ascending=False, kind="stable").index
    matrix = matrix.loc[order]
    matrix.attrs.update(counts={k: counts[k] for k in matrix.index}, suite_id=suites[0])
    return matrix


def _of_classes(composites: pd.DataFrame, classes: Sequence[str], run_id: str) -> pd.DataFrame:
    """The rows of ``classes``; an empty selection or a class the run has no composite of is refused."""
    wanted = check_run_classes(classes, composites["class_name"], run_id)
    return composites[composites["class_name"].isin(wanted)].reset_index(drop=True)
