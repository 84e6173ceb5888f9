"""The result lookup on memory.result.*.*: a command's stored result, or what became of it."""
