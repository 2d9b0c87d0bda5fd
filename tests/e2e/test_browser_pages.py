"""One newcomer's task per page in headless chromium (issue 19, "Done when"): Models, Ontology, Suites,
Run, Saliency, Agreement, Assessor on one served workspace, and a missing workspace created and
imported into from the pages.

The issue asks for these on the demo workspace; building it (assets, the EfficientNet-Lite zoo,
runs over real suites) takes far too long for a test, so the workspace here is the tiny one of
``conftest.py`` with tiny TorchScript models, their finished runs and two annotators' judgments
(the ``judged_workspace`` of ``tests/fixtures/judging.py``), a torchvision model for Grad-CAM and
a four-row keyword table. One server serves every page test (server starts are the slow part).
"""

from __future__ import annotations

import io
import re
import shutil
import zipfile

import cv2
import numpy as np
import pytest
from playwright.sync_api import Locator, Page, expect

from analytics.data import custom_label_space, list_backgrounds, list_targets
from analytics.judging import MIN_SHARED_MODELS
from analytics.keywords import save_keyword_table
from analytics.models import register_torchscript, register_torchvision
from analytics.runs import start_runs
from analytics.saliency import METHODS
from analytics.workspace import Workspace
from tests.e2e.test_browser_own_data import LONG_MS, choose, open_page, pick_radio, settle, upload
from tests.fixtures.judging import ANNOTATORS, EXTRA_MODELS, JUDGING_MODELS, JUDGMENTS, judge
from tests.fixtures.keywords import TINY_LABELS, TINY_TRANSACTIONS, make_keyword_table
from ui.saliency import LEGEND_CAPTION


@pytest.fixture(scope="module")
def pages_server(app_server_factory, e2e_workspace, tmp_path_factory):
    """The e2e workspace plus nine tiny models with finished runs over ``tiny-suite``, the judgments
    of two annotators, ``tiny-cnn`` (torchvision, for Grad-CAM) and the keyword table ``tiny``."""
    import torch
    import torchvision

    from tests.fixtures.models import CENTRE_BOX, CORNER_BOXES, SIZE, RegionNet, TinyNet, insert_suite, save_torchscript, write_labels

    folder = tmp_path_factory.mktemp("pages")
    shutil.copytree(e2e_workspace.root, folder / "ws")
    workspace = Workspace(folder / "ws", create=False)
    labels = custom_label_space(write_labels(folder / "labels.txt"))
    networks = {"tiny": TinyNet(), "fg-only": RegionNet((CENTRE_BOX,)), "bg-only": RegionNet(CORNER_BOXES)}
    networks |= {name: TinyNet() for name in EXTRA_MODELS}
    for seed, (name, network) in enumerate(networks.items()):
        path = save_torchscript(network, folder / f"{name}.pt", seed=seed + (10 if name in EXTRA_MODELS else 0))
        register_torchscript(workspace, name, checkpoint=path, label_space=labels, input_size=SIZE)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        cnn = torchvision.models.shufflenet_v2_x0_5(num_classes=2)
    torch.save(cnn.state_dict(), folder / "tiny-cnn.pt")
    register_torchvision(workspace, "tiny-cnn", arch="shufflenet_v2_x0_5", checkpoint=folder / "tiny-cnn.pt", label_space=labels, input_size=SIZE)
    insert_suite(workspace)
    start_runs(workspace, list(JUDGING_MODELS), "tiny-suite", device="cpu")
    for i, annotator in enumerate(ANNOTATORS):
        judge(workspace, annotator, {model: pair[i] for model, pair in JUDGMENTS.items()})
    save_keyword_table(workspace, make_keyword_table(TINY_TRANSACTIONS, TINY_LABELS), name="tiny")
    return app_server_factory(workspace)


def caption(page: Page, text: str | re.Pattern):
    return page.get_by_test_id("stCaptionContainer").filter(has_text=text)


def test_home_starts_here_at_the_matrices(page, pages_server):
    page.goto(pages_server.url)
    expect(page.get_by_role("heading", name="Start here")).to_be_visible(timeout=LONG_MS)
    expect(page.get_by_text(re.compile(r"composite accuracy \(the share of the suite.s composites"))).to_be_visible()  # issue 47.1: the measure by name
    page.get_by_role("link", name="See the variance matrices, models side by side").click()
    expect(page.get_by_role("heading", name="Matrices", exact=True)).to_be_visible()
    expect(page).to_have_url(re.compile(r"/Matrices\?.*run="))  # the headline model's run
    expect(page.get_by_role("tab", name="Compare models")).to_have_attribute("aria-selected", "true", timeout=LONG_MS)  # the comparison it promises


