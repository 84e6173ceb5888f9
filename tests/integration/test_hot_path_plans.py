"""The create's context read and its save are planned once per session, not on every call
(the plan_cache_mode of db/functions/memory_create_context.sql and memory_create_batch.sql, which
memory_save_decide's plans follow).

auto_explain shows the plan PostgreSQL ran for the query inside memory_create_context: a plan
made for one call has that call's values in its conditions, a generic plan has `$n`.
"""

from __future__ import annotations

import re

import asyncpg

from contracts.codec import encode
from tests.support.directory import add_server, add_user
from tests.support.planned import planned_batch
from worker.domain.workspace import Limits
from worker.kinds.create.record import SavePlan

from ..conftest import unique
from .helpers import GOOD_RETRIEVAL, add_server_memories, server_save

WORKSPACE = "400000000000000777"
USER = "200000000000000777"


async def test_the_context_read_runs_a_generic_plan_after_many_calls(database_url):
    conn = await asyncpg.connect(database_url)
    plans: list[str] = []
    try:
        await add_server(conn, WORKSPACE)
        await add_user(conn, USER)
        # Past the five calls after which PostgreSQL may switch to a generic plan by itself.
        for i in range(8):
            await conn.fetchval("SELECT memory_create_context($1, $2, $3, $4)", f"warm-{i}", WORKSPACE, [USER], 3)
        await conn.execute("LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0;"
                           " SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = notice;"
                           " SET client_min_messages = notice")
        conn.add_log_listener(lambda _conn, message: plans.append(message.message))
        stored = await conn.fetchval("SELECT memory_create_context($1, $2, $3, $4)", "probe", WORKSPACE, [USER], 3)
    finally:
        await conn.close()

    assert '"server_id"' in stored and USER in stored  # the read itself still answers
    inner = [plan for plan in plans if "FROM directory_workspaces() s WHERE s.server_disc_id = p_workspace_id" in plan]
    assert len(inner) == 1, plans
    assert "server_disc_id = $2" in inner[0]
    assert f"'{WORKSPACE}'::text" not in inner[0]  # a plan made for this call names the value


async def test_the_save_counts_and_picks_its_victim_with_cached_plans_that_skip_the_other_scope(database_url, pool):
    """memory_save_decide (db/functions/memory_save_decide.sql, called by memory_create_batch)
    writes the count and the victim's choice once for both scopes; its plans are generic
    (made once, `$n` in the conditions), the other scope's table is behind a one-time filter, and
    the victim is the head of an index walk in the eviction order, never a sort."""
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=True)
        await add_server_memories(conn, server_id, 7, [90.0] * 20)
    cmd = server_save(ws, "a fact", retrieval=GOOD_RETRIEVAL)
    batch = await planned_batch(pool, [cmd], Limits(max_server_memories=20))
    assert isinstance(batch.ops[0].decision, SavePlan), batch
    request = encode(batch).decode()
    save = ("SELECT stored -> 'facts' ->> 'outcome'"
            " FROM memory_create_batch(jsonb_set($1::jsonb, '{ops,0,command_id}', to_jsonb($2::text)))")

    conn = await asyncpg.connect(database_url)
    plans: list[str] = []
    try:
        for i in range(8):  # each replaces one of the 20 dormant rows: the owner stays at the cap
            assert await conn.fetchval(save, request, f"{cmd.command_id}-{i}") == "saved_with_eviction"
        await conn.execute("LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0;"
                           " SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = notice;"
                           " SET client_min_messages = notice")
        conn.add_log_listener(lambda _conn, message: plans.append(message.message))
        assert await conn.fetchval(save, request, f"{cmd.command_id}-probe") == "saved_with_eviction"
    finally:
        await conn.close()

    count = [plan for plan in plans if "FROM owned" in plan and "count(*)" in plan]
    victim = [plan for plan in plans if "FROM owned" in plan and "LIMIT 1" in plan]
    assert len(count) == 1 and len(victim) == 1, plans
    for plan in (count[0], victim[0]):
        assert re.search(r"One-Time Filter: .*'personal'::text = \$\d+", plan), plan  # planned, never run
        assert re.search(r"server_id = \$\d+", plan), plan  # generic: the owner is a parameter
    # The eviction order is the index's order: the head of the walk is the victim, with no Sort
    # of the owner's rows (a changed ORDER BY line without its index rebuilt shows one here).
    assert "server_memories_eviction" in victim[0], victim[0]
    assert not re.search(r"(?:^|->)\s*(?:Incremental )?Sort\s+\(cost", victim[0], re.MULTILINE), victim[0]
