"""The validation gate: every check of the output contract, with reason codes."""
