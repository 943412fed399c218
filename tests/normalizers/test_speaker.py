"""normalize_speaker behaves exactly like the normative reference; display fields always fit the format."""

from __future__ import annotations

import copy

import regex
from hypothesis import given
from hypothesis import strategies as st

from models.document import SPEAKER_PATTERN
from normalizers.speaker import normalize_speaker, safe_fields
from tests.reference_normalize_speaker import normalize_speaker as reference

SPEAKER = regex.compile(SPEAKER_PATTERN)
text = st.text(max_size=12) | st.sampled_from(["", " ", "unknown", "OpenAI", "gpt-4o", "2024-08-06", " x "])
maybe = st.none() | text
values = maybe | st.integers() | st.booleans()
model = st.none() | st.fixed_dictionaries({}, optional={"provider": values, "name": values, "version": values})
entries = st.fixed_dictionaries({}, optional={"speakerName": values, "model": model | st.just({}), "extra": text})
identity = st.none() | st.fixed_dictionaries({"provider": text, "name": text, "version": text})


def _outcome(fn, entry, ident, explicit):
    try:
        return ("ok", fn(entry, ident, explicit))
    except Exception as exc:  # the reference raises on non-string fields; so must we, identically
        return ("raised", type(exc), str(exc))


@given(entries, identity, st.booleans())
def test_same_as_reference_on_every_input(entry, ident, explicit):
    ours_entry, ref_entry = copy.deepcopy(entry), copy.deepcopy(entry)
    assert _outcome(normalize_speaker, ours_entry, ident, explicit) == _outcome(reference, ref_entry, ident, explicit)
    assert ours_entry == ref_entry


def test_no_self_report_rule():
    ident = {"provider": "OpenAI", "name": "GPT-4o", "version": "2024-08-06"}
    entry = {"speakerName": "Assistant", "model": {"provider": "openai", "name": "gpt-4o", "version": "2024-08-06"}}
    assert normalize_speaker(dict(entry), ident, False)["speaker"] == "Assistant (unknown:unknown@unknown)"
    assert normalize_speaker(dict(entry), ident, True)["speaker"] == "Assistant (openai:gpt-4o@2024-08-06)"


def test_unknown_fallback():
    assert normalize_speaker({})["speaker"] == "unknown (unknown:unknown@unknown)"
    assert normalize_speaker({"speakerName": "  ", "model": {"name": ""}})["model"] == {
        "provider": "unknown", "name": "unknown", "version": "unknown"}


@given(text, maybe, maybe, maybe)
def test_safe_fields_always_fit_the_speaker_regex(name, provider, model_name, version):
    s_name, s_provider, s_model, s_version, _ = safe_fields(name, provider, model_name, version)
    entry = normalize_speaker({"speakerName": s_name, "model": {"provider": s_provider, "name": s_model,
                                                              "version": s_version}})
    assert SPEAKER.fullmatch(entry["speaker"]), entry["speaker"]


def test_documented_mappings():
    assert safe_fields("Bob (work)", None, None, None)[0] == "Bob [work]"
    assert safe_fields("A", "ollama", "llama3:8b", None)[1:4] == ("ollama", "llama3:8b", None)
    assert safe_fields("A", "anthropic", "claude-3@20240229", None)[1:4] == ("anthropic", "claude-3", "20240229")
    assert safe_fields("A", "x:y", "m", "v(1)")[1:4] == ("x-y", "m", "v[1]")
