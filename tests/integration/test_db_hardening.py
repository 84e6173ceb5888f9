"""Database hardening (issue 7): the worker's least-privilege role and parameterized SQL.

deploy/postgres/worker_role.sql is applied by the schema owner to a migrated database, as an
operator would; the worker's services then run on a pool connected as `memory_worker`. Its
statements work; schema changes are refused. Then SQL-injection strings go through every text
field of a create and of a manual add, and come back verbatim from the tables, the stored
command (a create's decision) and the answers and events rendered from it.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from contracts.codec import OP_RESULT_DECODER, RESULT_DECODER
from contracts.kinds.manual import ManualMemory
from db.migrate import migrate_dsn
from db.pool import create_pool
from db.repository import MemoryRepository
from tests.conftest import ROOT, clone_database, unique
from tests.integration.helpers import GOOD_RETRIEVAL, add_server_memories, inbox_row_events
from tests.support.commands import TRIGGERER_ID, manual_command, reinforce_command
from tests.support.directory import add_server, add_user
from worker.client.memory_client import new_create
from worker.domain.workspace import Limits
from worker.kinds.create.service import CreateMemoryService
from worker.kinds.manual.service import ManualMemoryService
from worker.kinds.reinforce.service import ReinforceService
from worker.services.stored import answer, published_events

ROLE = "memory_worker"
ROLE_SQL = ROOT / "deploy" / "postgres" / "worker_role.sql"
LINEAGE = 7
BOT = "100000000000000001"
MANAGER = "300000000000000001"

# NUL-free: PostgreSQL text cannot hold NUL, and the decoders refuse it before any SQL runs.
INJECTIONS = (
    "'; DROP TABLE users; --",
    "\\' OR 1=1 --",
    "$$; DROP TABLE server_memories; $$",
    "$tag$ DELETE FROM processed_commands $tag$",
    "Robert'); DELETE FROM servers WHERE ('1'='1",
    "' UNION SELECT rolname, rolpassword FROM pg_authid --",
    '"; TRUNCATE processed_commands; --',
    "$1 $2 %s %(name)s :name ? \\x27 \\\\",
    "E'\\\\' || pg_sleep(10) || '",
    "/* */ ; COMMIT; DROP SCHEMA public CASCADE; --",
    "x'; SELECT set_config('role', 'postgres', false); --",
    "ü 🎉 \u2019; \u201c --",
)
# Tags are parsed like the panels do (split on commas, surrounding quotes stripped, at most 32
# UTF-16 units, 5 kept): these survive parsing unchanged.
INJECTION_TAGS = ["x' OR 1=1 --", "a$$b$$c", "1; DROP TABLE users --", "#ch'; DELETE FROM x", "%s $1 :n ? \\x"]


@pytest.fixture(scope="module")
async def hardened(pg_server, template_db):
    """A migrated database with worker_role.sql applied by the owner; (owner DSN, role DSN)."""
    owner_dsn = await clone_database(pg_server, template_db)
    conn = await asyncpg.connect(owner_dsn)
    try:
        await conn.execute(ROLE_SQL.read_text())
        database = await conn.fetchval("SELECT current_database()")
    finally:
        await conn.close()
    return owner_dsn, f"postgresql://{ROLE}@127.0.0.1:{pg_server.port}/{database}"


@pytest.fixture(scope="module")
async def role_pool(hardened):
    pool = await create_pool(hardened[1], min_size=1, max_size=5)
    yield pool
    await pool.close()


@pytest.fixture(scope="module")
async def owner(hardened):
    conn = await asyncpg.connect(hardened[0])
    yield conn
    await conn.close()


def limits(**over) -> Limits:
    return Limits(**{"max_memory_length": 1000, "max_server_memories": 100, "max_personal_memories": 100, **over})


def manual(workspace: str, **fields) -> ManualMemory:
    return manual_command(workspace, **{"actor": MANAGER, "lineage_id": LINEAGE, **fields})


def strings_in(value) -> list[str]:
    """Every string inside a decoded JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_in(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return []


# --------------------------------------------------------------------------------------------
# The role


async def test_the_role_is_what_the_file_says(owner, hardened):
    role = await owner.fetchrow("SELECT rolsuper, rolcreatedb, rolcreaterole, rolcanlogin, rolbypassrls"
                                " FROM pg_roles WHERE rolname = $1", ROLE)
    assert dict(role) == {"rolsuper": False, "rolcreatedb": False, "rolcreaterole": False, "rolcanlogin": True,
                          "rolbypassrls": False}
    # Owns nothing; may not create in the schema.
    assert await owner.fetchval("SELECT count(*) FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner"
                                " WHERE r.rolname = $1", ROLE) == 0
    assert await owner.fetchval("SELECT has_schema_privilege($1, 'public', 'CREATE')", ROLE) is False
    assert await owner.fetchval("SELECT has_schema_privilege($1, 'memory_worker', 'CREATE')", ROLE) is False
    assert await owner.fetchval("SELECT has_database_privilege($1, current_database(), 'CREATE')", ROLE) is False
    # Applying the file again (after a migration, say) changes nothing and fails nothing.
    await owner.execute(ROLE_SQL.read_text())


async def test_the_workers_statements_work_as_the_role(role_pool, owner):
    repo = MemoryRepository(role_pool)
    ws = unique()
    server_id = await add_server(owner, ws, decay=True, decay_days=30)
    # Two dormant legacy rows at a cap of 2: the save evicts one (delete + insert, inbox).
    await add_server_memories(owner, server_id, LINEAGE, [90, 60])
    create = CreateMemoryService(repo, limits(max_server_memories=2))
    cmd = new_create(workspace_id=ws, persona={"id": 1, "lineage_id": LINEAGE, "name": "Tomori"},
                     bot_user_id=BOT, channel={"id": "200000000000000001"}, retrieval=GOOD_RETRIEVAL,
                     triggerer={"id": TRIGGERER_ID, "name": "someone"},
                     tool_args={"memory_content": "likes tea", "memory_scope": "server_wide"})
    handled = await create.run(cmd)
    result = RESULT_DECODER.decode(handled.answer.result)
    assert result.data.status == "memory_saved_with_eviction", result
    assert (await create.run(cmd)).duplicate  # the inbox answers a repeat

    # A personal save for a known user, in a workspace the worker has never seen (it registers it).
    user = unique()
    await add_user(owner, user, nickname="mika")
    other_ws = unique()
    personal = new_create(workspace_id=other_ws, persona={"id": 1, "lineage_id": LINEAGE, "name": "Tomori"},
                          bot_user_id=BOT, channel={"id": "200000000000000001"},
                          triggerer={"id": TRIGGERER_ID, "name": "someone"},
                          member_matches=[{"id": user, "display_name": "Mika"}],
                          tool_args={"memory_content": "{user} likes tea", "memory_scope": "target_user",
                                     "target_user": "mika"})
    assert RESULT_DECODER.decode((await create.run(personal)).answer.result).data.status == "memory_saved_successfully"

    panels = ManualMemoryService(repo, limits())
    added = OP_RESULT_DECODER.decode((await panels.run(manual(ws, action="add", content="a fact", tags="t"))).answer.result)
    assert added.success, added
    edited = OP_RESULT_DECODER.decode((await panels.run(
        manual(ws, action="edit", memory_id=added.data.memory_id, content="a new fact"))).answer.result)
    assert edited.success, edited
    removed = OP_RESULT_DECODER.decode((await panels.run(
        manual(ws, action="remove", memory_id=added.data.memory_id))).answer.result)
    assert removed.success, removed

    reinforce = reinforce_command(ws, [("server", result.data.memory_id)], lineage_id=LINEAGE)
    assert OP_RESULT_DECODER.decode((await ReinforceService(repo).run(reinforce)).answer.result).success

    # The give-up path's read, the result lookup and the pruning.
    stored = await repo.stored_command(cmd.command_id, ws)
    assert stored is not None and published_events(stored) == handled.events
    assert answer(stored).result == handled.answer.result
    await owner.execute("UPDATE processed_commands SET processed_at = $1 WHERE command_id = $2",
                        datetime.now(UTC) - timedelta(days=400), personal.command_id)
    assert await repo.prune(30, 5000) >= 1


@pytest.mark.parametrize("statement", [
    "CREATE TABLE stolen (x text)",
    "CREATE TABLE public.stolen (x text)",
    "CREATE SCHEMA mine",
    "ALTER TABLE server_memories ADD COLUMN owned boolean",
    "ALTER TABLE users DROP COLUMN user_nickname",
    "DROP TABLE users",
    "DROP TABLE processed_commands CASCADE",
    "DROP FUNCTION memory_lock_owner(text, text)",
    "TRUNCATE processed_commands",
    "CREATE INDEX stolen_ix ON server_memories (content)",
    "CREATE FUNCTION stolen() RETURNS int LANGUAGE sql AS 'SELECT 1'",
    "CREATE OR REPLACE FUNCTION memory_lock_owner(p_scope text, p_owner_id text) RETURNS void"
    " LANGUAGE sql AS 'SELECT'",
    "CREATE TRIGGER t BEFORE INSERT ON processed_commands FOR EACH ROW EXECUTE FUNCTION memory_lock_owner()",
    "ALTER ROLE memory_worker SUPERUSER",
    "ALTER ROLE memory_worker CREATEROLE",
    "CREATE ROLE sneaky LOGIN",
    "GRANT pg_read_all_data TO memory_worker",
    "INSERT INTO schema_migrations (version, name) VALUES (999, '999_x.sql')",
    "DELETE FROM schema_migrations",
    "UPDATE database_mode SET mode = 'adopted'",
    "CREATE TABLE memory_worker.stolen (x text)",
    "ALTER DEFAULT PRIVILEGES FOR ROLE postgres GRANT ALL ON TABLES TO memory_worker",
    "COMMENT ON TABLE users IS 'mine'",
    "SELECT * FROM pg_authid",
])
async def test_schema_changes_are_refused(role_pool, statement):
    async with role_pool.acquire() as conn:
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute(statement)


async def test_the_tables_are_still_there_and_owned_by_the_owner(owner):
    tables = await owner.fetch("SELECT schemaname || '.' || tablename AS name, tableowner FROM pg_tables"
                               " WHERE schemaname IN ('public', 'memory_worker')")
    names = {t["name"] for t in tables}
    assert {"public.users", "public.servers", "public.server_memories", "public.personal_memories",
            "public.metric_samples", "memory_worker.processed_commands",
            "memory_worker.schema_migrations", "memory_worker.database_mode"} <= names
    assert {t["tableowner"] for t in tables} == {"postgres"}


async def test_a_worker_start_finds_nothing_to_migrate_as_the_role(hardened):
    assert await migrate_dsn(hardened[1]) == []


# --------------------------------------------------------------------------------------------
# Injection strings, stored verbatim


async def test_injection_strings_in_every_create_field_are_stored_verbatim(role_pool, owner):
    repo = MemoryRepository(role_pool)
    create = CreateMemoryService(repo, limits())
    thought_log = "400000000000000001"
    for i, text in enumerate(INJECTIONS):
        # The workspace id and the command id are text too.
        ws = f"{text} ws{i}-{uuid.uuid4().hex[:6]}"
        await owner.execute("INSERT INTO servers (server_disc_id, thought_log_channel_id) VALUES ($1, $2)",
                            ws, thought_log)
        user = unique()
        await add_user(owner, user, nickname=text)
        members = [{"id": user, "display_name": text, "nickname": text, "global_name": text, "username": text}]
        common = dict(workspace_id=ws, persona={"id": 1, "lineage_id": LINEAGE, "name": text}, bot_user_id=BOT,
                      triggerer={"id": TRIGGERER_ID, "name": text},
                      channel={"id": "200000000000000001", "url": text, "everyone_can_view": True})

        # A server-wide save: content, persona name (notice footer), channel url (thought log link).
        server_cmd = new_create(command_id=f"{text} c{i}", **common,
                                tool_args={"memory_content": text, "memory_scope": "server_wide"})
        # A personal save whose target and member names are the string.
        personal_cmd = new_create(**common, member_matches=members,
                                  tool_args={"memory_content": f"{text} (personal)", "memory_scope": "target_user",
                                             "target_user": text})
        # Two members of that name: ambiguous, the candidates name them.
        other = unique()
        ambiguous_cmd = new_create(**common, member_matches=[*members, {**members[0], "id": other}],
                                   tool_args={"memory_content": "x", "memory_scope": "target_user",
                                              "target_user": text})
        # Nobody of that name: not found, the result repeats the name.
        missing_cmd = new_create(**common, tool_args={"memory_content": "x", "memory_scope": "target_user",
                                                      "target_user": f"{text} nobody"})

        saved = RESULT_DECODER.decode((await create.run(server_cmd)).answer.result)
        assert saved.data.status == "memory_saved_successfully", (text, saved)
        row = await owner.fetchrow(
            "SELECT m.content, s.server_disc_id FROM server_memories m JOIN servers s USING (server_id)"
            " WHERE m.server_memory_id = $1", saved.data.memory_id)
        assert (row["content"], row["server_disc_id"]) == (text, ws)
        stored = await owner.fetchrow("SELECT command_id, workspace_id, decision::text AS decision"
                                      " FROM processed_commands WHERE command_id = $1", f"{text} c{i}")
        assert (stored["command_id"], stored["workspace_id"]) == (f"{text} c{i}", ws)
        assert json.loads(stored["decision"])["content"] == text
        result = await _stored_answer(repo, server_cmd)  # what a repeat and the lookup answer
        assert result["data"]["content_saved"] == text
        notice = result["notice"]
        assert notice["thought_log"]["source_url"] == text, notice
        assert notice["thought_log"]["card"]["footer"] == f"Saved by {text}"
        # The events its inbox row builds again for a redelivery.
        events = [json.loads(bytes(e.payload)) for e in await inbox_row_events(role_pool, server_cmd)]
        assert [p["command_id"] for p in events] == [f"{text} c{i}"] * 2
        assert events[0]["key"] == ws and events[1]["content"] == text and events[1]["owner_id"] == ws

        personal = RESULT_DECODER.decode((await create.run(personal_cmd)).answer.result)
        assert personal.data.status == "memory_saved_successfully", (text, personal)
        assert personal.data.target_user == text
        assert await owner.fetchval("SELECT content FROM personal_memories WHERE personal_memory_id = $1",
                                    personal.data.memory_id) == f"{text} (personal)"

        ambiguous = RESULT_DECODER.decode((await create.run(ambiguous_cmd)).answer.result)
        assert ambiguous.data.status == "memory_save_failed_ambiguous_user", (text, ambiguous)
        assert json.loads(await owner.fetchval("SELECT decision::text FROM processed_commands WHERE command_id = $1",
                                               ambiguous_cmd.command_id))["candidates"] == [text, text]
        stored_ambiguous = await _stored_answer(repo, ambiguous_cmd)
        assert stored_ambiguous["data"]["candidates"] == [text, text]
        assert stored_ambiguous["data"]["target_user"] == text

        missing = RESULT_DECODER.decode((await create.run(missing_cmd)).answer.result)
        assert missing.data.status == "memory_save_failed_user_not_found", (text, missing)
        stored_missing = await _stored_answer(repo, missing_cmd)
        assert f"{text} nobody" in strings_in(stored_missing)

        # The users row the bot wrote is untouched.
        assert await owner.fetchval("SELECT user_nickname FROM users WHERE user_disc_id = $1", user) == text
    await _intact(owner)


async def _stored_answer(repo: MemoryRepository, cmd) -> dict:
    """The answer rendered from the command's stored row, decoded."""
    stored = await repo.stored_command(cmd.command_id, cmd.workspace_id)
    assert stored is not None, cmd.command_id
    return json.loads(answer(stored).result)


async def test_injection_strings_in_a_manual_add_are_stored_verbatim(role_pool, owner):
    panels = ManualMemoryService(MemoryRepository(role_pool), limits())
    ws = unique()
    await add_server(owner, ws)
    for text in INJECTIONS:
        result = OP_RESULT_DECODER.decode((await panels.run(manual(ws, action="add", content=text,
                                                                   tags=INJECTION_TAGS))).answer.result)
        assert result.success, (text, result)
        row = await owner.fetchrow("SELECT content, tags FROM server_memories WHERE server_memory_id = $1",
                                   result.data.memory_id)
        assert (row["content"], list(row["tags"])) == (text, INJECTION_TAGS)
    # The same tags as one comma-separated text, and every string at once in a batch.
    batch = OP_RESULT_DECODER.decode((await panels.run(manual(
        ws, action="add_batch", contents=[f"batch {t}" for t in INJECTIONS], tags=", ".join(INJECTION_TAGS)))).answer.result)
    assert batch.success, batch
    rows = await owner.fetch("SELECT content, tags FROM server_memories WHERE server_memory_id = ANY($1::bigint[])",
                             batch.data.memory_ids)
    assert sorted(r["content"] for r in rows) == sorted(f"batch {t}" for t in INJECTIONS)
    assert all(list(r["tags"]) == INJECTION_TAGS for r in rows)
    await _intact(owner)


async def _intact(owner: asyncpg.Connection) -> None:
    """Nothing the strings ask for happened: every table is there and has its rows."""
    for table in ("users", "servers", "server_memories", "processed_commands"):
        assert await owner.fetchval(f"SELECT count(*) FROM {table}") > 0, table
    assert await owner.fetchval("SELECT has_schema_privilege('memory_worker', 'public', 'CREATE')") is False
