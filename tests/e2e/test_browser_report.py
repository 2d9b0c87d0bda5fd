"""The HTML report in a real browser, opened from a ``file://`` URL with every other request aborted:
every section is there, the Plotly matrices render from the embedded bundle, every thumbnail
(galleries, flips and their saliency overlays) decodes from its data URI, and the console stays
free of errors."""

from __future__ import annotations

from analytics.findings import SECTIONS, build_report
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
        sections = page.evaluate("Array.from(document.querySelectorAll('section')).map(s => s.id)")
        saliency = page.locator("#flips img[alt^='saliency on the composite']").count()
        loaded_images = page.evaluate("Array.from(document.images).filter(i => i.complete && i.naturalWidth > 0).length")
        all_images = page.evaluate("document.images.length")
        page.emulate_media(media="print")  # the printable layout: no navigation, a page per section
        printed = page.evaluate(
            "[getComputedStyle(document.querySelector('nav')).display, getComputedStyle(document.querySelector('#matrices')).breakBefore]"
        )
    finally:
        context.close()
    assert plots >= 4 * len(MODELS)
    assert sections == list(SECTIONS)
    assert saliency > 0  # the flips' overlays
    assert all_images > 0 and loaded_images == all_images
    assert printed == ["none", "page"]
    assert errors == []
    assert blocked == []  # nothing tried to leave the file
