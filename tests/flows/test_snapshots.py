"""End to end (#15): the same chat exported again is one session, whatever the order it is met in.

A WhatsApp chat exported twice (the second export longer, one earlier message deleted, one edited),
run as two runs in either order and as one run holding both files: one document at the key's address,
byte-identical every way, every message once, the deleted one flagged, the edit in its history;
rerunning either export changes nothing; the ledger and the datasets count each message once.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import orjson
import pytest

from audit import datasets, revisions
from audit.ledger import Ledger
from flows.pipeline import reconstruct
from models.settings import Settings
from tests.helpers import run_checker

NAME = "WhatsApp Chat - Ruta del sábado.txt"
FIRST = [
    "02/05/2024, 09:00 - Lucía Romero: ¿Quedamos el sábado para la ruta?",
    "02/05/2024, 09:02 - Iker: Sí, salimos a las 8 desde la plaza",
    "02/05/2024, 09:03 - Marta: Me apunto",
    "02/05/2024, 09:10 - Lucía Romero: Llevo agua y fruta",
    "02/05/2024, 09:12 - Iker: Yo llevo el mapa",  # deleted from the second export
    "02/05/2024, 09:15 - Marta: Nos vemos a las 8",  # edited in the second export
    "03/05/2024, 20:00 - Lucía Romero: ¿Alguien tiene bastones?",
]
SECOND = [*FIRST[:4], "02/05/2024, 09:15 - Marta: Nos vemos a las 8 en punto", FIRST[6],
          "03/05/2024, 20:05 - Iker: Yo tengo dos",
          "04/05/2024, 07:55 - Iker: Estoy en la plaza",
          "04/05/2024, 08:01 - Marta: Llego en cinco minutos"]
DISTINCT = 10  # the first export's 7, the second's 3 new ones (its edit is the same message)


def _export(root: Path, month: str, lines: list[str]) -> Path:
    folder = root / "exports" / month
    folder.mkdir(parents=True)
    (folder / NAME).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


@pytest.fixture()
def exports(tmp_path: Path) -> tuple[Path, Path]:
    return _export(tmp_path, "2024-05", FIRST), _export(tmp_path, "2024-06", SECOND)


def _run(paths: list[Path], out: Path, **kwargs) -> dict:
    return reconstruct(paths, out, Settings(), runner=None, **kwargs)


def _documents(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted((out / "sessions").rglob("*.json"))}


@contextlib.contextmanager
def _ledger(out: Path):
    ledger = Ledger(out / "ledger.sqlite", read_only=True)
    try:
        yield ledger
    finally:
        ledger.close()


def _only_document(out: Path) -> tuple[str, dict]:
    docs = _documents(out)
    assert len(docs) == 1, sorted(docs)
    (rel, data), = docs.items()
    return rel, orjson.loads(data)


def _check(out: Path) -> None:
    done = run_checker(out)
    assert done.returncode == 0, done.stdout + done.stderr


def test_one_run_with_both_exports_gives_one_merged_document(exports, tmp_path):
    out = tmp_path / "out"
    summary = _run(list(exports), out)
    rel, doc = _only_document(out)
    assert rel.startswith("sessions/whatsapp/fp-")
    interactions = doc["artifacts"]["Chatthistorik"]["interactions"]
    assert len(interactions) == DISTINCT
    assert [i["ordinal"] for i in interactions] == list(range(1, DISTINCT + 1))
    deleted = [i for i in interactions if i.get("absent")]
    assert [(i["content"], i["absent"]) for i in deleted] == [("Yo llevo el mapa", "deleted")]
    edited = [i for i in interactions if i.get("editHistory")]
    assert [i["content"] for i in edited] == ["Nos vemos a las 8 en punto"]
    assert [e["content"] for e in edited[0]["editHistory"]] == ["Nos vemos a las 8"]
    assert len(doc["artifacts"]["ByggLogg"]["snapshots"]) == 2
    assert summary.counts.interactions == DISTINCT  # the ledger counts each message once
    _check(out)


def test_two_runs_in_either_order_give_the_same_bytes(exports, tmp_path):
    first, second = exports
    forward, backward, together = tmp_path / "forward", tmp_path / "backward", tmp_path / "together"
    _run([first], forward)
    _run([second], forward)
    _run([second], backward)
    _run([first], backward)
    _run([second, first], together)
    assert _documents(forward) == _documents(backward) == _documents(together)
    _check(forward)


def test_rerunning_either_snapshot_changes_nothing(exports, tmp_path):
    first, second = exports
    out = tmp_path / "out"
    _run([first], out)
    _run([second], out)
    before = _documents(out)
    with _ledger(out) as ledger:
        count = ledger.revisions.count()
    for again in (first, second):
        _run([again], out, force=True)
    assert _documents(out) == before
    with _ledger(out) as ledger:
        assert ledger.revisions.count() == count
        snaps = ledger.snapshots.all()
        assert len(snaps) == 2 and len({s.session_key for s in snaps}) == 1


def test_datasets_count_each_message_once(exports, tmp_path):
    out = tmp_path / "out"
    for export in exports:
        _run([export], out)
    sessions, turns = datasets.tables(out)
    assert sessions.height == 1
    assert turns.height == DISTINCT


def test_an_output_of_the_layout_before_keys_moves_as_a_recorded_revision(exports, tmp_path):
    first, _ = exports
    out = tmp_path / "out"
    _run([first], out)
    rel, _ = _only_document(out)
    from flows.core import emit
    from flows.core.ingest import discover

    # the layout before keys: the document under its source's path
    key = discover([first.parent.parent], Settings())[0].key
    old = emit.legacy_relpath(key, "999", 1)
    (out / old).parent.mkdir(parents=True)
    shutil.move(out / rel, out / old)
    ledger = Ledger(out / "ledger.sqlite")
    with ledger.db:  # the index as the old layout left it: the document at its old path only
        ledger.db.execute("UPDATE revisions SET output_path=? WHERE output_path=?", (old, rel))
    ledger.close()
    _run([first.parent.parent], out, force=True)
    assert list(_documents(out)) == [rel]
    with _ledger(out) as ledger:
        assert ledger.revisions.history(old)[-1].note == f"moved to {rel}"
        assert f"moved from {old}" in ledger.revisions.history(rel)[0].note
        assert revisions.verify(ledger, out) == []


def test_sessions_command_reconciliation_dataset_and_report(exports, tmp_path):
    from typer.testing import CliRunner

    from audit import report
    from flows.cli.app import app
    from flows.exits import ExitCode

    out = tmp_path / "out"
    for export in exports:
        _run([export], out)
    rel, _ = _only_document(out)
    listed = CliRunner().invoke(app, ["sessions", "--out", str(out), "--json"])
    assert listed.exit_code == 0, listed.output
    (row,) = orjson.loads(listed.stdout)["sessions"]
    assert row["path"] == rel and row["key"].startswith("whatsapp:fp-")
    assert [s["messages"] for s in row["snapshots"]] == [len(FIRST), len(SECOND)]
    assert row["counts"] == {"new": DISTINCT, "unchanged": len(FIRST) - 2, "absent": 1, "edited": 1}
    one = CliRunner().invoke(app, ["sessions", "--out", str(out), "--key", row["key"]])
    assert one.exit_code == 0 and row["key"] in one.stdout
    nope = CliRunner().invoke(app, ["sessions", "--out", str(out), "--key", "whatsapp:nope"])
    assert nope.exit_code == ExitCode.NOT_FOUND
    with _ledger(out) as ledger:
        table = datasets.reconciliation(ledger)
        assert table["new"].sum() == DISTINCT and table.height == 2
        assert report.figures(out, ledger)["reconciliation"]["new"] == DISTINCT
    exported = CliRunner().invoke(app, ["export", "--out", str(out), "--format", "csv", "--to", str(tmp_path / "x")])
    assert exported.exit_code == 0 and (tmp_path / "x" / "reconciliation.csv").is_file()


@pytest.mark.parametrize("earlier, later", [
    (FIRST, FIRST[2:] + SECOND[6:]),  # WhatsApp left the two oldest messages out of the later export
    (FIRST, FIRST[4:] + SECOND[6:]),  # ... or more than a key is made of
], ids=["oldest-dropped", "many-oldest-dropped"])
def test_an_id_less_chat_whose_earliest_messages_changed_is_found_by_its_message_prints(earlier, later, tmp_path):
    first, second = _export(tmp_path, "2024-05", earlier), _export(tmp_path, "2024-06", later)
    distinct = len(dict.fromkeys([*earlier, *later]))
    outs = {name: tmp_path / name for name in ("forward", "backward", "together")}
    for name, order in (("forward", [[first], [second]]), ("backward", [[second], [first]]),
                        ("together", [[second, first]])):
        for paths in order:
            _run(paths, outs[name])
    docs = [_documents(out) for out in outs.values()]
    assert docs[0] == docs[1] == docs[2]
    rel, doc = _only_document(outs["forward"])
    log = doc["artifacts"]["ByggLogg"]
    assert len(doc["artifacts"]["Chatthistorik"]["interactions"]) == distinct
    assert len(log["snapshots"]) == 2 and rel.startswith(f"sessions/whatsapp/{log['sessionKey'].split(':')[1]}/")
    _check(outs["backward"])
    with _ledger(outs["backward"]) as ledger:
        assert revisions.verify(ledger, outs["backward"]) == []
        assert {r.session_key for r in ledger.snapshots.all()} == {log["sessionKey"]}


def _turn(mid: str, role: str, text: str, at: int, parent: str, child: str | None) -> dict:
    return {"id": mid, "parent": parent, "children": [child] if child else [], "message": {
        "id": mid, "author": {"role": role}, "create_time": at, "content": {"content_type": "text", "parts": [text]}}}


def _chatgpt_conversation(cid: str, messages: list[tuple[str, str, str, int]]) -> dict:
    """A ChatGPT export's conversation: a mapping tree with one branch."""
    ids = [m[0] for m in messages]
    mapping = {"root": {"id": "root", "message": None, "parent": None, "children": ids[:1]}}
    for n, (mid, role, text, at) in enumerate(messages):
        mapping[mid] = _turn(mid, role, text, at, ids[n - 1] if n else "root", ids[n + 1] if n + 1 < len(ids) else None)
    return {"id": cid, "conversation_id": cid, "title": f"Chat {cid}", "create_time": messages[0][3],
            "mapping": mapping, "current_node": ids[-1]}


