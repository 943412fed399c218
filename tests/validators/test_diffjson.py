"""diff_json_v1: make/apply round trip on any text, the clean-JSON contract, schema and rules."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.errors import Reason, ReconstructError
from validators.diffjson import DiffError, apply, canonical, dumps, make_diff, sha256_text, validate

# Lines drawn from a small pool so the texts share lines and difflib finds equal runs to keep.
_line = st.sampled_from(["a\n", "b\n", "c\r\n", "\n", "ä€😀\n", "x", "\r", "long line of text\n"])
_texts = st.one_of(st.text(), st.lists(_line, max_size=30).map("".join))


@settings(max_examples=400, deadline=None)
@given(_texts, _texts)
def test_apply_of_make_diff_gives_the_result(a, b):
    diff = make_diff(a, b, "sessions/x.json")
    assert apply(diff, a) == b
    # what the CLI prints validates against the base and applies the same way
    assert apply(validate(dumps(diff), a), a) == b
    ops = diff["ops"]
    assert [o["at"] for o in ops] == sorted({o["at"] for o in ops})
    for prev, nxt in itertools.pairwise(ops):
        assert prev["at"] + prev.get("del", 0) < nxt["at"]  # merged when touching


def test_canonical_base_bom_and_line_ends():
    assert canonical("\ufeffa\r\nb\rc") == "a\nb\nc"
    diff = make_diff("\ufeffx\r\ny\r\n", "x\ny\nz\n")
    assert diff["target"]["base_checksum_sha256"] == sha256_text("x\ny\n")
    assert diff["ops"] == [{"op": "insert", "at": 4, "ins": "z\n"}]
    assert apply(diff, "x\r\ny\r\n") == "x\ny\nz\n"


def test_ops_kinds_and_offsets_in_code_points():
    base = "één\ntwo\nthree\n"
    assert make_diff(base, "één\nthree\n")["ops"] == [{"op": "delete", "at": 4, "del": 4}]
    assert make_diff(base, "één\nTWO\nthree\n")["ops"] == [{"op": "replace", "at": 4, "del": 4, "ins": "TWO\n"}]
    same = make_diff(base, base)
    assert same["ops"] == [{"op": "replace", "at": 0, "del": 0, "ins": ""}]
    assert apply(same, base) == base


def _good() -> dict:
    return make_diff("hello\nworld\n", "hello\nthere\n", "README.md")


@pytest.mark.parametrize("raw, why", [
    ("```json\n{}\n```", "code fences"),
    ("Here is the diff: {}", "before"),
    ("{} trailing", "after"),
    ('{"protocol_id": "diff_json_v1",}', "clean JSON"),
    ('{"a": 1} {"b": 2}', "clean JSON"),
    ('{"a": 1, "a": 2}', "duplicate"),
    ('{"a": NaN}', "clean JSON"),
    ("[1, 2]", "start with"),
    ("", "start with"),
])
def test_unclean_json_is_refused(raw, why):
    with pytest.raises(DiffError, match=why) as err:
        validate(raw)
    assert err.value.reason is Reason.JSON_SYNTAX
    assert isinstance(err.value, ReconstructError)


def test_surrounding_whitespace_is_not_text():
    assert validate("\n  " + dumps(_good()) + "\n")["protocol_id"] == "diff_json_v1"


def _mutations():
    def with_(**changes):
        def f(d):
            for path, value in changes.items():
                node = d
                *head, last = path.split(".")
                for k in head:
                    node = node[int(k)] if k.isdigit() else node[k]
                if value is KeyError:
                    del node[int(last) if last.isdigit() else last]
                elif last.isdigit():
                    node[int(last)] = value
                else:
                    node[last] = value
            return d
        return f

    return [
        (with_(protocol_id="diff_json_v2"), "protocol_id"),
        (with_(extra=1), "unknown properties"),
        (with_(ops=KeyError), "'ops' is required"),
        (with_(target=KeyError), "'target' is required"),
        (with_(**{"target.base_checksum_sha256": KeyError}), "base_checksum_sha256"),
        (with_(**{"target.base_checksum_sha256": "abc"}), "64 hex"),
        (with_(**{"target.git_sha1": "z" * 40}), "40 hex"),
        (with_(**{"target.path": ""}), "non-empty"),
        (with_(**{"target.other": 1}), "unknown properties"),
        (with_(result_sha256="0" * 63), "64 hex"),
        (with_(meta=[]), "meta"),
        (with_(ops=[]), "non-empty array"),
        (with_(ops=[{"op": "move", "at": 0}]), "insert, delete or replace"),
        (with_(ops=[{"op": "insert", "at": 0, "del": 1, "ins": "x"}]), "unknown"),
        (with_(ops=[{"op": "delete", "at": 0}]), "missing"),
        (with_(ops=[{"op": "delete", "at": 0, "del": 0}]), "del"),
        (with_(ops=[{"op": "insert", "at": -1, "ins": "x"}]), "at"),
        (with_(ops=[{"op": "insert", "at": True, "ins": "x"}]), "at"),
        (with_(ops=[{"op": "insert", "at": 1.0, "ins": "x"}]), "at"),
        (with_(ops=[{"op": "insert", "at": 0, "ins": 5}]), "ins"),
        (with_(ops=[{"op": "insert", "at": 3, "ins": "x"}, {"op": "insert", "at": 1, "ins": "y"}]), "not sorted"),
        (with_(ops=[{"op": "insert", "at": 1, "ins": "x"}, {"op": "insert", "at": 1, "ins": "y"}]), "not sorted"),
        (with_(ops=[{"op": "delete", "at": 0, "del": 3}, {"op": "insert", "at": 2, "ins": "y"}]), "overlaps"),
    ]


@pytest.mark.parametrize("mutate, why", _mutations())
def test_schema_and_rule_violations_are_refused(mutate, why):
    diff = mutate(_good())
    with pytest.raises(DiffError, match=why) as err:
        validate(json.dumps(diff))
    assert err.value.reason is Reason.SCHEMA


def test_range_beyond_the_base_is_refused():
    diff = _good()
    diff["ops"] = [{"op": "delete", "at": 10, "del": 5}]
    validate(json.dumps(diff))  # no base given: nothing to measure against
    with pytest.raises(DiffError, match="beyond the base"):
        validate(json.dumps(diff), "hello\nworld\n")
    with pytest.raises(DiffError, match="beyond the base"):
        diff.pop("result_sha256")
        apply(diff, "hello\nworld\n")


def test_apply_refuses_checksum_mismatches():
    diff = _good()
    with pytest.raises(DiffError, match="base checksum mismatch") as err:
        apply(diff, "hello\nWORLD\n")
    assert err.value.reason is Reason.DIFF_CHECKSUM
    diff["result_sha256"] = "0" * 64
    with pytest.raises(DiffError, match="result checksum mismatch"):
        apply(diff, "hello\nworld\n")
    diff.pop("result_sha256")  # optional: without it the result is not checked
    assert apply(diff, "hello\nworld\n") == "hello\nthere\n"


def test_seed_example_shape_validates():
    base = "Hi!!!, world"
    raw = ('{"protocol_id":"diff_json_v1","target":{"path":"README.md","base_checksum_sha256":"'
           + sha256_text(base) + '"},"ops":[{"op":"replace","at":0,"del":5,"ins":"Hello"}]}')
    assert apply(validate(raw, base), base) == "Hello, world"