def test_models_lists_the_registry_and_measures_a_model(page, pages_server):
    open_page(page, f"{pages_server.url}/Models", "Models")
    expect(page.get_by_text("Embedding = the layer before the classifier head", exact=False)).to_be_visible()
    expect(page.get_by_test_id("stDataFrame").first).to_be_visible()
    page.get_by_role("tab", name="Accuracy").click()
    settle(page)
    metric = page.get_by_test_id("stMetric").filter(has=page.get_by_text("Targets", exact=True))
    expect(metric.get_by_test_id("stMetricValue")).to_have_text(str(len(list_targets(Workspace(pages_server.workspace, create=False)))), timeout=LONG_MS)
    expect(page.get_by_test_id("stMetric").filter(has_text="Accuracy on original targets")).to_be_visible()


def test_ontology_centres_the_network_on_a_searched_keyword(page, pages_server):
    open_page(page, f"{pages_server.url}/Ontology", "Ontology")
    keywords = page.get_by_test_id("stMetric").filter(has_text="Keywords")
    expect(keywords.get_by_test_id("stMetricValue")).to_have_text("5")
    page.get_by_role("tab", name="Network").click()
    settle(page)
    expect(caption(page, re.compile(r"keywords within 1 edge of sky"))).to_be_visible()
    choose(page, page, "Centre keyword (type to search)", re.compile(r"^sand \("))
    expect(caption(page, re.compile(r"2 keywords within 1 edge of sand · every keyword has an edge"))).to_be_visible()
    settle(page)  # the previous centre's chart may linger while the new one is drawn
    network = page.locator(".js-plotly-plot").filter(has=page.locator(".textpoint", has_text=re.compile(r"^sand$")))
    expect(network).to_be_visible()
    labels = network.locator(".textpoint")
    expect(labels.filter(has_text=re.compile(r"^sand$"))).to_have_count(1)
    expect(labels.filter(has_text=re.compile(r"^sea$"))).to_have_count(1)
    box = network.bounding_box()
    assert box["width"] >= 800 and box["height"] >= 700  # legible at a 1400 px wide window


def test_suites_previews_a_sampled_suite(page, pages_server):
    open_page(page, f"{pages_server.url}/Suites", "Suites")
    choose(page, page, "Method", re.compile(r"^random"))
    page.get_by_role("button", name="Preview").click()  # a few targets, nothing saved
    expect(page.get_by_role("heading", name=re.compile(r"^Preview: random suite"))).to_be_visible(timeout=LONG_MS)
    settle(page)
    page.get_by_role("button", name="Save suite").click()  # a background job over every target
    expect(page.get_by_text(re.compile(r"^random, N = \d+, seed \d+, \d+ targets · saved "))).to_be_visible(timeout=LONG_MS)  # opened when saved
    settle(page)
    targets = page.get_by_test_id("stMetric").filter(has=page.get_by_text("Targets", exact=True))
    expect(targets.get_by_test_id("stMetricValue")).to_have_text(str(len(list_targets(Workspace(pages_server.workspace, create=False)))))


def test_run_reports_a_finished_run(page, pages_server):
    open_page(page, f"{pages_server.url}/Run", "Run")
    expect(page.get_by_role("heading", name="Runs")).to_be_visible()
    expect(page.get_by_test_id("stDataFrame").last).to_be_visible()  # the runs table (a canvas: its cells are not in the DOM)
    page.get_by_role("button", name="Run", exact=True).click()  # the preselected model has a finished run: reused at once
    expect(page.get_by_text(re.compile(r"^Finished 1 run\(s\): "))).to_be_visible(timeout=LONG_MS)


def open_options(page: Page, combobox: Locator) -> None:
    """Open a select box's option list; a rerender of the page (a script run ending) can close it
    again right after the click, so try a few times."""
    for _ in range(3):
        settle(page)
        combobox.click()
        try:
            expect(page.get_by_role("listbox")).to_be_visible(timeout=5_000)
            return
        except AssertionError:
            page.keyboard.press("Escape")
    expect(page.get_by_role("listbox")).to_be_visible()


