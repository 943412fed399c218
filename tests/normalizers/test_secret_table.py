"""The detector table, row by row: every example is found under its row's name and its secret part
disappears, as a turn's text, inside a tool call's JSON input and inside JSON source fields. A new
row is tested by these tests without new code. Every value is FAKE, built from pieces in the table.

Also the personal data of ``redact_pii``: cards by Luhn, IBANs by checksum, phones by numbering plan,
and the property that dates, IP addresses, times and order numbers are never taken for any of them.
"""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stdnum import luhn

from normalizers.secret_table import DETECTORS
from normalizers.secrets import _KEYS, _TRIGGERS, FOLDED_WORDS, Redactor, _has_trigger

CASES = [pytest.param(row, text, core, id=f"{row.name}-{i}")
         for row in DETECTORS for i, (text, core) in enumerate(row.examples)]
REDACT = Redactor("redact", pii=False)


def test_row_names_are_unique_and_every_row_has_an_example():
    names = [row.name for row in DETECTORS]
    assert len(names) == len(set(names))
    assert all(row.examples and row.triggers for row in DETECTORS)


@pytest.mark.parametrize("row, text, core", CASES)
def test_each_example_is_redacted_as_text(row, text, core):
    assert core in text
    out, found = REDACT.scrub(f"see {text} here")
    assert row.name in found and core not in out, out
    assert f"[REDACTED:{row.name}]" in out and out.startswith("see ") and out.endswith(" here")


@pytest.mark.parametrize("row, text, core", CASES)
def test_each_example_holds_a_trigger_of_its_row(row, text, core):
    """Only the rows whose trigger words a text holds run on it: a row must be found by its own."""
    assert any((w in text.lower()) if w == w.lower() else (w in text) for w in row.triggers)


@pytest.mark.parametrize("row, text, core", CASES)
def test_each_example_is_redacted_in_a_tool_calls_json_input(row, text, core):
    """A coding agent's tool call is written as its input's compact JSON (quotes escaped inside)."""
    call = orjson.dumps({"command": f"run {text} now", "description": "x"}).decode()
    out, found = REDACT.scrub(call)
    assert row.name in found and core not in out, out


@pytest.mark.parametrize("row, text, core", CASES)
def test_each_example_is_redacted_in_json_source_fields(row, text, core):
    found: list[str] = []
    out = REDACT.scrub_fields({"attachments": [{"name": text, "note": [f"a {text}"]}]}, found)
    assert found.count(row.name) >= 2 and core not in orjson.dumps(out).decode()


@pytest.mark.parametrize("row", [r for r in DETECTORS if r.keys], ids=lambda r: r.name)
def test_a_value_under_a_key_named_like_its_row_is_redacted_whole(row):
    """``"api_key": "abc"`` in source fields: the value is short and plain, the key says what it is."""
    key = {"password_assignment": "dbPassword", "secret_assignment": "api_key"}[row.name]
    found: list[str] = []
    out = REDACT.scrub_fields({"meta": {key: "abc", "other": "abc", "n": 7}}, found)
    assert out == {"meta": {key: f"[REDACTED:{row.name}]", "other": "abc", "n": 7}} and found == [row.name]
    assert Redactor("report", False).scrub_fields({key: 12345}, []) == {key: 12345}


@pytest.mark.parametrize("key", ["max_tokens", "token", "is_secret", "keys", "monkey", "cwd", "password_hint_shown"])
def test_keys_that_only_look_like_credentials_are_kept(key):
    assert _KEYS.fullmatch(key) is None or key == "is_secret"
    found: list[str] = []
    assert REDACT.scrub_fields({key: True, "x": {key: 5 if key != "is_secret" else False}}, found) == \
        {key: True, "x": {key: 5 if key != "is_secret" else False}} and found == []


def test_trigger_words_are_lower_case_or_exact():
    assert all(w == w.lower() for w in FOLDED_WORDS)


