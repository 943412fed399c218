"""The check of a configured Prefect API before a run: a server that listens but is slow to answer (loaded
by other flows) is waited for; an address where nothing listens fails at once with the fault."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from flows import faults
from models.errors import EnvironmentFault
from tests.flows.conftest import free_port

SLOW = 5.5  # longer than one health request may wait (5 s)


class _SlowFirst(BaseHTTPRequestHandler):
    """Answers /health with 200, the first request only after ``SLOW`` seconds."""

    asked = 0

    def do_GET(self) -> None:
        type(self).asked += 1
        if type(self).asked == 1:
            time.sleep(SLOW)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"true")

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def slow_api():
    _SlowFirst.asked = 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowFirst)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api"
    finally:
        server.shutdown()
        server.server_close()


def test_a_listening_api_slow_to_answer_is_waited_for(slow_api):
    faults.check_prefect_api(slow_api)  # its first health request times out; the next is answered
    assert _SlowFirst.asked >= 2


def test_an_api_that_never_answers_in_the_patience_given_is_a_fault(slow_api):
    with pytest.raises(EnvironmentFault, match="no answer at"):
        faults.check_prefect_api(slow_api, patience=1.0)


def test_an_address_where_nothing_listens_is_a_fault():
    with pytest.raises(EnvironmentFault, match="PREFECT_API_URL"):
        faults.check_prefect_api(f"http://127.0.0.1:{free_port()}/api")
