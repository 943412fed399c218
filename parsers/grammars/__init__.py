"""One module per input format; each registers its grammar with parsers.registry.register."""
