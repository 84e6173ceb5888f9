"""memory.seed_bio: the one-time bio snapshot of a new proxy identity."""
