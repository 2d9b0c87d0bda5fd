"""``python -m analytics user ...`` and ``serve-check``, the command ``bash backdrop.sh serve`` runs, and
the wait until a started server answers (``wait_until_serving``)."""

from __future__ import annotations

import http.server
import io
import json
import os
import shlex
import socket
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from analytics.cli import main
from analytics.exceptions import InvalidInputError, SignInError
from analytics.team import authenticate
from analytics.team.launch import wait_until_serving
from analytics.workspace import PROJECT_ROOT, Workspace
from tests.fixtures.team import TEAM_PASSWORD

pytestmark = pytest.mark.usefixtures("fast_hashing")
SECRET = "s3cret pass phrase"


def run(argv: list[str], monkeypatch, capsys, *, stdin: str = "") -> tuple[int, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_user_add_reads_the_password_from_stdin_only(tmp_path, monkeypatch, capsys):
    root = str(tmp_path / "new")  # created by `user add`
    argv = ["user", "add", "ada", "--role", "admin", "--password-stdin", "--workspace", root, "--json"]
    code, output = run(argv, monkeypatch, capsys, stdin=SECRET + "\n")
    assert code == 0 and json.loads(output) == {"user": "ada", "role": "admin"}
    assert SECRET not in output and SECRET not in argv
    assert authenticate(Workspace(root, create=False), "ada", SECRET).role == "admin"
    code, output = run(["user", "list", "--workspace", root, "--json"], monkeypatch, capsys)
    assert code == 0 and [u["name"] for u in json.loads(output)["users"]] == ["ada"]
    assert "argon2" not in output and "hash" not in output


def test_no_option_takes_a_password_argument(team_workspace, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["user", "add", "bob", "--role", "viewer", "--password", SECRET, "--workspace", str(team_workspace.root)])
    assert exited.value.code == 2


def test_prompt_asks_twice_and_refuses_a_mismatch(team_workspace, monkeypatch, capsys):
    typed = iter(["first password", "second password"])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(typed))
    code, output = run(["user", "passwd", "ann", "--workspace", str(team_workspace.root)], monkeypatch, capsys)
    assert code == 2 and "differ" in output and "first password" not in output
    assert authenticate(team_workspace, "ann", TEAM_PASSWORD).name == "ann"  # unchanged
    monkeypatch.setattr("getpass.getpass", lambda prompt="": "new password")
    code, _ = run(["user", "passwd", "ann", "--workspace", str(team_workspace.root)], monkeypatch, capsys)
    assert code == 0 and authenticate(team_workspace, "ann", "new password").name == "ann"


def test_user_disable_and_errors(team_workspace, monkeypatch, capsys):
    root = str(team_workspace.root)
    code, output = run(["user", "disable", "ann", "--workspace", root, "--json"], monkeypatch, capsys)
    assert code == 0 and json.loads(output) == {"user": "ann", "disabled": True}
    code, output = run(["user", "disable", "nobody", "--workspace", root], monkeypatch, capsys)
    assert code == 2 and output.count("\n") == 1 and "no user named 'nobody'" in output
    code, output = run(["user", "add", "bob", "--role", "viewer", "--password-stdin", "--workspace", root], monkeypatch, capsys, stdin="short\n")
    assert code == 2 and "at least" in output


def test_serve_check_team_refuses_without_admin(tmp_path, team_workspace, monkeypatch, capsys):
    monkeypatch.delenv("BACKDROP_TEAM", raising=False)
    monkeypatch.delenv("BACKDROP_MAX_UPLOAD_MB", raising=False)
    code, output = run(["serve-check", "--team", "--workspace", str(tmp_path / "none")], monkeypatch, capsys)
    assert code == 2 and "python -m analytics user add NAME --role admin" in output
    code, output = run(["serve-check", "--team", "--workspace", str(team_workspace.root), "--json"], monkeypatch, capsys)
    assert code == 0 and json.loads(output) == {
        "team": True,
        "arguments": ["--server.port", "8501", "--server.headless", "true", "--server.address", "0.0.0.0", "--server.maxUploadSize", "1024"],
    }
    monkeypatch.setenv("BACKDROP_TEAM", "1")  # the env switch alone means team mode too
    code, output = run(["serve-check", "--workspace", str(tmp_path / "none")], monkeypatch, capsys)
    assert code == 2


