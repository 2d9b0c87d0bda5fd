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
