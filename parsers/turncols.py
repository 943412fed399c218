"""The turn builder: a session's turns held as rows for the columns of a batch.

``TurnColumns`` holds one plain tuple per turn (the cheapest append Python has), with the fields of
``models.records.Turn`` (``add``, in its order); ``batch_frame`` turns the builders of a batch of
sessions into one frame, transposed once (``BATCH_SCHEMA``, a ``session`` column numbering them), for
the batch's assembly (normalizers/table.py). ChatGPT and Claude append their turns to it as they
read them; the other grammars' turn records are held in one once counted and accounted
(``TurnColumns.of``). ``records`` gives the turns back as records (the oracle in tests/ reads them so).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from functools import lru_cache
from typing import Any

import orjson
import polars as pl

from models.records import ModelRef, Turn

BATCH_SCHEMA = {
    "session": pl.Int64, "speaker": pl.Utf8, "role": pl.Utf8, "kind": pl.Utf8, "content": pl.Utf8,
    "time": pl.Datetime("us"), "offset": pl.Int64, "time_raw": pl.Utf8, "model": pl.Utf8,
    "explicit": pl.Boolean, "pointer": pl.Utf8, "extra": pl.Utf8,
    "line_start": pl.Int64, "line_end": pl.Int64, "part": pl.Utf8, "base": pl.Utf8,
}
"""A batch of sessions' turns: ``time`` the wall time and ``offset`` its UTC offset in seconds (null
for a naive time: the source zone applies); ``model`` a JSON ``[provider, name, version]``;
``explicit`` whether the source names the model for this turn (``Turn.model_explicit``); ``extra``
the turn's extra fields as JSON text; ``line_start`` and ``line_end`` the turn's line span in a text
source (``Turn.lines``), ``part`` the file of a conversation over several files it counts in, and
``base`` a file edit's text before the edit (``Turn.base_text``)."""
_COLUMNS = tuple(k for k in BATCH_SCHEMA if k != "session")


class TurnColumns:
    """The turns of one session, held for the columns of a batch (see the module docstring): one
    tuple per turn in ``_COLUMNS`` order, no record, turned into columns once per batch."""

    __slots__ = ("_odd", "appended", "rows", "why")

    def __init__(self) -> None:
        self.rows: list[tuple] = []
        self.appended = True
        """False once a turn's extra fields are not JSON as they stand (a key or number orjson refuses):
        the session's document cannot be encoded (``records`` gives the fields as given)."""
        self._odd: dict[int, Any] = {}
        self.why = ""
        """Why the first such turn's fields are not JSON, naming the turn."""

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        """The turns as records (``records``), for readers that walk a session's turns."""
        return iter(self.records())

    def __getitem__(self, index):
        return self.records()[index]

    def __eq__(self, other: object) -> bool:
        """The same turns: another builder's, or a list of records."""
        if isinstance(other, TurnColumns):
            return self.rows == other.rows and self._odd == other._odd
        if isinstance(other, list):
            return self.records() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable

    def add(self, speaker: str, role: str, content: str, time: datetime | None = None, time_raw: str | None = None,
            model: ModelRef | None = None, kind: str = "message", lines: tuple[int, int] | None = None,
            pointer: str | None = None, extra: dict[str, Any] | None = None, model_explicit: bool = True,
            base_text: str | None = None, part: str | None = None) -> None:
        offset = None
        if time is not None and time.tzinfo is not None:
            if time.tzinfo is UTC:  # the common case: epochs and ``Z`` stamps
                offset, time = 0, time.replace(tzinfo=None)
            else:
                delta = time.utcoffset()
                offset, time = (int(delta.total_seconds()) if delta is not None else None), time.replace(tzinfo=None)
        encoded = None
        if extra:
            try:
                encoded = orjson.dumps(extra).decode()
            except TypeError as exc:  # not JSON as it stands (a key or number orjson refuses): kept as given
                if self.appended:
                    self.why = f"turn {len(self.rows) + 1}: {exc}"
                self.appended = False
                self._odd[len(self.rows)] = extra
        start, end = lines if lines else (None, None)
        self.rows.append((speaker, role, kind, content, time, offset, time_raw,
                          None if model is None else _model_json(model), model_explicit, pointer, encoded,
                          start, end, part, base_text))

    def append(self, turn: Turn) -> None:
        """A turn already built as a record."""
        self.add(turn.speaker, turn.role, turn.content, turn.time, turn.time_raw, turn.model, turn.kind, turn.lines,
                 turn.pointer, turn.extra, turn.model_explicit, turn.base_text, turn.part)

    @classmethod
    def of(cls, turns) -> TurnColumns:
        """A session's turns given as records (``Turn``), held as columns; a builder is kept as it is."""
        if isinstance(turns, TurnColumns):
            return turns
        out = cls()
        for turn in turns:
            out.append(turn)
        return out

    def has_role(self, role: str) -> bool:
        return any(row[1] == role for row in self.rows)

    @property
    def pointers(self) -> list[str | None]:
        return [row[_POINTER] for row in self.rows]

    def records(self) -> list[Turn]:
        """The same turns as records, as the grammar would have built them."""
        out: list[Turn] = []
        for i, (speaker, role, kind, content, time, offset, raw, model, explicit, pointer, extra, start, end, part,
                base) in enumerate(self.rows):
            if time is not None and offset is not None:
                time = time.replace(tzinfo=UTC if offset == 0 else timezone(timedelta(seconds=offset)))
            out.append(Turn(speaker, role, content, time, raw, ModelRef(*orjson.loads(model)) if model is not None
                            else None, kind, None if start is None else (start, end), pointer,
                            self._odd.get(i) if extra is None else orjson.loads(extra), explicit, base, part))
        return out


