"""The HTML report in a real browser, opened from a ``file://`` URL with every other request aborted:
the Plotly matrices render from the embedded bundle and the console stays free of errors."""

from __future__ import annotations

from analytics.report import build_report
from tests.e2e.conftest import PAGE_TIMEOUT_MS, VIEWPORT

MODELS = ("tiny", "bg-only")


def test_report_renders_offline(browser, judged_workspace, tmp_path):
    path = tmp_path / "report.html"
    path.write_text(build_report(judged_workspace, MODELS[0], compare=MODELS[1:]), encoding="utf-8")
    context = browser.new_context(viewport=VIEWPORT)
    blocked: list[str] = []

    def only_files(route) -> None:
        if route.request.url.startswith(("file:", "data:")):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    context.route("**/*", only_files)
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(path.as_uri(), wait_until="load")
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 4")
        plots = page.locator(".js-plotly-plot").count()
        loaded_images = page.evaluate("Array.from(document.images).filter(i => i.complete && i.naturalWidth > 0).length")
        all_images = page.evaluate("document.images.length")
    finally:
        context.close()
    assert plots >= 4 * len(MODELS)
    assert all_images > 0 and loaded_images == all_images
    assert errors == []
    assert blocked == []  # nothing tried to leave the file
