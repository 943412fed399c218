"""The gate's time checks as they were before the column checks: a walk of each document, per session.

Frozen here as the oracle the product's column checks and envelope pre-filter are compared with
(tests/validators/test_gate_columns.py); it is not imported by the product.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import regex

from models.document import ISO_Z_PATTERN

ISO_Z = regex.compile(ISO_Z_PATTERN)
Failure = tuple[str, str]  # (path, message), all of reason timestamp_format


def is_timestamp_key(key: str) -> bool:
    k = key.lower()
    if "raw" in k:
        return False
    return k in ("date", "timestamp") or key.endswith(("At", "Date", "Timestamp"))


def valid_instant(value: Any) -> bool:
    if not (isinstance(value, str) and ISO_Z.fullmatch(value)):
        return False
    try:
        datetime.fromisoformat(value[:-1])
    except ValueError:
        return False
    return True


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
