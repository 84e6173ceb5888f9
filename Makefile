# The two commands of the README: `make run` and `make test`. Everything else supports them.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: help install prometheus chromium run test docs docs-build docs-reference lint typecheck check-imports test-unit test-integration test-e2e test-chaos test-cluster test-faults demo bench bench-profile bench-smoke bench-nats bench-clients bench-shadow bench-lookups schemas clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,local]'
	touch $(STAMP)

# The interop test's JavaScript bot and the TypeScript generator: locked versions, no install scripts.
NODE_STAMP := tests/interop/node_modules/.installed
$(NODE_STAMP): tests/interop/package.json tests/interop/package-lock.json
	@command -v npm >/dev/null || { echo "make: Node.js 20+ and npm are needed (tests/e2e/test_e2e_interop.py runs a JavaScript bot); install them" >&2; exit 1; }
	cd tests/interop && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

# The TypeScript client, @memory-worker/client: its locked packages, for its tests (run by
# tests/e2e/test_e2e_typescript_client.py) and make bench-clients.
CLIENT_STAMP := clients/typescript/node_modules/.installed
$(CLIENT_STAMP): clients/typescript/package.json clients/typescript/package-lock.json
	@command -v npm >/dev/null || { echo "make: Node.js 20+ and npm are needed (clients/typescript is tested in make test); install them" >&2; exit 1; }
	cd clients/typescript && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

# The TomoriBot guide's example (docs/tomoribot/example): the discord.js 14 it is type-checked
# against, locked (tests/e2e/test_e2e_tomoribot_guide.py).
EXAMPLE_STAMP := docs/tomoribot/example/node_modules/.installed
$(EXAMPLE_STAMP): docs/tomoribot/example/package.json docs/tomoribot/example/package-lock.json
	@command -v npm >/dev/null || { echo "make: Node.js 20+ and npm are needed (the TomoriBot guide's example is type-checked in make test); install them" >&2; exit 1; }
	cd docs/tomoribot/example && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

## The venv (.venv, with the test and local extras) and the locked node packages.
install: $(STAMP) $(NODE_STAMP) $(CLIENT_STAMP) $(EXAMPLE_STAMP)

## This list: each target with its `##` comment.
help:
	@awk '/^## / { doc = doc (doc ? " " : "") substr($$0, 4); next } \
	     /^[a-z][a-z-]*:/ && doc { split($$0, t, ":"); printf "  make %-18s %s\n", t[1], doc } { doc = "" }' $(MAKEFILE_LIST)

## Debian's prometheus package (prometheus and promtool 2.42), for the alert-rule tests and the
## e2e test with a live Prometheus: installed with apt-get when missing and run as root; elsewhere
## it says so and those tests skip, naming what is missing.
prometheus:
	@if command -v prometheus >/dev/null && command -v promtool >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "make: installing Debian's prometheus package (prometheus, promtool)"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null 2>&1 || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; } || \
		echo "make: could not install prometheus: the tests that need it will skip" >&2; \
	else echo "make: prometheus and promtool are not installed (not root with apt-get here): the tests that need them skip; install Debian's prometheus package" >&2; fi

## Debian's chromium package, for the test that renders the documentation site in a headless
## browser: installed with apt-get when missing and run as root; elsewhere that test skips, saying so.
chromium:
	@if command -v chromium >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "make: installing Debian's chromium package"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } || \
		echo "make: could not install chromium: the site's browser test will skip" >&2; \
	else echo "make: chromium is not installed (not root with apt-get here): the site's browser test skips; install Debian's chromium package" >&2; fi

## Build the documentation site (mkdocs.yml, docs/) and serve it on http://127.0.0.1:8000.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8000

## Build the documentation site strictly into .site/: a broken link or a missing page fails.
docs-build: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

## Regenerate the site's reference pages (docs/reference/) from the code.
docs-reference: $(STAMP)
	$(PY) docs/reference/generate.py

## Start embedded NATS + PostgreSQL under ./.data and the worker in the foreground (Ctrl-C stops all).
run: $(STAMP)
	$(VENV)/bin/memoryctl run

## Ruff over the tree (a modest rule set: pyflakes, pycodestyle, bugbear, import order).
lint: $(STAMP)
	$(VENV)/bin/ruff check .

## mypy over worker/, db/, contracts/ and tests/ (pyproject.toml [tool.mypy]; strict for the worker process, CLI, bot library, shared pieces, sinks and embedded servers).
typecheck: $(STAMP)
	$(VENV)/bin/mypy

## The process boundaries (import-linter contracts in pyproject.toml): fails when one is crossed.
check-imports: $(STAMP)
	$(VENV)/bin/lint-imports

