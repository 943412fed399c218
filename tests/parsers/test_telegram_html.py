"""Telegram Desktop HTML pages: times from titles, joined runs, service blocks, media, accounting, detection."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from models.records import RegionKind, SourceText
from models.settings import Settings
from parsers import registry
from parsers.grammars.telegram_html import title_time
from validators.accounting import Accountant, LineIndex, account

G = registry.get("telegram-html")
HEAD = ('<html>\n<body>\n<div class="page_header">\n<div class="text bold">\nTrip\n</div>\n</div>\n'
        '<div class="history">\n')
TAIL = "</div>\n</body>\n</html>\n"


def _msg(mid, name=None, text="hi", when="01.02.2022 10:00:00 UTC+02:00", joined=False, inner=""):
    cls = "message default clearfix" + (" joined" if joined else "")
    who = f'<div class="from_name">\n{name}\n</div>\n' if name else ""
    return (f'<div class="{cls}" id="message{mid}">\n<div class="body">\n'
            f'<div class="pull_right date details" title="{when}">\n10:00\n</div>\n{who}{inner}'
            f'<div class="text">\n{text}\n</div>\n</div>\n</div>\n')


def _date(n, day="1 February 2022"):
    return f'<div class="message service" id="message-{n}">\n<div class="body details">\n{day}\n</div>\n</div>\n'


def _parse(body, name="ChatExport/messages.html"):
    text = HEAD + body + TAIL
    (s,) = G.parse(SourceText(text, name, "0" * 64, len(text), "utf-8"), Settings())
    return s, text


@pytest.mark.parametrize(("title", "want"), [
    ("12.03.2021 14:05:33 UTC+01:00", datetime(2021, 3, 12, 14, 5, 33, tzinfo=timezone(timedelta(hours=1)))),
    ("12.03.2021 14:05:33 UTC-03:30",
     datetime(2021, 3, 12, 14, 5, 33, tzinfo=timezone(-timedelta(hours=3, minutes=30)))),
    ("12.03.2021 14:05:33", datetime(2021, 3, 12, 14, 5, 33)),
    ("31.02.2021 14:05:33 UTC+01:00", None),
    ("yesterday", None),
])
def test_times_come_from_the_title(title, want):
    assert title_time(title) == want


def test_joined_messages_take_the_previous_author_and_date_separators_are_regions():
    s, text = _parse(_date(1) + _msg(5, "Ann Lee") + _msg(6, joined=True, text="second<br>line") + _msg(7, "Bo"))
    assert [(t.speaker, t.content) for t in s.turns] == [("Ann Lee", "hi"), ("Ann Lee", "second\nline"), ("Bo", "hi")]
    assert s.turns[1].extra == {"messageId": 6, "joined": True}
    assert [r.kind for r in s.regions] == [RegionKind.SESSION_HEADER, RegionKind.BOILERPLATE, RegionKind.BOILERPLATE]
    assert s.title == "Trip" and s.meta == {"page": 1}
    assert G.count_turns(s.raw) == 3
    result = account(s, LineIndex(text))
    assert result.clean and result.in_turns and result.declared


def test_a_joined_message_at_the_top_of_a_page_has_no_author_to_borrow():
    s, _ = _parse(_msg(5, joined=True), name="messages3.html")
    assert s.turns[0].speaker == "unknown" and "joined message" in s.warnings[0] and s.meta["page"] == 3


def test_service_media_forward_and_reply():
    media = ('<div class="media_wrap clearfix">\n<a class="sticker_wrap clearfix pull_left" href="stickers/s.webp">\n'
             '<img class="sticker" src="stickers/s.webp_thumb.jpg"/>\n</a>\n</div>\n')
    fwd = ('<div class="reply_to details">\nIn reply to <a href="#go_to_message5">this message</a>\n</div>\n'
           '<div class="forwarded body">\n<div class="from_name">\n'
           'News <span class="date details" title="x"> x</span>\n</div>\n')
    body = ('<div class="message service" id="message4">\n<div class="body details">\nAnn created group «Trip»\n'
            '</div>\n</div>\n' + _msg(5, "Ann", text="", inner=media) + _msg(6, "Bo", inner=fwd, text="read this")
            .replace("</div>\n</div>\n</div>\n", "</div>\n</div>\n</div>\n</div>\n", 1))
    s, text = _parse(body)
    assert [(t.speaker, t.role, t.kind, t.content) for t in s.turns] == [
        ("System", "system", "system", "Ann created group «Trip»"),
        ("Ann", "user", "media", "[sticker: stickers/s.webp]"),
        ("Bo", "user", "message", "read this")]
    assert s.turns[2].extra == {"messageId": 6, "replyTo": 5, "forwardedFrom": "News"}
    assert account(s, LineIndex(text)).clean


def test_an_unknown_block_in_the_history_is_left_unaccounted_and_new_classes_drift():
    s, text = _parse(_msg(5, "Ann") + '<div class="poll_results">\n3 votes\n</div>\n'
                     + _msg(6, "Bo", inner='<div class="sparkle_line">\n</div>\n'))
    result = account(s, LineIndex(text))
    assert not result.clean and result.listed == ["lines 22-24"]
    assert s.meta["formatDrift"] == {"htmlClass:sparkle_line": {"count": 1, "first": "line 33"}}


def test_detection_counts_telegram_message_blocks():
    _, text = _parse(_date(1) + _msg(5, "Ann") + _msg(6, joined=True))
    assert G.detect(text, "messages.html") == 1.0
    assert G.detect(text.replace('id="message6"', 'id="other6"'), "messages.html") == pytest.approx(2 / 3)
    assert G.detect("<html><body><p>Ann: hi</p></body></html>", "page.html") == 0.0
    assert registry.get("telegram").detect(text, "messages.html") == 0.0


def test_entities_are_plain_text_and_text_links_keep_their_target():
    s, _ = _parse(_msg(5, "Ann", text='see <a href="https://example.org/x">the docs</a> &amp; <strong>now</strong>'))
    assert s.turns[0].content == "see the docs & now"
    assert s.turns[0].extra["links"] == ["https://example.org/x"]


def test_a_page_saved_again_with_self_closing_tags_keeps_its_line_breaks():
    photo = '<a class="photo_wrap clearfix pull_left" href="photos/p.jpg">\n<img class="photo" src="p.jpg"/>\n</a>\n'
    s, _ = _parse(_msg(6, "Ann", text="one\n   <br/>\n   two<br />three", inner=photo))
    assert s.turns[0].content == "[photo: photos/p.jpg]\none\ntwo\nthree"


def _page(body, next_page=None):
    link = (f'<a class="pagination block_link" href="{next_page}">\nNext messages\n</a>\n' if next_page else "")
    return HEAD + body + link + TAIL


def _chat(pages: dict[str, str | None]):
    """A chat's pages as one grouped source (None: a page that could not be read), parsed."""
    parts = tuple(SourceText(text or "", f"ChatExport/{name}", "0" * 64, len(text or ""),
                             "utf-8" if text is not None else "unreadable") for name, text in pages.items())
    source = SourceText("", "ChatExport/messages.html", "0" * 64, 0, "utf-8", parts=parts)
    (s,) = G.parse(source, Settings())
    return s, source


