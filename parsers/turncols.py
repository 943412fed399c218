"""Turn builders for the JSON grammars: a session's turns held for columns, or as records.

A JSON grammar that reads turns as columns (``Grammar.appends``) gives each session's ``turns`` one
of two builders with the same ``add`` (the fields of ``models.records.Turn``, in its order):

- ``TurnList``: the turn records (a list of ``Turn``), for the record route (small inputs,
  ``columnar = false``);
- ``TurnColumns``: one plain tuple per turn, no record (the cheapest append Python has);
  ``batch_frame`` turns the builders of a batch of sessions into one frame, transposed once
  (``BATCH_SCHEMA``, a ``session`` column numbering them), for the batched column assembly
  (normalizers/jsoncols.py).

The grammar picks one with ``turns_for(columns)`` and never looks at which it got: the same
``add`` calls give the same turns either way (``TurnColumns.records`` gives them back as records).
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
}
"""A batch of sessions' turns: ``time`` the wall time and ``offset`` its UTC offset in seconds (null
for a naive time: the source zone applies); ``model`` a JSON ``[provider, name, version]``;
``explicit`` whether the source names the model for this turn (``Turn.model_explicit``); ``extra``
the turn's extra fields as JSON text."""
_COLUMNS = tuple(k for k in BATCH_SCHEMA if k != "session")


class TurnList(list):
    """The turn records of one session (the record route), built by ``add``."""

    def add(self, speaker: str, role: str, content: str, time: datetime | None = None, time_raw: str | None = None,
            model: ModelRef | None = None, kind: str = "message", lines: tuple[int, int] | None = None,
            pointer: str | None = None, extra: dict[str, Any] | None = None, model_explicit: bool = True) -> None:
        self.append(Turn(speaker, role, content, time, time_raw, model, kind, lines, pointer, extra, model_explicit))

    def has_role(self, role: str) -> bool:
        return any(t.role == role for t in self)


class TurnColumns:
    """The turns of one session, held for the columns of a batch (see the module docstring): one
    tuple per turn in ``_COLUMNS`` order, no record, turned into columns once per batch. JSON turns
    only: a turn located by ``lines`` or with a ``base_text`` clears ``appended`` (the session then
    takes the record route)."""

    __slots__ = ("_odd", "appended", "rows")

    def __init__(self) -> None:
        self.rows: list[tuple] = []
        self.appended = True
        """False once a turn could not be held as columns (located by lines, or extra fields that are not
        JSON): the session then goes through records (``records`` gives them, extra fields as given)."""
        self._odd: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, speaker: str, role: str, content: str, time: datetime | None = None, time_raw: str | None = None,
            model: ModelRef | None = None, kind: str = "message", lines: tuple[int, int] | None = None,
            pointer: str | None = None, extra: dict[str, Any] | None = None, model_explicit: bool = True) -> None:
        if lines is not None:
            self.appended = False
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
            except TypeError:  # not JSON as it stands (a key or number orjson refuses): records keep it
                self.appended = False
                self._odd[len(self.rows)] = extra
        self.rows.append((speaker, role, kind, content, time, offset, time_raw,
                          None if model is None else _model_json(model), model_explicit, pointer, encoded))

    def append(self, turn: Turn) -> None:
        """A turn already built as a record (a malformed entry's notice)."""
        if turn.base_text is not None or turn.part is not None:
            self.appended = False
        self.add(turn.speaker, turn.role, turn.content, turn.time, turn.time_raw, turn.model, turn.kind, turn.lines,
                 turn.pointer, turn.extra, turn.model_explicit)

    def has_role(self, role: str) -> bool:
        return any(row[1] == role for row in self.rows)

    @property
    def pointers(self) -> list[str | None]:
        return [row[_POINTER] for row in self.rows]

    def records(self) -> TurnList:
        """The same turns as records (``TurnList``), as the grammar would have built them."""
        out = TurnList()
        for i, (speaker, role, kind, content, time, offset, raw, model, explicit, pointer, extra) in \
                enumerate(self.rows):
            if time is not None and offset is not None:
                time = time.replace(tzinfo=UTC if offset == 0 else timezone(timedelta(seconds=offset)))
            out.add(speaker, role, content, time, raw, ModelRef(*orjson.loads(model)) if model is not None else None,
                    kind, None, pointer, self._odd.get(i) if extra is None else orjson.loads(extra), explicit)
        return out


_POINTER = _COLUMNS.index("pointer")


@lru_cache(maxsize=1024)
def _model_json(model: ModelRef) -> str:
    return orjson.dumps((model.provider, model.name, model.version)).decode()


def turns_for(columns: bool) -> TurnList | TurnColumns:
    """A new session's turn builder: columns when the caller assembles them so, else records."""
    return TurnColumns() if columns else TurnList()


def batch_frame(builders: list[TurnColumns]) -> pl.DataFrame:
    """The turns of a batch of sessions as one frame (``BATCH_SCHEMA``), session ``i`` the ``i``-th builder."""
    session: list[int] = []
    rows: list[tuple] = []
    for i, builder in enumerate(builders):
        rows.extend(builder.rows)
        session.extend([i] * len(builder.rows))
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in _COLUMNS]
    # a Series per column: several times faster than the frame's constructor given a schema
    return pl.DataFrame([pl.Series("session", session, dtype=pl.Int64)]
                        + [pl.Series(k, v, dtype=BATCH_SCHEMA[k]) for k, v in zip(_COLUMNS, columns, strict=True)])
