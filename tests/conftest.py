"""Shared fixtures. Prefect runs against a throwaway local database (session-scoped harness)."""

from __future__ import annotations

import os

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")

from hypothesis import HealthCheck, settings

# Property tests check rules, never speed: no per-example deadline (the machines are shared and a
# loaded one would fail a correct rule), and a failure prints what reproduces it.
settings.register_profile("reconstruct", deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("reconstruct")
