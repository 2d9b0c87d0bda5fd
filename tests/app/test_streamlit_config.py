"""The served app's Streamlit settings (``.streamlit/config.toml``)."""

from __future__ import annotations

import tomllib

from analytics.judging.importing import MAX_IMPORT_BYTES
from analytics.keywords.readers import MAX_CSV_BYTES
from analytics.robustness.factors import MAX_PREDICTIONS_BYTES
from analytics.team import MAX_CSV_UPLOAD_MB
from analytics.team.server import MAX_UPLOAD_MB
from analytics.workspace import PROJECT_ROOT


def test_server_does_not_watch_its_files():
    """Issue 19.8: watching the tree (with .venv) floods the log with inotify overflows and costs CPU."""
    text = (PROJECT_ROOT / ".streamlit" / "config.toml").read_text()
    assert tomllib.loads(text)["server"]["fileWatcherType"] == "none"
    assert "--server.fileWatcherType auto" in text  # how to turn it back on for development


def test_upload_limits_are_told_from_one_constant_each(tiny_workspace, app_runner):
    """Issue 42.11d: the limits read differently in different places. The server's cap is
    ``MAX_UPLOAD_MB``, the CSV readers' cap ``MAX_CSV_UPLOAD_MB``; config, README, readers and the
    CSV uploaders (their own "Limit … per file" and their labels) all follow them."""
    server = tomllib.loads((PROJECT_ROOT / ".streamlit" / "config.toml").read_text())["server"]
    assert server["maxUploadSize"] == MAX_UPLOAD_MB
    readme = " ".join((PROJECT_ROOT / "README.md").read_text().split())
    assert f"The largest upload is **{MAX_UPLOAD_MB} MB**" in readme and f"each upload is capped at {MAX_UPLOAD_MB} MB" in readme
    assert f"refuse more than {MAX_CSV_UPLOAD_MB} MB" in readme
    assert MAX_CSV_BYTES == MAX_PREDICTIONS_BYTES == MAX_IMPORT_BYTES == MAX_CSV_UPLOAD_MB * 2**20

    factors = app_runner("pages/15_Factors.py", tiny_workspace)
    (predictions,) = factors.get("file_uploader")
    assert predictions.proto.max_upload_size_mb == MAX_CSV_UPLOAD_MB
    assert f"up to {MAX_CSV_UPLOAD_MB} MB each" in predictions.proto.label

    ontology = app_runner("pages/3_Ontology.py", tiny_workspace)
    ontology.radio(key="ontology.kw.backend").set_value("precomputed").run()
    keywords = ontology.file_uploader(key="ontology.kw.upload")
    assert keywords.proto.max_upload_size_mb == MAX_CSV_UPLOAD_MB
    assert f"up to {MAX_CSV_UPLOAD_MB} MB" in keywords.proto.label


def _size_display(size: float, unit: str, base: int) -> str:
    """Streamlit 1.67's ``getSizeDisplay`` (frontend utils; ``FileUploader`` calls it with precision 0 for
    "… per file"): up a unit past half of ``base`` (1024 on Windows, else 1000), then rounded."""
    units = ["gb", "mb", "kb", "b"]
    if units.index(unit) and size > base / 2:
        return _size_display(size / base, units[units.index(unit) - 1], base)
    return f"{size:.0f}{unit.upper()}"


def test_the_upload_box_states_the_servers_cap_on_every_system():
    """Issue 47.10a: with a 512 MB cap the upload box read "1GB per file" outside Windows (536,870,912 bytes
    over 1000s: 0.54 GB, rounded). A whole number of GB reads true with either base."""
    assert MAX_UPLOAD_MB % 1024 == 0
    for base in (1000, 1024):
        assert _size_display(MAX_UPLOAD_MB * 2**20, "b", base) == f"{MAX_UPLOAD_MB // 1024}GB"
    assert _size_display(512 * 2**20, "b", 1000) == "1GB"  # the old cap, as the box showed it
