"""``benchmarks/coco_import.py`` still imports its synthetic COCO export through the command line (a
benchmark that breaks silently measures nothing). Tiny sizes; nothing here is timed."""

from __future__ import annotations

import contextlib
import io

from benchmarks import coco_import


def test_the_streamed_import_reports_its_json(tmp_path):
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        result = coco_import.main(["--instances", "20", "--images", "2", "--side", "48", "--image-size", "32", "--workdir", str(tmp_path)])
    assert printed.getvalue().strip().startswith("{") and result["instances"] == 20
    streamed = result["streamed"]
    assert streamed["added"] == 20 and streamed["seconds"] > 0 and streamed["peak_rss_mib"] >= streamed["imports_rss_mib"] > 0
    assert "held" not in result
