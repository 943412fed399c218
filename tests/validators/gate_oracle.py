"""The gate's time checks as they were before the column checks: a walk of each document, per session.

Kept here as the oracle the product's column checks and envelope pre-filter are compared with
(tests/validators/test_gate_columns.py): where and in which order the walk looks, over the gate's own
definitions of a key named like a time and of a valid instant. Not imported by the product.
"""

from __future__ import annotations

from typing import Any

from models.errors import Reason
from validators.gate import MAX_LISTED, is_timestamp_key, valid_instant  # what one value must be: the gate's

Failure = tuple[str, str]  # (path, message), all of reason timestamp_format


def _bad(path: str, value: Any) -> Failure:
    return path, f"{value!r} is not YYYY-MM-DDTHH:mm:ssZ"


def walk(node: Any, path: str, out: list[Failure]) -> None:
    """Every key named like a time under ``node`` (any ``interactions`` key aside)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if not isinstance(v, (dict, list)):
                if v is not None and is_timestamp_key(k) and not valid_instant(v):
                    out.append(_bad(f"{path}.{k}", v))
            elif k != "interactions":
                walk(v, f"{path}.{k}", out)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            if isinstance(v, (dict, list)):
                walk(v, f"{path}[{i}]", out)


def interaction_times(interactions: list[dict[str, Any]]) -> list[Failure]:
    """Each interaction's ``date`` and source fields, in order."""
    out: list[Failure] = []
    for i, it in enumerate(interactions):
        where = f"$.artifacts.Chatthistorik.interactions[{i}]"
        date = it.get("date")
        if date is not None and not valid_instant(date):
            out.append(_bad(f"{where}.date", date))
        if it.get("sourceFields"):
            walk(it["sourceFields"], f"{where}.sourceFields", out)
    return out


def document_times(doc: dict[str, Any]) -> list[Failure]:
    """A whole document's time failures in the gate's order: interactions, ``createdAt``, the envelope."""
    history = doc.get("artifacts", {}).get("Chatthistorik", {})
    out = interaction_times(history.get("interactions") or [])
    if not valid_instant(doc.get("createdAt")):
        out.append(_bad("$.createdAt", doc.get("createdAt")))
    walk({k: v for k, v in doc.items() if k != "createdAt"}, "$", out)
    return out


ROLES = {"user", "assistant", "system", "tool", "other"}


def column_failures(rows: list[dict[str, Any]], base: int, out) -> None:
    """What ``FrameCheck.feed`` found in one session's rows before the checks ran over a batch, row by row
    (dates as the walk reads them): roles, then strings, then dates, the first MAX_LISTED of each,
    into the gate's collector ``out``."""
    where = "$.artifacts.Chatthistorik.interactions[{}]"
    found = [
        [(Reason.SCHEMA, where.format(base + i) + ".role", f"{r['role']!r} is not a role")
         for i, r in enumerate(rows) if r["role"] not in ROLES],
        [(Reason.SCHEMA, where.format(base + i), "content and kind must be strings")
         for i, r in enumerate(rows) if r["kind"] is None or r["content"] is None],
        [(Reason.TIMESTAMP_FORMAT, where.format(base + i) + ".date", f"{r['date']!r} is not YYYY-MM-DDTHH:mm:ssZ")
         for i, r in enumerate(rows) if r["date"] is not None and not valid_instant(r["date"])],
    ]
    for check in found:
        for failure in check[:MAX_LISTED]:
            out.add(*failure)
