"""The frame sessions of a batch are accounted when the batch is judged, all in one call
(validators/frames.py), with the figures and documents of one input processed alone; a failure of
that accounting quarantines them with the failure named."""

from __future__ import annotations

import orjson

from flows.core import batches
from flows.core.process import Batch, process_bytes, settled
from models.errors import Reason
from models.settings import Settings
from models.status import SessionStatus
from normalizers.assemble import RunContext
from tests.helpers import GOLDEN

COLUMNS = Settings()
INPUTS = sorted((GOLDEN / "whatsapp").glob("*.txt")) + [p for p in sorted((GOLDEN / "irc").iterdir()) if p.is_file()
                                                           and not p.name.endswith(".expected.json")]


def _figures(outcome) -> list:
    return [(s.status, s.unaccounted, s.declared, s.encoded) for s in outcome.sessions]


def test_the_frame_sessions_of_a_batch_are_accounted_in_one_call_when_it_is_judged(monkeypatch):
    calls = []
    account_frames = batches.account_frames

    def counting(items):
        calls.append(len(items))
        return account_frames(items)

    monkeypatch.setattr(batches, "account_frames", counting)
    ctx = RunContext.from_settings(COLUMNS)
    batch = Batch(ctx)
    opened = [process_bytes(p.read_bytes(), p.name, ctx, batch=batch) for p in INPUTS]
    assert not batch.pending and batch.unread  # each waits to be read in its grammar's table of lines
    batch.flush()
    outcomes = [settled(batch, o) for o in opened]
    assert calls and len(calls) < len(INPUTS) / 2  # a flush every BATCH_TURNS turns, not a call per session
    assert sum(calls) == sum(len(o.sessions) for o in outcomes) >= len(INPUTS)
    alone = [process_bytes(p.read_bytes(), p.name, RunContext.from_settings(COLUMNS)) for p in INPUTS]
    assert [_figures(o) for o in outcomes] == [_figures(o) for o in alone]
    doc = orjson.loads(outcomes[0].sessions[0].encoded)
    assert doc["artifacts"]["ai_protocol_performance"]["sourceAccounting"]["checked"] > 0


def test_a_failed_accounting_quarantines_the_frame_sessions_with_the_failure(monkeypatch):
    def failing(items):
        raise RuntimeError("no prefix sums today")

    monkeypatch.setattr(batches, "account_frames", failing)
    path = GOLDEN / "whatsapp" / "chat_family.txt"
    outcome = process_bytes(path.read_bytes(), path.name, RunContext.from_settings(COLUMNS))
    assert outcome.sessions
    for session in outcome.sessions:
        assert session.status == SessionStatus.QUARANTINED and session.reasons == [Reason.INTERNAL.value]
        assert "accounting of the batch's frame sessions failed" in session.detail
        assert "no prefix sums today" in session.detail and session.encoded is None


def test_an_input_read_as_records_is_accounted_at_once(monkeypatch):
    """A grammar that builds turn records (Markdown) has its sessions accounted as they are taken, before the
    batch is judged; only frame sessions wait for the batch's accounting."""
    from flows.core import process

    judged, real = [], process.judge_batch
    monkeypatch.setattr(process, "judge_batch",
                        lambda pending, *a, **k: judged.extend(pending) or real(pending, *a, **k))
    path = GOLDEN / "markdown" / "bold-labels.md"
    batch = Batch(RunContext.from_settings(Settings()))
    outcome = process_bytes(path.read_bytes(), path.name, batch.ctx, batch=batch)
    settled(batch, outcome)
    assert outcome.grammar == "markdown" and judged
    assert all(p.accounting is not None and p.deferred is None and p.parsed.frame is None for _, p, _ in judged)
