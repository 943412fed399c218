"""Normalisation: speakers (normative normalize_speaker), times to UTC, secrets, and the session document."""
