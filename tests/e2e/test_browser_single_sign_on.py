"""Single sign-on in headless chromium: ``st.login`` against an OpenID provider the test starts itself.

The browser goes the whole way: Backdrop's button, Streamlit's ``/auth/login``, the provider's
``/authorize``, Streamlit's ``/oauth2callback`` (code exchange, RS256 ID token checked against the
provider's keys), back to the app signed in with the role the roles file gives.
"""

from __future__ import annotations

import shutil

from playwright.sync_api import expect

from analytics.team import active_user
from analytics.team.sso import SSO_ROLES_FILE
from analytics.workspace import Workspace
from tests.e2e.conftest import free_port, start_server, stop_server
from tests.fixtures.oidc import CLIENT_ID, CLIENT_SECRET

ROLES = """
label = "Company account"
[people]
"ada@example.org" = "analyst"
[claim]
name = "groups"
roles = { "labellers" = "annotator" }
"""


def test_sign_in_through_an_openid_provider(page, chromium, e2e_workspace, oidc_provider, tmp_path, monkeypatch):
    copy = tmp_path / "sso-ws"
    shutil.copytree(e2e_workspace.root, copy)
    (copy / SSO_ROLES_FILE).write_text(ROLES, encoding="utf-8")
    port = free_port()
    redirect_uri = f"http://127.0.0.1:{port}/oauth2callback"
    oidc_provider.redirect_uris.add(redirect_uri)
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(
        f'[auth]\nredirect_uri = "{redirect_uri}"\ncookie_secret = "{"s" * 48}"\nclient_id = "{CLIENT_ID}"\n'
        f'client_secret = "{CLIENT_SECRET}"\nserver_metadata_url = "{oidc_provider.url}/.well-known/openid-configuration"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("BACKDROP_TEAM", "1")  # inherited by the server started now
    server = start_server(copy, tmp_path, port=port, options=["--secrets.files", str(secrets)])
    workspace = Workspace(copy, create=False)
    try:
        oidc_provider.person = {"sub": "1", "email": "li@example.org", "email_verified": True, "groups": ["labellers"]}
        page.goto(server.url)
        page.get_by_role("button", name="Sign in with Company account").click()
        expect(page.get_by_test_id("stSidebarUserContent").get_by_text("Signed in as li@example.org (annotator)")).to_be_visible()
        assert active_user(workspace, "li@example.org").role == "annotator"

        page.get_by_role("button", name="Sign out").click()  # also out of the provider's cookie
        expect(page.get_by_role("button", name="Sign in with Company account")).to_be_visible()

        oidc_provider.person = {"sub": "2", "email": "eve@example.org", "email_verified": True, "groups": ["outsiders"]}
        page.get_by_role("button", name="Sign in with Company account").click()
        expect(page.get_by_text("eve@example.org may not use this Backdrop server")).to_be_visible()
        expect(page.get_by_text("Signed in as")).to_have_count(0)
        assert active_user(workspace, "eve@example.org") is None
        page.get_by_role("button", name="Sign out of Company account").click()
        expect(page.get_by_role("button", name="Sign in with Company account")).to_be_visible()

        oidc_provider.person = {"sub": "3", "email": "ada@example.org", "email_verified": True}
        page.get_by_role("button", name="Sign in with Company account").click()
        expect(page.get_by_test_id("stSidebarUserContent").get_by_text("Signed in as ada@example.org (analyst)")).to_be_visible()
        assert oidc_provider.codes == {}  # every code was exchanged, once
    finally:
        stop_server(server)