def test_backdrop_sh_serve_binds_loopback_in_solo_mode(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "BACKDROP_TEAM"} | {"BACKDROP_WORKSPACE": str(tmp_path / "ws"), "BACKDROP_PORT": "8765", "BACKDROP_MAX_UPLOAD_MB": "2048"}
    done = subprocess.run(["bash", str(PROJECT_ROOT / "backdrop.sh"), "serve", "--dry-run"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    command = done.stdout.split()
    assert command[-9].endswith("/app.py") and command[-8:] == ["--server.port", "8765", "--server.headless", "true", "--server.address", "127.0.0.1", "--server.maxUploadSize", "2048"]


def test_plain_streamlit_run_also_binds_loopback():
    """``streamlit run app.py`` without backdrop.sh reads .streamlit/config.toml: this machine only."""
    settings = tomllib.loads((PROJECT_ROOT / ".streamlit" / "config.toml").read_text())
    assert settings["server"]["address"] == "127.0.0.1"


def test_user_enable_lets_a_disabled_account_sign_in_again(team_workspace, monkeypatch, capsys):
    root = str(team_workspace.root)
    run(["user", "disable", "ann", "--workspace", root], monkeypatch, capsys)
    with pytest.raises(SignInError):
        authenticate(team_workspace, "ann", TEAM_PASSWORD)
    code, output = run(["user", "enable", "ann", "--workspace", root, "--json"], monkeypatch, capsys)
    assert code == 0 and json.loads(output) == {"user": "ann", "disabled": False}
    assert authenticate(team_workspace, "ann", TEAM_PASSWORD).name == "ann"
    code, output = run(["user", "enable", "nobody", "--workspace", root], monkeypatch, capsys)
    assert code == 2 and "no user named 'nobody'" in output


def test_user_role_changes_the_role_but_keeps_an_admin(team_workspace, monkeypatch, capsys):
    root = str(team_workspace.root)
    code, output = run(["user", "role", "ann", "analyst", "--workspace", root, "--json"], monkeypatch, capsys)
    assert code == 0 and json.loads(output) == {"user": "ann", "role": "analyst"}
    assert authenticate(team_workspace, "ann", TEAM_PASSWORD).role == "analyst"
    code, output = run(["user", "role", "ada", "viewer", "--workspace", root], monkeypatch, capsys)
    assert code == 2 and "only enabled admin" in output and output.count("\n") == 1
    assert authenticate(team_workspace, "ada", TEAM_PASSWORD).role == "admin"
    run(["user", "role", "ann", "admin", "--workspace", root], monkeypatch, capsys)
    code, _ = run(["user", "role", "ada", "viewer", "--workspace", root], monkeypatch, capsys)  # ann is admin now
    assert code == 0 and authenticate(team_workspace, "ada", TEAM_PASSWORD).role == "viewer"
    with pytest.raises(SystemExit):
        main(["user", "role", "ann", "superuser", "--workspace", root])


def test_backdrop_sh_serve_exports_the_data_roots(tmp_path):
    first, second = tmp_path / "photos", tmp_path / "more data"
    first.mkdir(), second.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("BACKDROP_TEAM", "BACKDROP_DATA_ROOTS")} | {"BACKDROP_WORKSPACE": str(tmp_path / "ws")}
    argv = ["bash", str(PROJECT_ROOT / "backdrop.sh"), "serve", "--data-root", str(first), "--data-root", str(second), "--dry-run"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"BACKDROP_DATA_ROOTS={shlex.quote(f'{first.resolve()}:{second.resolve()}')} ")  # a shell line
    done = subprocess.run(argv[:3] + ["--data-root", str(tmp_path / "missing"), "--dry-run"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "no such folder" in done.stderr


def test_a_missing_data_root_is_named_as_the_caller_gave_it(tmp_path, monkeypatch, capsys):
    """``serve_plan`` names its parameter; ``serve`` its flag, or the environment variable the roots came from."""
    from analytics.team import DATA_ROOTS_ENV_VAR, serve_plan

    missing = tmp_path / "missing"
    with pytest.raises(InvalidInputError, match=rf"^data_roots {missing}: no such folder"):
        serve_plan(team=False, port=8501, workspace=tmp_path / "ws", data_roots=[missing])
    monkeypatch.delenv("BACKDROP_TEAM", raising=False)
    assert main(["serve", "--workspace", str(tmp_path / "ws"), "--data-root", str(missing), "--dry-run"]) == 2
    assert f"--data-root {missing}: no such folder" in capsys.readouterr().err
    monkeypatch.setenv(DATA_ROOTS_ENV_VAR, str(missing))
    assert main(["serve", "--workspace", str(tmp_path / "ws"), "--dry-run"]) == 2
    assert f"{DATA_ROOTS_ENV_VAR} {missing}: no such folder" in capsys.readouterr().err


@contextmanager
def http_answers(*answers: tuple[int, bytes]) -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server that answers ``/_stcore/health`` with ``answers`` in turn (the last one from then
    on) and anything else with 404; yields its URL and the paths it was asked for."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            if self.path == "/_stcore/health":
                status, body = answers[min(asked.count(self.path), len(answers)) - 1]
            else:
                status, body = 404, b"no such page"
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:  # keep pytest's output to the test's own
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()


def unused_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_wait_until_serving_returns_once_the_health_endpoint_says_ok():
    """A server still starting answers 503 first: the wait asks again, on Streamlit's health path only."""
    with http_answers((503, b"starting"), (200, b"ok\n")) as (url, asked):
        wait_until_serving(url + "/", timeout_s=60)
    assert asked == ["/_stcore/health", "/_stcore/health"]


def test_wait_until_serving_reports_the_exit_status_and_the_log_of_a_server_that_stopped(tmp_path):
    log = tmp_path / "server.log"
    with log.open("w") as output:
        process = subprocess.Popen([sys.executable, "-c", "print('Port 8501 is already in use'); raise SystemExit(3)"], stdout=output)
    process.wait(timeout=60)
    url = unused_url()
    with pytest.raises(RuntimeError, match="exited with status 3") as raised:
        wait_until_serving(url, process=process, timeout_s=10, log=log)
    assert url in str(raised.value) and str(log) in str(raised.value)
    assert str(raised.value).endswith("Port 8501 is already in use\n")  # the log's end, where the reason is


def test_wait_until_serving_times_out_naming_the_url_when_no_ok_comes():
    url = unused_url()  # nothing listens there
    with pytest.raises(TimeoutError, match=rf"^{url}/_stcore/health did not answer ok within 0.3 s: is the server listening there\?"):
        wait_until_serving(url, timeout_s=0.3)
    with http_answers((200, b"starting")) as (url, asked), pytest.raises(TimeoutError, match=url):  # an answer, but not ok
        wait_until_serving(url, timeout_s=0.3)
    assert asked and set(asked) == {"/_stcore/health"}


def test_wait_until_serving_refuses_a_url_without_its_scheme_and_a_timeout_not_positive():
    with pytest.raises(InvalidInputError, match=r"^url '127.0.0.1:8501': give the server's root as http://HOST:PORT"):
        wait_until_serving("127.0.0.1:8501")
    with pytest.raises(InvalidInputError, match=r"^timeout_s 0: give a positive number"):
        wait_until_serving("http://127.0.0.1:8501", timeout_s=0)
