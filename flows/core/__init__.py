"""The core run, with no Prefect: a shard of input files read, parsed, assembled, gated and written."""