EARLY = [("m1", "user", "What is polars?", 1700000000), ("m2", "assistant", "A DataFrame library.", 1700000010)]
LATER = [*EARLY, ("m3", "user", "And lazy frames?", 1702600000), ("m4", "assistant", "Deferred plans.", 1702600010)]


def chatgpt_exports(root: Path) -> list[Path]:
    """Two ChatGPT exports a month apart under ``root/chatgpt``: the conversation c1 in both (the later one
    longer), c2 in the later one only."""
    exports = []
    for month, conversations in (("2023-11", [_chatgpt_conversation("c1", EARLY)]),
                                 ("2023-12", [_chatgpt_conversation("c1", LATER),
                                              _chatgpt_conversation("c2", [("n1", "user", "hi", 1702600100)])])):
        folder = root / "chatgpt" / month
        folder.mkdir(parents=True)
        (folder / "conversations.json").write_bytes(orjson.dumps(conversations))
        exports.append(folder)
    return exports


def test_two_chatgpt_exports_a_month_apart_are_one_document_per_conversation(tmp_path):
    exports = chatgpt_exports(tmp_path)
    forward, backward, together = tmp_path / "forward", tmp_path / "backward", tmp_path / "together"
    for export in exports:
        _run([export], forward)
    for export in reversed(exports):
        _run([export], backward)
    _run(exports[::-1], together)
    assert _documents(forward) == _documents(backward) == _documents(together)
    docs = _documents(forward)
    assert sorted(docs) == ["sessions/chatgpt/c1/c1.json", "sessions/chatgpt/c2/c2.json"]
    turns = orjson.loads(docs["sessions/chatgpt/c1/c1.json"])["artifacts"]["Chatthistorik"]["interactions"]
    assert [t["content"] for t in turns] == [m[2] for m in LATER]
    assert datasets.tables(forward)[1].height == 5  # each message once
    _check(forward)


USERS = [{"id": "U1", "name": "ann", "real_name": "Ann Lee"}, {"id": "U2", "name": "bo", "real_name": "Bo Berg"}]
CHANNELS = [{"id": "C01GEN", "name": "general", "created": 1700000000}]


def _slack_export(root: Path, name: str, days: dict[str, list[tuple[str, str, str]]]) -> Path:
    """A Slack export folder: users.json, channels.json and the general channel's day files."""
    folder = root / name
    (folder / "general").mkdir(parents=True)
    (folder / "users.json").write_bytes(orjson.dumps(USERS))
    (folder / "channels.json").write_bytes(orjson.dumps(CHANNELS))
    for day, messages in days.items():
        rows = [{"type": "message", "user": user, "text": text, "ts": ts, "team": "T01ACME"}
                for ts, user, text in messages]
        (folder / "general" / f"{day}.json").write_bytes(orjson.dumps(rows))
    return folder


def test_slack_exports_of_overlapping_ranges_are_one_channel(tmp_path):
    a = _slack_export(tmp_path, "slack-april-a", {
        "2024-04-01": [("1711962000.000100", "U1", "Release today?"), ("1711962100.000200", "U2", "Yes, at five")],
        "2024-04-02": [("1712048400.000300", "U2", "Released"), ("1712048500.000400", "U1", "Thanks!")]})
    b = _slack_export(tmp_path, "slack-april-b", {
        "2024-04-02": [("1712048400.000300", "U2", "Released 2.4"), ("1712048500.000400", "U1", "Thanks!")],
        "2024-04-03": [("1712134800.000500", "U2", "Hotfix went out")]})
    forward, backward = tmp_path / "forward", tmp_path / "backward"
    _run([a], forward)
    _run([b], forward)
    _run([b], backward)
    _run([a], backward)
    assert _documents(forward) == _documents(backward)
    rel, doc = _only_document(forward)
    assert rel.startswith("sessions/slack/")
    turns = doc["artifacts"]["Chatthistorik"]["interactions"]
    assert [t["content"] for t in turns] == ["Release today?", "Yes, at five", "Released 2.4", "Thanks!",
                                             "Hotfix went out"]
    edited = [t for t in turns if t.get("editHistory")]
    assert [e["content"] for e in edited[0]["editHistory"]] == ["Released"]
    _check(forward)


def test_verify_covers_the_snapshot_blobs(exports, tmp_path):
    out = tmp_path / "out"
    _run(list(exports), out)
    with _ledger(out) as ledger:
        assert revisions.verify(ledger, out) == []
        blob = ledger.snapshots.all()[0].blob_sha256
    revisions.blob_path(out, blob).unlink()
    with _ledger(out) as ledger:
        assert any(blob in p and p.startswith("snapshot ") for p in revisions.verify(ledger, out))


def test_a_key_whose_merge_fails_is_quarantined_and_keeps_its_document(exports, tmp_path, monkeypatch):
    from flows.core import merge

    first, second = exports
    out = tmp_path / "out"
    _run([first], out)
    before = _documents(out)

    def broken(snapshots, settings):
        raise ValueError("the snapshots disagree")

    monkeypatch.setattr(merge, "merge", broken)
    summary = _run([second], out)
    after = _documents(out)
    assert {k: after[k] for k in before} == before  # the earlier document stays; the other export keeps its own
    assert len(after) == 2
    [failed] = [q for q in summary.quarantined if q.reasons == ("snapshot_merge",)]
    assert "the snapshots disagree" in failed.detail
    record = orjson.loads((out / "quarantine" / "keys" / "whatsapp").glob("*/merge.json").__next__().read_bytes())
    assert record["reasons"] == ["snapshot_merge"] and len(record["snapshots"]) == 2
    assert summary.status == "completed"
