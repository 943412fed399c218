"""A SQLite database (an iMessage ``chat.db``) as canonical text: every table's rows as JSON.

Chat applications that keep their history in a database give no text export to read, so the
database itself is the source: its bytes are opened in memory (never a file: this is a pure function
of the input's bytes) and written out as one JSON object, deterministically::

    {"format": "sqlite3",
     "schema": {"<table>": ["<column>", ...], ...},
     "tables": {"<table>": [{"<column>": value, ...}, ...], ...}}

Tables in name order, rows in rowid order (or by every column for a table without rowids), columns
in the table's own order. Integers, reals, text and nulls are themselves; a BLOB is not copied:
``{"blob": <bytes>, "sha256": "..."}``, and when it is an ``NSAttributedString`` archive (Apple's
``streamtyped`` format, where newer macOS keeps a message's text instead of the ``text`` column) its
string is read out as ``"text"`` beside them. The grammars read this JSON like any export: JSON
pointers name a table's row (``/tables/message/41``), and source accounting checks its rows.
"""

from __future__ import annotations

import hashlib
import sqlite3
from typing import Any

import orjson

MAGIC = b"SQLite format 3\x00"
ENCODING = "sqlite3"
"""The ``encoding`` a source decoded from a database records: its text is this module's rendering."""
DatabaseError = sqlite3.DatabaseError
STREAMTYPED = b"\x04\x0bstreamtyped"
_NSSTRING = b"NSString"


def is_sqlite(data: bytes) -> bool:
    return data.startswith(MAGIC)


def streamtyped_text(blob: bytes) -> str | None:
    """The string of an ``NSAttributedString`` typedstream archive, None when there is none.

    After the class name ``NSString`` come five bytes of class data (``01 94 84 01 2B``), then the
    length: one byte, or ``0x81`` and two bytes little-endian (``0x82`` and four bytes for longer
    strings), then that many bytes of UTF-8."""
    at = blob.find(_NSSTRING)
    if at < 0:
        return None
    rest = blob[at + len(_NSSTRING) + 5:]
    if not rest:
        return None
    if rest[0] == 0x81:
        length, start = int.from_bytes(rest[1:3], "little"), 3
    elif rest[0] == 0x82:
        length, start = int.from_bytes(rest[1:5], "little"), 5
    else:
        length, start = rest[0], 1
    text = rest[start:start + length]
    if len(text) < length:
        return None
    return text.decode("utf-8", errors="replace")


def _value(value: Any) -> Any:
    if not isinstance(value, bytes):
        return value
    out: dict[str, Any] = {"blob": len(value), "sha256": hashlib.sha256(value).hexdigest()}
    if value.startswith(STREAMTYPED):
        text = streamtyped_text(value)
        if text is not None:
            out["text"] = text
    return out


def _tables(db: sqlite3.Connection) -> list[str]:
    rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                      "ORDER BY name").fetchall()
    return [name for (name,) in rows]


def _rows(db: sqlite3.Connection, table: str, columns: list[str]) -> list[dict[str, Any]]:
    quoted = '"' + table.replace('"', '""') + '"'
    try:
        cursor = db.execute(f"SELECT * FROM {quoted} ORDER BY rowid")  # a name from the schema, quoted
    except sqlite3.OperationalError:  # a table without rowids: every column decides the order
        cursor = db.execute(f"SELECT * FROM {quoted} ORDER BY {', '.join(str(i + 1) for i in range(len(columns)))}")
    return [dict(zip(columns, map(_value, row), strict=True)) for row in cursor]


def render(data: bytes) -> str:
    """The database's canonical text (module docstring). Raises ``sqlite3.DatabaseError`` when the
    bytes are not a database SQLite can read."""
    db = sqlite3.connect(":memory:")
    try:
        db.deserialize(data)
        db.execute("PRAGMA query_only = 1")
        schema: dict[str, list[str]] = {}
        tables: dict[str, list[dict[str, Any]]] = {}
        for table in _tables(db):
            quoted = '"' + table.replace('"', '""') + '"'
            schema[table] = [c[1] for c in db.execute(f"PRAGMA table_info({quoted})")]
            tables[table] = _rows(db, table, schema[table])
    finally:
        db.close()
    doc = {"format": "sqlite3", "schema": schema, "tables": tables}
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()

