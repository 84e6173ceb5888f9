"""64-bit persona lineages end to end (issue 24, finding 8): TomoriBot's lineage ids are bigint,
so the contract takes any lineage up to 2^63 - 1 and the worker stores it as sent. A save, a
panel add, a reinforcement and `memoryctl memories list --lineage` with a lineage beyond int32;
one beyond int64 is refused naming the field."""

from __future__ import annotations

import msgspec
import pytest

from contracts.kinds.create import SAVED
from tests.conftest import worker_env
from tests.e2e.bus import create_fields, unique
from tests.e2e.test_e2e_panels import panel
from tests.memoryctl import memoryctl
from tests.support.commands import reinforce_fields
from tests.support.directory import add_server

BIG = 2**40 + 7  # beyond int32, as a bigint sequence hands them out after years
LARGEST = 2**63 - 1


async def test_a_lineage_beyond_int32_is_saved_listed_and_reinforced(e2e_worker, memory, bot_db, nats_server,
                                                                     e2e_database_url):
    ws = unique()
    await add_server(bot_db, ws)

    saved = await memory.create(create_fields(ws, "the server's lineage is large", lineage_id=BIG))
    largest = await memory.create(create_fields(ws, "and this one is the largest", lineage_id=LARGEST))
    added = await memory.manual(panel(ws, "add", lineage=BIG, content="a panel fact of a large lineage"))
    reinforced = await memory.reinforce({"workspace_id": ws,
                                         **reinforce_fields([("server", saved.data.memory_id)], lineage_id=BIG)})

    assert (saved.data.status, largest.data.status) == (SAVED, SAVED), (saved, largest)
    assert added.data.status == "added" and (reinforced.data.status, reinforced.data.count) == ("reinforced", 1)
    rows = await bot_db.fetch("SELECT persona_lineage_id, content FROM server_memories m JOIN servers s"
                              " USING (server_id) WHERE s.server_disc_id = $1 ORDER BY 1, 2", ws)
    assert [tuple(r) for r in rows] == [(BIG, "a panel fact of a large lineage"),
                                        (BIG, "the server's lineage is large"),
                                        (LARGEST, "and this one is the largest")]
    env = worker_env(nats_server.url, e2e_database_url)
    listed = await memoryctl(["memories", "list", "--workspace", ws, "--lineage", str(BIG)], env)
    lines = listed.stdout.split("\n\n")[0].splitlines()[1:]
    assert len(lines) == 2 and all(line.split()[1] == str(BIG) for line in lines), listed.stdout


async def test_a_lineage_beyond_int64_is_refused_naming_the_field(memory, bot_db):
    ws = unique()
    await add_server(bot_db, ws)
    fields = create_fields(ws, "too large", lineage_id=LARGEST)
    fields["persona"] = {**fields["persona"], "lineage_id": LARGEST + 1}

    # The client refuses it before sending (a raw publish is refused by the worker alike:
    # tests/e2e/test_e2e_fuzz.py, "persona.lineage_id beyond int64").
    with pytest.raises(msgspec.ValidationError, match=r"persona\.lineage_id"):
        await memory.create(fields)


async def test_every_lineage_column_and_parameter_is_bigint(bot_db):
    columns = await bot_db.fetch(
        "SELECT table_name || '.' || column_name, data_type FROM information_schema.columns"
        " WHERE table_schema = 'public' AND column_name IN ('persona_lineage_id', 'lineage_id') ORDER BY 1")
    assert {name: kind for name, kind in columns} == {"persona_nicknames.lineage_id": "bigint",
                                                      "personal_memories.persona_lineage_id": "bigint",
                                                      "server_memories.persona_lineage_id": "bigint"}
    narrow = await bot_db.fetch(
        "SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname = 'memory_worker' AND pg_get_function_identity_arguments(p.oid) ~ 'lineage\\w* integer'")
    assert narrow == []
    context = await bot_db.fetchval("SELECT pg_get_function_identity_arguments('memory_worker.memory_create_context'"
                                    "::regproc)")
    assert context.endswith("p_lineage_id bigint"), context
