"""Orchestration and the CLI: ingest, the per-file core, emit, the shard, the Prefect flow.

Only this package imports Prefect; the audit trail it writes through is ``audit``.
"""
