"""What each environment variable of the settings means, for people: the configuration reference
(docs/reference/configuration.md) is generated from this table and from the variables
`Settings.from_env` reads, and a test fails when the two name different variables."""

from __future__ import annotations

# (variables, default as a reader sees it, meaning): one row per group of variables set together.
SETTING_DOCS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (('NATS_URL', 'DATABASE_URL'), 'unset',
     'servers to use. Unset, `memoryctl run` starts the embedded ones under `MEMORY_DATA_DIR` (they stop '
     'with it); the other subcommands use those of a running `make run`, found from any directory '
     '(`~/.local/state/memory-worker/runs/`), and `migrate` and `adopt` start the embedded PostgreSQL an '
     'earlier `make run` made when none runs (`migrate --embedded` creates one)'),
    (('MEMORY_PARTITIONS',), '16',
     'command partitions (parallelism; a workspace is always in one)'),
    (('STREAM_REPLICAS',), '1',
     'JetStream replicas of the streams and consumers (3 on a cluster)'),
    (('NATS_USER', 'NATS_PASSWORD', 'NATS_TOKEN', 'NATS_NKEY_SEED_FILE', 'NATS_CREDS_FILE'), 'unset',
     'NATS credentials (one method)'),
    (('NATS_TLS_CA_FILE', 'NATS_TLS_CERT_FILE', 'NATS_TLS_KEY_FILE'), 'unset',
     "TLS: the CA that signed the servers' certificates, and a client certificate and key where the "
     'servers ask for one (deploy/README.md, "TLS")'),
    (('NATS_INBOX_PREFIX',), '`_INBOX`',
     "a client's private reply prefix (bots, cache nodes, sinks, operators under per-role permissions)"),
    (('MAX_MEMORY_LENGTH',), '1000',
     'UTF-16 code units per memory. This, the two caps and the bio seed length are read as TomoriBot reads '
     'them (its `parseInt`: `42abc` is 42); a value that is no positive integer means the default, as it '
     'does to the bot'),
    (('MAX_SERVER_MEMORIES', 'MAX_PERSONAL_MEMORIES'), '100',
     'caps per owner and lineage'),
    (('SECRET_GUARD_DEFAULT',), 'true',
     'the secret guard (docs/design.md, section 4.2: a memory the model writes that holds a credential is '
     'refused) for every workspace that made no choice of its own; `memoryctl workspace set WS '
     '--secret-guard on\\|off\\|default` chooses per workspace'),
    (('MESSAGE_PROXY_BIO_SEED_MAX_CHARS',), '1000',
     'bio seed length (UTF-16 units)'),
    (('MAX_DELIVER',), '10',
     'attempts before a failing command is dead-lettered (a database or NATS outage does not count)'),
    (('ACK_WAIT_SECONDS',), '60',
     'redelivery of a command whose worker vanished (at least 20)'),
    (('MAX_COMMAND_BYTES',), '65536',
     'larger commands are refused as invalid'),
    (('REPLY_SUBJECT_PREFIXES',), '`_INBOX.`',
     'where results and lookup answers may be published (comma-separated; a prefix overlapping the '
     "worker's or the server's subjects, `$`, `memory.`, `cache.`, `metrics.`, `dlq.`, `cmd.`, "
     '`_memory_upgrade.`, is refused)'),
    (('TENANT', 'TENANT_LINEAGES'), 'unset',
     'the bot this worker serves when each bot has an account of its own (deploy/README.md, "Bots apart"): '
     "its name (lower-case letters, digits, `-`), and its personas' lineage ids, comma-separated. The "
     "worker then refuses commands naming another lineage (lineage 0 is every bot's), keeps its results "
     "and their events apart from other bots' in the shared database, and creates the bot's pull consumers "
     '`bot-<TENANT>-saved` and `-evicted`'),
    (('COMMAND_MAX_AGE_HOURS',), '168',
     '`MEMORY_COMMANDS` drops commands older than this, applied or not: longer than any outage of the '
     'workers you plan for (at most 720; deploy/README.md, "How long commands are kept")'),
    (('COMMAND_MAX_MIB',), '1024',
     "past this size `MEMORY_COMMANDS` refuses new commands (the bot's publish fails) instead of dropping "
     "stored ones; about 0.9 KiB per create; reserved on JetStream's storage"),
    (('INBOX_RETENTION_DAYS',), '35',
     'stored results kept this long, at least 31: longer than a dead letter is kept, so a replay is always '
     'recognised (published events: 7 days)'),
    (('METRIC_SAMPLE_RETENTION_DAYS',), '30',
     '`metric_samples` rows kept this long'),
    (('DB_POOL_SIZE',), '20',
     'PostgreSQL connections per worker'),
    (('DB_CONNECT_TIMEOUT_SECONDS', 'DB_COMMAND_TIMEOUT_SECONDS'), '10, 20',
     'a connection attempt, and a statement without an answer, give up after this long (a vanished '
     'database host costs seconds, not minutes; TCP keepalives and `TCP_USER_TIMEOUT` follow the command '
     'timeout); migrations are never cut short'),
    (('REQUIRE_SYNC_STANDBY',), 'false',
     "`true`: refuse to start (exit 2) unless the worker's commits wait for a synchronous standby in sync "
     '(deploy/README.md, "PostgreSQL failover")'),
    (('PARTITION_IN_FLIGHT',), '32',
     "commands of a partition in its worker's hands at once (the consumer's `max_ack_pending`); different "
     "workspaces run side by side, each workspace's one at a time in order; 1 is one command per partition"),
    (('CREATE_BATCH_MAX',), '64',
     'creates in flight at once share database round trips and one commit, up to this many; 1 turns '
     'batching off'),
    (('CREATE_BATCH_RUNNERS',), '4',
     'such batches in the database at once (one commits while the next is read and decided)'),
    (('METRICS_HOST', 'METRICS_PORT'), '127.0.0.1, 9464',
     '`/metrics` and `/healthz`; port 0 turns them off'),
    (('LOG_FORMAT', 'LOG_LEVEL'), 'console on a terminal else json, info',
     "the log lines' format (`console` or `json`) and the least level written (`debug`, `info`, `warning`, "
     '`error`)'),
    (('MEMORY_DATA_DIR',), '`.data`',
     "where `make run` keeps the embedded servers' data, their pid files and `endpoints.json` (the running "
     "servers' URLs and `memoryctl run`'s pid, for the other subcommands)"),
)
