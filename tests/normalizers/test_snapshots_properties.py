"""Properties of the snapshot merge (normalizers/snapshots.py) over generated re-exports of one chat:
order-independent, idempotent, monotone, and the merge of one snapshot is its document."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from normalizers.encode import encode_document
from normalizers.snapshots import merge, snapshot_of
from tests.normalizers.test_snapshots import SETTINGS, documents, merged_ok

AUTHORS = ("Ann Lee", "Bo Berg", "Cy Dunn")
START = datetime(2024, 3, 1, 9, 0, 0)


@st.composite
def chats(draw, unique: bool):
    """A chat (author, time, text) and up to three exports of it: each a window of the chat with some
    messages deleted and some edited. ``unique``: every text differs and messages are minutes apart,
    so what is one message is unambiguous (the same author at the same minute with another text, the
    first text gone, is an edit to the merge)."""
    n = draw(st.integers(1, 14))
    words = st.sampled_from(["ok", "hi", "see you", "lunch?", "yes"])
    messages, at = [], START
    for i in range(n):
        at += timedelta(minutes=draw(st.integers(2, 4) if unique else st.integers(0, 3)))
        text = f"message {i}" if unique else draw(words)
        messages.append((draw(st.sampled_from(AUTHORS)), at, text))
    exports = []
    for _ in range(draw(st.integers(1, 3))):
        lo = draw(st.integers(0, n - 1))
        hi = draw(st.integers(lo + 1, n))
        kept = [i for i in range(lo, hi) if not draw(st.booleans()) or draw(st.booleans())]
        edited = {i for i in kept if draw(st.integers(0, 5)) == 0}
        exports.append([(i, messages[i][2] + " (edited)" if i in edited else messages[i][2]) for i in kept])
    return messages, [e for e in exports if e]


def _snapshots(messages, exports):
    out = []
    for export in exports:
        lines = [f"[{messages[i][1]:%d/%m/%Y, %H:%M:%S}] {messages[i][0]}: {text}" for i, text in export]
        out.append(snapshot_of(documents("\n".join(lines) + "\n", "WhatsApp Chat with Test.txt")[0]))
    return out


SETTINGS_H = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS_H
@given(chats(unique=False))
def test_merge_is_order_independent_and_idempotent(chat):
    snaps = _snapshots(*chat)
    if not snaps:
        return
    first = encode_document(merged_ok(snaps).document)
    for perm in itertools.permutations(snaps):
        assert encode_document(merge(list(perm), SETTINGS).document) == first
    assert encode_document(merge([*snaps, snaps[0]], SETTINGS).document) == first
    again = merge([snaps[-1], *snaps, snaps[-1]], SETTINGS)
    assert encode_document(again.document) == first
    assert again.reconciliation.equals(merge(snaps, SETTINGS).reconciliation)


@SETTINGS_H
@given(chats(unique=True))
def test_merge_is_monotone(chat):
    """No message of any snapshot is lost, and each distinct message is there once."""
    messages, exports = chat
    snaps = _snapshots(messages, exports)
    if not snaps:
        return
    out = merged_ok(snaps)  # every snapshot's interactions are each in exactly one merged interaction
    distinct = {i for export in exports for i, _ in export}
    assert len(out.document["artifacts"]["Chatthistorik"]["interactions"]) == len(distinct)
    edited = {i for export in exports for i, text in export if text.endswith("(edited)")}
    histories = [i for i in out.document["artifacts"]["Chatthistorik"]["interactions"] if "editHistory" in i]
    assert len(histories) <= len(edited)


@SETTINGS_H
@given(chats(unique=False))
def test_merge_of_one_snapshot_is_its_document(chat):
    messages, exports = chat
    for export in exports[:1]:
        lines = [f"[{messages[i][1]:%d/%m/%Y, %H:%M:%S}] {messages[i][0]}: {text}" for i, text in export]
        doc = documents("\n".join(lines) + "\n", "WhatsApp Chat with Test.txt")[0]
        assert encode_document(merged_ok([snapshot_of(doc)]).document) == doc
