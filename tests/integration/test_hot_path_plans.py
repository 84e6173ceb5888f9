"""The create's context read is planned once per session, not on every call (db/migrations/001_baseline.sql).

auto_explain shows the plan PostgreSQL ran for the query inside memory_create_context: a plan
made for one call has that call's values in its conditions, a generic plan has `$n`.
"""

from __future__ import annotations

import asyncpg

from tests.support.directory import add_server, add_user

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
