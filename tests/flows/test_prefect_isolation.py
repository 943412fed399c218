"""The suite never talks to a Prefect server it did not start: not the developer's `prefect server
start`, not an API URL exported in the shell or set in ~/.prefect/profiles.toml (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

from flows.serve import configured_api_url
from tests.helpers import ROOT


def test_the_suite_sees_no_prefect_setting_of_the_developer():
    from prefect.settings import PREFECT_HOME

    assert configured_api_url() is None
    assert not any(k.startswith("PREFECT_API") for k in os.environ)
    home = Path(PREFECT_HOME.value()).resolve()
    assert home.is_relative_to(Path(tempfile.gettempdir()).resolve()), home
    assert home != (Path.home() / ".prefect").resolve()


class _Recorder(BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self):
        self.seen.append(self.path)
        self.send_response(503)
        self.end_headers()

    do_POST = do_PATCH = do_PUT = do_DELETE = do_GET

    def log_message(self, *args):
        pass


def test_a_developers_server_and_profile_are_not_seen(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/api"
    home = tmp_path / "home"
    (home / ".prefect").mkdir(parents=True)
    (home / ".prefect" / "profiles.toml").write_text(f'active = "dev"\n\n[profiles.dev]\nPREFECT_API_URL = "{url}"\n')
    env = {**os.environ, "HOME": str(home), "PREFECT_HOME": str(home / ".prefect"), "PREFECT_API_URL": url,
           "PREFECT_PROFILES_PATH": str(home / ".prefect" / "profiles.toml")}
    probe = "tests/flows/test_prefect_isolation.py::test_the_suite_sees_no_prefect_setting_of_the_developer"
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", probe], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=300)
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stdout[-3000:]
    assert _Recorder.seen == []
