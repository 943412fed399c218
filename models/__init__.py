"""Shared models: parse records, the session document, settings and errors.

Every other package imports from here; this package imports from none of them.
"""
