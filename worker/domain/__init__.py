"""The worker process's rules as pure functions: no I/O, nothing but contracts and the
standard library (an import-linter contract). Change a rule here."""
