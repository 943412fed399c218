"""Which Prefect server a flow runs against, a supervised local one, and the long-running `serve` loop.

Prefect's embedded (ephemeral) server has no scheduler: a schedule served against it never fires.
So `reconstruct serve` without ``PREFECT_API_URL`` uses the Prefect server already answering at the
documented local address (http://127.0.0.1:4200/api, `prefect server start`'s default), or starts
one itself: a real ``prefect server start`` child on loopback, its database under ``--prefect-home``
(default ``OUT/.prefect``), stopped with the serve loop. This module imports Prefect only inside the
functions that need it, so the read-only commands stay fast.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

LOCAL_HOST = "127.0.0.1"
LOCAL_PORT = 4200
STARTUP_SECONDS = 180.0


def local_api_url(port: int = LOCAL_PORT) -> str:
    return f"http://{LOCAL_HOST}:{port}/api"


def healthy(api_url: str, timeout: float = 1.0) -> bool:
    """True when a Prefect API answers its health check at this address."""
    return _probe(api_url, timeout) is True


def _probe(api_url: str, timeout: float) -> bool | None:
    """True when the API answers its health check, None when something listens there but has not
    answered within ``timeout`` (a loaded server), False when nothing does (refused, no such host)."""
    try:
        with urllib.request.urlopen(f"{api_url.rstrip('/')}/health", timeout=timeout) as response:
            return response.status == 200
    except TimeoutError:
        return None
    except urllib.error.URLError as exc:
        return None if isinstance(exc.reason, TimeoutError) else False
    except (OSError, ValueError):
        return False


def answers(api_url: str, patience: float, refused_for: float = 2.0) -> bool:
    """Whether the API answers its health check within ``patience`` seconds: a server that listens but
    is slow (loaded, or still starting its database) is asked again until then; an address where
    nothing listens is given up on after ``refused_for`` seconds (a server that is restarting)."""
    started = time.monotonic()
    while True:
        left = patience - (time.monotonic() - started)
        found = _probe(api_url, timeout=max(0.1, min(5.0, left)))
        waited = time.monotonic() - started
        if found is True or waited >= patience or (found is False and waited >= refused_for):
            return found is True
        time.sleep(0.25)


def configured_api_url() -> str | None:
    """The Prefect API this process is configured for (environment, profile or an active settings
    context such as a test harness); None means the embedded server."""
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value() or None


def point_at(api_url: str) -> None:
    """Make ``api_url`` this process's (and its children's) Prefect API."""
    from prefect.context import refresh_global_settings_context

    os.environ["PREFECT_API_URL"] = api_url
    refresh_global_settings_context()


def use_running_server(port: int = LOCAL_PORT) -> str:
    """Point this process at a running Prefect server when one is configured or answers at the local
    address; returns a sentence saying which Prefect a run uses."""
    configured = configured_api_url()
    if configured:
        return f"Prefect server {configured}"
    local = local_api_url(port)
    if healthy(local, timeout=0.3):
        point_at(local)
        return f"Prefect server {local} (running locally)"
    return "embedded Prefect (temporary server for this run; keep one running with `prefect server start`)"


@dataclass
class LocalServer:
    """A ``prefect server start`` child process on loopback, its database under ``home``."""

    home: Path
    port: int = LOCAL_PORT
    process: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def api_url(self) -> str:
        return local_api_url(self.port)

    @property
    def ui_url(self) -> str:
        return self.api_url.removesuffix("/api")

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        env.update(PREFECT_HOME=str(self.home), PREFECT_SERVER_API_HOST=LOCAL_HOST,
                   PREFECT_SERVER_API_PORT=str(self.port), PREFECT_UI_API_URL=self.api_url,
                   PREFECT_SERVER_ANALYTICS_ENABLED="false", DO_NOT_TRACK="1")
        return env

    def start(self, timeout: float = STARTUP_SECONDS) -> LocalServer:
        """Start the server and wait until it answers."""
        self.launch()
        return self.ready(timeout)

    def launch(self) -> LocalServer:
        """Start the server in its own process group (Ctrl-C reaches it only through ``stop``), without waiting."""
        self.home.mkdir(parents=True, exist_ok=True)
        with open(self.home / "server.log", "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "prefect", "server", "start", "--host", LOCAL_HOST, "--port", str(self.port)],
                env=self.environment(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        (self.home / "server.pid").write_text(f"{self.process.pid}\n")
        return self

    def ready(self, timeout: float = STARTUP_SECONDS) -> LocalServer:
        """Wait until the launched server answers its health check."""
        try:
            self._wait_ready(timeout)
        except BaseException:  # Ctrl-C or SIGTERM while it starts: stop it, leave no orphan
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not healthy(self.api_url):
            if self.process.poll() is not None:
                raise RuntimeError(f"prefect server exited with {self.process.returncode}; {self.see}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"prefect server not ready after {timeout:.0f} s; {self.see}")
            time.sleep(0.1)

    @property
    def see(self) -> str:
        return f"see {self.home / 'server.log'}"

    def stop(self, grace: float = 30.0) -> None:
        """SIGTERM to the server's process group, SIGKILL after ``grace`` seconds; never leaves an orphan."""
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        if self.home is not None:
            (self.home / "server.pid").unlink(missing_ok=True)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


