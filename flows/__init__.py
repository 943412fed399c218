"""Orchestration and I/O: ingest, the per-file core, emit, the run ledger, the Prefect flow, the CLI.

Only this package touches the file system, the ledger and Prefect.
"""
