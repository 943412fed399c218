"""VK's account archive messages (messages/<peer>/messages<N>.html, windows-1251): the declared code page
decoded, one session per peer over its pages, authors, the owner's messages, edits, attachments, Russian
and English dates. Before this grammar such a page was undecodable or no grammar's."""

from __future__ import annotations

from datetime import datetime

import orjson
import pytest

from flows.core.process import process_bytes, process_group
from models.settings import Settings
from normalizers.assemble import RunContext
from parsers import registry
from parsers.grammars.vk_html import vk_time
from parsers.text import decode
from tests.helpers import GOLDEN
from validators.accounting import Accountant

PEER = GOLDEN / "vk-html" / "messages" / "2000000001"
PAGE = ('<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1251"></head><body>\n'
        '<div class="ui_crumb">Сообщения</div><div class="ui_crumb">Книжный клуб</div>\n'
        '<div class="item">\n<div class="item__main"><div class="message" data-id="7">\n'
        '<div class="message__header"><a href="https://vk.com/id1">Павел</a>, 12 янв 2021 в 10:20:05 '
        '<span class="message-edited">(ред.)</span></div>\n'
        '<div>Всем   спасибо<br>до завтра<div class="kludges"><div class="attachment">\n'
        '<div class="attachment__description">Фотография</div>\n'
        '<a class="attachment__link" href="https://vk.com/photo1_2">x</a></div></div></div>\n</div></div>\n</div>\n'
        '<div class="item">\n<div class="item__main"><div class="message" data-id="6">\n'
        '<div class="message__header">Вы, 12 янв 2021 в 9:05:00</div>\n<div>Привет<div class="kludges"></div></div>\n'
        '</div></div>\n</div>\n</body></html>\n')


def test_a_page_in_its_declared_code_page_is_decoded_as_declared():
    source = decode(PAGE.encode("cp1251"), "messages/2000000001/messages0.html")
    assert source.encoding == "cp1251"
    assert "declares it" in source.encoding_guess and "Книжный клуб" in source.text


def test_one_page_is_read_oldest_first_with_its_authors_edits_and_attachments():
    source = decode(PAGE.encode("cp1251"), "messages/2000000001/messages0.html")
    assert registry.detect(source.text[:65536], source.name, threshold=0.5).grammar == "vk-html"
    g = registry.get("vk-html")
    (s,) = g.parse(source, Settings())
    assert (s.session_id, s.title) == ("2000000001", "Книжный клуб")
    assert [(t.speaker, t.content, t.time) for t in s.turns] == [
        ("Вы", "Привет", datetime(2021, 1, 12, 9, 5)),
        ("Павел", "Всем спасибо\nдо завтра\n[Фотография: https://vk.com/photo1_2]", datetime(2021, 1, 12, 10, 20, 5))]
    assert s.turns[1].extra == {"messageId": 7, "profile": "https://vk.com/id1", "edited": True}
    assert g.count_turns(s.raw) == 2 and Accountant.of(source, lines=True).account(s, True).clean


@pytest.mark.parametrize(("header", "when"), [
    ("5 мая 2022 в 1:34:19", datetime(2022, 5, 5, 1, 34, 19)),
    ("5 май 2022 в 1:34:19", datetime(2022, 5, 5, 1, 34, 19)),
    ("12 сентября 2020 в 23:00:01", datetime(2020, 9, 12, 23, 0, 1)),
    ("5 May 2022 at 1:34:19 pm", datetime(2022, 5, 5, 13, 34, 19)), ("5 Foo 2022 в 1:34:19", None)])
def test_dates_in_russian_and_english(header, when):
    assert vk_time(f"Павел, {header}") == when


def test_a_peers_pages_are_one_complete_session():
    paths = sorted(PEER.glob("messages*.html"))
    parts = [(p.read_bytes(), f"messages/2000000001/{p.name}") for p in paths]
    got = process_group(parts, "messages/2000000001/messages.html", RunContext.from_settings(Settings()))
    (doc,) = [orjson.loads(s.encoded) for s in got.sessions]
    history = doc["artifacts"]["Chatthistorik"]
    assert history.get("coverage") != "partial" and len(history["interactions"]) == 5
    assert doc["artifacts"]["ByggLogg"]["grammar"]["id"] == "vk-html"


def test_a_later_page_read_alone_says_so():
    path = PEER / "messages50.html"
    got = process_bytes(path.read_bytes(), "messages/2000000001/messages50.html", RunContext.from_settings(Settings()))
    (doc,) = [orjson.loads(s.encoded) for s in got.sessions]
    assert any("read alone" in w for w in doc["artifacts"]["ByggLogg"]["warnings"])


VKOPT = ('<html><head><title>VK Messages: A(1), B(2)</title></head><body>\n<h4> Total messages: 3 </h4>\n'
         '<div id="msg1" class="msg_item">\n<div class="from"> <b>A</b> <a href="http://vk.com/id1">@a</a>\n'
         '<a href="#msg1">2021.05.04 08:00:01</a></div>\n<div class="msg_body">hi<br/>there '
         '<img class="emoji" alt="🙂"></div>\n<div class="fwd"><div class="msg_item"><div class="from"> <b>C</b>'
         ' 2021.05.03 20:00:00</div><div class="msg_body">old news</div></div></div>\n</div>\n'
         '<div id="msg2" class="msg_item">\n<div class="from"> <b>B</b> <a href="#msg2">2021.05.04 08:03:00</a>'
         '</div>\n<div>action "<b>chat_kick_user</b>" is unknown</div>\n</div>\n</body></html>\n')


def test_a_vkopt_page_is_one_session_in_page_order_with_forwards_inside_their_message():
    source = decode(VKOPT.encode(), "vk/messages.html")
    g = registry.get("vk-html")
    assert g.detect(VKOPT, "vk/messages.html") == 1.0
    [s] = g.parse(source, Settings())
    got = [(t.speaker, t.role, t.kind, t.content, t.time, t.lines) for t in s.turns]
    assert got == [("A", "user", "message", "hi\nthere 🙂\n[forwarded: C, 2021.05.03 20:00:00]\n> old news",
                    datetime(2021, 5, 4, 8, 0, 1), (3, 8)),
                   ("System", "system", "system", 'action "chat_kick_user" is unknown', datetime(2021, 5, 4, 8, 3),
                    (9, 12))]
    assert s.turns[0].extra["forwarded"] == [{"author": "C", "time": "2021.05.03 20:00:00", "text": "old news"}]
    assert s.turns[1].extra["actor"] == "B" and s.title == "VK Messages: A(1), B(2)"
    assert s.warnings == ["the page says it holds 3 messages; 2 are in it"] and g.count_turns(s.raw) == 2
