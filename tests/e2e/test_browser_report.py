"""The HTML report in a real browser, opened from a ``file://`` URL with every other request aborted:
every section is there, the Plotly matrices render from the embedded bundle, every thumbnail
(galleries, flips and their saliency overlays) decodes from its data URI, and the console stays
free of errors."""

from __future__ import annotations

from analytics.findings import SECTIONS, build_report
from tests.e2e.conftest import PAGE_TIMEOUT_MS, VIEWPORT

MODELS = ("tiny", "bg-only")
#: The matrices' axis and colour-bar titles that run past their figure, or into another title or tick
#: label of it (#47 item 9: the pages' worded titles crowded the report's ~170 px matrices).
CROWDED = """() => {
  const box = (e) => e.getBoundingClientRect();
  const overlap = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  const found = [];
  document.querySelectorAll('#matrices .js-plotly-plot').forEach((plot, n) => {
    const frame = box(plot);
    const area = box(plot.querySelector('.nsewdrag'));  // the plot area: an axis title no longer than its axis
    for (const t of plot.querySelectorAll('.g-xtitle text')) if (box(t).width > area.width + 1) found.push(`${n}: ${t.textContent} wider than its axis`);
    for (const t of plot.querySelectorAll('.g-ytitle text')) if (box(t).height > area.height + 1) found.push(`${n}: ${t.textContent} taller than its axis`);
    const titles = [...plot.querySelectorAll('.g-xtitle text, .g-ytitle text, .cbtitle text')];
    const texts = [...titles, ...plot.querySelectorAll('.xtick text, .ytick text, .cbaxis text')];
    for (const t of titles) {
      const r = box(t);
      if (r.left < frame.left - 1 || r.right > frame.right + 1 || r.top < frame.top - 1 || r.bottom > frame.bottom + 1) found.push(`${n}: ${t.textContent} outside`);
      for (const other of texts) if (other !== t && overlap(r, box(other))) found.push(`${n}: ${t.textContent} on ${other.textContent}`);
    }
  });
  return found;
}"""


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
        crowded = page.evaluate(CROWDED)
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
    assert crowded == []
    assert errors == []
    assert blocked == []  # nothing tried to leave the file
