"""Slack Web API history pages: page layouts, chronological order with threads, duplicates, detection."""

from __future__ import annotations

import itertools

import orjson
import pytest

from models.errors import ParseError
from models.records import RegionKind, SourceText
from models.settings import Settings
from parsers import registry
from validators.accounting import account

G = registry.get("slack-api")


def _source(text, name="C0123ABCDE.json", companions=None):
    return SourceText(text, name, "0" * 64, len(text), "utf-8", companions or {})


def _parse(data, **kw):
    text = data if isinstance(data, str) else orjson.dumps(data).decode()
    (s,) = G.parse(_source(text, **kw), Settings())
    return s


def _m(ts, text, user="U1", **kw):
    return {"type": "message", "user": user, "text": text, "ts": ts, **kw}


def _page(*messages, **kw):
    return {"ok": True, "messages": list(messages), "has_more": False, **kw}


HISTORY = _page(_m("30.0", "c"), _m("20.0", "parent", thread_ts="20.0", reply_count=2), _m("10.0", "a"))
REPLIES = _page(_m("20.0", "parent", thread_ts="20.0", reply_count=2), _m("21.0", "r1", thread_ts="20.0"),
                _m("35.0", "r2", thread_ts="20.0"))


def test_one_page_newest_first_reads_oldest_first_with_the_channel_id_from_the_name():
    s = _parse(HISTORY)
    assert [t.content for t in s.turns] == ["a", "parent", "c"]
    assert [t.pointer for t in s.turns] == ["/messages/2", "/messages/1", "/messages/0"]
    assert (s.session_id, s.id_source, s.pointer) == ("C0123ABCDE", "file-name", "")
    assert _parse(HISTORY, name="export/general-history.json").session_id is None


@pytest.mark.parametrize("order", list(itertools.permutations(range(2))))
def test_threads_sit_next_to_their_parent_whatever_the_page_order(order):
    pages = [[HISTORY, REPLIES][i] for i in order]
    s = _parse(pages)
    assert [t.content for t in s.turns] == ["a", "parent", "r1", "r2", "c"]
    (dup,) = s.regions
    assert dup.kind is RegionKind.DUPLICATE and "ts 20.0" in dup.reason
    assert G.count_turns(s.raw) == len(s.turns) == 5
    assert account(s, None).clean


def test_concatenated_pages_are_read_as_an_array_of_pages():
    text = orjson.dumps(HISTORY).decode() + "\n" + orjson.dumps(REPLIES).decode() + "\n"
    s = _parse(text)
    assert [t.content for t in s.turns] == ["a", "parent", "r1", "r2", "c"]
    assert s.turns[2].pointer == "/1/messages/1" and s.assumptions[0].startswith("pages written one after")
    assert account(s, None).clean


def test_error_pages_and_more_to_come_are_warnings_and_unknown_keys_drift():
    s = _parse([_page(_m("1.0", "x"), has_more=True, shiny=1), {"ok": False, "error": "ratelimited"}])
    assert any("saved errors" in w and "ratelimited" in w for w in s.warnings)
    assert s.meta["formatDrift"] == {"key:shiny": {"count": 1, "first": "/0"}}
    s = _parse(_page(_m("1.0", "x"), has_more=True))
    assert any("has_more" in w for w in s.warnings)


def test_users_list_page_beside_the_file_resolves_names():
    users = orjson.dumps({"ok": True, "members": [{"id": "U1", "name": "ann", "profile": {"display_name": "Ann"}}]})
    s = _parse(HISTORY, companions={"users.json": users.decode()})
    assert {t.speaker for t in s.turns} == {"Ann"}


def test_not_pages_is_a_parse_error():
    with pytest.raises(ParseError):
        _parse("[1, 2]")
    with pytest.raises(ParseError):
        _parse("{not json")


def test_detection_is_the_share_of_page_messages():
    page = orjson.dumps(HISTORY).decode()
    assert G.detect(page, "h.json") == 1.0
    assert G.detect(page[:-40], "h.json") == 1.0  # cut short: the records seen so far
    assert G.detect(orjson.dumps(HISTORY["messages"]).decode(), "general/2024-01-01.json") == 0.0
    assert registry.get("slack").detect(page, "h.json") == 0.0