_POINTER = _COLUMNS.index("pointer")


@lru_cache(maxsize=1024)
def _model_json(model: ModelRef) -> str:
    return orjson.dumps((model.provider, model.name, model.version)).decode()


def batch_frame(builders: list[TurnColumns | pl.DataFrame]) -> pl.DataFrame:
    """The turns of a batch of sessions as one frame (``BATCH_SCHEMA``), session ``i`` the ``i``-th builder:
    a ``TurnColumns``, or the turn frame of a session a line grammar read as a frame (``frame_turns``).
    Each run of consecutive frames is one concatenation and one ``frame_turns``, not one per session."""
    pieces: list[pl.DataFrame] = []
    session: list[int] = []
    rows: list[tuple] = []
    frames: list[tuple[int, pl.DataFrame]] = []
    for i, builder in enumerate(builders):
        if isinstance(builder, pl.DataFrame):
            if rows:
                pieces.append(_rows_frame(session, rows))
                session, rows = [], []
            frames.append((i, builder))
            continue
        if frames:
            pieces.append(_frames_turns(frames))
            frames = []
        rows.extend(builder.rows)
        session.extend([i] * len(builder.rows))
    if frames:
        pieces.append(_frames_turns(frames))
    pieces.append(_rows_frame(session, rows))
    pieces = [p for p in pieces if p.height] or pieces[-1:]
    return pieces[0] if len(pieces) == 1 else pl.concat(pieces, how="vertical")


def _frames_turns(frames: list[tuple[int, pl.DataFrame]]) -> pl.DataFrame:
    """``frame_turns`` of consecutive sessions' turn frames, as one frame."""
    if len(frames) == 1:
        return frame_turns(frames[0][1], frames[0][0])
    joined = pl.concat([f for _, f in frames], how="diagonal_relaxed")
    at = pl.Series([i for i, _ in frames], dtype=pl.Int64).repeat_by(pl.Series([f.height for _, f in frames]))
    return frame_turns(joined, at.explode().drop_nulls())


def _rows_frame(session: list[int], rows: list[tuple]) -> pl.DataFrame:
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in _COLUMNS]
    # a Series per column: several times faster than the frame's constructor given a schema
    return pl.DataFrame([pl.Series("session", session, dtype=pl.Int64)]
                        + [pl.Series(k, v, dtype=BATCH_SCHEMA[k]) for k, v in zip(_COLUMNS, columns, strict=True)])


def frame_turns(frame: pl.DataFrame, session: int | pl.Series) -> pl.DataFrame:
    """A line grammar's turn frame (``parsers.columns.TURN_SCHEMA``, with its optional ``model`` and
    ``offset`` columns) in the batch's columns: every model it names is the turn's own, no pointer."""
    given = set(frame.columns)

    def column(name: str) -> pl.Expr:
        return pl.col(name) if name in given else pl.lit(None)

    at = pl.lit(session) if isinstance(session, int) else session  # one session, or each row's
    fixed = {"session": at, "explicit": pl.lit(True), "pointer": pl.lit(None), "part": pl.lit(None),
             "base": pl.lit(None), "offset": column("offset"), "model": column("model")}
    return frame.select((fixed[k] if k in fixed else pl.col(k)).cast(t).alias(k) for k, t in BATCH_SCHEMA.items())
