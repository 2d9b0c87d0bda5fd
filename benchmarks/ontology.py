"""Seconds to mine the keyword ontology with FP-Growth and Apriori on synthetic transactions.

Run from the repository root::

    python -m benchmarks.ontology                          # 20,000 transactions over 515 keywords
    python -m benchmarks.ontology --transactions 2000

Prints one JSON object: per algorithm ``mine_s`` (frequent itemsets only) and ``build_s``
(itemsets, rules and graph: :func:`analytics.ontology.build_ontology`), the fastest of ``--repeat``
runs; and on the reference file itself, with the same settings, ``reference.expand_s`` (expanding
all 1712 images to MAXITS) and ``reference.levels`` (mean keywords per image per level, the paper's
Figure 9). Mining settings default to the library's (:mod:`analytics.ontology`). The transactions copy the reference keyword file's density and skew
(``../shared/reference/bgtest/bgdb_items_val.hdf5``, read in place): each ADE20K object is present
independently with its frequency in the reference, and each transaction holds exactly one Places365
scene drawn with the reference's scene frequencies (the paper's top-1 rule). Keywords never seen in
the reference get half a count, so all 515 can occur. Co-occurrence between keywords is not copied:
the synthetic itemsets are those of independent keywords with the same marginals.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from analytics.keywords import KeywordTable, read_keyword_file
from analytics.ontology import (
    ALGORITHMS,
    DEFAULT_MAX_LEN,
    DEFAULT_MAXITS,
    DEFAULT_MIN_CONFIDENCE,
    DEFAULT_MIN_SUPPORT,
    build_ontology,
    expand_table,
    level_statistics,
    mine_itemsets,
    to_onehot,
)

REFERENCE = Path(__file__).resolve().parent.parent.parent / "shared" / "reference" / "bgtest" / "bgdb_items_val.hdf5"
N_OBJECTS = 150  # ADE20K columns come first in the reference vocabulary


def reference_profile(table: KeywordTable) -> tuple[np.ndarray, np.ndarray]:
    """Per-keyword presence probabilities of the reference, smoothed by half a count.

    Returns
    -------
    objects : ndarray of shape (150,), float
        Probability that each ADE20K object is present.
    scenes : ndarray of shape (365,), float
        Distribution of the single Places365 scene (sums to 1).
    """
    counts = table.present.sum(axis=0).astype(float)
    objects = np.maximum(counts[:N_OBJECTS], 0.5) / table.n_items
    scenes = counts[N_OBJECTS:] + 0.5
    return objects, scenes / scenes.sum()


def synthetic_transactions(objects: np.ndarray, scenes: np.ndarray, n: int, *, seed: int) -> np.ndarray:
    """Transactions with the given marginals: ndarray of shape (n, len(objects) + len(scenes)), bool."""
    rng = np.random.default_rng(seed)
    present = np.zeros((n, len(objects) + len(scenes)), dtype=bool)
    present[:, : len(objects)] = rng.random((n, len(objects))) < objects
    present[np.arange(n), len(objects) + rng.choice(len(scenes), size=n, p=scenes)] = True
    return present


def reference_expansion(table: KeywordTable, min_support: float, min_confidence: float, repeat: int) -> dict:
    """Ontology of the reference file itself: its size, seconds to expand every image to MAXITS and
    the mean keywords per image per level."""
    ontology = build_ontology(table, min_support=min_support, min_confidence=min_confidence)
    expand_s = _best_of(repeat, lambda: expand_table(ontology, table, maxits=DEFAULT_MAXITS))
    levels = level_statistics(expand_table(ontology, table, maxits=DEFAULT_MAXITS), maxits=DEFAULT_MAXITS)
    return {
        "keywords": ontology.summary["keywords"],
        "edges": ontology.summary["edges"],
        "expand_s": round(expand_s, 3),
        "levels": [round(float(mean), 2) for mean in levels["mean"]],
    }


def _best_of(repeat: int, run: Callable[[], object]) -> float:
    """Fastest of ``repeat`` wall-clock timings, in seconds (the machine is shared: the minimum is
    the least disturbed run)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=20_000)
    parser.add_argument("--min-support", type=float, default=DEFAULT_MIN_SUPPORT)
    parser.add_argument("--min-confidence", type=float, default=DEFAULT_MIN_CONFIDENCE)
    parser.add_argument("--reference", type=Path, default=REFERENCE, help="reference keyword HDF5 (density and skew)")
    parser.add_argument("--repeat", type=int, default=3, help="timings per algorithm; the fastest is kept")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    reference = read_keyword_file(args.reference)
    objects, scenes = reference_profile(reference)
    present = synthetic_transactions(objects, scenes, args.transactions, seed=args.seed)
    vocabulary = reference.vocabulary
    onehot = to_onehot(present, vocabulary=vocabulary)
    result: dict = {
        "transactions": args.transactions,
        "keywords": len(vocabulary),
        "reference_mean_keywords": float(reference.present.sum(axis=1).mean()),
        "synthetic_mean_keywords": float(present.sum(axis=1).mean()),
        "min_support": args.min_support,
        "min_confidence": args.min_confidence,
    }
    for algorithm in sorted(ALGORITHMS, key=lambda name: name != "fpgrowth"):
        mined = _best_of(args.repeat, lambda: mine_itemsets(onehot, algorithm=algorithm, min_support=args.min_support, max_len=DEFAULT_MAX_LEN))
        built = _best_of(
            args.repeat,
            lambda: build_ontology(
                present, vocabulary=vocabulary, algorithm=algorithm, min_support=args.min_support, min_confidence=args.min_confidence
            ),
        )
        ontology = build_ontology(present, vocabulary=vocabulary, algorithm=algorithm, min_support=args.min_support, min_confidence=args.min_confidence)
        result[algorithm] = {"mine_s": round(mined, 3), "build_s": round(built, 3), "itemsets": len(ontology.itemsets)}
    result.update({"rules": ontology.summary["rules"], "edges": ontology.summary["edges"]})
    result["reference"] = reference_expansion(reference, args.min_support, args.min_confidence, args.repeat)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
