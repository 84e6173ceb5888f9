"""`memoryctl demo`: a short conversation through MemoryClient against a running worker.

The demo plays the bot: it writes the directory rows a bot owns (a workspace with decay on,
a known user) and imports a pre-release memory set so the server is at its cap, then sends
four tool calls: a save, a personal save, a refusal, and a save that evicts. It runs on the
standalone database of `make run` only: in an adopted database those rows are the bot's.
"""

from __future__ import annotations

import uuid

from contracts.kinds.create import CommandResult
from db.migrate import mode
from worker.cli import reach, terminal
from worker.client.memory_client import MemoryClient, new_create
from worker.consuming.app import Endpoints
from worker.shared.settings import Settings

LINEAGE = 7


class DemoRefused(RuntimeError):
    """The database is not one the demo may write its rows into."""


async def _prepare_directory(database_url: str, workspace: str, user: str, cap: int) -> None:
    conn = await reach.database_connection(database_url)
    try:
        if (current := await mode(conn)) != "standalone":
            raise DemoRefused(f"the demo writes its own servers, users and memories rows, so it runs only on a"
                              f" standalone database (`make run`'s); this one is {current or 'not set up'}")
        async with conn.transaction():
            server_id = await conn.fetchval(
                "INSERT INTO servers (server_disc_id, memory_decay_enabled, memory_decay_days)"
                " VALUES ($1, true, 30) RETURNING server_id", workspace)
            await conn.execute("INSERT INTO users (user_disc_id, user_nickname) VALUES ($1, 'Mika')", user)
            # An import from before the worker: 90 days old and older, never reinforced, so the
            # oldest may be forgotten (fact #0 the newest, the last one the oldest).
            await conn.executemany(
                "INSERT INTO server_memories (server_id, persona_lineage_id, content, source, created_at)"
                " VALUES ($1, $2, $3, 'legacy', now() - make_interval(days => 90 + $4))",
                [(server_id, LINEAGE + 1, f"imported fact #{i}", i) for i in range(cap)],
            )
    finally:
        await conn.close()


def _show(title: str, lineage: int, result: CommandResult) -> None:
    data = result.data
    terminal.say(f"\n== {title} (persona lineage {lineage})")
    terminal.say(f"   status:  {data.status}")
    if result.success:
        terminal.say(f"   saved:   {data.content_saved!r} (memory {data.memory_id}, scope {data.scope})")
        if data.content_forgotten:
            terminal.say(f"   forgot:  {data.content_forgotten!r}")
        terminal.say(f"   invalidated: {[f'{k.cache}:{k.key}' for k in result.invalidated]}")
    else:
        terminal.say(f"   error:   {result.error}")


async def play(endpoints: Endpoints) -> None:
    settings = Settings.from_env()
    workspace = f"9{uuid.uuid4().int % 10**17:017d}"
    user = f"8{uuid.uuid4().int % 10**17:017d}"
    await _prepare_directory(endpoints.database_url, workspace, user, settings.max_server_memories)
    nc = await reach.nats_connection(endpoints.nats_url, settings.nats_auth.connect_options())
    base = {
        "workspace_id": workspace,
        "persona": {"id": 1, "lineage_id": LINEAGE, "name": "Tomori"},
        "bot_user_id": "100000000000000001",
        "triggerer": {"id": user, "name": "Mika"},
        "channel": {"id": "200000000000000001"},
        "member_matches": [{"id": user, "display_name": "Mika", "username": "mika"}],
        "retrieval": {"rag_available": True, "embedding_model": "text-embedding-3-small",
                      "embedding_credentials": True},
    }
    try:
        async with MemoryClient(nc) as client:
            print(f"workspace {workspace}, user {user}")
            print(f"{settings.max_server_memories} old facts imported for persona lineage {LINEAGE + 1}: at the cap,"
                  f" decay on (30 days). Saved text keeps {{user}} and {{bot}} as placeholders: the bot puts"
                  f" the user's and the persona's names in when it shows a memory.")
            _show("Tomori remembers something about the server", LINEAGE,
                  await client.create(dict(base, tool_args={
                      "memory_content": "The server's movie night is on Fridays",
                      "memory_scope": "server_wide"})))
            _show("Tomori remembers something about Mika", LINEAGE,
                  await client.create(dict(base, tool_args={
                      "memory_content": "{user} prefers green tea", "memory_scope": "target_user",
                      "target_user": "@Mika"})))
            _show("A target nobody knows is refused", LINEAGE,
                  await client.create(dict(base, tool_args={
                      "memory_content": "{user} likes jazz", "memory_scope": "target_user",
                      "target_user": "Someone Else"})))
            _show("At the cap, the oldest unused memory makes room", LINEAGE + 1,
                  await client.create(dict(base, persona={"id": 1, "lineage_id": LINEAGE + 1, "name": "Tomori"},
                                           tool_args={"memory_content": "Mika organises the game nights",
                                                      "memory_scope": "server_wide"})))
    finally:
        await nc.drain()


__all__ = ["new_create", "play"]