HEARTBEAT_SETTINGS = ("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "PREFECT_RUNNER_HEARTBEAT_FREQUENCY")
EMBEDDED_SERVER_ENV = {
    # A server that records one run of this process and is gone after it: no UI and no live
    # streams of events and logs out of it (nothing can subscribe: its port is private to the run).
    # Its services are Prefect's ephemeral set (the task run recorder, events, triggers, ...), kept:
    # each costs under 2 MB (docs/operations.md: "Prefect's environment"). The user's own environment wins.
    "PREFECT_UI_ENABLED": "false",
    "PREFECT_SERVER_EVENTS_STREAM_OUT_ENABLED": "false",
    "PREFECT_SERVER_LOGS_STREAM_OUT_ENABLED": "false",
}


def free_port() -> int:
    """A loopback port free right now (a server that loses it to a race is restarted on another)."""
    with socket.socket() as s:
        s.bind((LOCAL_HOST, 0))
        return s.getsockname()[1]


class EmbeddedServer(LocalServer):
    """Prefect's embedded server for one run, started as Prefect starts it (uvicorn on Prefect's
    ``create_app``, ephemeral: the database under PREFECT_HOME, no UI) but from here, so this process
    never imports Prefect's server (80 MB of RSS and seconds of imports it does not use) and goes on
    importing the flow while the server starts."""

    STARTUP_FAILURE = 3  # uvicorn's exit code when it cannot bind its port
    TAIL_BYTES = 4000

    def __init__(self) -> None:
        super().__init__(home=None, port=free_port())
        self.output: IO[bytes] | None = None
        """The server's output: a nameless temporary file, quoted when it fails to start. Never the run's
        own stderr, whose one line at a fault must stay one line (the server's services log tracebacks
        when they are stopped in the middle of a write)."""

    @property
    def see(self) -> str:
        if self.output is None:
            return "it wrote nothing"
        self.output.seek(0, os.SEEK_END)
        self.output.seek(max(0, self.output.tell() - self.TAIL_BYTES))
        return "its last output:\n" + self.output.read().decode("utf-8", "replace")

    def environment(self) -> dict[str, str]:
        env = {**EMBEDDED_SERVER_ENV, **os.environ, "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
        env.pop("PREFECT_API_URL", None)
        return env

    def launch(self) -> EmbeddedServer:
        site = Path(importlib.util.find_spec("prefect").origin).parents[1]  # no import of Prefect
        if self.output is None:
            self.output = tempfile.TemporaryFile(prefix="reconstruct-prefect-server-")  # noqa: SIM115 (closed by stop)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "flows.embedded", str(os.getpid()), "--app-dir", str(site), "--factory",
             "prefect.server.api.server:create_app", "--host", LOCAL_HOST, "--port", str(self.port),
             "--log-level", "error", "--lifespan", "on"],
            env=self.environment(), stdin=subprocess.DEVNULL, stdout=self.output, stderr=subprocess.STDOUT,
            start_new_session=True)
        atexit.register(self.stop)  # after Prefect's event and log workers have drained (they go first)
        return self

    def _wait_ready(self, timeout: float) -> None:
        for _attempt in range(3):
            try:
                return super()._wait_ready(timeout)
            except RuntimeError:
                if self.process.returncode != self.STARTUP_FAILURE:
                    raise
            self.port = free_port()  # another process took the port first
            self.launch()
        return super()._wait_ready(timeout)

    def stop(self, grace: float = 10.0) -> None:
        super().stop(grace)
        if self.output is not None and (self.process is None or self.process.poll() is not None):
            self.output.close()
            self.output = None


def start_embedded() -> EmbeddedServer | None:
    """Launch the embedded server when this process has no Prefect API (none configured, and
    Prefect's ephemeral mode allowed), without waiting for it; None otherwise."""
    if os.environ.get("PREFECT_API_URL") or configured_api_url():
        return None
    from prefect.settings import PREFECT_SERVER_EPHEMERAL_ENABLED

    if not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return None
    return EmbeddedServer().launch()


def use_embedded(server: EmbeddedServer | None, timeout: float | None = None) -> None:
    """Wait until the launched embedded server answers, then make it this process's Prefect API."""
    if server is None:
        return
    from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS

    server.ready(timeout or PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value())
    point_at(server.api_url)


