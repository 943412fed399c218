"""The auditor's browser: a read-only web application over an output root (``reconstruct browse``)."""
