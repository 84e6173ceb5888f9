"""memory.update: the model's update_long_term_memory tool, an edit or a delete of one memory."""
