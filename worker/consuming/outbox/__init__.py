"""After the commit: the outbox relay that publishes each command's events, and the pruning
of what was published and answered long ago."""
