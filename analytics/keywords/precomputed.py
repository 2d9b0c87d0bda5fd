"""Precomputed keywords: import keyword vectors from files, and a backend that serves them.

Three file formats are read by :func:`read_keyword_file`:

* **reference HDF5** (the paper's ``bgdb_items_val.hdf5``): dataset ``val/data``, float32 of shape
  (n, 1 + 150 + 365) = [label, 150 ADE20K pixel shares, 365 Places365 logits]. Keyword names come
  from ``object150_info.csv`` (column ``Name``, first synonym before ``;``) and
  ``categories_places365.txt`` found next to the file (or passed explicitly). Presence (DESIGN §1.1):
  an ADE20K object is present when its pixel share exceeds ``min_share`` (1 %; the shares may be
  stored as fractions or percentages, detected from their range); a Places365 scene is present when
  it is among the ``places_top_k`` largest logits (the softmax is monotone, so top-k of the logits
  is top-k of the softmax; the paper keeps the arg-max, its code the top 5).
* **CSV**: a column ``id``, an optional column ``label``, then one numeric column per keyword.
  A 0/1 table is one-hot presence; other scores need ``threshold`` or ``top_k``.
* **Backdrop HDF5** written by :func:`write_keyword_file` (attribute ``format = backdrop-keywords``).

Keyword names of the reference format are always prefixed by their source, ``ade:`` or ``places:``,
because both vocabularies name some of the same things (``sky``, ``river``, ``bridge`` ... 15 names)
and because a sampler may treat objects and scenes differently. Places365 names drop the
``/a/`` letter folder (``/a/apartment_building/outdoor`` -> ``places:apartment_building/outdoor``).
Two ADE20K classes share the first synonym ``screen``; duplicated first synonyms get the class
index appended (``ade:screen-59``, ``ade:screen-131``).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import h5py
import numpy as np
import pandas as pd

from .._validation import check_choice, check_fraction, check_image_batch, check_positive_int
from ..exceptions import InvalidInputError, NotFoundError
from ._base import KeywordBackend, KeywordTable

OBJECT_NAMES_FILE = "object150_info.csv"
SCENE_NAMES_FILE = "categories_places365.txt"
REFERENCE_DATASET = "val/data"
EXPORT_FORMAT = "backdrop-keywords"
EXPORT_VERSION = 1
RULE_KINDS = ("threshold", "top-k")


@dataclass(frozen=True)
class PresenceRule:
    """Presence rule for the vocabulary columns ``start:stop``.

    ``kind='threshold'``: present when score > ``value``; ``kind='top-k'``: present when among the
    ``value`` largest scores of the block in that row (ties broken by column order).
    """

    start: int
    stop: int
    kind: Literal["threshold", "top-k"]
    value: float

    def apply(self, scores: np.ndarray) -> np.ndarray:
        """Presence of the block. scores : (n, n_keywords) float32 -> (n, stop - start) bool."""
        block = scores[:, self.start : self.stop]
        if self.kind == "threshold":
            return block > self.value
        k = min(int(self.value), block.shape[1])
        top = np.argsort(-block, axis=1, kind="stable")[:, :k]
        present = np.zeros(block.shape, dtype=bool)
        np.put_along_axis(present, top, True, axis=1)
        return present


def apply_rules(scores: np.ndarray, rules: Sequence[PresenceRule]) -> np.ndarray:
    """Apply block rules that together cover every column.

    Parameters
    ----------
    scores : ndarray of shape (n, n_keywords), float32
    rules : sequence of PresenceRule

    Returns
    -------
    present : ndarray of shape (n, n_keywords), bool
    """
    present = np.zeros(scores.shape, dtype=bool)
    for rule in rules:
        present[:, rule.start : rule.stop] = rule.apply(scores)
    return present


def rules_from_params(params: dict[str, Any], n_keywords: int, source: str) -> list[PresenceRule]:
    """The presence rules recorded in a table's ``params`` (checked to cover ``n_keywords`` columns)."""
    try:
        rules = [PresenceRule(**rule) for rule in params["rules"]]
    except (KeyError, TypeError) as err:
        raise InvalidInputError(f"{source}: params hold no valid presence 'rules' ({err}); re-import the file") from err
    covered = np.zeros(n_keywords, dtype=int)
    for rule in rules:
        check_choice(rule.kind, f"{source}: rule kind", RULE_KINDS)
        covered[rule.start : rule.stop] += 1
    if not (covered == 1).all():
        raise InvalidInputError(f"{source}: presence rules must cover each of the {n_keywords} keywords exactly once")
    return rules


