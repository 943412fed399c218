"""Benchmark: deterministic data sets and a runner that prints throughput, memory and overheads."""