@contextlib.contextmanager
def without_heartbeats(server: EmbeddedServer | None):
    """On the embedded server, the block's flow runs send no heartbeats unless the user asks for
    them: heartbeats tell a long-lived server which runs crashed, and this one ends with the run,
    while a flow run waits up to a second at its end for its heartbeat thread to wake (Prefect
    sleeps it in one-second steps). Entered after ``use_embedded`` (it keeps the API it sees)."""
    if server is None or any(os.environ.get(k) for k in HEARTBEAT_SETTINGS):
        yield
        return
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    with temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


@dataclass(frozen=True)
class ServePlan:
    """What `reconstruct serve` registers: one deployment of the archive flow with one schedule."""

    name: str
    parameters: dict[str, Any]
    cron: str | None = None
    timezone: str = "UTC"
    interval: float | None = None
    description: str = ""
    tags: tuple[str, ...] = ("reconstruct",)

    def schedule(self):
        from prefect.schedules import Cron, Interval

        if self.interval:
            # anchored just ahead of now, so the first run starts right away, not one interval later
            anchor = datetime.now(UTC) + timedelta(seconds=2)
            return Interval(timedelta(seconds=self.interval), anchor_date=anchor, timezone=self.timezone)
        return Cron(self.cron, timezone=self.timezone)


def no_overlap():
    """One run of the deployment at a time; a run due while the previous one still runs is cancelled
    (the next one catches up: unchanged inputs are skipped)."""
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy

    return ConcurrencyLimitConfig(limit=1, collision_strategy=ConcurrencyLimitStrategy.CANCEL_NEW)


async def serve_until_stopped(plan: ServePlan, started=None) -> None:
    """Register the deployment and run its scheduled runs until SIGINT or SIGTERM, then stop the runner
    (awaited: schedules paused, in-flight runs cancelled) and return."""
    from prefect.deployments.runner import EntrypointType
    from prefect.runner import Runner

    from .pipeline import reconstruct_archive

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    runner = Runner(name=plan.name, pause_on_shutdown=True, limit=1)
    # Runner.start installs handle_sigterm for SIGTERM; it must not exit the process mid-loop
    runner.handle_sigterm = lambda *_: loop.call_soon_threadsafe(stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await runner.aadd_flow(
        reconstruct_archive, name=plan.name, schedules=[plan.schedule()], parameters=plan.parameters,
        description=plan.description, tags=list(plan.tags), concurrency_limit=no_overlap(),
        enforce_parameter_schema=False, entrypoint_type=EntrypointType.MODULE_PATH)
    running = asyncio.create_task(runner.start())
    if started:
        started()
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if not running.done():
        await _stop(runner, running)
    stopping.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await running
    loop.remove_signal_handler(signal.SIGINT)


async def _stop(runner, running: asyncio.Task, patience: float = 60.0) -> None:
    """Stop the runner. Prefect refuses to stop a runner that has not finished starting, and a
    Ctrl-C can come that early: wait until it has started (or its start has ended), then stop it."""
    deadline = asyncio.get_running_loop().time() + patience
    while True:
        try:
            await runner.astop()
            return
        except RuntimeError:
            if running.done():
                return
            if asyncio.get_running_loop().time() > deadline:
                running.cancel()  # it never finished starting: do not wait for it forever
                return
            await asyncio.sleep(0.05)


def serve(plan: ServePlan, prefect_home: Path, port: int = LOCAL_PORT, say=print) -> None:
    """Serve ``plan`` against the configured Prefect server, the one at the local address, or a
    supervised one started here; stops the supervised server when the loop ends."""
    server = None
    api_url = configured_api_url()
    if api_url is not None:
        say(f"using the configured Prefect server {api_url}")
    elif healthy(local_api_url(port)):
        api_url = local_api_url(port)
        say(f"using the Prefect server already running at {api_url}")
        point_at(api_url)
    if api_url is None:
        signal.signal(signal.SIGTERM, _interrupt)  # until the runner takes SIGTERM over: stop the server too
        say(f"starting a Prefect server on {local_api_url(port)} (database under {prefect_home})")
        server = LocalServer(prefect_home, port).start()
        api_url = server.api_url
        point_at(api_url)
    try:
        _serve_against(plan, api_url, say)
    finally:
        if server is not None:
            server.stop()
            say("Prefect server stopped")


def _interrupt(*_) -> None:
    raise KeyboardInterrupt


def _serve_against(plan: ServePlan, api_url: str, say) -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    every = f"every {plan.interval:g} s" if plan.interval else f"on cron {plan.cron!r} ({plan.timezone})"
    ui = api_url.removesuffix("/api")
    with temporary_settings({PREFECT_API_URL: api_url}):
        asyncio.run(serve_until_stopped(plan, started=lambda: say(
            f"serving reconstruct-archive/{plan.name} {every}; runs: {ui}/runs "
            f"(or PREFECT_API_URL={api_url} prefect flow-run ls); Ctrl-C stops")))
    say("stopped")
