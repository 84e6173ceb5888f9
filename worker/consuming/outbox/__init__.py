"""After the commit: publishing each command's events (stored with its inbox row), draining
the outbox table older workers left, and the pruning of what was answered long ago."""