class PrecomputedBackend(KeywordBackend):
    """Serves a :class:`KeywordTable` computed elsewhere, looked up by image content.

    Parameters
    ----------
    table : KeywordTable
        Scores with their presence rules in ``table.params['rules']``.
    digests : sequence of str, length table.n_items
        Content hash of each item's image, as the workspace stores it (SHA-256 of the ``.npy``
        bytes, see :func:`image_digest`). An image passed to :meth:`scores` is matched by it.
    """

    name: ClassVar[str] = "precomputed"

    def __init__(self, table: KeywordTable, digests: Sequence[str]) -> None:
        if len(digests) != table.n_items:
            raise InvalidInputError(f"digests: {len(digests)} image hashes for {table.n_items} table rows")
        self.vocabulary = list(table.vocabulary)
        self._table = table
        self._rules = rules_from_params(table.params, len(table.vocabulary), "precomputed table")
        self._rows = {digest: row for row, digest in enumerate(digests)}

    @classmethod
    def from_workspace(cls, workspace, name: str) -> PrecomputedBackend:
        """The keyword table ``name`` of ``workspace``, its ids resolved to the stored images."""
        from .store import load_keyword_table, table_item_kind

        table = load_keyword_table(workspace, name)
        kind = table_item_kind(workspace, name)
        rows = {
            row["id"]: row["image_hash"]
            for row in workspace.query(f"SELECT id, image_hash FROM {kind}s")  # kind is 'target' or 'background'
        }
        missing = [item for item in table.ids if item not in rows]
        if missing:
            raise NotFoundError(
                f"keyword table {name!r}: {len(missing)} ids are not {kind}s of {workspace.root} "
                f"(first: {missing[0]!r}); import a table keyed by workspace ids"
            )
        return cls(table, [rows[item] for item in table.ids])

    def get_params(self) -> dict[str, Any]:
        return dict(self._table.params)

    def scores(self, images: np.ndarray, masks: np.ndarray | None = None) -> np.ndarray:
        """The stored rows of ``images``; ``masks`` are ignored (they were applied when the scores
        were computed)."""
        images = check_image_batch(images)
        rows = []
        for index, image in enumerate(images):
            row = self._rows.get(image_digest(image))
            if row is None:
                raise NotFoundError(
                    f"image {index} of the batch has no precomputed keywords (its content matches no row); "
                    "compute its keywords with another backend or import them"
                )
            rows.append(row)
        return self._table.scores[rows]

    def present(self, scores: np.ndarray) -> np.ndarray:
        return apply_rules(np.asarray(scores, dtype=np.float32), self._rules)


def image_digest(image: np.ndarray) -> str:
    """The workspace's content hash of an array: SHA-256 of its ``.npy`` bytes (what
    :meth:`analytics.workspace.Workspace.put_array` returns)."""
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(image), allow_pickle=False)
    return hashlib.sha256(buffer.getvalue()).hexdigest()


