"""After the commit: publishing each command's events, built from its inbox row, before its ack."""
