"""Speaker identity: the normative ``normalize_speaker`` (P-RECONSTRUCT, seed 002) and display safety.

``normalize_speaker`` behaves exactly like the reference in the seed (a property test holds it to a
verbatim copy kept in tests/). ``safe_fields`` runs first and makes source values fit the speaker
regex ``^[^()]+ \\([^:]+:[^@]+@[^)]+\\)$`` without losing them:

- speakerName: ``(``/``)`` become ``[``/``]`` (``Bob (work)`` -> ``Bob [work]``);
- provider: ``:`` becomes ``-`` and parentheses become brackets;
- model name: ``@`` splits off a version when the source gave none (``claude-3@20240229`` ->
  name ``claude-3``, version ``20240229``), any other ``@`` becomes ``-``; ``:`` is kept
  (``llama3:8b`` is unambiguous: the provider ends at the first colon);
- version: parentheses become brackets;
- control characters and line breaks become spaces in every field.

The source's values are kept as ``speakerNameRaw`` / ``modelRaw`` whenever anything changed, and
the change is logged in ByggLogg.
"""

from __future__ import annotations

import regex

_CONTROL = regex.compile(r"[\p{Cc}\p{Zl}\p{Zp}]+")
_BRACKETS = str.maketrans({"(": "[", ")": "]"})


def normalize_speaker(entry, runtime_identity=None, source_has_explicit_model=False):
    """The normative reference (seed 002), same behaviour on every input; mutates and returns entry."""
    name = (entry.get("speakerName") or "unknown").strip() or "unknown"
    m = entry.get("model") or {}
    provider = (m.get("provider") or "unknown").strip() or "unknown"
    model = (m.get("name") or "unknown").strip() or "unknown"
    version = (m.get("version") or "unknown").strip() or "unknown"
    # The no-self-report rule (A2): the reconstructing AI never fills historical data.
    if runtime_identity and not source_has_explicit_model and (
        provider.lower(), model.lower(), version.lower()
    ) == (
        runtime_identity["provider"].lower(),
        runtime_identity["name"].lower(),
        runtime_identity["version"].lower(),
    ):
        provider = model = version = "unknown"
    entry["speakerName"] = name
    entry["model"] = {"provider": provider, "name": model, "version": version}
    entry["speaker"] = f"{name} ({provider}:{model}@{version})"
    return entry


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    return _CONTROL.sub(" ", value)


def safe_fields(
    name: str, provider: str | None, model: str | None, version: str | None
) -> tuple[str, str | None, str | None, str | None, list[str]]:
    """Make the fields fit the speaker format; returns them and a note per change."""
    notes: list[str] = []
    new_name = _clean(name).translate(_BRACKETS)
    if new_name != name:
        notes.append(f"speakerName {name!r} -> {new_name!r}")
    new_provider = _clean(provider)
    if new_provider is not None:
        new_provider = new_provider.replace(":", "-").translate(_BRACKETS)
    new_model, new_version = _clean(model), _clean(version)
    if new_model is not None and "@" in new_model:
        if not (new_version or "").strip():
            new_model, _, new_version = new_model.rpartition("@")
        new_model = new_model.replace("@", "-")
    if new_model is not None:
        new_model = new_model.translate(_BRACKETS)
    if new_version is not None:
        new_version = new_version.translate(_BRACKETS)
    if (new_provider, new_model, new_version) != (provider, model, version):
        notes.append(f"model {provider}:{model}@{version} -> {new_provider}:{new_model}@{new_version}")
    return new_name, new_provider, new_model, new_version, notes