# -- reading files --------------------------------------------------------------------------
def read_keyword_file(
    path: str | os.PathLike,
    *,
    places_top_k: int = 1,
    min_share: float = 0.01,
    threshold: float | None = None,
    top_k: int | None = None,
    object_names: str | os.PathLike | None = None,
    scene_names: str | os.PathLike | None = None,
    dataset: str | None = None,
) -> KeywordTable:
    """Read a keyword file (reference HDF5, CSV or Backdrop HDF5) into a :class:`KeywordTable`.

    Parameters
    ----------
    path : path-like
        The file; the format is told by its content (HDF5) or its ``.csv`` suffix.
    places_top_k : int, default=1
        Reference format: a Places365 scene is present when among this many largest logits.
    min_share : float, default=0.01
        Reference format: an ADE20K object is present when its pixel share exceeds this fraction.
    threshold : float, default=None
        CSV with scores: present when score > threshold.
    top_k : int, default=None
        CSV with scores: present when among the row's ``top_k`` largest scores.
    object_names, scene_names : path-like, default=None
        Reference format: ``object150_info.csv`` and ``categories_places365.txt``; None looks next
        to ``path``.
    dataset : str, default=None
        Reference format: the HDF5 dataset; None takes ``val/data`` or the only ``*/data``.

    Returns
    -------
    KeywordTable
        ``backend='precomputed'``; ``params`` records the file, format and presence rules.

    Raises
    ------
    InvalidInputError
        Unknown format, wrong width, NaN values, empty vocabulary, bad names or parameters.
    """
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"keyword file {path} does not exist or is not a file")
    if h5py.is_hdf5(path):
        with h5py.File(path, "r") as handle:
            if handle.attrs.get("format") == EXPORT_FORMAT:
                return _read_export(handle, path)
            data, dataset = _reference_data(handle, path, dataset)
        return _read_reference(
            data,
            path,
            dataset=dataset,
            places_top_k=places_top_k,
            min_share=min_share,
            object_names=Path(object_names) if object_names else path.parent / OBJECT_NAMES_FILE,
            scene_names=Path(scene_names) if scene_names else path.parent / SCENE_NAMES_FILE,
        )
    if path.suffix.lower() == ".csv":
        return _read_csv(path, threshold=threshold, top_k=top_k)
    raise InvalidInputError(
        f"keyword file {path}: unknown format (neither HDF5 nor .csv); give the reference HDF5, "
        "a Backdrop keyword HDF5 or a CSV with an 'id' column and one column per keyword"
    )


def _reference_data(handle: h5py.File, path: Path, dataset: str | None) -> tuple[np.ndarray, str]:
    if dataset is None:
        candidates = [name for name in (REFERENCE_DATASET, *_data_datasets(handle)) if name in handle]
        if not candidates:
            raise InvalidInputError(
                f"keyword file {path}: no '{REFERENCE_DATASET}' dataset and no Backdrop export attributes; "
                "give the reference bgdb_items_*.hdf5 or a file written by write_keyword_file"
            )
        dataset = candidates[0]
    if dataset not in handle or not isinstance(handle[dataset], h5py.Dataset):
        raise InvalidInputError(f"keyword file {path}: dataset {dataset!r} not found; datasets: {_data_datasets(handle)}")
    data = handle[dataset][()]
    if data.ndim != 2:
        raise InvalidInputError(f"keyword file {path}: dataset {dataset!r} must be 2-D (n, 1 + keywords); got {data.shape}")
    return data.astype(np.float32), dataset


def _data_datasets(handle: h5py.File) -> list[str]:
    found: list[str] = []
    handle.visititems(lambda name, obj: found.append(name) if isinstance(obj, h5py.Dataset) else None)
    return found


