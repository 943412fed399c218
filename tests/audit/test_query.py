"""SQL over the current tables (``reconstruct query``), and the auditor's questions of docs/auditing.md."""

from __future__ import annotations

import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from audit import current
from audit.ledger import Ledger
from audit.query import Catalog
from flows.cli.app import app
from flows.exits import ExitCode
from models.errors import AuditError
from tests.audit.conftest import CHAT, KEY

DOCS = Path(__file__).resolve().parents[2] / "docs" / "auditing.md"
runner = CliRunner()


def questions() -> dict[str, str]:
    """Each ``### Qn.`` heading of the docs with the SQL block under it."""
    text = DOCS.read_text()
    return {m[1]: m[2] for m in re.finditer(r"^### (Q\d+)\..*?\n+```sql\n(.*?)```", text, re.M | re.S)}


@pytest.fixture(scope="module")
def catalog(audited):
    ledger = Ledger(audited / "ledger.sqlite", read_only=True)
    cat = Catalog(audited, ledger)
    yield cat
    cat.close()
    ledger.close()


def test_the_docs_ask_six_questions():
    assert sorted(questions()) == [f"Q{i}" for i in range(1, 7)]


def test_q1_refused_inputs_of_the_latest_run(catalog):
    rows = catalog.run(questions()["Q1"]).rows(named=True)
    assert len(rows) == 1 and rows[0]["source_path"].endswith("broken.json") and rows[0]["reasons"] == ["binary"]
    assert "control bytes" in rows[0]["detail"] and "--run " in rows[0]["rerun"]


def test_q2_documents_changed_after_written(catalog):
    rows = catalog.run(questions()["Q2"]).rows(named=True)
    assert [(r["output_path"], r["session_key"], r["revisions"]) for r in rows] == [(CHAT, KEY, 2)]
    assert isinstance(rows[0]["last_changed"], datetime)


def test_q3_who_wrote_about_the_deploy(catalog):
    rows = catalog.run(questions()["Q3"]).rows(named=True)
    assert [(r["session_key"], r["ordinal"], r["speaker_name"]) for r in rows] == [
        (KEY, 3, "User"), (KEY, 4, "Assistant")]
    assert rows[0]["source_path"].endswith("chat.txt") and orjson.loads(rows[0]["source_lines"]) == [4, 4]


def test_q4_messages_per_platform_and_month(catalog):
    rows = catalog.run(questions()["Q4"]).rows()
    irc = [r for r in rows if r[0] == "irc"]
    assert irc == [("irc", datetime(2024, 3, 1, tzinfo=UTC), 10)]
    assert sum(r[2] for r in rows if r[0] == "transcript") == 4


def test_q5_what_each_snapshot_brought(catalog):
    rows = catalog.run(questions()["Q5"]).rows(named=True)
    chat = [(r["reconstructed"], r["new"], r["unchanged"]) for r in rows if r["session_key"] == KEY]
    assert chat == [(2, 2, 0), (4, 2, 2)]


def test_q6_reason_codes_per_run(catalog):
    rows = catalog.run(questions()["Q6"]).rows()
    assert [r[1:] for r in rows] == [("binary", 1), ("binary", 1)] and len({r[0] for r in rows}) == 2


def test_bad_sql_is_an_audit_error(catalog):
    with pytest.raises(AuditError, match="query_error"):
        catalog.run("SELEC 1")


def test_stale_tables_are_built_from_the_ledger_outside_out(audited, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(audited, out)
    (out / "datasets" / "current" / "manifest.json").unlink()
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    ledger = Ledger(out / "ledger.sqlite", read_only=True)
    cat = Catalog(out, ledger)
    try:
        assert not cat.fresh and cat.run("SELECT count(*) FROM sessions").item() == 2
    finally:
        cat.close()
        ledger.close()
    said = runner.invoke(app, ["query", str(out), "SELECT count(*) AS n FROM turns", "--csv"])
    assert said.exit_code == 0 and "older than the ledger" in said.output and "n\n14\n" in said.output
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before


def test_query_command_table_json_csv(audited):
    sql = "SELECT platform, count(*) AS n FROM sessions GROUP BY ALL ORDER BY ALL"
    table = runner.invoke(app, ["query", str(audited), sql])
    assert table.exit_code == 0 and re.search(r"^irc\s+1$", table.stdout, re.M)
    rows = orjson.loads(runner.invoke(app, ["query", str(audited), sql, "--json"]).stdout)
    assert rows == [{"platform": "irc", "n": 1}, {"platform": "transcript", "n": 1}]
    assert runner.invoke(app, ["query", str(audited), sql, "--csv"]).stdout == "platform,n\nirc,1\ntranscript,1\n"
    bad = runner.invoke(app, ["query", str(audited), "SELECT nope FROM sessions"])
    assert bad.exit_code == ExitCode.USAGE and bad.output.count("\n") == 1 and "nope" in bad.output


def test_query_without_sql_tells_how_to_open_a_shell(audited, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    result = runner.invoke(app, ["query", str(audited)])
    assert result.exit_code == 0
    assert result.stdout.count("CREATE OR REPLACE VIEW") == len(current.TABLES) and "/quarantine-" in result.stdout
