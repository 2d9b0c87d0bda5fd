"""Team mode: another client presenting a signed-in session's id gets a new, signed-out session (:mod:`ui.session`).

The browser signs in; a second client, speaking Streamlit's websocket protocol itself, names the
browser's session id as the session to resume (what the frontend does after a dropped connection).
"""

from __future__ import annotations

from playwright.sync_api import expect
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.sync.client import connect

from tests.e2e.conftest import TEAM_PASSWORD as PASSWORD

SIGN_IN_PROMPT = "This Backdrop server is shared by a team: sign in to continue."
#: How long the second client waits for the next message once its run has started (a page run imports torch).
RECEIVE_TIMEOUT_S = 60


def session_ids(page) -> list[str]:
    """The ids of the sessions the tab's websocket is given, as they arrive."""
    seen: list[str] = []

    def on_frame(payload: str | bytes) -> None:
        if isinstance(payload, bytes):
            message = ForwardMsg()
            message.ParseFromString(payload)
            if message.WhichOneof("type") == "new_session" and message.new_session.initialize.session_id:
                seen.append(message.new_session.initialize.session_id)

    page.on("websocket", lambda socket: socket.on("framereceived", on_frame))
    return seen


def resume(url: str, session_id: str) -> tuple[str, str]:
    """Connect as another client naming ``session_id`` to resume, run the app once: (session id given, all it was sent)."""
    rerun = BackMsg()
    rerun.rerun_script.query_string = ""
    rerun.rerun_script.page_script_hash = ""
    given, sent = "", []
    with connect(f"{url.replace('http', 'ws', 1)}/_stcore/stream", subprotocols=["streamlit", "no-xsrf", session_id], origin=url) as socket:
        socket.send(rerun.SerializeToString())
        while True:
            message = ForwardMsg()
            message.ParseFromString(socket.recv(timeout=RECEIVE_TIMEOUT_S))
            sent.append(str(message))
            kind = message.WhichOneof("type")
            if kind == "new_session":
                given = message.new_session.initialize.session_id
            if kind == "script_finished" and message.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:
                return given, "\n".join(sent)


def test_a_reused_session_id_opens_the_sign_in_form(page, team_server):
    server = team_server
    ids = session_ids(page)
    page.goto(server.url)
    page.get_by_label("Name").fill("al")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_test_id("stSidebarUserContent").get_by_text("Signed in as al (analyst)")).to_be_visible()
    assert len(set(ids)) == 1

    given, shown = resume(server.url, ids[0])
    assert given != ids[0] and SIGN_IN_PROMPT in shown and "Signed in as" not in shown

    page.get_by_role("button", name="Sign out").click()  # the browser's own session was left alone
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    assert set(ids) == {ids[0]}


def test_a_closed_tabs_download_is_gone_at_once(browser, team_server, tmp_path):
    """Issue 42.6: an export CSV was served to a cookie-less GET for ~80 s after its tab closed
    (Streamlit's shutdown collection only marks downloads; :func:`ui.session.collect_downloads_at_shutdown`).
    The Agreement page's judgment-history CSV stands in for any download."""
    import re
    import time
    import urllib.error
    import urllib.request

    from analytics.judging import add_judgment
    from analytics.workspace import Workspace
    from tests.fixtures.models import add_tiny_models, insert_suite, write_tiny_model_files

    workspace = Workspace(team_server.workspace, create=False)
    add_tiny_models(workspace, write_tiny_model_files(tmp_path / "models"))
    add_judgment(workspace, annotator="al", model="tiny", label="variant", suite_id=insert_suite(workspace, "closing-tab"))

    def status(url: str) -> int:
        try:
            with urllib.request.urlopen(team_server.url + url, timeout=30) as response:  # no cookie: anyone with the URL
                return response.status
        except urllib.error.HTTPError as err:
            return err.code

    context = browser.new_context()
    page = context.new_page()
    media: list[str] = []
    page.on("websocket", lambda socket: socket.on("framereceived", lambda payload: media.extend(
        re.findall(r"/media/[0-9a-f]{20,}\.csv", payload.decode("latin-1") if isinstance(payload, bytes) else payload))))
    page.goto(team_server.url + "/Agreement")
    page.get_by_label("Name").fill("al")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("button", name=re.compile("Download the judgment history"))).to_be_visible()
    urls = sorted(set(media))
    assert urls and [status(url) for url in urls] == [200] * len(urls)
    context.close()  # the tab closes; its session shuts down when the server sees the socket close
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(status(url) != 404 for url in urls):
        time.sleep(0.5)
    assert [status(url) for url in urls] == [404] * len(urls)  # before the fix: 200 for ~80 s


def test_unsigned_clear_cache_and_metrics_get_nothing(team_server):
    """Issue 48.7: a client that never signs in emptied every server cache with a ``clear_cache`` BackMsg,
    and ``/_stcore/metrics`` listed the cached functions (which pages are used); :func:`ui.session.harden_team_server`."""
    import time
    import urllib.request

    rerun, clear = BackMsg(), BackMsg()
    rerun.rerun_script.query_string = ""
    rerun.rerun_script.page_script_hash = ""
    clear.clear_cache = True
    with connect(f"{team_server.url.replace('http', 'ws', 1)}/_stcore/stream", subprotocols=["streamlit", "no-xsrf"], origin=team_server.url) as socket:
        socket.send(rerun.SerializeToString())  # the sign-in form's run installs the patches
        while True:
            message = ForwardMsg()
            message.ParseFromString(socket.recv(timeout=RECEIVE_TIMEOUT_S))
            if message.WhichOneof("type") == "script_finished":
                break
        socket.send(clear.SerializeToString())
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "ignored a clear_cache request" not in team_server.log.read_text():
            time.sleep(0.25)
    assert "ignored a clear_cache request" in team_server.log.read_text()
    with urllib.request.urlopen(f"{team_server.url}/_stcore/metrics", timeout=30) as response:
        assert response.read().decode().split() == ["#", "EOF"]
