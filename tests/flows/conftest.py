"""Prefect for the flow tests: one throwaway embedded server for the whole session, and one real
`prefect server start` (scheduler, automations, UI) for the tests that need a server like production's."""

from __future__ import annotations

import contextlib
import socket

import pytest


@pytest.fixture(scope="session")
def prefect_harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory):
    """A real Prefect server on loopback, started and stopped by the same supervisor `reconstruct serve` uses."""
    from flows.serve import LocalServer

    with LocalServer(tmp_path_factory.mktemp("prefect-home"), free_port()) as server:
        yield server


@contextlib.contextmanager
def against(server):
    """Prefect's client in this process talks to ``server`` inside the block. Prefect's events and
    log workers are process-wide and keep the server they first talked to (the session's embedded
    one, when a harness test ran before): drain them on the way in and out so they reconnect."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker
    from prefect.settings import PREFECT_API_URL, temporary_settings

    def reconnect() -> None:
        EventsWorker.drain_all()
        APILogWorker.drain_all()

    reconnect()
    with temporary_settings({PREFECT_API_URL: server.api_url}):
        try:
            yield
        finally:
            reconnect()
