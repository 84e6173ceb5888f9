"""memory.manual: the panels' add, add_batch, edit and remove, and the data import."""
