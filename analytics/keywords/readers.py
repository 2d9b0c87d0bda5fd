"""Keyword files: readers of three formats into a :class:`KeywordTable`, and Backdrop's own writer.

Three file formats are read by :func:`read_keyword_file`:

* **reference HDF5** (the paper's ``bgdb_items_val.hdf5``): dataset ``val/data``, float32 of shape
  (n, 1 + 150 + 365) = [label, 150 ADE20K pixel shares, 365 Places365 logits]. Keyword names come
  from ``object150_info.csv`` (column ``Name``, first synonym before ``;``) and
  ``categories_places365.txt`` found next to the file (or passed explicitly). Presence (docs/method.md, 'Scene keywords'):
  an ADE20K object is present when its pixel share exceeds ``min_share`` (1 %; the shares may be
  stored as fractions or percentages, detected from their range); a Places365 scene is present when
  it is among the ``places_top_k`` largest logits (the softmax is monotone, so top-k of the logits
  is top-k of the softmax; the paper keeps the arg-max, its code the top 5).
* **CSV** (at most :data:`MAX_CSV_BYTES`), in one of two layouts, told apart by a ``keyword`` column:

  - *long*: ``image,keyword[,score]``, one row per keyword of an image. Without ``score`` every
    listed keyword is present; with it, a listed keyword is present when its score is > 0 unless
    ``threshold`` / ``top_k`` say otherwise (unlisted pairs score 0).
  - *wide*: ``image``, an optional ``label``, then one numeric column per keyword. A 0/1 table is
    one-hot presence; other scores need ``threshold`` or ``top_k``.

  The image column may also be spelled ``id``.
* **Backdrop HDF5** written by :func:`write_keyword_file` (attribute ``format = backdrop-keywords``).

Tables read here are ``precomputed`` tables (:mod:`analytics.keywords.precomputed`: presence rules
in ``params['rules']``); :func:`analytics.keywords.import_keyword_table` stores them as the keyword
tables of a workspace's targets and pool, its rows named by :func:`read_row_names` when the file
names no images (the reference HDF5 numbers its rows).

Keyword names of the reference format are always prefixed by their source, ``ade:`` or ``places:``,
because both vocabularies name some of the same things (``sky``, ``river``, ``bridge`` ... 15 names)
and because a sampler may treat objects and scenes differently. Places365 names drop the
``/a/`` letter folder (``/a/apartment_building/outdoor`` -> ``places:apartment_building/outdoor``).
Two ADE20K classes share the first synonym ``screen``; duplicated first synonyms get the class
index appended (``ade:screen-59``, ``ade:screen-131``).
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pandas as pd

from analytics._validation import check_fraction, check_positive_int, read_at_most
from analytics.exceptions import InvalidInputError
from analytics.team import MAX_CSV_UPLOAD_MB

from ._base import KeywordTable
from .precomputed import PrecomputedBackend, PresenceRule, apply_rules

OBJECT_NAMES_FILE = "object150_info.csv"
SCENE_NAMES_FILE = "categories_places365.txt"
REFERENCE_DATASET = "val/data"
EXPORT_FORMAT = "backdrop-keywords"
EXPORT_VERSION = 1
MAX_CSV_BYTES = MAX_CSV_UPLOAD_MB * 2**20  # ~ 2 million long-format rows; larger keyword files belong in HDF5
ID_COLUMNS = ("image", "id")  # the column naming each image of a CSV (either spelling)


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
        check_csv_size(path.stat().st_size, str(path))  # before reading it into memory
        content = _read_names_file(path, "keyword CSV", "split it by item kind or convert it to a Backdrop keyword HDF5", max_bytes=MAX_CSV_BYTES)
        return read_keyword_csv(bytes(content), name=str(path), threshold=threshold, top_k=top_k)
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
    data = _read_names_file(path, "ADE20K names file", "give object150_info.csv (150 rows with 'Idx' and 'Name')")
    try:
        table = pd.read_csv(io.BytesIO(data))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as err:
        raise InvalidInputError(f"ADE20K names file {path} is not a readable CSV ({err}); give object150_info.csv") from err
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
    text = _read_text(path, "Places365 names file", "give categories_places365.txt (one '/a/alley 3' line per category)")
    names = []
    for line in text.splitlines():
        if line.strip():
            category = line.split()[0]
            names.append("places:" + ("/".join(category.split("/")[2:]) if category.startswith("/") else category))
    return names


def read_keyword_csv(
    data: bytes, *, name: str, threshold: float | None = None, top_k: int | None = None
) -> KeywordTable:
    """Parse a keyword CSV (long or wide layout, see the module docstring) from its bytes.

    Parameters
    ----------
    data : bytes
        The file's content (an upload, or a file read from disk); at most :data:`MAX_CSV_BYTES`.
    name : str
        The file's name, used in messages and recorded as ``params['file']``.
    threshold, top_k : see :func:`read_keyword_file`
        The presence rule of scores; without one, a wide 0/1 table is one-hot and a long table
        marks every listed keyword with a score > 0 present.

    Returns
    -------
    KeywordTable
        One row per image named in the file; ``params['format']`` is ``'csv'`` (wide) or ``'csv-long'``.

    Raises
    ------
    InvalidInputError
        Too large, not a CSV, no image column, empty or non-numeric values, duplicated rows.
    """
    check_csv_size(len(data), name)
    try:
        frame = pd.read_csv(
            io.BytesIO(data), dtype={column: str for column in (*ID_COLUMNS, "keyword", "label")}, keep_default_na=False, na_values=[""]
        )
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError, ValueError) as err:
        raise InvalidInputError(f"keyword file {name}: not a readable CSV ({err})") from err
    id_column = next((column for column in ID_COLUMNS if column in frame.columns), None)
    if id_column is None:
        raise InvalidInputError(
            f"keyword file {name}: needs an 'image' (or 'id') column naming each image; got columns {list(frame.columns)[:8]}"
        )
    _check_filled(frame, [id_column, *(["keyword"] if "keyword" in frame.columns else [])], name)
    if "keyword" in frame.columns:
        return _long_csv(frame, id_column, name, threshold=threshold, top_k=top_k)
    return _wide_csv(frame, id_column, name, threshold=threshold, top_k=top_k)


def check_csv_size(n_bytes: int, name: str) -> None:
    """Refuse a keyword CSV larger than :data:`MAX_CSV_BYTES` (``n_bytes``: its size)."""
    if n_bytes > MAX_CSV_BYTES:
        raise InvalidInputError(
            f"keyword file {name}: {n_bytes / 2**20:.1f} MiB is more than the {MAX_CSV_BYTES // 2**20} MiB a keyword CSV "
            "may have; split it by item kind or convert it to a Backdrop keyword HDF5"
        )


def _check_filled(frame: pd.DataFrame, columns: list[str], name: str) -> None:
    for column in columns:
        empty = np.flatnonzero(frame[column].isna().to_numpy() | (frame[column].astype(str).str.strip() == "").to_numpy())
        if empty.size:
            raise InvalidInputError(f"keyword file {name}: empty {column!r} on line {empty[0] + 2}; fill or drop that row")


def _numeric(frame: pd.DataFrame, name: str) -> np.ndarray:
    """The columns of ``frame`` as float32, or a message naming the first bad column and line."""
    text = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    if text:
        raise InvalidInputError(f"keyword file {name}: keyword columns must be numeric; non-numeric: {text[:5]}")
    scores = frame.to_numpy(dtype=np.float32)
    if not np.isfinite(scores).all():
        row, col = np.argwhere(~np.isfinite(scores))[0]
        raise InvalidInputError(
            f"keyword file {name}: NaN or empty value in column {frame.columns[col]!r}, row {row + 1}; fill or drop it"
        )
    return scores


def _wide_csv(frame: pd.DataFrame, id_column: str, name: str, *, threshold: float | None, top_k: int | None) -> KeywordTable:
    labels = frame["label"].astype(str).tolist() if "label" in frame.columns else None
    keywords = frame.drop(columns=[c for c in (id_column, "label") if c in frame.columns])
    if keywords.shape[1] == 0:
        raise InvalidInputError(f"keyword file {name}: the keyword vocabulary is empty; add one column per keyword")
    scores = _numeric(keywords, name)
    rule = _csv_rule(scores, name, threshold=threshold, top_k=top_k)
    return _table_from(
        name,
        ids=frame[id_column].astype(str).str.strip().tolist(),
        vocabulary=[str(c) for c in keywords.columns],
        scores=scores,
        present=apply_rules(scores, [rule]),
        labels=labels,
        backend=PrecomputedBackend.name,
        params={"file": name, "format": "csv", "rules": [asdict(rule)]},
    )


def _long_csv(frame: pd.DataFrame, id_column: str, name: str, *, threshold: float | None, top_k: int | None) -> KeywordTable:
    extra = [c for c in frame.columns if c not in (id_column, "keyword", "score")]
    if extra:
        raise InvalidInputError(
            f"keyword file {name}: a long keyword CSV has the columns {id_column},keyword[,score]; unexpected: {extra[:5]}"
        )
    images = frame[id_column].astype(str).str.strip()
    words = frame["keyword"].astype(str).str.strip()
    repeated = np.flatnonzero(pd.DataFrame({"i": images, "k": words}).duplicated().to_numpy())
    if repeated.size:
        line = repeated[0]
        raise InvalidInputError(
            f"keyword file {name}: image {images[line]!r} lists keyword {words[line]!r} twice (line {line + 2}); keep one row"
        )
    ids, vocabulary = list(dict.fromkeys(images)), list(dict.fromkeys(words))
    values = _numeric(frame[["score"]], name)[:, 0] if "score" in frame.columns else np.ones(len(frame), np.float32)
    scores = np.zeros((len(ids), len(vocabulary)), np.float32)
    scores[images.map({item: row for row, item in enumerate(ids)}).to_numpy(), words.map({w: j for j, w in enumerate(vocabulary)}).to_numpy()] = values
    listed_rule = 0.5 if "score" not in frame.columns else 0.0  # listed = present: 1 > 0.5, or any positive score
    rule = _csv_rule(scores, name, threshold=threshold if threshold is not None or top_k is not None else listed_rule, top_k=top_k)
    return _table_from(
        name,
        ids=ids,
        vocabulary=vocabulary,
        scores=scores,
        present=apply_rules(scores, [rule]),
        backend=PrecomputedBackend.name,
        params={"file": name, "format": "csv-long", "rules": [asdict(rule)]},
    )


def _csv_rule(scores: np.ndarray, name: str, *, threshold: float | None, top_k: int | None) -> PresenceRule:
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
        f"keyword file {name}: scores are not 0/1, so the presence rule is unknown; give `threshold` or `top_k`"
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


def _table_from(path: Path | str, **fields: Any) -> KeywordTable:
    """Build a :class:`KeywordTable`; a broken rule is reported with the file's name."""
    try:
        return KeywordTable(**fields)
    except InvalidInputError as err:
        raise InvalidInputError(f"keyword file {path}: {err}") from err


def read_row_names(path: str | os.PathLike) -> list[str]:
    """Image names of a keyword file's rows: a text file, one name per line, blank lines skipped."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"row-names file {path} not found; give a text file with one image name per line, in row order")
    text = _read_text(path, "row-names file", "give one image name per line")
    return [line.strip() for line in text.splitlines() if line.strip()]


def _read_names_file(path: Path, what: str, fix: str, *, max_bytes: int | None = None) -> bytearray:
    """A names or keyword file's bytes, read bounded (a file named on the server may be any size); one line if unreadable."""
    try:
        return read_at_most(path, what, fix, **({} if max_bytes is None else {"max_bytes": max_bytes}))
    except OSError as err:
        raise InvalidInputError(f"{what} {path} cannot be read ({err.strerror or err}); {fix}") from err


def _read_text(path: Path, what: str, fix: str) -> str:
    try:
        return _read_names_file(path, what, fix).decode("utf-8")
    except UnicodeDecodeError as err:
        raise InvalidInputError(f"{what} {path} is not text ({err}); {fix}") from err
