"""The Grok export grammar: times, the branch, and where a model name comes from."""

from datetime import UTC, datetime

import orjson

from models.settings import Settings
from parsers.grammars.grok import Grok, grok_time
from parsers.text import decode

GROK = Grok()


def test_times_in_every_shape_the_exports_use():
    assert grok_time("2025-06-21T19:28:21.177720Z")[0] == datetime(2025, 6, 21, 19, 28, 21, tzinfo=UTC)
    assert grok_time({"$date": {"$numberLong": "1718000000000"}})[0] == datetime(2024, 6, 10, 6, 13, 20, tzinfo=UTC)
    assert grok_time({"$date": "2024-06-10T06:13:25.000Z"})[0] == datetime(2024, 6, 10, 6, 13, 25, tzinfo=UTC)
    assert grok_time({"$date": {"$numberLong": "soon"}}) == (None, "soon")


def _export(responses, leaf=None):
    return {"conversations": [{"conversation": {"conversation_id": "c", "title": "t", "leaf_response_id": leaf},
                               "responses": [{"response": r} for r in responses]}]}


def _r(rid, parent, sender, message, t, **more):
    return {"response_id": rid, "parent_response_id": parent, "sender": sender, "message": message,
            "create_time": t, **more}


def _parse(value):
    return list(GROK.parse(decode(orjson.dumps(value), "grok.json"), Settings()))


def test_the_named_leaf_wins_over_the_latest_and_the_model_asked_for_is_not_explicit():
    responses = [_r("q", None, "human", "q", "2025-01-01T00:00:00Z",
                    metadata={"requestModelDetails": {"modelId": "grok-3"}}),
                 _r("a", "q", "assistant", "first", "2025-01-01T00:00:05Z"),
                 _r("b", "q", "assistant", "second", "2025-01-01T00:00:09Z")]
    (s,) = _parse(_export(responses, leaf="a"))
    assert [t.content for t in s.turns] == ["q", "first"]
    assert (s.turns[1].model.name, s.turns[1].model_explicit) == ("grok-3", False)
    assert [r.pointer for r in s.regions if r.kind.value == "off_branch"] == ["/conversations/0/responses/2"]
    assert GROK.count_turns(s.raw) == 2


def test_an_unknown_sender_is_kept_as_drift():
    (s,) = _parse(_export([_r("x", None, "moderator", "hello", "2025-01-01T00:00:00Z")]))
    assert (s.turns[0].role, s.meta["formatDrift"]["sender:moderator"]["count"]) == ("other", 1)
