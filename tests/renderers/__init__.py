"""Renderers that write a generated chat in each grammar's format (round-trip tests)."""