@pytest.mark.parametrize("text", [
    "password: see below", "use the Authorization: Bearer header", "mysql -u root -p", "mysql -u root -p -h db",
    "export GITHUB_TOKEN=$(cat token.txt)", "curl https://example.org/api", "Bearer tokens are short-lived",
    "the max_tokens setting", "ssh -p 2222 host", "if password == expected:", "$PWD is the folder",
])
def test_prose_and_commands_without_a_credential_are_kept(text):
    assert REDACT.scrub(text) == (text, [])


# -- personal data (redact_pii) ------------------------------------------------------------------------

PII = Redactor("redact", pii=True)


@pytest.mark.parametrize("text, kinds, kept", [
    ("card 4111 1111 1111 1111 ok", ["card"], "card [REDACTED:card] ok"),
    ("card 4111111111111111.", ["card"], "card [REDACTED:card]."),
    ("card 4111-1111-1111-1111 exp 12/27", ["card"], "card [REDACTED:card] exp 12/27"),
    ("iban DE89 3704 0044 0532 0130 00 thanks", ["iban"], "iban [REDACTED:iban] thanks"),
    ("iban GB82WEST12345698765432", ["iban"], "iban [REDACTED:iban]"),
    ("call (415) 555-0135 today", ["phone"], "call [REDACTED:phone] today"),
    ("call +46 70 123 45 67", ["phone"], "call [REDACTED:phone]"),
    ("mail ann@example.org", ["email"], "mail [REDACTED:email]"),
    ("on 2024-01-15 at 12:30:45 from 192.168.1.20, order #12345678", [], None),
    ("card 4111 1111 1111 1112 (fails Luhn), iban DE89 3704 0044 0532 0130 01", [], None),
])
def test_personal_data_by_check_not_by_shape(text, kinds, kept):
    out, found = PII.scrub(text)
    assert found == kinds and out == (kept if kept is not None else text)


def _luhn_number(body: str) -> str:
    return body + luhn.calc_check_digit(body)


_DATES = st.dates().map(lambda d: d.isoformat())
_ISO = st.datetimes(timezones=st.just(None)).map(lambda t: t.isoformat(timespec="seconds") + "Z")
_IPS = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t)))
_ORDERS = (st.integers(10_000, 99_999_999).map(lambda n: f"order #{n}")
           | st.tuples(st.sampled_from(["ORD", "INV", "PO"]), st.integers(2000, 2030), st.integers(0, 999_999))
           .map(lambda t: f"{t[0]}-{t[1]}-{t[2]:06d}"))
_CARDS = st.tuples(st.sampled_from("3456"), st.text("0123456789", min_size=11, max_size=17)).map(
    lambda t: _luhn_number(t[0] + t[1]))


@settings(max_examples=200, deadline=None)
@given(st.lists(_DATES | _ISO | _IPS | _ORDERS, min_size=1, max_size=5).map(", ".join))
def test_dates_ips_times_and_order_numbers_are_never_redacted(text):
    assert PII.scrub(f"on {text} done") == (f"on {text} done", [])


@settings(max_examples=200, deadline=None)
@given(_CARDS, st.sampled_from(["", " ", "-"]), st.sampled_from(["pay with {} now", "{}", "card: {}."]))
def test_valid_luhn_numbers_are_always_redacted(number, sep, frame):
    grouped = sep.join(number[i:i + 4] for i in range(0, len(number), 4)) if sep else number
    out, found = PII.scrub(frame.format(grouped))
    assert found == ["card"] and number[-6:] not in out.replace(" ", "").replace("-", "")


_PIECES = [w for row in DETECTORS for w in row.triggers] + ["İ", "K", "x", " ", "ſ", "\x00"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_PIECES) | st.text(max_size=3), max_size=5).map("".join), max_size=4))
def test_the_screen_flags_every_turn_holding_a_trigger_word(texts):
    """The literal screen over lower-cased text finds what the folded pattern (the column search) finds."""
    flagged = REDACT.candidates(texts)
    for i, text in enumerate(texts):
        if _TRIGGERS.search(text):
            assert _has_trigger(text) and i in flagged, (text, flagged)
