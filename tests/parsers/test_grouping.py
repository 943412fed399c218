"""Which files are parts of one conversation, and in which order, from their names alone (Grammar.group_of)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from parsers import registry

_STEM = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ABC-_#[]0123456789", min_size=1, max_size=30).filter(
    lambda s: s.strip() == s and not s.endswith("]"))


@given(st.lists(st.integers(2, 5000), unique=True, max_size=30))
def test_telegram_pages_are_one_chat_in_the_order_of_their_numbers(numbers):
    names = ["messages.html", *(f"messages{n}.html" for n in numbers)]
    claims = [registry.conversation_of(n) for n in sorted(names)]  # met in string order
    assert {c[:2] for c in claims} == {("telegram-html", "messages.html")}
    assert [c[2] for c in sorted(claims, key=lambda c: c[2])][1:] == sorted(numbers)


@given(_STEM, st.integers(2, 999))
def test_a_discordchatexporter_part_belongs_to_the_plain_name_of_its_channel(stem, number):
    assert registry.conversation_of(f"{stem} [part {number}].json") == ("discord", f"{stem}.json", number)
    assert registry.get("discord").group_of(f"{stem}.json") is None  # the first part: joined by its name


def test_slack_day_files_and_messenger_parts_are_keyed_by_their_folder():
    assert registry.conversation_of("2024-04-01.json") == ("slack", "", 0)
    assert registry.conversation_of("message_12.json") == ("messenger", "", 0)
    assert registry.conversation_of("conversations.json") is None