## The whole default suite: lint, types, boundaries, then unit, integration, end-to-end and
## short chaos runs, on real servers it starts itself.
test: $(STAMP) $(NODE_STAMP) $(CLIENT_STAMP) $(EXAMPLE_STAMP) prometheus chromium lint typecheck check-imports
	$(PY) -m pytest -q -p no:cacheprovider tests/unit tests/integration tests/e2e tests/chaos tests/cluster tests/faults

## One layer of the suite: tests/unit (pure functions), tests/integration or tests/e2e.
test-unit: $(STAMP) prometheus chromium
	$(PY) -m pytest -q tests/unit

test-integration: $(STAMP)
	$(PY) -m pytest -q tests/integration

test-e2e: $(STAMP) $(NODE_STAMP) $(CLIENT_STAMP) $(EXAMPLE_STAMP) prometheus
	$(PY) -m pytest -q tests/e2e

## Three NATS nodes, two workers, PostgreSQL: 3,000 creates while the stream leader and a worker are SIGKILLed.
test-cluster: $(STAMP)
	CLUSTER_COMMANDS=3000 $(PY) -m pytest -q -s -p no:cacheprovider tests/cluster

## Every fault schedule (partitions, pauses, kill -9 in a partition, full disk, truncated files,
## PostgreSQL failovers and their asynchronous negative control) in
## network namespaces, each fault held 20 s; verdicts appended to tests/faults/results/latest.jsonl.
test-faults: $(STAMP)
	rm -f tests/faults/results/latest.jsonl
	FAULT_SCHEDULES=all FAULT_HOLD_S=20 FAULT_RESULTS=tests/faults/results/latest.jsonl \
		$(PY) -m pytest -q -s -p no:cacheprovider tests/faults

## The long chaos runs: 5,000 creates with worker kills, database and NATS outages, and SIGTERM
## while the database is stopped or frozen (twice: the second signal forces the exit).
test-chaos: $(STAMP)
	CHAOS_COMMANDS=5000 CHAOS_KILLS=8 $(PY) -m pytest -q -s -p no:cacheprovider tests/chaos

## With `make run` going in another terminal: a short scripted conversation.
demo: $(STAMP)
	$(VENV)/bin/memoryctl demo

$(VENV)/.bench-installed: $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,local,bench]'
	touch $@

## The performance benchmark: pgbench baseline, worker end to end, in-process peer, latency
## under load, scaling with data; writes tests/bench/results/<date>.json and a PNG plot.
bench: $(VENV)/.bench-installed
	$(PY) -m tests.bench.run $(BENCH_ARGS)

## Where a create's time goes under load: PostgreSQL statements and functions, WAL, and the
## worker's Python functions (py-spy), per command.
bench-profile: $(VENV)/.bench-installed
	$(PY) -m tests.bench.profile $(BENCH_ARGS)

## 2,000 creates over 200 workspaces through MemoryClient against embedded servers.
bench-smoke: $(STAMP)
	$(PY) -m tests.bench.smoke

## What each of a create's NATS operations costs nats-server (publish, delivery and ack, purge,
## events, reply), one at a time on a fresh server: tests/bench/nats_costs.py.
bench-nats: $(STAMP)
	$(PY) -m tests.bench.nats_costs $(BENCH_ARGS)

## The TypeScript client against the Python one on the same worker: creates/s and p50/p99 at
## the same in-flight count (tests/bench/clients.py); writes tests/bench/results/clients-<date>.json.
bench-clients: $(STAMP) $(CLIENT_STAMP)
	$(PY) -m tests.bench.clients $(BENCH_ARGS)

## Shadow mode's cost: WAL per dry run against a real create and the shadow record alone, and
## the bot's added latency per shadowed call (tests/bench/shadow.py).
bench-shadow: $(STAMP)
	$(PY) -m tests.bench.shadow $(BENCH_ARGS)

## How long one workspace's result lookup waits while a bot floods another's dead letters
## and outcome lookups (tests/bench/lookups.py).
bench-lookups: $(STAMP)
	$(PY) -m tests.bench.lookups $(BENCH_ARGS)

## Regenerate contracts/schema/*.json and contracts/asyncapi.json from the msgspec Structs, and
## contracts/types/index.d.ts from the schemas (json-schema-to-typescript).
schemas: $(STAMP) $(NODE_STAMP)
	$(PY) -m contracts.asyncapi
	cd tests/interop && node generate-types.mjs

## Remove the venv and `make run`'s data directory (.data).
clean:
	rm -rf $(VENV) .data
