# Verbatim copy of the normative reference implementation in P-RECONSTRUCT v1.0
# (../shared/seeds/002_831bf2a94d435ea0.txt). Do not edit: tests hold the implementation to it.
# ruff: noqa
# Denna funktion representerar den obligatoriska normaliseringslogiken.
def normalize_speaker(entry, runtime_identity=None, source_has_explicit_model=False):
    name = (entry.get("speakerName") or "unknown").strip() or "unknown"
    m = entry.get("model") or {}
    provider = (m.get("provider") or "unknown").strip() or "unknown"
    model = (m.get("name") or "unknown").strip() or "unknown"
    version = (m.get("version") or "unknown").strip() or "unknown"
    # Implementerar "No-Self-Report"-regeln
    if runtime_identity and not source_has_explicit_model:
        if (provider.lower(), model.lower(), version.lower()) == (
            runtime_identity["provider"].lower(),
            runtime_identity["name"].lower(),
            runtime_identity["version"].lower()
        ):
            provider = model = version = "unknown"
    entry["speakerName"] = name
    entry["model"] = {"provider": provider, "name": model, "version": version}
    entry["speaker"] = f"{name} ({provider}:{model}@{version})"
    return entry
