"""The gate collects every failure with a reason code and never passes a broken document."""

from __future__ import annotations

import copy

import orjson
import pytest

from models.errors import Reason
from validators import gate


def _doc(n=2):
    inter = [{
        "ordinal": i + 1, "role": "user", "kind": "message", "speakerName": "Alice",
        "model": {"provider": "unknown", "name": "unknown", "version": "unknown"}, "modelSource": "none",
        "speaker": "Alice (unknown:unknown@unknown)", "date": "2025-08-24T10:00:00Z", "content": "hi",
        "source": {"lines": [i + 1, i + 1]},
    } for i in range(n)]
    return {
        "sessionId": "s1", "createdAt": "2025-08-24T10:00:00Z",
        "artifacts": {
            "ByggLogg": {
                "source": {"path": "a.txt", "sha256": "0" * 64, "sizeBytes": 1, "encoding": "utf-8",
                           "lines": [1, 2], "pointer": None},
                "grammar": {"id": "transcript", "version": "1", "detectionConfidence": 0.9, "forced": False,
                            "candidates": {}},
                "pipelineVersion": "0", "configFingerprint": "x", "sessionIdSource": "s",
                "createdAtSource": "s", "assumptions": [], "warnings": [], "steps": [], "redactions": [],
                "sessionRecord": {},
            },
            "Chatthistorik": {"title": None, "interactions": inter},
            "ai_protocol_performance": {
                "sourceTurnCount": n, "interactionCount": n, "coverageRatio": 1.0, "detectionConfidence": 0.9,
                "gate": {}, "unknownFields": {}, "redactions": {}, "cleanJsonReplies": {},
            },
        },
    }


def _check(doc, counted=2):
    return gate.check(doc, orjson.dumps(doc), counted)


def test_valid_document_passes():
    result = _check(_doc())
    assert result.passed, result.failures
    assert result.summary() == dict.fromkeys(gate.CHECKS, "pass")


def test_collects_every_failure_not_just_the_first():
    doc = _doc()
    inter = doc["artifacts"]["Chatthistorik"]["interactions"]
    inter[0]["speaker"] = "Bob (work)"
    inter[1]["speaker"] = "Alice (x:y@z)"
    inter[1]["date"] = "2025-02-30T10:00:00Z"
    doc["createdAt"] = "2025-08-24 10:00"
    result = _check(doc, counted=3)
    assert set(result.reasons) >= {Reason.SPEAKER_FORMAT, Reason.SPEAKER_MIRROR, Reason.TIMESTAMP_FORMAT,
                                   Reason.TURN_COUNT}
    assert not result.passed


def test_partial_coverage_needs_a_reason():
    doc = _doc()
    doc["artifacts"]["Chatthistorik"]["coverage"] = "partial"
    assert Reason.TURN_COUNT in _check(doc, counted=3).reasons
    doc["artifacts"]["Chatthistorik"]["coverageReason"] = "one line could not be read"
    result = _check(doc, counted=3)
    assert result.passed and result.partial


@pytest.mark.parametrize("encoded", [b"\xef\xbb\xbf{}", b'{"a":1}\r\n', b"[1]", b'{"a":1} trailing', b"{bad"])
def test_json_syntax(encoded):
    result = gate.check(_doc(), encoded, 2)
    assert Reason.JSON_SYNTAX in result.reasons


def test_timestamp_keys_anywhere_but_raw_ones_are_exempt():
    doc = _doc()
    doc["artifacts"]["Chatthistorik"]["interactions"][0]["sourceFields"] = {"editedAt": "yesterday",
                                                                            "editedRaw": "yesterday"}
    result = _check(doc)
    paths = [f.path for f in result.failures if f.reason == Reason.TIMESTAMP_FORMAT]
    assert paths == ["$.artifacts.Chatthistorik.interactions[0].sourceFields.editedAt"]


def test_schema_is_checked():
    doc = copy.deepcopy(_doc())
    doc["artifacts"]["Chatthistorik"]["interactions"][0]["role"] = "robot"
    assert Reason.SCHEMA in _check(doc).reasons


def _pieces(doc):
    from normalizers.encode import encode_interaction, head_and_tail, join_lines

    interactions = doc["artifacts"]["Chatthistorik"]["interactions"]
    head, tail = head_and_tail(doc, len(interactions))
    return head, join_lines(map(encode_interaction, interactions), True), tail


def test_byte_check_passes_the_encoded_pieces():
    head, body, tail = _pieces(_doc())
    check = gate.ByteCheck()
    check.envelope(head, tail)
    for piece in (head, body, tail):
        check.feed(piece)
    assert check.failures() == []


@pytest.mark.parametrize("damage", ["cr", "utf8", "bom", "unclosed", "envelope"])
def test_byte_check_finds_what_can_go_wrong(damage):
    head, body, tail = _pieces(_doc())
    if damage == "cr":
        body = body.replace(b'"hi"', b'"h\ri"')
    elif damage == "utf8":
        body = body.replace(b'"hi"', b'"h\xffi"')
    elif damage == "bom":
        head = b"\xef\xbb\xbf" + head
    elif damage == "unclosed":
        tail = tail[:-2] + b"\n"
    check = gate.ByteCheck()
    check.envelope(head if damage != "envelope" else head[:-3], tail)
    for piece in (head, body, tail):
        check.feed(piece)
    assert [f.reason for f in check.failures()] and all(f.reason == Reason.JSON_SYNTAX for f in check.failures())
