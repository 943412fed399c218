"""Scale-out as a user runs it (docs/scale-out.md): a real `dask scheduler` and two `dask worker`
processes of this environment on loopback, in a directory of their own; `reconstruct run` twice in a row
on that cluster (a relative path, then an absolute one) and once with the archive on S3 (a local moto
server, never the network). Every run gives the documents of a local run, byte for byte, and no process
of the cluster outlives the test."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audit.ledger import Ledger
from tests.flows.conftest import free_port
from tests.helpers import ROOT

pytestmark = pytest.mark.slow
distributed = pytest.importorskip("distributed")

BIN = Path(sys.executable).parent
BUCKET = "archive"
S3_KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


def _group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of a process group."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone while listed
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


def _stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM to every process group, SIGKILL to what is left after a grace period."""
    for proc in procs:
        _signal_group(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_group_members(p.pid) for p in procs):
        time.sleep(0.2)
    for proc in procs:
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait(30)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


class S3:
    """moto's S3 server on a loopback port, started and stopped by the test."""

    def __init__(self) -> None:
        server = pytest.importorskip("moto.server", reason="moto[server] (the test extra) runs the local S3 server")
        pytest.importorskip("s3fs", reason="s3fs reads s3:// inputs")
        self.endpoint = f"http://127.0.0.1:{free_port()}"
        self.server = server.ThreadedMotoServer(ip_address="127.0.0.1", port=int(self.endpoint.rsplit(":", 1)[1]),
                                                verbose=False)

    def env(self) -> dict[str, str]:
        """What the driver and the workers need to read from it (fsspec's own configuration variables)."""
        return {**S3_KEYS, "FSSPEC_S3_ENDPOINT_URL": self.endpoint}

    def upload(self, folder: Path, prefix: str) -> None:
        import boto3

        s3 = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                s3.put_object(Bucket=BUCKET, Key=f"{prefix}/{path.relative_to(folder)}", Body=path.read_bytes())


@pytest.fixture(scope="module")
def s3():
    try:
        store = S3()
    except pytest.skip.Exception:
        yield None
        return
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # not a line per S3 request
    store.server.start()
    try:
        yield store
    finally:
        store.server.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, s3):
    """A scheduler and two single-threaded workers, each in its own process group, started in a directory
    where the archive is not; their process groups are killed (and checked gone) at the end."""
    home = tmp_path_factory.mktemp("dask-home")
    env = {**os.environ, **(s3.env() if s3 else {})}
    address = f"tcp://127.0.0.1:{free_port()}"
    procs: list[subprocess.Popen] = []

    def start(*args: str, log: str) -> None:
        with open(home / log, "wb") as sink:
            procs.append(subprocess.Popen([str(BIN / "dask"), *args], cwd=home, env=env, stdin=subprocess.DEVNULL,
                                          stdout=sink, stderr=subprocess.STDOUT, start_new_session=True))

    try:
        start("scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1], "--no-dashboard",
              log="scheduler.log")
        for i in range(2):
            start("worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--nworkers", "1", "--no-dashboard",
                  "--name", f"worker-{i}", "--local-directory", str(home / f"worker-{i}"), log=f"worker-{i}.log")
        with distributed.Client(address, timeout=120) as client:
            client.wait_for_workers(2, timeout=180)
        yield address
    finally:
        _stop(procs)
        assert not [m for p in procs for m in _group_members(p.pid)], "a cluster process outlived the test"


def _reconstruct(args: list[str], cwd: Path, extra_env: dict[str, str]) -> subprocess.CompletedProcess:
    """`reconstruct` as a user runs it: its own embedded Prefect server, nothing of the test's Prefect."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(extra_env, PREFECT_HOME=str(cwd / ".prefect-home"))
    return subprocess.run([str(BIN / "reconstruct"), "run", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


def _docs(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "sessions").rglob("*.json"))}


def _source_paths(out: Path) -> list[str]:
    ledger = Ledger(out / "ledger.sqlite", read_only=True)
    try:
        return [r[0] for r in ledger.db.execute("SELECT source_path FROM files")]
    finally:
        ledger.close()


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A copy of sample_logs in the driver's directory, and the documents of a local run of it."""
    cwd = tmp_path_factory.mktemp("driver")
    shutil.copytree(ROOT / "sample_logs", cwd / "sample_logs")
    done = _reconstruct(["sample_logs", "--out", "local"], cwd, {})
    assert done.returncode == 0, done.stderr[-3000:]
    local = _docs(cwd / "local")
    assert len(local) >= 20
    return cwd, local


def test_two_runs_in_a_row_on_one_cluster_give_the_local_documents(cluster, work):
    cwd, local = work
    for source, out in (("sample_logs", "relative"), (str(cwd / "sample_logs"), str(cwd / "absolute"))):
        done = _reconstruct([source, "--out", out, "--dask-address", cluster], cwd, {})
        assert done.returncode == 0, f"{source}: {done.stderr[-3000:]}"
        assert _docs(cwd / out) == local
    with distributed.Client(cluster, timeout=60) as client:  # the shards ran there, without Prefect
        assert sorted(client.run(lambda: "prefect" in sys.modules).values()) == [False, False]


def test_an_archive_on_s3_read_by_the_cluster_gives_the_local_documents(cluster, work, s3):
    if s3 is None:
        pytest.skip("moto[server] and s3fs (the test extra) run the local S3 server")
    cwd, local = work
    s3.upload(cwd / "sample_logs", "team/sample_logs")
    done = _reconstruct([f"s3://{BUCKET}/team/sample_logs", "--out", "from-s3", "--dask-address", cluster], cwd,
                        s3.env())
    assert done.returncode == 0, done.stderr[-3000:]
    assert _docs(cwd / "from-s3") == local
    recorded = _source_paths(cwd / "from-s3")
    assert recorded and all(p.startswith(("s3://archive/team/sample_logs/", "zip://")) for p in recorded)
