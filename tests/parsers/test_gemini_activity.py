"""The Gemini Apps activity grammar (Google Takeout My Activity): prompts, responses, drafts, actions."""

import orjson

from models.records import RegionKind
from models.settings import Settings
from parsers import registry
from parsers.grammars.gemini_activity import GeminiActivity
from parsers.text import decode
from validators.accounting import account

GRAMMAR = GeminiActivity()
NAME = "My Activity.json"


def _entry(title, time, *responses, **more):
    entry = {"header": "Gemini Apps", "title": title, "time": time, "products": ["Gemini Apps"],
             "activityControls": ["Gemini Apps Activity"], **more}
    if responses:
        entry["safeHtmlItem"] = [{"html": r} for r in responses]
    return entry


def _parse(entries):
    return next(GRAMMAR.parse(decode(orjson.dumps(entries), NAME), Settings()))


def test_prompts_and_responses_oldest_first_with_actions_as_system_turns():
    s = _parse([_entry("Gave feedback: Good response", "2025-06-03T08:00:09.000Z"),
                _entry("Prompted b &amp; c", "2025-06-03T08:00:00.500Z", "<p>one</p><p>two &lt;3</p>"),
                "not an entry",
                _entry("Prompted a", "2025-06-01T08:00:00Z")])
    assert [(t.speaker, t.role, t.kind, t.content) for t in s.turns] == [
        # an entry without a time stays beside its older neighbour in the file
        ("User", "user", "message", "a"), ("System", "system", "notice", '"not an entry"'),
        ("User", "user", "message", "b &amp; c"),  # a title is text, not HTML
        ("Gemini", "assistant", "message", "one\ntwo <3"),
        ("System", "system", "action", "Gave feedback: Good response")]
    reply = s.turns[3]
    assert (reply.model.provider, reply.model.name, reply.model_explicit) == ("google", None, False)
    assert reply.time == s.turns[2].time and reply.time.microsecond == 0
    assert s.session_id is None and GRAMMAR.count_turns(s.raw) == len(s.turns)
    assert account(s, None).clean


def test_earlier_drafts_are_declared_with_their_text_and_the_last_is_the_reply():
    s = _parse([_entry("Prompted x", "2025-06-03T08:00:00Z", "<p>first</p>", "<p>second</p>", "<p>third</p>",
                       subtitles=[{"name": "Tutor was used in this chat. Manage your Gems.", "url": "u"}])])
    assert [t.content for t in s.turns] == ["x", "third"]
    assert s.turns[0].extra == {"gem": "Tutor"}
    drafts = [(r.pointer, r.content) for r in s.regions if r.kind is RegionKind.OFF_BRANCH]
    assert drafts == [("/0/safeHtmlItem/0", "first"), ("/0/safeHtmlItem/1", "second")]
    assert any("last is the reply" in a for a in s.assumptions)
    assert account(s, None).clean
    s.regions = [r for r in s.regions if r.kind is not RegionKind.OFF_BRANCH]  # a draft lost is found
    assert account(s, None).listed == ["/0/safeHtmlItem/0", "/0/safeHtmlItem/1"]


def test_a_time_that_cannot_be_read_is_never_guessed():
    s = _parse([_entry("Prompted x", "yesterday", "<p>y</p>")])
    assert all(t.time is None for t in s.turns)
    assert any("could not be read" in w for w in s.warnings)


def test_other_my_activity_products_are_not_claimed():
    search = [{"header": "Search", "title": "Searched for weather", "titleUrl": "https://www.google.com/search?q=w",
               "time": "2025-06-01T08:00:00Z", "products": ["Search"]}]
    sample = orjson.dumps(search).decode()
    assert GRAMMAR.detect(sample, NAME) == 0.0
    gemini = orjson.dumps([_entry("Prompted hi", "2025-06-01T08:00:00Z", "<p>hello</p>")]).decode()
    assert registry.detect(gemini, NAME, threshold=0.5).grammar == "gemini-activity"
