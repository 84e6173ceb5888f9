"""One module per command kind: its command, its result and its statuses (contracts/registry.py
lists the kinds)."""
