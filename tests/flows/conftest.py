"""Prefect for the flow tests: one throwaway local server for the whole session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def prefect_harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield
