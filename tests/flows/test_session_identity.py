"""Exports are one conversation only on proof (#25): one adversarial case per way two people's chats
were merged or one chat split in two, each run through the real flow as a user would (two runs in a
row, one export each), checking the documents and that no message lands under another person."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.ledger import Ledger
from flows.pipeline import reconstruct
from models.settings import Settings


def _run_each(exports: list[Path], out: Path) -> None:
    for export in exports:
        summary = reconstruct([export], out, Settings(), runner=None)
        assert summary.status == "completed"


def _documents(out: Path) -> list[dict]:
    return [orjson.loads(p.read_bytes()) for p in sorted((out / "sessions").rglob("*.json"))]


def _said(doc: dict) -> list[tuple[str, str]]:
    return [(i["speakerName"], i["content"]) for i in doc["artifacts"]["Chatthistorik"]["interactions"]]


def _write(root: Path, rel: str, data: bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path.parent


def _possible(out: Path) -> list[dict]:
    ledger = Ledger(out / "ledger.sqlite", read_only=True)
    try:
        return [asdict(r) for r in ledger.links.possible()]
    finally:
        ledger.close()


# --- Telegram --------------------------------------------------------------------------------------

def _tg_message(mid: int, at: int, who: str, uid: int, text: str) -> dict:
    return {"id": mid, "type": "message", "date": "2024-03-01T09:00:00", "date_unixtime": str(at), "from": who,
            "from_id": f"user{uid}", "text": text}


def _tg_full(account: int, name: str, chat: dict) -> bytes:
    return orjson.dumps({"about": "Here is the data you requested.",
                         "personal_information": {"user_id": account, "first_name": name},
                         "chats": {"about": "", "list": [chat]}})


BOT = 777


def _bot_chat(user: str, uid: int, texts: list[str], start: int) -> dict:
    messages = []
    for n, text in enumerate(texts):
        mine = n % 2 == 0
        messages.append(_tg_message(n + 1, start + 60 * n, user if mine else "ShopBot", uid if mine else BOT, text))
    return {"name": "ShopBot", "type": "bot_chat", "id": BOT, "messages": messages}


@pytest.mark.parametrize("full", [True, False], ids=["full-export", "single-chat-export"])
def test_two_people_chatting_with_the_same_bot_keep_their_own_documents(tmp_path, full):
    ana = _bot_chat("Ana", 111, ["/start", "Welcome!", "Order 1", "Noted", "Thanks"], 1709283600)
    ben = _bot_chat("Ben", 222, ["/start", "Welcome!", "Cancel order", "Done"], 1709370000)
    data = (_tg_full(111, "Ana", ana), _tg_full(222, "Ben", ben)) if full else (orjson.dumps(ana), orjson.dumps(ben))
    exports = [_write(tmp_path, f"{who}/result.json", d) for who, d in zip(("ana", "ben"), data, strict=True)]
    out = tmp_path / "out"
    _run_each(exports, out)
    docs = _documents(out)
    assert len(docs) == 2
    said = sorted(_said(d) for d in docs)
    def chat(who: str, texts: list[str]) -> list[tuple[str, str]]:
        return [(who if n % 2 == 0 else "ShopBot", t) for n, t in enumerate(texts)]

    assert said == sorted([chat("Ana", ["/start", "Welcome!", "Order 1", "Noted", "Thanks"]),
                           chat("Ben", ["/start", "Welcome!", "Cancel order", "Done"])])
    assert not any(i.get("editHistory") for d in docs for i in d["artifacts"]["Chatthistorik"]["interactions"])


def _basic_group(ids: list[int]) -> dict:
    lines = [("Ana", 111, "Dinner on Friday?"), ("Ben", 222, "Yes"), ("Cy", 333, "Where?"),
             ("Ana", 111, "The usual place"), ("Ben", 222, "8pm?"), ("Cy", 333, "Perfect")]
    return {"name": "Friends", "type": "private_group", "id": 4242,
            "messages": [_tg_message(mid, 1709283600 + 120 * n, who, uid, text)
                         for n, (mid, (who, uid, text)) in enumerate(zip(ids, lines, strict=True))]}


def test_a_basic_group_exported_by_two_members_is_one_document_with_each_message_once(tmp_path):
    # message ids of a basic group are per account: Ana's 1..6 are Ben's 51..56, and Ben's own 1..6 are others
    ana = _write(tmp_path, "ana/result.json", _tg_full(111, "Ana", _basic_group([1, 2, 3, 4, 5, 6])))
    ben = _write(tmp_path, "ben/result.json", _tg_full(222, "Ben", _basic_group([51, 52, 53, 54, 55, 56])))
    out = tmp_path / "out"
    _run_each([ana, ben], out)
    (doc,) = _documents(out)
    assert _said(doc) == [("Ana", "Dinner on Friday?"), ("Ben", "Yes"), ("Cy", "Where?"), ("Ana", "The usual place"),
                          ("Ben", "8pm?"), ("Cy", "Perfect")]
    assert len(doc["artifacts"]["ByggLogg"]["snapshots"]) == 2


def test_message_ids_of_two_accounts_never_match(tmp_path):
    """Same ids, other messages: two accounts' private chats with one contact are not merged by id."""
    ana = _write(tmp_path, "ana/result.json", _tg_full(111, "Ana", _bot_chat("Ana", 111, ["a", "b", "c"], 1709283600)))
    ben = _write(tmp_path, "ben/result.json", _tg_full(222, "Ben", _bot_chat("Ben", 222, ["x", "y", "z"], 1709283600)))
    out = tmp_path / "out"
    _run_each([ana, ben], out)
    assert sorted(_said(d) for d in _documents(out)) == [
        [("Ana", "a"), ("ShopBot", "b"), ("Ana", "c")], [("Ben", "x"), ("ShopBot", "y"), ("Ben", "z")]]


# --- WhatsApp --------------------------------------------------------------------------------------

GREETING = ["Hola, gracias por escribir a Tienda Sol", "Nuestro horario es de 9 a 18 h",
            "Un agente le atenderá en breve"]


def _android(lines: list[tuple[str, str, str]]) -> bytes:
    return "".join(f"{when} - {who}: {text}\n" if who else f"{when} - {text}\n" for when, who, text in lines).encode()


def test_two_customers_greeted_alike_by_a_business_a_week_apart_keep_their_own_documents(tmp_path):
    name = "WhatsApp Chat with Tienda Sol.txt"
    first = [(f"01/03/2024, 10:0{n}", "Tienda Sol", g) for n, g in enumerate(GREETING)]
    first += [("01/03/2024, 10:05", "Marta", "¿Tienen paraguas?"), ("01/03/2024, 10:09", "Tienda Sol", "Sí")]
    second = [(f"08/03/2024, 10:0{n}", "Tienda Sol", g) for n, g in enumerate(GREETING)]
    second += [("08/03/2024, 10:06", "Jon", "Quiero devolver un pedido"), ("08/03/2024, 10:09", "Tienda Sol", "Sí")]
    exports = [_write(tmp_path, f"{who}/{name}", _android(lines)) for who, lines in (("marta", first), ("jon", second))]
    out = tmp_path / "out"
    _run_each(exports, out)
    docs = _documents(out)
    assert len(docs) == 2
    customers = sorted({who for d in docs for who, _ in _said(d)} - {"Tienda Sol"})
    assert customers == ["Jon", "Marta"]
    assert all(len({who for who, _ in _said(d)} - {"Tienda Sol"}) == 1 for d in docs)
    assert _possible(out) == []  # the same words a week apart pair nothing


GROUP = [("02/05/2024, 09:00", "Lucía Romero", "¿Quedamos el sábado para la ruta?"),
         ("02/05/2024, 09:02", "Iker", "Sí, salimos a las 8 desde la plaza"),
         ("02/05/2024, 09:03", "Marta", "Me apunto"),
         ("02/05/2024, 09:10", "Lucía Romero", "Llevo agua y fruta"),
         ("02/05/2024, 09:12", "Iker", "Yo llevo el mapa"),
         ("02/05/2024, 09:15", "Marta", "Nos vemos a las 8")]
NAME = "WhatsApp Chat with Ruta del sábado.txt"


def _one_document_each_message_once(out: Path, want=GROUP) -> dict:
    docs = _documents(out)
    assert len(docs) == 1, [d["artifacts"]["ByggLogg"]["sessionKey"] for d in docs]
    said = [s for s in _said(docs[0]) if s[0] != "System"]
    assert said == [(who, text) for _, who, text in want]
    return docs[0]


def test_a_group_exported_by_two_members_is_one_document(tmp_path):
    lucia = [("02/05/2024, 08:59", "", 'You created group "Ruta del sábado"'), *GROUP]
    iker = [("02/05/2024, 08:59", "", 'Lucía Romero created group "Ruta del sábado"'), *GROUP]
    exports = [_write(tmp_path, f"{who}/{NAME}", _android(lines)) for who, lines in (("lucia", lucia), ("iker", iker))]
    out = tmp_path / "out"
    _run_each(exports, out)
    _one_document_each_message_once(out)


def _shifted(lines, minutes: int):
    from datetime import datetime, timedelta
    out = []
    for when, who, text in lines:
        at = datetime.strptime(when, "%d/%m/%Y, %H:%M") + timedelta(minutes=minutes)
        out.append((at.strftime("%d/%m/%Y, %H:%M"), who, text))
    return out


def test_the_same_chat_exported_in_london_and_in_kolkata_is_one_document(tmp_path):
    kolkata = _shifted(GROUP, 4 * 60 + 30)  # BST to IST: four and a half hours
    exports = [_write(tmp_path, f"{where}/{NAME}", _android(lines))
               for where, lines in (("london", GROUP), ("kolkata", kolkata))]
    out = tmp_path / "out"
    _run_each(exports, out)
    doc = _one_document_each_message_once(out)
    shifts = sorted(s["timeShiftHours"] for s in doc["artifacts"]["ByggLogg"]["snapshots"])
    assert shifts in ([-4.5, 0], [0, 4.5])


def _iphone(lines: list[tuple[str, str, str]], group: str) -> bytes:
    out = []
    for when, who, text in lines:
        stamp = f"[{when}:00]"
        out.append(f"{stamp} {who}: {text}\n" if who else f"{stamp} {group}: \u200e{text}\n")
    return "".join(out).encode()


def test_the_same_group_exported_on_android_and_on_iphone_is_one_document(tmp_path):
    android = [("02/05/2024, 08:59", "", 'Lucía Romero created group "Ruta del sábado"'), *GROUP]
    iphone = [("02/05/2024, 08:59", "", "Lucía Romero created group \u201cRuta del sábado\u201d"), *GROUP]
    exports = [_write(tmp_path, "android/" + NAME, _android(android)),
               _write(tmp_path, "iphone/WhatsApp Chat - Ruta del sábado.txt", _iphone(iphone, "Ruta del sábado"))]
    out = tmp_path / "out"
    _run_each(exports, out)
    _one_document_each_message_once(out)


# --- Ids that are not global -----------------------------------------------------------------------

def test_slack_general_from_two_workspaces_without_channels_json_stays_two_documents(tmp_path):
    exports = []
    for ws, texts in (("acme", ["Deploy at 5", "ok"]), ("globex", ["Lunch?", "sure"])):
        rows = [{"type": "message", "user": f"U{n}", "text": t, "ts": f"171196200{n}.000100"}
                for n, t in enumerate(texts)]
        (tmp_path / ws / "general").mkdir(parents=True)
        (tmp_path / ws / "general" / "2024-04-01.json").write_bytes(orjson.dumps(rows))
        exports.append(tmp_path / ws)
    out = tmp_path / "out"
    _run_each(exports, out)
    docs = _documents(out)
    assert sorted(t for d in docs for _, t in _said(d)) == sorted(["Deploy at 5", "ok", "Lunch?", "sure"])
    assert len(docs) == 2 and all(not i.get("editHistory") for d in docs
                                  for i in d["artifacts"]["Chatthistorik"]["interactions"])


def test_jsonl_conversation_1_from_two_systems_stays_two_documents(tmp_path):
    exports = []
    for system, turns in (("crm", [("user", "Reset my password"), ("assistant", "Link sent")]),
                          ("helpdesk", [("user", "Printer jammed"), ("assistant", "Open tray 2")])):
        rows = [{"conversation_id": "1", "role": r, "content": c, "timestamp": f"2024-04-01T10:0{n}:00Z"}
                for n, (r, c) in enumerate(turns)]
        exports.append(_write(tmp_path, f"{system}/log.jsonl", b"".join(orjson.dumps(x) + b"\n" for x in rows)))
    out = tmp_path / "out"
    _run_each(exports, out)
    docs = _documents(out)
    assert len(docs) == 2
    assert sorted(tuple(t for _, t in _said(d)) for d in docs) == [("Printer jammed", "Open tray 2"),
                                                                    ("Reset my password", "Link sent")]


# --- Evidence short of proof: a possible link, and a person's say ----------------------------------

def _keys(out: Path) -> list[str]:
    return sorted(d["artifacts"]["ByggLogg"]["sessionKey"] for d in _documents(out))


def _cli(*args: str):
    from typer.testing import CliRunner

    from flows.cli.app import app

    done = CliRunner().invoke(app, list(args))
    assert done.exit_code == 0, done.output
    return done


def test_a_short_chat_that_grew_is_a_possible_link_a_person_merges_and_splits(tmp_path):
    """Two messages, then the same two and four more with a third person: suggestive, not proof."""
    short = _write(tmp_path, f"may/{NAME}", _android(GROUP[:2]))
    grown = _write(tmp_path, f"june/{NAME}", _android(GROUP))
    out = tmp_path / "out"
    _run_each([short, grown], out)
    a, b = _keys(out)
    for doc in _documents(out):  # both documents name the other
        (link,) = doc["artifacts"]["ByggLogg"]["possiblySame"]
        assert link["key"] in (a, b) and link["key"] != doc["artifacts"]["ByggLogg"]["sessionKey"]
        assert "2 messages alike" in link["evidence"]
    listed = orjson.loads(_cli("sessions", "--out", str(out), "--json").stdout)
    assert sorted(x["key"] for r in listed["sessions"] for x in r["possibly_same"]) == [a, b]
    before = {p: p.read_bytes() for p in (out / "sessions").rglob("*.json")}
    reconstruct([short], out, Settings(), runner=None, force=True)  # a rerun keeps the link, writes nothing new
    assert {p: p.read_bytes() for p in (out / "sessions").rglob("*.json")} == before

    _cli("link", a, b, "--why", "same hiking group", "--who", "ana", "--out", str(out))
    _run_each([grown], out)  # the next run, its input unchanged
    doc = _one_document_each_message_once(out)
    assert len(doc["artifacts"]["ByggLogg"]["snapshots"]) == 2

    _cli("unlink", a, b, "--why", "two groups after all", "--who", "ben", "--out", str(out))
    _run_each([grown], out)
    assert _keys(out) == [a, b]
    _run_each([short, grown], out)  # honoured by later runs: the evidence does not merge them again
    assert _keys(out) == [a, b]
    assert not any(d["artifacts"]["ByggLogg"].get("possiblySame") for d in _documents(out))
    _cli("forget", a, b, "--why", "not sure", "--who", "cy", "--out", str(out))
    _run_each([grown], out)  # back to the evidence: two documents, each naming the other again
    assert [len(d["artifacts"]["ByggLogg"]["possiblySame"]) for d in _documents(out)] == [1, 1]
    ledger = Ledger(out / "ledger.sqlite", read_only=True)
    try:
        said = ledger.db.execute("SELECT decision, who, why FROM link_decisions ORDER BY rowid").fetchall()
    finally:
        ledger.close()
    assert said == [("same", "ana", "same hiking group"), ("different", "ben", "two groups after all"),
                    ("undecided", "cy", "not sure")]


# --- The property: different people's exports never share a document without a global id ---------

TEXTS = st.sampled_from(["hi", "ok", "/start", "Welcome!", "thanks", "yes"])


def _tg_export(owner: str, uid: int, texts: list[str], kind: str, full: bool) -> bytes:
    chat = {"name": "Peer", "type": kind, "id": 4040,
            "messages": [_tg_message(n + 1, 1709283600 + 60 * n, owner if n % 2 == 0 else "Peer",
                                     uid if n % 2 == 0 else 4040, t) for n, t in enumerate(texts)]}
    return _tg_full(uid, owner, chat) if full else orjson.dumps(chat)


