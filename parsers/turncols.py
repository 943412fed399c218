"""Turn builders for the JSON grammars: a session's turns appended column by column, or as records.

A JSON grammar that reads turns as columns (``Grammar.appends``) gives each session's ``turns`` one
of two builders with the same ``add`` (the fields of ``models.records.Turn``, in its order):

- ``TurnList``: the turn records (a list of ``Turn``), for the record route (small inputs,
  ``columnar = false``);
- ``TurnColumns``: one Python list per column, no record per turn; ``batch_frame`` joins the
  builders of a batch of sessions into one frame (``BATCH_SCHEMA``, a ``session`` column numbering
  them) for the batched column assembly (normalizers/jsoncols.py).

The grammar picks one with ``turns_for(columns)`` and never looks at which it got: the same
``add`` calls give the same turns either way (``TurnColumns.records`` gives them back as records).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
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
    """The turns of one session, column by column (see the module docstring). JSON turns only:
    located by ``pointer`` (a turn with ``lines`` or a ``base_text`` is refused: ``appended`` then
    says the session must take the record route)."""

    __slots__ = ("_odd", "appended", "columns", "roles")

    def __init__(self) -> None:
        self.columns: tuple[list, ...] = tuple([] for _ in _COLUMNS)
        self.roles: set[str] = set()
        self.appended = True
        """False once a turn could not be held as columns (its extra fields are not JSON): the
        session then goes through records (``records`` gives them, extra fields as given)."""
        self._odd: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self.columns[0])

    def add(self, speaker: str, role: str, content: str, time: datetime | None = None, time_raw: str | None = None,
            model: ModelRef | None = None, kind: str = "message", lines: tuple[int, int] | None = None,
            pointer: str | None = None, extra: dict[str, Any] | None = None, model_explicit: bool = True) -> None:
        (c_speaker, c_role, c_kind, c_content, c_time, c_offset, c_raw, c_model, c_explicit, c_pointer,
         c_extra) = self.columns
        if lines is not None:
            self.appended = False
        if time is None or time.tzinfo is None:
            offset = None
        elif time.tzinfo is UTC:  # the common case: epochs and ``Z`` stamps
            offset, time = 0, time.replace(tzinfo=None)
        else:
            delta = time.utcoffset()
            offset, time = (int(delta.total_seconds()) if delta is not None else None), time.replace(tzinfo=None)
        if extra:
            try:
                encoded = orjson.dumps(extra).decode()
            except TypeError:  # not JSON as it stands (a key or number orjson refuses): records keep it
                self.appended = False
                self._odd[len(c_role)] = extra
                encoded = None
        else:
            encoded = None
        c_speaker.append(speaker)
        c_role.append(role)
        c_kind.append(kind)
        c_content.append(content)
        c_time.append(time)
        c_offset.append(offset)
        c_raw.append(time_raw)
        c_model.append(None if model is None else orjson.dumps((model.provider, model.name, model.version)).decode())
        c_explicit.append(model_explicit)
        c_pointer.append(pointer)
        c_extra.append(encoded)
        self.roles.add(role)

    def append(self, turn: Turn) -> None:
        """A turn already built as a record (a malformed entry's notice)."""
        if turn.base_text is not None or turn.part is not None:
            self.appended = False
        self.add(turn.speaker, turn.role, turn.content, turn.time, turn.time_raw, turn.model, turn.kind, turn.lines,
                 turn.pointer, turn.extra, turn.model_explicit)

    def has_role(self, role: str) -> bool:
        return role in self.roles

    @property
    def pointers(self) -> list[str | None]:
        return self.columns[_COLUMNS.index("pointer")]

    def records(self) -> TurnList:
        """The same turns as records (``TurnList``), as the grammar would have built them."""
        out = TurnList()
        (speakers, roles, kinds, contents, times, offsets, raws, models, explicit, pointers,
         extras) = self.columns
        for i in range(len(roles)):
            time, offset = times[i], offsets[i]
            if time is not None and offset is not None:
                time = time.replace(tzinfo=UTC if offset == 0 else timezone(timedelta(seconds=offset)))
            model = ModelRef(*orjson.loads(models[i])) if models[i] is not None else None
            extra = self._odd.get(i) if extras[i] is None else orjson.loads(extras[i])
            out.add(speakers[i], roles[i], contents[i], time, raws[i], model, kinds[i], None, pointers[i], extra,
                    explicit[i])
        return out


def turns_for(columns: bool) -> TurnList | TurnColumns:
    """A new session's turn builder: columns when the caller assembles them so, else records."""
    return TurnColumns() if columns else TurnList()


def batch_frame(builders: list[TurnColumns]) -> pl.DataFrame:
    """The turns of a batch of sessions as one frame (``BATCH_SCHEMA``), session ``i`` the ``i``-th builder."""
    joined: tuple[list, ...] = tuple([] for _ in _COLUMNS)
    session: list[int] = []
    for i, builder in enumerate(builders):
        for column, part in zip(joined, builder.columns, strict=True):
            column.extend(part)
        session.extend([i] * len(builder))
    data = {"session": session, **dict(zip(_COLUMNS, joined, strict=True))}
    # a Series per column: several times faster than the frame's constructor given a schema
    return pl.DataFrame([pl.Series(k, v, dtype=BATCH_SCHEMA[k]) for k, v in data.items()])
