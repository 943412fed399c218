"""The command line: ``reconstruct`` and its commands (``app``), their views and exit codes."""
