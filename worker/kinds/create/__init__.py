"""memory.create: the model's create_long_term_memory tool, saved under the owner lock."""