def _read_reference(
    data: np.ndarray,
    path: Path,
    *,
    dataset: str,
    places_top_k: int,
    min_share: float,
    object_names: Path,
    scene_names: Path,
) -> KeywordTable:
    places_top_k = check_positive_int(places_top_k, "places_top_k")
    min_share = check_fraction(min_share, "min_share", low_open=False)
    objects, scenes = read_object_names(object_names), read_scene_names(scene_names)
    width = 1 + len(objects) + len(scenes)
    if data.shape[1] != width:
        raise InvalidInputError(
            f"keyword file {path}: dataset {dataset!r} has {data.shape[1]} columns; the reference format needs "
            f"1 label + {len(objects)} ADE20K + {len(scenes)} Places365 = {width}"
        )
    nan_rows = np.flatnonzero(~np.isfinite(data).all(axis=1))
    if nan_rows.size:
        raise InvalidInputError(
            f"keyword file {path}: {nan_rows.size} rows hold NaN or infinite values (first row {nan_rows[0]}); "
            "recompute or drop them"
        )
    shares = data[:, 1 : 1 + len(objects)]
    scale = _share_scale(shares, path)
    rules = [
        PresenceRule(0, len(objects), "threshold", min_share * scale),
        PresenceRule(len(objects), width - 1, "top-k", places_top_k),
    ]
    scores = np.ascontiguousarray(data[:, 1:])
    return KeywordTable(
        ids=[str(row) for row in range(len(data))],
        vocabulary=objects + scenes,
        scores=scores,
        present=apply_rules(scores, rules),
        labels=[str(int(label)) for label in data[:, 0]],
        backend=PrecomputedBackend.name,
        params={
            "file": str(path),
            "format": "reference",
            "dataset": dataset,
            "share_scale": "percent" if scale == 100 else "fraction",
            "min_share": min_share,
            "places_top_k": places_top_k,
            "rules": [asdict(rule) for rule in rules],
        },
    )


def _share_scale(shares: np.ndarray, path: Path) -> float:
    """100 when the ADE20K pixel shares are percentages, 1 when fractions (a share > 1 can only be
    a percentage; an image's shares sum to 1 or 100)."""
    if shares.size and (shares.min() < 0 or shares.max() > 100):
        raise InvalidInputError(
            f"keyword file {path}: ADE20K pixel shares must lie in [0, 100] (percent) or [0, 1]; got range "
            f"[{shares.min():g}, {shares.max():g}]"
        )
    return 100.0 if shares.size and shares.max() > 1 else 1.0


def read_object_names(path: str | os.PathLike) -> list[str]:
    """ADE20K names ``ade:<first synonym>`` from ``object150_info.csv``; duplicates get ``-<Idx>``."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"ADE20K names file {path} not found; pass object_names= or put {OBJECT_NAMES_FILE} next to the keyword file")
    table = pd.read_csv(path)
    if not {"Idx", "Name"} <= set(table.columns):
        raise InvalidInputError(f"ADE20K names file {path} needs columns 'Idx' and 'Name'; got {list(table.columns)}")
    first = [str(name).split(";")[0].strip() for name in table["Name"]]
    counts = pd.Series(first).value_counts()
    return [f"ade:{name}-{idx}" if counts[name] > 1 else f"ade:{name}" for name, idx in zip(first, table["Idx"])]


def read_scene_names(path: str | os.PathLike) -> list[str]:
    """Places365 names ``places:<category>`` from ``categories_places365.txt`` (``/a/alley 3`` lines)."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"Places365 names file {path} not found; pass scene_names= or put {SCENE_NAMES_FILE} next to the keyword file")
    names = []
    for line in path.read_text().splitlines():
        if line.strip():
            category = line.split()[0]
            names.append("places:" + ("/".join(category.split("/")[2:]) if category.startswith("/") else category))
    return names


def _read_csv(path: Path, *, threshold: float | None, top_k: int | None) -> KeywordTable:
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as err:
        raise InvalidInputError(f"keyword file {path}: not a readable CSV ({err})") from err
    if "id" not in frame.columns:
        raise InvalidInputError(f"keyword file {path}: needs an 'id' column; got columns {list(frame.columns)[:8]}")
    labels = frame["label"].astype(str).tolist() if "label" in frame.columns else None
    keywords = frame.drop(columns=[c for c in ("id", "label") if c in frame.columns])
    if keywords.shape[1] == 0:
        raise InvalidInputError(f"keyword file {path}: the keyword vocabulary is empty; add one column per keyword")
    text = [c for c in keywords.columns if not pd.api.types.is_numeric_dtype(keywords[c])]
    if text:
        raise InvalidInputError(f"keyword file {path}: keyword columns must be numeric; non-numeric: {text[:5]}")
    scores = keywords.to_numpy(dtype=np.float32)
    if not np.isfinite(scores).all():
        row, col = np.argwhere(~np.isfinite(scores))[0]
        raise InvalidInputError(
            f"keyword file {path}: NaN or empty value in column {keywords.columns[col]!r}, row {row + 1}; fill or drop it"
        )
    rule = _csv_rule(scores, path, threshold=threshold, top_k=top_k)
    return _table_from(
        path,
        ids=frame["id"].astype(str).tolist(),
        vocabulary=[str(c) for c in keywords.columns],
        scores=scores,
        present=apply_rules(scores, [rule]),
        labels=labels,
        backend=PrecomputedBackend.name,
        params={"file": str(path), "format": "csv", "rules": [asdict(rule)]},
    )


