"""memory.reinforce: the memories a reply used, marked so decay spares them."""
