"""The audit trail: the run ledger, the revision store, the datasets and the report.

Below ``flows`` (which orchestrates and calls it) and above the pure stages: it does file and
database I/O but never imports ``flows`` or Prefect, so a worker process can use it.
"""