def test_a_chats_pages_are_one_session_in_page_order_not_string_order():
    names = ["messages.html", *[f"messages{n}.html" for n in range(2, 12)]]
    pages = {name: _page(_msg(100 + n, f"P{n}"), names[n + 1] if n + 1 < len(names) else None)
             for n, name in enumerate(names)}
    s, source = _chat(dict(sorted(pages.items())))  # handed over in string order: messages10 before messages2
    assert [t.extra["messageId"] for t in s.turns] == list(range(100, 111))
    assert [t.part for t in s.turns][8:11] == ["messages9.html", "messages10.html", "messages11.html"]
    assert s.meta["pages"] == list(range(1, 12)) and s.coverage_reason is None and s.lines is None
    assert G.count_turns(s.raw) == 11 and s.title == "Trip"
    assert all(r.part for r in s.regions)
    assert Accountant.of(source).account(s, True).clean


def test_a_joined_message_at_the_top_of_a_page_continues_the_author_of_the_page_before():
    s, _ = _chat({"messages.html": _page(_msg(5, "Ann Lee"), "messages2.html"),
                  "messages2.html": _page(_msg(6, joined=True, text="still me"))})
    assert [(t.speaker, t.part) for t in s.turns] == [("Ann Lee", "messages.html"), ("Ann Lee", "messages2.html")]
    assert not s.warnings


@pytest.mark.parametrize(("pages", "gap"), [
    ({"messages.html": _page(_msg(5, "Ann")), "messages3.html": _page(_msg(7, "Bo"))}, "messages2.html (missing)"),
    ({"messages.html": _page(_msg(5, "Ann"), "messages2.html")}, "messages2.html (missing)"),
    ({"messages2.html": _page(_msg(6, "Bo"))}, "messages.html (missing)"),
    ({"messages.html": _page(_msg(5, "Ann")), "messages2.html": None}, "messages2.html (not readable)"),
])
def test_a_missing_or_unreadable_page_makes_the_chat_partial_and_is_named(pages, gap):
    s, source = _chat(pages)
    assert s.coverage_reason.startswith("1 pages of the chat are missing or unreadable") and gap in s.coverage_reason
    assert Accountant.of(source).account(s, True).clean  # what was read is all accounted for


def test_a_turn_lost_on_page_two_is_unaccounted_and_named_with_its_page():
    s, source = _chat({"messages.html": _page(_msg(5, "Ann"), "messages2.html"),
                       "messages2.html": _page(_msg(6, "Bo") + _msg(7, "Cy"))})
    lost = s.turns.pop(2)
    result = Accountant.of(source).account(s, True)
    assert result.reason().startswith("unaccounted_source")
    assert result.listed == [f"messages2.html lines {lost.lines[0]}-{lost.lines[1]}"]


def test_a_lone_page_that_links_to_another_page_says_the_chat_goes_on_beyond_it():
    text = _page(_msg(5, "Ann"), "messages2.html")
    (s,) = G.parse(SourceText(text, "ChatExport/messages.html", "0" * 64, len(text), "utf-8"), Settings())
    assert s.coverage_reason == ("this page links to messages2.html of the same chat, not read with it: "
                                 "the chat continues beyond this file")
    s, _ = _parse(_msg(5, "Ann"))
    assert s.coverage_reason is None  # a chat of one page links nowhere
