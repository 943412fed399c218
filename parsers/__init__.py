"""Parsing: bytes to canonical text, format detection, and one grammar module per input format."""