def test_saliency_offers_what_each_model_can_run_and_defaults_to_grad_cam(page, pages_server):
    # The first model is TorchScript, which accepts no hooks: the page opens on the clearest method it
    # can run, with no error box (open_page checks), and offers Grad-CAM once an eager model is picked.
    open_page(page, f"{pages_server.url}/Saliency", "Saliency")
    pickers = page.get_by_test_id("stMain")  # in the page since issue 42.9 (in the sidebar they sat below the page links)
    method = pickers.get_by_role("combobox", name="Method", exact=True)
    expect(page.get_by_text(LEGEND_CAPTION)).to_be_visible(timeout=LONG_MS)
    expect(method).not_to_have_value(METHODS["gradcam"].name)
    open_options(page, method)
    expect(page.get_by_role("option", name=METHODS["saliency"].name, exact=True)).to_be_visible()
    for key in ("gradcam", "gradcam_plus_plus", "guided_backprop"):
        expect(page.get_by_role("option", name=METHODS[key].name, exact=True)).to_have_count(0)
    page.keyboard.press("Escape")
    choose(page, pickers, "Model", "tiny-cnn")
    expect(method).to_have_value(METHODS["gradcam"].name)
    expect(page.get_by_text(LEGEND_CAPTION)).to_be_visible(timeout=LONG_MS)
    expect(page.get_by_test_id("stImageCaption").filter(has_text=re.compile(r"^original"))).to_have_count(1)
    expect(page).to_have_url(re.compile(r"[?&]method=gradcam(&|$)"))  # the address names the view
    expect(page).to_have_url(re.compile(r"[?&]model=tiny-cnn(&|$)"))


def test_agreement_shows_the_shared_models_and_warns_below_the_minimum(page, pages_server):
    open_page(page, f"{pages_server.url}/Agreement", "Agreement")
    shared = len(JUDGMENTS)
    expect(caption(page, f"{shared} shared models (fewer than {MIN_SHARED_MODELS})").first).to_be_visible()
    expect(page.get_by_test_id("stAlertContentWarning").filter(has_text=f"Only {shared} model(s)")).to_be_visible()
    expect(page.get_by_role("combobox", name="Suite")).to_have_value(re.compile(f"{len(JUDGMENTS)} models, {len(ANNOTATORS)} annotators"))


def test_assessor_trains_and_predicts_the_unjudged_model(page, pages_server):
    open_page(page, f"{pages_server.url}/Assessor", "Assessor")
    expect(page.get_by_text(f"{len(JUDGMENTS)} labelled models", exact=False).first).to_be_visible(timeout=LONG_MS)
    expect(page.get_by_role("heading", name="Predictions and why")).to_be_visible()
    expect(page.get_by_test_id("stDataFrame").first).to_be_visible()
    expect(page.locator(".js-plotly-plot").last).to_contain_text("Why net6 is predicted", timeout=LONG_MS)


# -- a missing workspace is no dead end (issue 19.4) ---------------------------------------------------------------
def background_zip(n: int) -> bytes:
    """A zip of ``n`` plain PNG photos (a background pool)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for i in range(n):
            photo = np.random.default_rng(i).integers(0, 255, (320, 320, 3), dtype=np.uint8)  # a new workspace keeps 256 px images
            archive.writestr(f"pool/photo{i}.png", cv2.imencode(".png", photo)[1].tobytes())
    return buffer.getvalue()


def test_a_missing_workspace_is_created_and_imported_into(page, server_per_test, tmp_path):
    missing = tmp_path / "new-workspace"
    server = server_per_test(missing)
    page.goto(server.url)
    expect(page.get_by_test_id("stAlertContentError").filter(has_text=str(missing))).to_be_visible(timeout=LONG_MS)
    assert not missing.exists()  # looking creates nothing
    page.get_by_role("button", name="Create an empty workspace here").click()
    expect(page.get_by_test_id("stMetric").first).to_be_visible(timeout=LONG_MS)  # Home's counts of the new workspace
    settle(page)
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Data").click()
    expect(page.get_by_role("heading", name="Data", exact=True)).to_be_visible()
    page.get_by_role("tab", name="Import").click()
    panel = page.get_by_test_id("stTabPanel").filter(has_text="What to import")
    pick_radio(page, panel, "Background pool")
    pick_radio(page, panel, "Uploaded zip")
    archive = tmp_path / "pool.zip"
    archive.write_bytes(background_zip(2))
    upload(page, panel, "Zip file", archive)
    panel.get_by_role("button", name="Import", exact=True).click()
    expect(page.get_by_text(re.compile(r"Imported from pool\.zip: 2 new of 2 accepted, 0 rejected"))).to_be_visible(timeout=LONG_MS)
    assert len(list_backgrounds(Workspace(missing, create=False))) == 2
