"""Demo assets: Debian packages fetched with ``apt-get download`` and unpacked with ``dpkg -x``.

The demo workspace is built from real photos that Debian ships (README.md, 'The demo workspace'): Tux Paint photo stamps
(objects with an alpha mask) and desktop wallpapers (scenes). Nothing is installed: each package is
downloaded into a cache folder and unpacked there, once. Every image keeps its source package and
licence, read from the package's own ``usr/share/doc/<package>/copyright`` (machine-readable DEP-5
stanzas, most specific match wins) or from a KDE wallpaper's ``metadata.json``.

Cache layout::

    <cache>/debs/<package>_<version>_<arch>.deb   (only until it is unpacked)
    <cache>/<package>/usr/...            the unpacked package (``dpkg -x``)
    <cache>/<package>/.complete          written last: the package is ready
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from analytics._install import default_data_dir
from analytics._progress import Progress
from analytics.exceptions import BackdropError

logger = logging.getLogger(__name__)

CACHE_ENV_VAR = "BACKDROP_CACHE"
COMPLETE_MARKER = ".complete"

# Shown whenever the Debian tools cannot provide the assets: the way to use one's own data instead.
OWN_DATA_HINT = (
    "point Backdrop at your own folders instead: "
    "`analytics.api.add_targets` (layout 'folder', 'bgchallenge' or 'cutouts') and `analytics.api.add_backgrounds`, "
    "the Data page, or `python -m analytics add-targets` and `add-backgrounds`"
)


class AssetError(BackdropError):
    """The demo assets cannot be fetched or unpacked here."""


def default_cache_dir() -> Path:
    """Where fetched packages live: ``$BACKDROP_CACHE``, else the checkout's ``.cache/assets``
    (git-ignored; installed: the user's cache, :func:`analytics._install.default_data_dir`)."""
    return Path(os.environ.get(CACHE_ENV_VAR) or default_data_dir(".cache/assets"))


def package_root(package: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder a package is unpacked into (it exists only once :func:`fetch_packages` ran)."""
    return Path(cache_dir or default_cache_dir()) / package


def is_fetched(package: str, cache_dir: str | os.PathLike[str] | None = None) -> bool:
    """Whether ``package`` is unpacked completely in the cache."""
    return (package_root(package, cache_dir) / COMPLETE_MARKER).is_file()


def fetch_packages(
    packages: Sequence[str],
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
) -> dict[str, Path]:
    """Download and unpack Debian packages into the cache, skipping those already there.

    Parameters
    ----------
    packages : sequence of str
        Debian package names, e.g. ``["tuxpaint-stamps-default", "mate-backgrounds"]``.
    cache_dir : path-like, default=None
        The cache; None means :func:`default_cache_dir`.
    progress : callable, default=None
        ``progress(ready, len(packages), package)`` as each package is ready (fetched or found).

    Returns
    -------
    roots : dict of str to Path
        Package name -> folder it is unpacked in (paths inside are ``usr/share/...``).

    Raises
    ------
    AssetError
        ``apt-get``/``dpkg`` are missing, or a package cannot be downloaded; the message says how
        to use one's own folders instead.
    """
    cache = Path(cache_dir or default_cache_dir())
    missing = [p for p in packages if not is_fetched(p, cache)]
    if missing:
        _check_tools()
        debs = _download(missing, cache / "debs")
        for package in missing:
            _unpack(debs[package], package_root(package, cache))
            debs[package].unlink()  # the unpacked copy is all we read; the .deb would double the cache
    roots = {}
    for ready, package in enumerate(packages, 1):
        roots[package] = package_root(package, cache)
        if progress is not None:
            progress(ready, len(packages), package)
    return roots


def _check_tools() -> None:
    absent = [tool for tool in ("apt-get", "dpkg") if shutil.which(tool) is None]
    if absent:
        raise AssetError(
            f"{' and '.join(absent)} not found: the demo assets are Debian packages fetched with "
            f"`apt-get download` and unpacked with `dpkg -x`; on this system {OWN_DATA_HINT}"
        )


def _download(packages: Sequence[str], folder: Path) -> dict[str, Path]:
    """``apt-get download`` each package into ``folder``; one ``apt-get update`` if the lists are stale."""
    folder.mkdir(parents=True, exist_ok=True)
    found = {p: _deb_in(folder, p) for p in packages}
    wanted = [p for p, deb in found.items() if deb is None]
    if wanted:
        result = _run(["apt-get", "download", *wanted], cwd=folder)
        if result.returncode != 0:
            logger.info("apt-get download failed (%s); updating the package lists once", result.stderr.strip())
            update = _run(["apt-get", "update"], cwd=folder)
            if update.returncode != 0:
                raise AssetError(
                    f"apt-get download {' '.join(wanted)} failed ({_last_line(result.stderr)}) and "
                    f"`apt-get update` failed too ({_last_line(update.stderr)}); run `sudo apt-get update` "
                    f"and retry, or {OWN_DATA_HINT}"
                )
            result = _run(["apt-get", "download", *wanted], cwd=folder)
            if result.returncode != 0:
                raise AssetError(
                    f"apt-get download {' '.join(wanted)} failed: {_last_line(result.stderr)}; check the "
                    f"package names and your access to a Debian mirror, or {OWN_DATA_HINT}"
                )
        found.update({p: _deb_in(folder, p) for p in wanted})
    lost = [p for p, deb in found.items() if deb is None]
    if lost:
        raise AssetError(f"apt-get reported success but no .deb for {', '.join(lost)} is in {folder}")
    return found  # type: ignore[return-value]


def _deb_in(folder: Path, package: str) -> Path | None:
    """The newest-looking ``<package>_*.deb`` in ``folder`` (apt quotes ':' in versions as '%3a')."""
    debs = sorted(folder.glob(f"{package}_*.deb"))
    return debs[-1] if debs else None


def _unpack(deb: Path, root: Path) -> None:
    """``dpkg -x`` into a temporary sibling, then rename: a half-unpacked package is never 'complete'."""
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))
    try:
        result = _run(["dpkg", "-x", str(deb), str(staging)])
        if result.returncode != 0:
            raise AssetError(f"dpkg -x {deb} failed: {_last_line(result.stderr)}; delete the file and retry")
        (staging / COMPLETE_MARKER).write_text(deb.name + "\n")
        if root.exists():
            shutil.rmtree(root)
        staging.rename(root)
    finally:
        if staging.exists():
            shutil.rmtree(staging)


def _run(command: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


# -- licences --------------------------------------------------------------------------------
@dataclass(frozen=True)
class LicenceStanza:
    """One ``Files:`` stanza of a DEP-5 copyright file."""

    patterns: tuple[str, ...]
    licence: str
    copyright: str


def read_copyright(root: Path, package: str) -> list[LicenceStanza]:
    """The ``Files:`` stanzas of ``usr/share/doc/<package>/copyright`` (empty when it is not DEP-5).

    Continuation lines (starting with a space) belong to the field above; a stanza without ``Files:``
    (the header, standalone ``License:`` texts) is skipped.
    """
    path = root / "usr" / "share" / "doc" / package / "copyright"
    if not path.is_file():
        return []
    stanzas = []
    for block in path.read_text(errors="replace").split("\n\n"):
        fields = _dep5_fields(block)
        if "files" in fields and "license" in fields:
            stanzas.append(
                LicenceStanza(
                    tuple(fields["files"].split()),
                    fields["license"].splitlines()[0].strip(),
                    "; ".join(line.strip() for line in fields.get("copyright", "").splitlines() if line.strip()),
                )
            )
    return stanzas


def _dep5_fields(block: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    key = None
    for line in block.splitlines():
        if line[:1] in (" ", "\t") and key is not None:
            fields[key] += "\n" + line.strip()
        elif ":" in line:
            key, value = line.split(":", 1)
            key = key.strip().lower()
            fields[key] = value.strip()
    return fields


def licence_of(root: Path, package: str, relpath: str) -> str:
    """The licence of one file of an unpacked package, with its copyright holder where stated.

    A KDE wallpaper's ``metadata.json`` (``KPlugin.License`` and ``Authors``) is the most specific
    source; otherwise the last DEP-5 stanza whose pattern matches the end of the installed path
    (upstream paths such as ``nature/Aqua.jpg`` are installed under ``usr/share/...``).

    Returns
    -------
    licence : str
        e.g. ``"GPL-2+ (2005, Timothy Schellhase)"``; empty when nothing applies.
    """
    metadata = _wallpaper_metadata(root / relpath)
    if metadata is not None:
        return metadata
    licence = ""
    for stanza in read_copyright(root, package):
        if any(_matches_tail(relpath, pattern) for pattern in stanza.patterns):
            licence = f"{stanza.licence} ({stanza.copyright})" if stanza.copyright else stanza.licence
    return licence


def _matches_tail(relpath: str, pattern: str) -> bool:
    """Whether ``pattern`` (a DEP-5 glob relative to the upstream tree) matches the end of ``relpath``.

    Packaging may drop upstream folders (``16.04/x.jpg`` installed as ``backgrounds/x.jpg``), so a
    pattern whose last component has no wildcard also matches by file name alone.
    """
    if pattern == "*":
        return True
    parts = relpath.split("/")
    depth = pattern.count("/") + 1
    if len(parts) >= depth and fnmatch.fnmatchcase("/".join(parts[-depth:]), pattern):
        return True
    name = pattern.rsplit("/", 1)[-1]
    return not any(c in name for c in "*?[") and name == parts[-1]


def _wallpaper_metadata(path: Path) -> str | None:
    """``<wallpaper>/contents/images/<size>.jpg`` -> licence and authors from ``<wallpaper>/metadata.json``."""
    if len(path.parents) < 3 or path.parent.name != "images" or path.parents[1].name != "contents":
        return None
    metadata = path.parents[2] / "metadata.json"
    if not metadata.is_file():
        return None
    plugin = json.loads(metadata.read_text()).get("KPlugin", {})
    licence = plugin.get("License")
    if not licence:
        return None
    authors = ", ".join(a.get("Name", "") for a in plugin.get("Authors", []) if a.get("Name"))
    return f"{licence} ({authors})" if authors else licence
