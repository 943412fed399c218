"""diff_json_v1 (seed 004): make, validate and apply patches between two revisions of a text.

Pure functions, no I/O. Offsets (``at``, ``del``) count Unicode code points of the canonical base
text (UTF-8, BOM stripped, CRLF/CR to LF), every one against the original base, as §2 says.
``validate`` enforces the clean-JSON return contract (§3), the JSON Schema of §4 (checked by hand:
it is small and jsonschema is not a dependency) and the semantic rules of §2; ``apply`` refuses a
base checksum or result checksum that does not match.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from typing import Any

from models.errors import Reason, ReconstructError

PROTOCOL_ID = "diff_json_v1"
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
_HEX40 = re.compile(r"[0-9a-fA-F]{40}")
_OP_KEYS = {"insert": {"op", "at", "ins"}, "delete": {"op", "at", "del"}, "replace": {"op", "at", "del", "ins"}}


class DiffError(ReconstructError):
    """A diff that is not clean JSON, breaks the schema or rules, or does not fit its base."""


def canonical(text: str) -> str:
    """Seed 004 §1: BOM stripped, CRLF and lone CR to LF."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- make --------------------------------------------------------------------------------------


def _offsets(pieces: list[str]) -> list[int]:
    out = [0]
    for p in pieces:
        out.append(out[-1] + len(p))
    return out