def _wa_export(customer: str, texts: list[str]) -> bytes:
    lines = [(f"01/03/2024, 10:{n:02d}", "Tienda Sol" if n % 2 else customer, t) for n, t in enumerate(texts)]
    return _android(lines)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.tuples(st.lists(TEXTS, min_size=1, max_size=8), st.lists(TEXTS, min_size=1, max_size=8)),
       platform=st.sampled_from(["telegram-full", "telegram-single", "whatsapp"]),
       kind=st.sampled_from(["personal_chat", "bot_chat", "private_supergroup"]))
def test_exports_by_different_accounts_never_share_a_document_without_a_global_id(tmp_path_factory, texts, platform,
                                                                                    kind):
    """Ana's and Ben's exports of their own chats with one peer (the same peer id, texts drawn from a few
    words so that they often say the same things at the same times): one document each unless the id
    is global, and never a message of one under the other."""
    root = tmp_path_factory.mktemp("accounts")
    exports = []
    for (owner, uid), said in zip((("Ana", 111), ("Ben", 222)), texts, strict=True):
        data = (_wa_export(owner, said) if platform == "whatsapp"
                else _tg_export(owner, uid, said, kind, platform == "telegram-full"))
        name = "WhatsApp Chat with Tienda Sol.txt" if platform == "whatsapp" else "result.json"
        exports.append(_write(root, f"{owner.lower()}/{name}", data))
    out = root / "out"
    _run_each(exports, out)
    docs = _documents(out)
    global_id = platform != "whatsapp" and kind == "private_supergroup"
    if not global_id:
        assert len(docs) == 2
    for doc in docs:
        owners = {who for who, _ in _said(doc)} & {"Ana", "Ben"}
        if not global_id:
            assert len(owners) == 1  # no message under the other person's document


def test_a_streamed_chat_exported_twice_is_proved_the_same_from_its_document(tmp_path):
    """A chat above ``stream_text_bytes`` is written by the streamed route: its prints come from its
    document's lines, so a later export of it still joins it."""
    lines = [(f"0{1 + n // 60}/05/2024, 09:{n % 60:02d}", ("Lucía Romero", "Iker")[n % 2], f"mensaje {n}")
             for n in range(30)]
    exports = [_write(tmp_path, f"{m}/{NAME}", _android(part)) for m, part in (("may", lines[:20]), ("june", lines))]
    out = tmp_path / "out"
    streamed = Settings(stream_text_bytes=1, stream_chunk_bytes=256)
    for export in exports:
        assert reconstruct([export], out, streamed, runner=None).status == "completed"
    _one_document_each_message_once(out, lines)


# --- many id-less chats -------------------------------------------------------------------------------

def test_many_untitled_transcripts_weigh_only_the_pairs_that_share_a_message(tmp_path, monkeypatch):
    """Id-less transcripts with no title are all one chat to the key resolution: weighing every pair made
    1,000 of them take more than ten minutes. Only pairs that share a message are weighed now, and two
    exports of one conversation among them are still proved one."""
    from flows.core import snapshots

    calls: list[int] = []
    real = snapshots.evidence
    monkeypatch.setattr(snapshots, "evidence", lambda *a, **k: calls.append(1) or real(*a, **k))
    src = tmp_path / "in"
    src.mkdir()
    for i in range(60):
        (src / f"chat-{i:03d}.txt").write_text(f"User: question number {i}\nAssistant: answer number {i}\n")
    shared = "User: the same words\nAssistant: the same reply\nUser: and more\nAssistant: said twice\n"
    for name in ("copy-a.txt", "copy-b.txt"):
        (src / name).write_text(shared)
    out = tmp_path / "out"
    summary = reconstruct([src], out, Settings(workers=1), runner=None)
    assert summary.status == "completed"
    assert len(calls) <= 4, f"{len(calls)} pairs weighed for 62 chats of which 2 share messages"
    said = [_said(d) for d in _documents(out)]
    assert len(said) == 61 and said.count(_said(next(d for d in _documents(out) if "said twice" in str(d)))) == 1
