"""`memoryctl adopt` on a TomoriBot-shaped database (docs/design.md, section 7.1): one transaction, a second
run changes nothing, a failure changes nothing, older bot databases work, the bot's own later
migrations are not blocked, and a worker refuses a bot database nobody adopted."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import asyncpg
import pytest

from db.connection import connect
from tests import tomoribot
from tests.conftest import ROOT
from tests.memoryctl import memoryctl as in_process


@pytest.fixture
async def bot_dsn(pg_server):
    """An empty database for a bot; its plain URL (no worker search path)."""
    return await tomoribot.new_database(pg_server.dsn)


def environment(dsn: str) -> dict[str, str]:
    return dict(os.environ, DATABASE_URL=dsn, NATS_URL="nats://127.0.0.1:1", LOG_FORMAT="json",
                PYTHONPATH=str(ROOT), METRICS_PORT="0")


def memoryctl(dsn: str, *args: str):
    """Awaitable: the command in-process (tests/memoryctl.py)."""
    return in_process([*args], environment(dsn))


async def state(dsn: str) -> tuple[list, dict]:
    conn = await asyncpg.connect(dsn)
    try:
        return await tomoribot.catalog(conn), await tomoribot.snapshot(conn)
    finally:
        await conn.close()


async def tomori(dsn: str, **build) -> tomoribot.World:
    conn = await asyncpg.connect(dsn)
    try:
        await tomoribot.build(conn, **build)
        return await tomoribot.seed(conn, before_062=build.get("before_062", False))
    finally:
        await conn.close()


async def test_a_bot_database_nobody_adopted_is_refused_by_run_and_migrate(bot_dsn):
    await tomori(bot_dsn)
    before = await state(bot_dsn)
    for command in ("run", "migrate"):  # `run` as a real process: the worker's own start
        done = (subprocess.run([sys.executable, "-m", "worker.cli.memoryctl", "run"], cwd=ROOT, capture_output=True, text=True,
                               env=environment(bot_dsn), timeout=120) if command == "run"
                else await memoryctl(bot_dsn, command))
        assert done.returncode == 2, done
        said = done.stdout + done.stderr
        assert "was not adopted" in said and "memoryctl adopt --dry-run" in said, said
    assert await state(bot_dsn) == before


async def test_the_dry_run_changes_nothing_and_adopting_twice_changes_nothing_the_second_time(bot_dsn):
    await tomori(bot_dsn)
    before = await state(bot_dsn)
    dry = await memoryctl(bot_dsn, "adopt", "--dry-run")
    assert dry.returncode == 0 and "would add:" in dry.stdout, dry
    # Each worker migration with what it adds, in its own words.
    from db.migrate import available

    for migration in available():
        assert migration.summary and f"worker migration {migration.name} ({migration.summary})" in dry.stdout
    assert len({m.summary for m in available()}) == len(available())
    assert await state(bot_dsn) == before

    first = await memoryctl(bot_dsn, "adopt")
    assert first.returncode == 0 and "added, in one transaction:" in first.stdout, first
    adopted_catalog, adopted_rows = await state(bot_dsn)
    assert adopted_rows == before[1] and adopted_catalog != before[0]

    second = await memoryctl(bot_dsn, "adopt")
    assert second.returncode == 0 and "already set up: this database runs in adopted mode" in second.stdout
    migrate = await memoryctl(bot_dsn, "migrate")
    assert migrate.returncode == 0 and "applied: nothing (up to date)" in migrate.stdout, migrate
    assert "directory functions: unchanged" in migrate.stdout, migrate
    assert "worker functions: unchanged" in migrate.stdout, migrate
    assert await state(bot_dsn) == (adopted_catalog, adopted_rows)


async def test_a_failure_halfway_leaves_the_database_exactly_as_before(bot_dsn):
    # TomoriBot's schema.sql leaves server_memories.persona_lineage_id nullable while rows
    # lack a lineage; adoption sets NOT NULL after adding the worker's columns, and fails there.
    await tomori(bot_dsn, lineage_not_null=False)
    conn = await asyncpg.connect(bot_dsn)
    await conn.execute("INSERT INTO server_memories (server_id, content) SELECT min(server_id), 'orphan' FROM servers")
    await conn.close()
    before = await state(bot_dsn)

    done = await memoryctl(bot_dsn, "adopt")

    assert done.returncode == 2, done
    assert "persona_lineage_id" in done.stdout and "nothing was changed" in done.stdout, done.stdout
    assert await state(bot_dsn) == before


async def test_an_older_bot_database_keeps_the_nickname_in_users_and_its_later_migration_still_runs(bot_dsn):
    world = await tomori(bot_dsn, before_062=True)
    dry = await memoryctl(bot_dsn, "adopt", "--dry-run")
    assert "users.user_nickname (a database from before TomoriBot's 062)" in dry.stdout, dry.stdout
    assert "none (user_persona_naming_preferences not found)" in dry.stdout
    assert (await memoryctl(bot_dsn, "adopt")).returncode == 0
    conn = await connect(bot_dsn)
    try:
        assert await conn.fetchval("SELECT nickname FROM directory_users() WHERE user_disc_id = $1",
                                   world.mika) == "Mika"
        # The bot upgrades as its 062 does: the nickname moves, users.user_nickname is dropped.
        # Nothing of the worker's depends on the column, so the bot's migration is not blocked.
        await conn.execute("ALTER TABLE user_personalization_configs ADD COLUMN user_nickname text;"
                           " UPDATE user_personalization_configs c SET user_nickname = u.user_nickname"
                           " FROM users u WHERE u.user_id = c.user_id;"
                           " ALTER TABLE users DROP COLUMN user_nickname;")
        with pytest.raises(asyncpg.UndefinedColumnError):
            await conn.fetchval("SELECT count(*) FROM directory_users()")
        migrate = await memoryctl(bot_dsn, "migrate")
        assert migrate.returncode == 0 and "directory functions: made" in migrate.stdout, migrate
        assert await conn.fetchval("SELECT nickname FROM directory_users() WHERE user_disc_id = $1",
                                   world.mika) == "Mika"
    finally:
        await conn.close()


async def test_workspace_set_writes_decay_to_the_workers_table_and_leaves_the_bots_settings_alone(bot_dsn):
    world = await tomori(bot_dsn)
    assert (await memoryctl(bot_dsn, "adopt")).returncode == 0
    before = await state(bot_dsn)

    refused = await memoryctl(bot_dsn, "workspace", "set", world.quiet, "--self-teaching", "on")
    decay = await memoryctl(bot_dsn, "workspace", "set", world.quiet, "--decay", "on", "--decay-days", "45")

    assert refused.returncode == 2 and "self_teaching is the bot's setting" in refused.stdout, refused
    assert decay.returncode == 0, decay
    shown = [line.split() for line in decay.stdout.splitlines()]
    assert ["decay", "True"] in shown and ["decay_days", "45"] in shown and ["self_teaching", "False"] in shown
    assert await state(bot_dsn) == (before[0], before[1])  # no bot row or column changed
    conn = await asyncpg.connect(bot_dsn)
    try:
        row = await conn.fetchrow("SELECT w.memory_decay_enabled, w.memory_decay_days"
                                  " FROM memory_worker.workspace_settings w JOIN servers s USING (server_id)"
                                  " WHERE s.server_disc_id = $1", world.quiet)
    finally:
        await conn.close()
    assert tuple(row) == (True, 45)
    listed = (await memoryctl(bot_dsn, "memories", "list", "--workspace", world.quiet)).stdout.split("\n\n")[0]
    listed = listed.splitlines()
    # The bot's row, as the worker sees it: legacy, unprotected, dormant at 45 days of decay.
    assert len(listed) == 2 and listed[1].split()[2:5] == ["no", "50.0d", "dormant"], listed  # the server runs UTC
    assert listed[1].split()[5] == "legacy" and listed[1].endswith("Quiet server: no spoilers")


async def test_metric_samples_go_into_the_bots_table_once_each(bot_dsn):
    await tomori(bot_dsn)
    assert (await memoryctl(bot_dsn, "adopt")).returncode == 0
    from worker.sinks.postgres import _INSERT  # the statement the PostgreSQL sink runs

    conn = await connect(bot_dsn)
    try:
        before = await conn.fetchval("SELECT count(*) FROM public.metric_samples")
        for _ in range(2):  # a redelivery after a lost acknowledgement
            await conn.execute(_INSERT, "memory_eviction", '{"scope": "server"}', tomoribot.days_ago(0), "cmd-1:m")
        await conn.execute(_INSERT, "memory_eviction", '{"scope": "personal"}', tomoribot.days_ago(0), None)
        rows = await conn.fetch("SELECT metric_name, fields->>'scope' AS scope FROM public.metric_samples"
                                " WHERE metric_name = 'memory_eviction' ORDER BY 2 DESC")
        # The bot's own writer still works: its columns only.
        await conn.execute("INSERT INTO public.metric_samples (metric_name, fields) VALUES ('llm_latency', '{}')")
        assert await conn.fetchval("SELECT count(*) FROM public.metric_samples") == before + 3
        from worker.sinks.postgres import _PRUNE

        await conn.execute(_INSERT, "memory_eviction", '{"scope": "old"}', tomoribot.days_ago(40), "cmd-0:m")
        assert await conn.fetchval(_PRUNE, 30, 100) == 1  # the retention reaches the bot's table too
    finally:
        await conn.close()
    assert [tuple(r) for r in rows] == [("memory_eviction", "server"), ("memory_eviction", "personal")]


async def test_a_bot_database_without_proxy_tables_fails_closed_for_proxy_users(bot_dsn):
    world = await tomori(bot_dsn)
    conn = await connect(bot_dsn)
    try:
        # A database from before TomoriBot's 056: no identity tables, yet pk: users exist.
        await conn.execute("DROP TABLE message_proxy_namespace_accounts, message_proxy_identities,"
                           " message_proxy_namespaces, external_identities")
        dry = await memoryctl(bot_dsn, "adopt", "--dry-run")
        assert "pk:/pb: users are refused, no host link" in dry.stdout, dry.stdout
        assert (await memoryctl(bot_dsn, "adopt")).returncode == 0
        identity = await conn.fetchval("SELECT memory_proxy_identity($1, $2)", world.proxy, world.taught)
    finally:
        await conn.close()
    # An identity with no resolvable host link: the create and panel decisions refuse it.
    assert '"hosts": []' in identity and world.proxy in identity


async def test_the_worker_role_on_an_adopted_database_reaches_only_what_the_worker_uses(bot_dsn, pg_server):
    from contracts.kinds.create import SAVED
    from db.migrate import migrate_dsn
    from db.pool import create_pool
    from db.repository import MemoryRepository
    from tests.integration.helpers import server_save
    from worker.domain.workspace import Limits
    from worker.kinds.create.service import CreateMemoryService

    world = await tomori(bot_dsn)
    assert (await memoryctl(bot_dsn, "adopt")).returncode == 0
    # README, adoption step 5, as typed: the role file, then the role's password.
    psql = str(pg_server.bin_dir / "psql")
    for argv in (["-f", "deploy/postgres/worker_role.sql"], ["-c", "ALTER ROLE memory_worker PASSWORD 'chosen-secret'"]):
        done = subprocess.run([psql, "-v", "ON_ERROR_STOP=1", "-q", bot_dsn, *argv], cwd=ROOT, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done
    conn = await asyncpg.connect(bot_dsn)
    try:
        assert await conn.fetchval("SELECT rolpassword LIKE 'SCRAM-SHA-256$%' FROM pg_authid"
                                   " WHERE rolname = 'memory_worker'")
    finally:
        await conn.close()
    role_dsn = bot_dsn.replace(f"{pg_server.user}@", "memory_worker:chosen-secret@", 1)
    assert await migrate_dsn(role_dsn) == []
    pool = await create_pool(role_dsn, min_size=1, max_size=2)
    try:
        create = CreateMemoryService(MemoryRepository(pool), Limits())
        handled = await create.run(server_save(world.hidden, "the role can save", lineage=world.lineage))
        assert json.loads(handled.answer.result)["data"]["status"] == SAVED, handled.answer.result
        async with pool.acquire() as role:
            for table in ("personas", "minimal_notice_refs", "message_proxy_namespaces", "schema_migrations"):
                with pytest.raises(asyncpg.InsufficientPrivilegeError):
                    await role.fetch(f"SELECT * FROM public.{table}")
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await role.execute("UPDATE public.servers SET registration_locale = 'xx'")
    finally:
        await pool.close()


# --- what the CLI may write, by mode (README, "What the CLI may write") ------------------------------

W = tomoribot.World()
NEW_ID = "299999999999999999"  # a mistyped id: no users or servers row has it
# Every directory subcommand, with an invocation on the TomoriBot world.
DIRECTORY_COMMANDS = {
    ("user", "show"): ["user", "show", W.mika],
    ("user", "add"): ["user", "add", NEW_ID],
    ("user", "privacy"): ["user", "privacy", NEW_ID, "full"],
    ("user", "nickname"): ["user", "nickname", W.mika, "Mia"],
    ("workspace", "show"): ["workspace", "show", W.taught],
    ("workspace", "set"): ["workspace", "set", W.taught, "--decay", "on"],
    ("blacklist", "add"): ["blacklist", "add", W.taught, W.mika],
    ("blacklist", "remove"): ["blacklist", "remove", W.taught, W.banned],
    ("blacklist", "list"): ["blacklist", "list", W.taught],
    ("proxy", "link"): ["proxy", "link", W.proxy, "--namespace", "ns", "--host", W.mika],
    ("proxy", "unlink"): ["proxy", "unlink", "--namespace", "ns", "--host", W.host],
    ("proxy", "show"): ["proxy", "show", W.proxy],
    ("memories", "list"): ["memories", "list", "--workspace", W.taught],
}
# In adopted mode: the writes to the bot's tables, each refused (exit 2) with what it names.
REFUSED_WHEN_ADOPTED = {
    ("user", "add"): ["user", "add", NEW_ID],
    ("user", "privacy"): ["user", "privacy", W.mika, "full"],
    ("user", "privacy", "mistyped"): ["user", "privacy", NEW_ID, "full"],
    ("user", "nickname"): ["user", "nickname", W.mika, "Mia"],
    ("workspace", "set"): ["workspace", "set", W.taught, "--self-teaching", "off"],
    ("workspace", "set", "mistyped"): ["workspace", "set", NEW_ID, "--decay", "on"],
    ("blacklist", "add"): ["blacklist", "add", W.taught, W.mika],
    ("blacklist", "remove"): ["blacklist", "remove", W.taught, W.banned],
    ("proxy", "link"): ["proxy", "link", W.proxy, "--namespace", "ns", "--host", W.mika],
    ("proxy", "unlink"): ["proxy", "unlink", "--namespace", "ns", "--host", W.host],
}


def test_the_table_names_every_directory_subcommand():
    from tests.memoryctl import leaves
    from worker.cli import admin

    parser = argparse.ArgumentParser()
    admin.add_parsers(parser.add_subparsers())
    assert sorted(leaves(parser)) == sorted(DIRECTORY_COMMANDS)


async def test_on_a_bot_database_nobody_adopted_every_directory_command_refuses_as_run_does(bot_dsn):
    await tomori(bot_dsn)
    before = await state(bot_dsn)
    for path, argv in DIRECTORY_COMMANDS.items():
        done = await memoryctl(bot_dsn, *argv)
        assert done.returncode == 2, (path, done)
        assert "was not adopted" in done.stdout and "memoryctl adopt --dry-run" in done.stdout, (path, done)
        assert "Traceback" not in done.stdout + done.stderr
    assert await state(bot_dsn) == before


async def test_in_adopted_mode_the_cli_writes_no_bot_table_and_reads_back_what_the_worker_sees(bot_dsn):
    await tomori(bot_dsn)
    assert (await memoryctl(bot_dsn, "adopt")).returncode == 0
    before = await state(bot_dsn)
    for path, argv in REFUSED_WHEN_ADOPTED.items():
        done = await memoryctl(bot_dsn, *argv)
        assert done.returncode == 2, (path, done)
        said = done.stdout
        assert "this database is adopted" in said or "the bot has no server" in said, (path, said)
    assert await state(bot_dsn) == before  # not a row of the bot's, not a column

    known = await memoryctl(bot_dsn, "user", "add", W.mika)
    assert known.returncode == 0 and f"user {W.mika} is already registered: nothing changed" in known.stdout, known
    shown = await memoryctl(bot_dsn, "user", "show", W.mika)
    assert shown.returncode == 0 and shown.stdout.splitlines() == [
        f"user {W.mika}", "  privacy            0 (open)", "  saved nickname     'Mika'",
        "  blacklisted in     none"], shown
    host = (await memoryctl(bot_dsn, "user", "show", W.host)).stdout
    assert "privacy            2 (full)" in host
    banned = (await memoryctl(bot_dsn, "user", "show", W.banned)).stdout
    assert f"blacklisted in     {W.taught}" in banned
    unknown = await memoryctl(bot_dsn, "user", "show", NEW_ID)
    assert unknown.returncode == 1 and f"user {NEW_ID} is not registered" in unknown.stdout
    listed = await memoryctl(bot_dsn, "blacklist", "list", W.taught)
    assert listed.stdout.split() == [W.banned], listed
    proxy = await memoryctl(bot_dsn, "proxy", "show", W.proxy)
    assert proxy.returncode == 0 and f"hosts {W.host}" in proxy.stdout, proxy
    # The worker's own write, for a server the bot has: decay, in memory_worker.workspace_settings.
    decay = await memoryctl(bot_dsn, "workspace", "set", W.taught, "--decay", "on")
    assert decay.returncode == 0 and ["decay", "True"] in [line.split() for line in decay.stdout.splitlines()]
    assert (await state(bot_dsn))[1] == before[1]


async def test_an_empty_database_is_refused_by_every_directory_command_naming_migrate(bot_dsn):
    for path, argv in DIRECTORY_COMMANDS.items():
        done = await memoryctl(bot_dsn, *argv)
        assert (done.returncode, "run `memoryctl migrate`" in done.stdout) == (2, True), (path, done)


async def test_the_dry_run_on_an_empty_database_refuses_first_naming_migrate(bot_dsn):
    done = await memoryctl(bot_dsn, "adopt", "--dry-run")
    assert done.returncode == 2, done
    first = done.stdout.splitlines()[0]
    assert first.startswith("memoryctl adopt --dry-run: cannot adopt this database: it holds none of TomoriBot's"
                            " tables"), done.stdout
    assert "`memoryctl migrate` sets one up" in first
    assert "to apply" not in done.stdout and "would add" not in done.stdout


async def test_the_dry_run_on_a_database_of_another_shape_refuses_first_naming_what_is_missing(bot_dsn):
    conn = await asyncpg.connect(bot_dsn)
    try:
        await conn.execute("CREATE TABLE users (id bigint PRIMARY KEY, name text)")
    finally:
        await conn.close()
    done = await memoryctl(bot_dsn, "adopt", "--dry-run")
    assert done.returncode == 2, done
    assert done.stdout.splitlines()[0].startswith(
        "memoryctl adopt --dry-run: cannot adopt this database: not a TomoriBot-shaped database: missing"
        " servers.server_id"), done.stdout
    assert "users.user_disc_id" in done.stdout and "(found: users)" in done.stdout
    assert "to apply" not in done.stdout
