"""End to end: one input per secret class, and no planted secret in any artifact or on stdout.

The folder holds a transcript per detector row (its examples as turns), a coding agent's log whose
tool calls carry every example as a command argument, a ChatGPT export whose source fields carry them
(and values under keys named like credentials), personal data for ``redact_pii``, and a zip whose
entry names hold a Stripe key (one entry read, one quarantined) beside a file named with a Hugging
Face token. After the run, the exports, the report and the listings, every file under the output root
is searched byte for byte, its path too, Parquet through its reader and the ledger through SQLite's
dump, and so is everything printed. The flow's variant also searches Prefect's own database.
Every value is FAKE, assembled from pieces in ``normalizers.secret_table``.
"""

from __future__ import annotations

import json
import sqlite3
import zipfile
from pathlib import Path

import orjson
import polars as pl
import pytest
from typer.testing import CliRunner

from flows.cli.app import app
from flows.pipeline import reconstruct
from models.settings import Settings
from normalizers.secret_table import DETECTORS

STRIPE = "sk_" + "live_" + "Zz9" * 8
STRIPE_CORE = "Zz9" * 8
RESTRICTED = "rk_" + "live_" + "Yy8" * 8
HF = "hf_" + "Hg7" * 12
PERSONAL = {"card": "4111 1111 1111 1111", "card digits": "4111111111111111", "iban": "DE89 3704 0044 0532 0130 00",
            "phone": "(415) 555-0135", "email": "ann.secret" + "@" + "example.org"}
PLANTED = ({f"{row.name}:{core}": core for row in DETECTORS for _, core in row.examples}
           | {"stripe in a name": STRIPE_CORE, "restricted in a name": "Yy8" * 8, "hf in a name": "Hg7" * 12,
              "json key value": "k3yV4lue", "json number": "9081726354"} | PERSONAL)
EXAMPLES = [text for row in DETECTORS for text, _ in row.examples]


def _agent_log() -> str:
    """A Claude Code session: each example is the argument of a Bash tool call."""
    base = {"isSidechain": False, "userType": "external", "cwd": "/w", "version": "2.0.20", "gitBranch": "main",
            "sessionId": "5c1e0c2d-9a1f-4e3b-8c6d-2f5a7b9c1e31"}
    lines = [base | {"parentUuid": None, "type": "user", "uuid": "u0", "timestamp": "2025-10-20T13:00:00.000Z",
                     "message": {"role": "user", "content": "connect to the databases"}}]
    for i, text in enumerate(EXAMPLES):
        lines.append(base | {"parentUuid": f"u{i}", "type": "assistant", "uuid": f"a{i}",
                             "timestamp": f"2025-10-20T13:{i // 60 + 1:02d}:{i % 60:02d}.000Z", "requestId": f"r{i}",
                             "message": {"model": "claude-sonnet-4-5-20250929", "id": f"m{i}", "type": "message",
                                         "role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}",
                                                                            "name": "Bash",
                                                                            "input": {"command": f"run {text}"}}]}})
        lines.append(base | {"parentUuid": f"a{i}", "type": "user", "uuid": f"u{i + 1}",
                             "timestamp": f"2025-10-20T13:{i // 60 + 1:02d}:{i % 60:02d}.500Z",
                             "message": {"role": "user", "content": [{"tool_use_id": f"t{i}", "type": "tool_result",
                                                                      "content": "done"}]}})
    return "".join(json.dumps(line) + "\n" for line in lines)


def _chatgpt() -> str:
    """A ChatGPT export: every example inside attachments (source fields), and credential keys."""
    attachments = [{"name": f"file {i}.txt", "note": text} for i, text in enumerate(EXAMPLES)]
    attachments.append({"name": "cfg.json", "api_key": "k3yV4lue", "password": "k3yV4lue", "secret": 9081726354})

    def node(nid, parent, children, role, text, meta=None):
        return {"id": nid, "parent": parent, "children": children, "message": {
            "id": nid, "author": {"role": role}, "create_time": 1700000001.0,
            "content": {"content_type": "text", "parts": [text]}, "metadata": meta or {}}}
    return json.dumps([{"id": "conv-keys", "title": f"keys {STRIPE}", "create_time": 1700000000.0, "current_node": "b",
                        "mapping": {"root": {"id": "root", "parent": None, "children": ["a"], "message": None},
                                    "a": node("a", "root", ["b"], "user", "my files", {"attachments": attachments}),
                                    "b": node("b", "a", [], "assistant", "noted")}}])


def _inputs(root: Path) -> Path:
    src = root / "in"
    src.mkdir()
    for row in DETECTORS:
        turns = "".join(f"User: here {text} ok\nAssistant: noted\n" for text, _ in row.examples)
        (src / f"{row.name}.txt").write_text(f"Session: {row.name}\n{turns}")
    (src / "agent").mkdir()
    (src / "agent" / "5c1e0c2d-9a1f-4e3b-8c6d-2f5a7b9c1e31.jsonl").write_text(_agent_log())
    (src / "conversations.json").write_text(_chatgpt())
    (src / "personal.txt").write_text("Session: personal\n" + "".join(
        f"User: my {what} is {value}\nAssistant: noted\n" for what, value in PERSONAL.items()))
    with zipfile.ZipFile(src / "export.zip", "w") as zf:
        zf.writestr(f"chat-{STRIPE}.txt", "User: hello\nAssistant: hi\n")
        zf.writestr(f"notes-{RESTRICTED}.txt", "")  # quarantined: the name reaches quarantine records
    (src / f"{HF}.txt").write_text("")
    (src / "prose.txt").write_text(f"no speakers here, {STRIPE} and {HF} in prose\n")  # quarantined no_grammar
    return src


