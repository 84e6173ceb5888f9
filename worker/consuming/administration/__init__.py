"""The streams and consumers the worker provisions and looks after, off the per-command path:
provisioning (streams), the command stream's retention, its upgrade in place, and the sweep of
commands stranded at its head."""