def make_diff(base_text: str, result_text: str, path: str | None = None) -> dict[str, Any]:
    """The diff that turns ``base_text`` (canonicalised) into ``result_text`` exactly.

    Line opcodes from difflib, turned into character offsets against the original base, adjacent
    ones merged. Equal texts give one empty replace: the schema wants at least one op.
    """
    base = canonical(base_text)
    a_lines = base.splitlines(keepends=True)
    b_lines = result_text.splitlines(keepends=True)
    a_off, b_off = _offsets(a_lines), _offsets(b_lines)
    ops: list[dict[str, Any]] = []
    matcher = difflib.SequenceMatcher(None, a_lines, b_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        at, dele, ins = a_off[i1], a_off[i2] - a_off[i1], result_text[b_off[j1]:b_off[j2]]
        if ops and ops[-1]["at"] + ops[-1].get("del", 0) == at:
            prev = ops.pop()  # touching ranges: one replace, so ops stay strictly non-overlapping
            at, dele, ins = prev["at"], prev.get("del", 0) + dele, prev.get("ins", "") + ins
        ops.append(_op(at, dele, ins))
    if not ops:
        ops.append({"op": "replace", "at": 0, "del": 0, "ins": ""})
    target: dict[str, Any] = {"base_checksum_sha256": sha256_text(base)}
    if path:
        target = {"path": path, **target}
    return {"protocol_id": PROTOCOL_ID, "target": target, "ops": ops, "result_sha256": sha256_text(result_text)}


def _op(at: int, dele: int, ins: str) -> dict[str, Any]:
    if dele == 0:
        return {"op": "insert", "at": at, "ins": ins}
    if ins == "":
        return {"op": "delete", "at": at, "del": dele}
    return {"op": "replace", "at": at, "del": dele, "ins": ins}


# -- validate ----------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def parse_clean(raw: str | bytes) -> dict[str, Any]:
    """§3: exactly one JSON object, nothing before or after it (whitespace aside), no fences."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DiffError(Reason.JSON_SYNTAX, f"not UTF-8: {exc}") from None
    text = raw.removeprefix("\ufeff").strip(" \t\r\n")
    if text.startswith("```") or text.endswith("```"):
        raise DiffError(Reason.JSON_SYNTAX, "code fences around the object: return the bare JSON object only")
    if not text.startswith("{"):
        raise DiffError(Reason.JSON_SYNTAX, f"text before the object: must start with '{{', got {text[:30]!r}")
    if not text.endswith("}"):
        raise DiffError(Reason.JSON_SYNTAX, f"text after the object: must end with '}}', got {text[-30:]!r}")
    try:
        obj = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except (json.JSONDecodeError, ValueError) as exc:
        raise DiffError(Reason.JSON_SYNTAX, f"not one clean JSON object: {exc}") from None
    if not isinstance(obj, dict):
        raise DiffError(Reason.JSON_SYNTAX, "not a JSON object")
    return obj


def _is_int(value: Any) -> bool:
    # JSON Schema "integer": a bool is not one (Python says it is); floats are refused outright.
    return isinstance(value, int) and not isinstance(value, bool)


def check_schema(obj: Any) -> None:
    """The JSON Schema of seed 004 §4, checked directly."""

    def bad(where: str, message: str) -> DiffError:
        return DiffError(Reason.SCHEMA, f"{where}: {message}")

    if not isinstance(obj, dict):
        raise bad("$", "must be an object")
    extra = set(obj) - {"protocol_id", "target", "ops", "result_sha256", "meta"}
    if extra:
        raise bad("$", f"unknown properties {sorted(extra)}")
    for key in ("protocol_id", "target", "ops"):
        if key not in obj:
            raise bad("$", f"{key!r} is required")
    if obj["protocol_id"] != PROTOCOL_ID:
        raise bad("$.protocol_id", f"must be {PROTOCOL_ID!r}, got {obj['protocol_id']!r}")
    target = obj["target"]
    if not isinstance(target, dict):
        raise bad("$.target", "must be an object")
    extra = set(target) - {"path", "base_checksum_sha256", "git_sha1"}
    if extra:
        raise bad("$.target", f"unknown properties {sorted(extra)}")
    if "base_checksum_sha256" not in target:
        raise bad("$.target", "'base_checksum_sha256' is required")
    if not (isinstance(target["base_checksum_sha256"], str) and _HEX64.fullmatch(target["base_checksum_sha256"])):
        raise bad("$.target.base_checksum_sha256", "must be 64 hex digits")
    if "path" in target and not (isinstance(target["path"], str) and target["path"]):
        raise bad("$.target.path", "must be a non-empty string")
    if "git_sha1" in target and not (isinstance(target["git_sha1"], str) and _HEX40.fullmatch(target["git_sha1"])):
        raise bad("$.target.git_sha1", "must be 40 hex digits")
    result = obj.get("result_sha256")
    if "result_sha256" in obj and not (isinstance(result, str) and _HEX64.fullmatch(result)):
        raise bad("$.result_sha256", "must be 64 hex digits")
    if "meta" in obj and not isinstance(obj["meta"], dict):
        raise bad("$.meta", "must be an object")
    ops = obj["ops"]
    if not isinstance(ops, list) or not ops:
        raise bad("$.ops", "must be a non-empty array")
    for i, op in enumerate(ops):
        where = f"$.ops[{i}]"
        if not isinstance(op, dict):
            raise bad(where, "must be an object")
        kind = op.get("op")
        if kind not in _OP_KEYS:
            raise bad(f"{where}.op", f"must be insert, delete or replace, got {kind!r}")
        if set(op) != _OP_KEYS[kind]:
            missing, extra = _OP_KEYS[kind] - set(op), set(op) - _OP_KEYS[kind]
            raise bad(where, f"{kind} needs exactly {sorted(_OP_KEYS[kind])}"
                             f"{'; missing ' + str(sorted(missing)) if missing else ''}"
                             f"{'; unknown ' + str(sorted(extra)) if extra else ''}")
        if not (_is_int(op["at"]) and op["at"] >= 0):
            raise bad(f"{where}.at", "must be an integer >= 0")
        if "del" in op and not (_is_int(op["del"]) and op["del"] >= (1 if kind == "delete" else 0)):
            raise bad(f"{where}.del", f"must be an integer >= {1 if kind == 'delete' else 0}")
        if "ins" in op and not isinstance(op["ins"], str):
            raise bad(f"{where}.ins", "must be a string")


def check_rules(obj: dict[str, Any], base_length: int | None = None) -> None:
    """§2: ops in strictly ascending ``at``, not overlapping, and (given the base) inside it."""
    prev_at, prev_end = -1, 0
    for i, op in enumerate(obj["ops"]):
        at, end = op["at"], op["at"] + op.get("del", 0)
        if at <= prev_at:
            raise DiffError(Reason.SCHEMA, f"$.ops[{i}]: not sorted: at {at} after at {prev_at}")
        if at < prev_end:
            raise DiffError(Reason.SCHEMA, f"$.ops[{i}]: overlaps the previous op (at {at} < {prev_end})")
        if base_length is not None and end > base_length:
            raise DiffError(Reason.SCHEMA, f"$.ops[{i}]: range {at}..{end} beyond the base ({base_length} characters)")
        prev_at, prev_end = at, end


def validate(raw_text: str | bytes, base_text: str | None = None) -> dict[str, Any]:
    """The diff in ``raw_text`` after every check that needs no base (and the range check when
    ``base_text`` is given); raises DiffError naming the first problem."""
    obj = parse_clean(raw_text)
    check_schema(obj)
    check_rules(obj, len(canonical(base_text)) if base_text is not None else None)
    return obj


# -- apply -------------------------------------------------------------------------------------


def apply(diff: dict[str, Any], base_text: str) -> str:
    """The result of ``diff`` on ``base_text``; refuses a base or result checksum mismatch."""
    check_schema(diff)
    base = canonical(base_text)
    expected = diff["target"]["base_checksum_sha256"].lower()
    actual = sha256_text(base)
    if actual != expected:
        raise DiffError(Reason.DIFF_CHECKSUM,
                        f"base checksum mismatch: the diff is for {expected}, this base is {actual}")
    check_rules(diff, len(base))
    parts, pos = [], 0
    for op in diff["ops"]:
        parts.append(base[pos:op["at"]])
        parts.append(op.get("ins", ""))
        pos = op["at"] + op.get("del", 0)
    parts.append(base[pos:])
    result = "".join(parts)
    if "result_sha256" in diff and sha256_text(result) != diff["result_sha256"].lower():
        raise DiffError(Reason.DIFF_CHECKSUM,
                        f"result checksum mismatch: expected {diff['result_sha256']}, got {sha256_text(result)}")
    return result


def dumps(diff: dict[str, Any]) -> str:
    """One clean JSON object (compact, keys in contract order, non-ASCII kept)."""
    return json.dumps(diff, ensure_ascii=False, separators=(",", ":"))