def _artifacts(out: Path) -> dict[str, bytes]:
    """Every file under OUT byte for byte, its path, Parquet as its rows, the ledger as SQL."""
    found: dict[str, bytes] = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        rel = str(path.relative_to(out))
        found[rel] = path.read_bytes()
        found[f"path:{rel}"] = rel.encode()
        if path.suffix == ".parquet":
            found[f"rows:{rel}"] = pl.read_parquet(path).write_ndjson().encode()  # nested columns too
        elif path.name == "ledger.sqlite":
            db = sqlite3.connect(path)
            found[f"sql:{rel}"] = "\n".join(db.iterdump()).encode()
            db.close()
    return found


def _leaks(texts: dict[str, bytes]) -> list[tuple[str, str]]:
    return [(where, what) for where, data in texts.items() for what, core in PLANTED.items() if core.encode() in data]


def _listings(out: Path) -> dict[str, bytes]:
    """Exports in every format, the report and the listings; what each printed."""
    runner = CliRunner()
    printed = {}
    for fmt in ("csv", "jsonl", "parquet"):
        result = runner.invoke(app, ["export", "--out", str(out), "--format", fmt, "--to", str(out / f"exp-{fmt}")])
        assert result.exit_code == 0, result.output
        printed[f"stdout:export {fmt}"] = result.output.encode()
    for command in (["report"], ["quarantine"], ["status"], ["sessions"], ["verify"]):
        result = runner.invoke(app, [*command, "--out", str(out)])
        printed[f"stdout:{command[0]}"] = result.output.encode()
    return printed


def _check_run(out: Path, printed: dict[str, bytes]) -> None:
    planted = {what for _, what in _leaks(_artifacts(out.parent / "in"))}
    assert planted == set(PLANTED)  # every secret is in the inputs, and the search finds it there
    files = _artifacts(out)
    assert any(k.startswith("quarantine/") and "REDACTED_stripe_key" in k for k in files), sorted(files)
    assert any(k.endswith(".parquet") for k in files) and any(".revisions" in k for k in files)
    assert "report.html" in files and any(k.startswith("exp-jsonl/") for k in files)
    assert _leaks(files | printed) == []
    docs = {path.parts[-2]: json.loads(path.read_bytes()) for path in (out / "sessions").rglob("*.json")}
    agent = docs["5c1e0c2d-9a1f-4e3b-8c6d-2f5a7b9c1e31"]["artifacts"]["ByggLogg"]["redactions"]
    chatgpt = docs["conv-keys"]["artifacts"]["ByggLogg"]["redactions"]
    for row in DETECTORS:  # each class found in a tool call's argument and in source fields
        assert {"type": row.name, "field": "content"} in [{k: r[k] for k in ("type", "field")} for r in agent]
        assert {"type": row.name, "field": "sourceFields"} in [{k: r[k] for k in ("type", "field")} for r in chatgpt]
    report = files["report.html"].decode()
    for row in DETECTORS:
        assert row.name in report, row.name  # each class was found, counted and reported
    for kind in ("card", "iban", "phone", "email"):
        assert kind in report, kind


@pytest.mark.parametrize("route", [{}, {"stream_json_bytes": 1, "stream_text_bytes": 1}],
                         ids=["records", "columns-and-streams"])
def test_no_planted_secret_in_any_artifact_or_on_stdout(tmp_path, capfd, route):
    src = _inputs(tmp_path)
    out = tmp_path / "out"
    summary = reconstruct([src], out, Settings(redact_pii=True, **route))
    assert summary.counts.files_quarantined >= 3, summary.quarantined
    printed = _listings(out)
    captured = capfd.readouterr()
    printed |= {"stdout:run": captured.out.encode(), "stderr:run": captured.err.encode(),
                "summary": orjson.dumps(summary)}
    _check_run(out, printed)


def _prefect_database() -> Path | None:
    from prefect.settings import get_current_settings

    url = get_current_settings().server.database.connection_url
    url = url.get_secret_value() if url is not None else ""
    return Path(url.split("///", 1)[1]) if url.startswith("sqlite") and "///" in url else None


@pytest.mark.slow
def test_the_flow_leaves_no_planted_secret_in_prefects_database(prefect_harness, tmp_path):
    src = _inputs(tmp_path)
    out = tmp_path / "out"
    (tmp_path / "reconstruct.toml").write_text("redact_pii = true\n")
    result = CliRunner().invoke(app, ["run", str(src), "--out", str(out), "--workers", "1",
                                      "--config", str(tmp_path / "reconstruct.toml")])
    assert result.exit_code == 3, result.output  # the two empty files and the prose are quarantined
    printed = {"stdout:run": result.output.encode()} | _listings(out)
    _check_run(out, printed)
    database = _prefect_database()
    if database is None or not database.exists():
        pytest.skip(f"Prefect's database is not a local SQLite file here ({database})")
    stores = {str(p): p.read_bytes() for p in database.parent.glob(database.name + "*")}
    db = sqlite3.connect(database)
    stores["sql:prefect"] = "\n".join(db.iterdump()).encode()
    db.close()
    assert b"reconstruct-run-summary" in stores["sql:prefect"]  # the run's artifacts are in it
    assert _leaks(stores) == []


def test_the_flow_run_is_named_without_a_secret_in_its_archive_name():
    from flows.artifacts import flow_run_name

    name = flow_run_name([f"/exports/{STRIPE}.zip", "/more"], "20260101T000000Z-ab12cd")
    assert STRIPE_CORE not in name and "[REDACTED:stripe_key].zip+1" in name
