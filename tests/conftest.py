"""Shared fixtures. Prefect runs against a throwaway local database (session-scoped harness).

Before anything imports Prefect, the suite gets a Prefect home of its own and forgets every Prefect
setting of the developer's environment and profile: no test talks to a server it did not start (a
`prefect server start` the developer has open, or an API URL in ~/.prefect/profiles.toml), and none
of the suite's runs appears in the developer's own Prefect UI. Subprocesses inherit the same."""

from __future__ import annotations

import os
import tempfile

PREFECT_HOME = tempfile.mkdtemp(prefix="reconstruct-tests-prefect-")
for _key in [k for k in os.environ if k.startswith("PREFECT_")]:
    del os.environ[_key]
os.environ.update(
    PREFECT_HOME=PREFECT_HOME,
    PREFECT_PROFILES_PATH=os.path.join(PREFECT_HOME, "profiles.toml"),
    DO_NOT_TRACK="1",
    PREFECT_SERVER_ANALYTICS_ENABLED="false",
    PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="180",
)

from hypothesis import HealthCheck, settings  # noqa: E402 (after the environment above)

# Property tests check rules, never speed: no per-example deadline (the machines are shared and a
# loaded one would fail a correct rule), and a failure prints what reproduces it.
settings.register_profile("reconstruct", deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("reconstruct")


def pytest_sessionfinish(session, exitstatus):
    import shutil

    shutil.rmtree(PREFECT_HOME, ignore_errors=True)
