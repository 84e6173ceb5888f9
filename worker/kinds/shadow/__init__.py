"""memory.shadow: a bot's report of its own write, paired with the worker's dry run and compared."""
