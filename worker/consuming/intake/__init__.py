"""The per-command path: the partitions a replica pulls (partitions, partition), the order
within its hand (lanes), the handler that runs each command and settles its delivery
(handlers), and the delivery decisions it carries out, made without I/O (delivery, failures)."""
