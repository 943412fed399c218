"""Secret and PII redaction: every type, every policy, reported by type and place, never by value.

Every key here is FAKE and built at runtime ("sk-" + "a" * 40), so nothing that looks like a
real secret is stored in the repository.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flows.pipeline import reconstruct
from models.settings import Settings
from normalizers.secrets import _PII_TRIGGERS, _TRIGGERS, Redactor, may_trigger


def fake(kind: str) -> str:
    """A fake value of each type, assembled from pieces."""
    return {
        "openai_api_key": "sk-" + "a" * 40,
        "openai_project_key": "sk-" + "proj-" + "A1b2" * 8,
        "anthropic_api_key": "sk-" + "ant-" + "api03-" + "b" * 30,
        "aws_access_key_id": "AK" + "IA" + "Z" * 16,
        "aws_secret_access_key": "aws_secret_access_key=" + "c" * 40,
        "github_token": "gh" + "p_" + "d" * 36,
        "github_pat": "github" + "_pat_" + "e" * 30,
        "slack_token": "xo" + "xb-" + "1" * 12 + "-" + "f" * 10,
        "slack_webhook": "https://hooks.slack.com/" + "services/T000/B000/" + "g" * 12,
        "google_api_key": "AI" + "za" + "h" * 35,
        "jwt": "ey" + "J" + "i" * 10 + ".ey" + "J" + "j" * 10 + "." + "k" * 12,
        "private_key": "-----BEGIN " + "RSA PRIVATE KEY-----\n" + "m" * 40 + "\n-----END RSA PRIVATE KEY-----",
        "url_password": "postgres://admin:" + "hunter" + "2hunter" + "@db.example.org/app",
        "password_assignment": "pass" + "word = " + "n" * 12,
        "email": "alice" + "@" + "example.org",
        "phone": "+46 70 " + "123 45 67",
    }[kind]


# (fake value name, type reported, the part that must disappear)
SECRETS = [
    ("openai_api_key", "openai_api_key", "a" * 40),
    ("openai_project_key", "openai_api_key", "A1b2" * 8),
    ("anthropic_api_key", "anthropic_api_key", "b" * 30),
    ("aws_access_key_id", "aws_access_key_id", "Z" * 16),
    ("aws_secret_access_key", "aws_secret_access_key", "c" * 40),
    ("github_token", "github_token", "d" * 36),
    ("github_pat", "github_token", "e" * 30),
    ("slack_token", "slack_token", "f" * 10),
    ("slack_webhook", "slack_webhook", "g" * 12),
    ("google_api_key", "google_api_key", "h" * 35),
    ("jwt", "jwt", "k" * 12),
    ("private_key", "private_key", "m" * 40),
    ("url_password", "url_password", "2hunter"),
    ("password_assignment", "password_assignment", "n" * 12),
]


@pytest.mark.parametrize("name, kind, core", SECRETS)
def test_each_secret_type_is_redacted_with_a_typed_placeholder(name, kind, core):
    text = f"before {fake(name)} after"
    out, found = Redactor("redact", pii=False).scrub(text)
    assert found == [kind]
    assert f"[REDACTED:{kind}]" in out
    assert core not in out
    assert out.startswith("before ") and out.endswith(" after")


@pytest.mark.parametrize("name, kind, core", SECRETS)
def test_report_policy_counts_but_keeps_the_text(name, kind, core):
    text = f"x {fake(name)} y"
    assert Redactor("report", pii=False).scrub(text) == (text, [kind])


@pytest.mark.parametrize("name", [n for n, _, _ in SECRETS] + ["email", "phone"])
def test_off_policy_does_nothing(name):
    text = f"x {fake(name)} y"
    redactor = Redactor("off", pii=True)
    assert redactor.scrub(text) == (text, [])
    assert redactor.candidates([text]) == set()


@pytest.mark.parametrize("name", ["email", "phone"])
def test_pii_only_with_redact_pii(name):
    text = f"reach me at {fake(name)} today"
    assert Redactor("redact", pii=False).scrub(text) == (text, [])
    out, found = Redactor("redact", pii=True).scrub(text)
    assert found == [name] and out == f"reach me at [REDACTED:{name}] today"


def test_url_keeps_everything_but_the_password():
    out, _ = Redactor("redact", pii=False).scrub(fake("url_password"))
    assert out == "postgres://admin:[REDACTED:url_password]@db.example.org/app"


def test_several_findings_in_order_and_candidates_screen_turns():
    texts = ["nothing here", f"{fake('github_token')} and {fake('google_api_key')}", "plain", fake("jwt")]
    redactor = Redactor("redact", pii=False)
    assert redactor.candidates(texts) >= {1, 3}
    assert 0 not in redactor.candidates(texts)
    assert redactor.scrub(texts[1])[1] == ["github_token", "google_api_key"]


def _session(tmp_path: Path, turns: list[str], **settings) -> dict:
    src = tmp_path / "in"
    src.mkdir(parents=True)
    lines = []
    for i, content in enumerate(turns):
        lines.append(f"{'User' if i % 2 == 0 else 'Assistant'}: {content}")
    (src / "chat.txt").write_text("\n".join(lines) + "\n")
    summary = reconstruct([src], tmp_path / "out", Settings(**settings))
    assert summary.counts.sessions_ok + summary.counts.sessions_partial == 1, summary
    [doc] = (tmp_path / "out" / "sessions").rglob("*.json")
    return orjson.loads(doc.read_bytes())


def test_document_counts_by_type_and_lists_type_and_place(tmp_path):
    doc = _session(tmp_path, [f"my key is {fake('openai_api_key')}", "noted",
                              f"and {fake('aws_access_key_id')} plus {fake('openai_api_key')}", "ok"])
    perf = doc["artifacts"]["ai_protocol_performance"]["redactions"]
    assert perf == {"policy": "redact", "total": 3, "byType": {"openai_api_key": 2, "aws_access_key_id": 1}}
    listed = doc["artifacts"]["ByggLogg"]["redactions"]
    assert listed == [{"turn": 1, "type": "openai_api_key", "field": "content"},
                      {"turn": 3, "type": "aws_access_key_id", "field": "content"},
                      {"turn": 3, "type": "openai_api_key", "field": "content"}]
    raw = orjson.dumps(doc).decode()
    assert "a" * 40 not in raw and "Z" * 16 not in raw


def test_document_report_policy_keeps_text_but_counts(tmp_path):
    doc = _session(tmp_path, [f"token {fake('slack_token')}", "ok"], secrets_policy="report")
    assert doc["artifacts"]["Chatthistorik"]["interactions"][0]["content"].endswith("f" * 10)
    assert doc["artifacts"]["ai_protocol_performance"]["redactions"]["byType"] == {"slack_token": 1}


def test_document_pii_and_off(tmp_path):
    doc = _session(tmp_path, [f"mail {fake('email')} or call {fake('phone')}", "ok"], redact_pii=True)
    assert doc["artifacts"]["Chatthistorik"]["interactions"][0]["content"] == \
        "mail [REDACTED:email] or call [REDACTED:phone]"
    off = _session(tmp_path / "off", [f"key {fake('openai_api_key')}", "ok"], secrets_policy="off")
    assert off["artifacts"]["ai_protocol_performance"]["redactions"]["total"] == 0
    assert off["artifacts"]["ByggLogg"]["redactions"] == []


_FRAGMENTS = ["sk-", "SK-", "AKIA", "asia", "AWS_SECRET", "aws-Secret", "awsSECRET", "ghp_", "GHO_", "github_pat_",
              "xoxb-", "hooks.slack", "AIza", "eyJ", "PRIVATE KEY", "://", "PassW", "pWd", "İ", "K", "x", " "]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS) | st.text(max_size=3), max_size=6).map("".join))
def test_the_trigger_pre_check_never_misses_a_trigger(text):
    if _TRIGGERS.search(text):
        assert may_trigger(text)
    assert may_trigger(text, pii=True) == bool(_TRIGGERS.search(text) or _PII_TRIGGERS.search(text))