def _csv_rule(scores: np.ndarray, path: Path, *, threshold: float | None, top_k: int | None) -> PresenceRule:
    n_keywords = scores.shape[1]
    if threshold is not None and top_k is not None:
        raise InvalidInputError("give threshold or top_k for a CSV of scores, not both")
    if top_k is not None:
        return PresenceRule(0, n_keywords, "top-k", check_positive_int(top_k, "top_k"))
    if threshold is not None:
        return PresenceRule(0, n_keywords, "threshold", float(threshold))
    if np.isin(scores, (0.0, 1.0)).all():
        return PresenceRule(0, n_keywords, "threshold", 0.5)  # a one-hot table
    raise InvalidInputError(
        f"keyword file {path}: scores are not 0/1, so the presence rule is unknown; give threshold= or top_k= "
        "(CLI: --threshold / --top-k)"
    )


# -- Backdrop's own HDF5 format ---------------------------------------------------------------
def write_keyword_file(table: KeywordTable, path: str | os.PathLike) -> Path:
    """Write ``table`` as a Backdrop keyword HDF5 (read back by :func:`read_keyword_file`)."""
    path = Path(path)
    strings = h5py.string_dtype()
    with h5py.File(path, "w") as handle:
        handle.attrs["format"] = EXPORT_FORMAT
        handle.attrs["version"] = EXPORT_VERSION
        handle.attrs["backend"] = table.backend
        handle.attrs["params"] = json.dumps(table.params, sort_keys=True)
        handle.create_dataset("ids", data=np.array(table.ids, dtype=object), dtype=strings)
        handle.create_dataset("vocabulary", data=np.array(table.vocabulary, dtype=object), dtype=strings)
        handle.create_dataset("scores", data=table.scores, compression="gzip")
        handle.create_dataset("present", data=table.present, compression="gzip")
        if table.labels is not None:
            handle.create_dataset("labels", data=np.array(table.labels, dtype=object), dtype=strings)
    return path


def _read_export(handle: h5py.File, path: Path) -> KeywordTable:
    version = int(handle.attrs.get("version", 0))
    if version != EXPORT_VERSION:
        raise InvalidInputError(f"keyword file {path}: export version {version} is not supported (expected {EXPORT_VERSION}); update Backdrop")
    missing = [name for name in ("ids", "vocabulary", "scores", "present") if name not in handle]
    if missing:
        raise InvalidInputError(f"keyword file {path}: Backdrop export lacks datasets {missing}; re-export it")

    def strings(name: str) -> list[str]:
        return [value.decode() if isinstance(value, bytes) else str(value) for value in handle[name][()]]

    return _table_from(
        path,
        ids=strings("ids"),
        vocabulary=strings("vocabulary"),
        scores=handle["scores"][()].astype(np.float32),
        present=handle["present"][()].astype(bool),
        labels=strings("labels") if "labels" in handle else None,
        backend=str(handle.attrs.get("backend", PrecomputedBackend.name)),
        params=json.loads(handle.attrs.get("params", "{}")),
    )


def _table_from(path: Path, **fields: Any) -> KeywordTable:
    """Build a :class:`KeywordTable`; a broken rule is reported with the file's name."""
    try:
        return KeywordTable(**fields)
    except InvalidInputError as err:
        raise InvalidInputError(f"keyword file {path}: {err}") from err
