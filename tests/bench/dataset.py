"""The benchmark's world: workspaces, known users, owners pre-filled at the cap, background
rows of other owners, and the stream of `memory.create` commands a bot would send.

One `Spec` per command describes it in plain values; the worker run turns it into a real
`CreateMemory` (as a bot would build it), the baseline into the exact SQL the worker would
execute for it, and the peer into a classic count-then-insert. All three therefore do the same
saves for the same owners, in the same order.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime

import asyncpg

from contracts.codec import encode
from contracts.kinds.create import CreateMemory
from tests.support.commands import create_fields
from worker.client.memory_client import new_create
from worker.domain.notice import NoticeRoute
from worker.kinds.create.record import SavePlan

WS_BASE = 400_000_000_000_000_000  # workspace (guild) snowflakes
USER_BASE = 500_000_000_000_000_000  # known users
CHANNEL_BASE = 600_000_000_000_000_000
BG_WS_BASE = 700_000_000_000_000_000  # owners of background rows: never sent a command
BG_USER_BASE = 800_000_000_000_000_000
BOT_ID = "990000000000000001"
PERSONA_NAME = "Tomori"
BG_ROWS_PER_OWNER = 50
RETRIEVAL = {"rag_available": True, "embedding_model": "text-embedding-3-small", "embedding_credentials": True}

_FIRST = ["Aki", "Bea", "Cyd", "Dana", "Eli", "Fen", "Gus", "Hana", "Ivo", "Juno", "Kai", "Lou", "Mika", "Noor",
          "Oli", "Pat", "Quin", "Rae", "Sol", "Tam"]
_THINGS = ["green tea", "black coffee", "spicy ramen", "lo-fi playlists", "board games", "retro consoles",
           "mechanical keyboards", "hiking trips", "sci-fi novels", "watercolour painting", "jazz records",
           "speedruns", "houseplants", "rainy days", "dark chocolate", "cat videos"]
_GAMES = ["Minecraft", "Stardew Valley", "Hollow Knight", "Celeste", "Factorio", "Terraria", "Hades", "Tetris"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_TOPICS = ["art", "music", "gaming", "study", "memes", "introductions", "events", "off-topic"]


@dataclass(frozen=True, slots=True)
class World:
    """The directory the bot has written, and which owners start at the cap."""

    workspaces: int
    users_per_workspace: int = 2
    full_share: float = 0.2  # owners (server and personal) pre-filled at the cap, with eviction permitted
    cap: int = 100

    def workspace_id(self, ws: int) -> str:
        return str(WS_BASE + ws)

    def lineage(self, ws: int) -> int:
        return 1 + ws % 3

    def persona_id(self, ws: int) -> int:
        return 10 + self.lineage(ws)

    def is_full(self, ws: int) -> bool:
        # Spread evenly over the workspace numbers (and so over partitions).
        return int((ws + 1) * self.full_share) > int(ws * self.full_share)

    def full_workspaces(self) -> list[int]:
        return [ws for ws in range(self.workspaces) if self.is_full(ws)]

    def user_index(self, ws: int, k: int) -> int:
        return ws * self.users_per_workspace + k

    def user_id(self, ws: int, k: int) -> str:
        return str(USER_BASE + self.user_index(ws, k))

    def display_name(self, ws: int, k: int) -> str:
        n = self.user_index(ws, k)
        return f"{_FIRST[n % len(_FIRST)]} {n}"

    def username(self, ws: int, k: int) -> str:
        return f"user_{self.user_index(ws, k)}"

    @property
    def owners(self) -> int:
        return self.workspaces * (1 + self.users_per_workspace)

    @property
    def full_owners(self) -> int:
        return len(self.full_workspaces()) * (1 + self.users_per_workspace)


@dataclass(frozen=True, slots=True)
class Spec:
    """One memory.create, in plain values."""

    command_id: str
    ws: int
    personal: bool
    user: int  # the target (personal) or the teacher (server): index within the workspace
    content: str


def specs(world: World, count: int, *, seed: int, prefix: str, personal_share: float = 0.3) -> list[Spec]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        ws = rng.randrange(world.workspaces)
        personal = rng.random() < personal_share
        user = rng.randrange(world.users_per_workspace)
        thing, other = rng.sample(_THINGS, 2)
        if personal:
            content = rng.choice((
                f"{{user}} prefers {thing} over {other} and usually plays {rng.choice(_GAMES)} on "
                f"{rng.choice(_DAYS)} evenings",
                f"{{user}} said their favourite comfort thing is {thing}; they dislike {other} (noted #{i})",
                f"{{user}} is learning to draw and wants feedback on {thing} sketches every {rng.choice(_DAYS)}",
            ))
        else:
            content = rng.choice((
                f"The {rng.choice(_TOPICS)} channel meets every {rng.choice(_DAYS)} at {rng.randrange(12, 23)}:00 "
                f"to talk about {thing}",
                f"This server's running joke is that {{char}} secretly loves {thing} more than {other}",
                f"Members voted {thing} as the theme of the next {rng.choice(_TOPICS)} event (poll #{i})",
            ))
        out.append(Spec(f"{prefix}-{i}", ws, personal, user, content))
    return out


def fields(world: World, spec: Spec) -> dict:
    """The memory.create fields a bot sends for this spec (MemoryClient.create / new_create)."""
    ws = spec.ws
    workspace_id = world.workspace_id(ws)
    teacher = spec.user
    participants = [
        {"id": world.user_id(ws, k), "kind": "discord", "label": world.display_name(ws, k),
         "primary_label": world.display_name(ws, k), "aliases": [world.username(ws, k)]}
        for k in range(world.users_per_workspace)
    ]
    target: str | None = None
    member_matches: list[dict] = []
    if spec.personal:
        target = world.display_name(ws, spec.user)
        member_matches = [{"id": world.user_id(ws, spec.user), "display_name": world.display_name(ws, spec.user),
                           "nickname": None, "global_name": world.display_name(ws, spec.user),
                           "username": world.username(ws, spec.user), "is_bot": False}]
    channel = str(CHANNEL_BASE + ws)
    return create_fields(
        workspace_id, spec.content, scope="target_user" if spec.personal else "server_wide", target=target,
        participants=participants, member_matches=member_matches, retrieval=RETRIEVAL,
        command_id=spec.command_id, bot_user_id=BOT_ID,
        persona={"id": world.persona_id(ws), "lineage_id": world.lineage(ws), "name": PERSONA_NAME},
        triggerer={"id": world.user_id(ws, teacher), "name": world.display_name(ws, teacher)},
        channel={"id": channel, "is_dm": False, "is_private": False, "everyone_can_view": True,
                 "url": f"https://discord.com/channels/{workspace_id}/{channel}/{spec.command_id}"})


def command(world: World, spec: Spec) -> CreateMemory:
    return new_create(**fields(world, spec), issued_at=datetime.now(UTC))


# --- seeding -------------------------------------------------------------------------------

_SEED_DIRECTORY = """
INSERT INTO servers (server_disc_id, memory_decay_enabled, memory_decay_days, tool_notice_verbosity,
                     thought_log_channel_id)
SELECT ($1::bigint + g)::text, g = ANY ($3::int[]), 30,
       CASE WHEN g % 10 < 3 THEN 'verbose' ELSE 'minimal' END,
       CASE WHEN g % 4 = 0 THEN ($4::bigint + g)::text END
FROM generate_series(0, $2 - 1) g;
"""

_SEED_USERS = """
INSERT INTO users (user_disc_id) SELECT ($1::bigint + g)::text FROM generate_series(0, $2 - 1) g;
"""

# Owners that never receive a command: servers and users with BG_ROWS_PER_OWNER rows each.
_SEED_BG_SERVERS = """
INSERT INTO servers (server_disc_id) SELECT ($1::bigint + g)::text FROM generate_series(0, $2 - 1) g;
"""

# At-cap owners get `cap` dormant legacy/imported rows of their persona's lineage (eligible for
# eviction); background owners get rows spread over the last year, some reinforced, a few
# manual. Both go in as one insert per table in random order, so an owner's rows are scattered
# over the heap as years of real use would leave them.
_SEED_SERVER_MEMORIES = """
INSERT INTO server_memories (server_id, persona_id, persona_lineage_id, content, created_at, updated_at,
                             manually_written, source, last_reinforced_at, reinforcement_count)
SELECT server_id, 10 + lineage, lineage, content, created, created, manual, source, reinforced,
       CASE WHEN reinforced IS NULL THEN 0 ELSE 1 + n % 5 END
FROM (
    SELECT s.server_id, 1 + (s.server_disc_id::bigint - $1::bigint) % 3 AS lineage, n,
           'Legacy note ' || n || ': the server agreed that ' || (ARRAY['tea','coffee','ramen','jazz'])[1 + n % 4]
               || ' is the official drink of the ' || (ARRAY['art','music','gaming','study'])[1 + n % 4]
               || ' channel, per the old bot''s records' AS content,
           now() - interval '60 days' - make_interval(hours => n) AS created,
           false AS manual, CASE WHEN n % 2 = 0 THEN 'legacy' ELSE 'import' END AS source,
           NULL::timestamptz AS reinforced
    FROM servers s, generate_series(1, $3) n
    WHERE s.server_disc_id::bigint - $1::bigint = ANY ($2::int[])
      AND s.server_disc_id::bigint BETWEEN $1::bigint AND $1::bigint + 1000000000
    UNION ALL
    SELECT s.server_id, 1 + n % 3, n,
           'Background fact ' || n || ' of this server: members like ' || (ARRAY['tea','coffee','ramen','jazz'])[1 + n % 4]
               || ' and meet on ' || (ARRAY['Mondays','Fridays','Sundays'])[1 + n % 3],
           now() - make_interval(hours => (n * 97 + s.server_id) % 8760),
           n % 10 = 0, CASE WHEN n % 10 = 0 THEN 'manual' ELSE 'model' END,
           CASE WHEN n % 3 = 0 THEN now() - make_interval(hours => (n * 31) % 2000) END
    FROM servers s, generate_series(1, $5) n
    WHERE s.server_disc_id::bigint >= $4::bigint
) rows
ORDER BY random();
"""

_SEED_PERSONAL_MEMORIES = """
INSERT INTO personal_memories (user_id, persona_lineage_id, content, created_at, updated_at, manually_written,
                               source, last_reinforced_at, reinforcement_count)
SELECT user_id, lineage, content, created, created, manual, source, reinforced,
       CASE WHEN reinforced IS NULL THEN 0 ELSE 1 + n % 5 END
FROM (
    SELECT u.user_id, 1 + ((u.user_disc_id::bigint - $1::bigint) / $6) % 3 AS lineage, n,
           'Legacy note ' || n || ': {user} once said they like ' || (ARRAY['tea','coffee','ramen','jazz'])[1 + n % 4]
               || ' and play ' || (ARRAY['Tetris','Hades','Celeste'])[1 + n % 3] || ' on weekends' AS content,
           now() - interval '60 days' - make_interval(hours => n) AS created,
           false AS manual, CASE WHEN n % 2 = 0 THEN 'legacy' ELSE 'import' END AS source,
           NULL::timestamptz AS reinforced
    FROM users u, generate_series(1, $3) n
    WHERE (u.user_disc_id::bigint - $1::bigint) / $6 = ANY ($2::int[])
      AND u.user_disc_id::bigint BETWEEN $1::bigint AND $1::bigint + 1000000000
    UNION ALL
    SELECT u.user_id, n % 4, n,
           'Background fact ' || n || ': {user} enjoys ' || (ARRAY['tea','coffee','ramen','jazz'])[1 + n % 4]
               || ' and talks about ' || (ARRAY['Tetris','Hades','Celeste'])[1 + n % 3],
           now() - make_interval(hours => (n * 89 + u.user_id) % 8760),
           n % 10 = 0, CASE WHEN n % 10 = 0 THEN 'manual' ELSE 'model' END,
           CASE WHEN n % 3 = 0 THEN now() - make_interval(hours => (n * 37) % 2000) END
    FROM users u, generate_series(1, $5) n
    WHERE u.user_disc_id::bigint >= $4::bigint
) rows
ORDER BY random();
"""


# A live database's inbox holds every command of the last INBOX_RETENTION_DAYS: commands
# processed before the run, here HISTORY_PREFIX + <n> (no bench command has that prefix), spread
# over the last 5 days (inside every retention, so the pruner leaves them alone during the run),
# each stored as a server's plain save stores it: its decision (the worker's SavePlan, of
# realistic size) and what the save learned (db/migrations/009_decisions.sql). Without them the
# inbox is empty when the worker's sessions plan their queries, and PostgreSQL keeps those plans
# (sequential scans of a table it believes empty) while the run fills the tables: every create
# then costs more than the one before (measured: 942 creates/s over the first 4,000 of a run,
# 573 over the fifth 4,000), which is a brand-new database's first minute, before autovacuum's
# first ANALYZE, not a live one.
HISTORY_PREFIX = "history-"
_SEED_INBOX_HISTORY = """
INSERT INTO processed_commands (command_id, kind, workspace_id, decision, facts, processed_at, applied_by)
SELECT $4::text || g, 'create', ($1::bigint + g % $2)::text,
       $5::jsonb || jsonb_build_object('owner_id', ($1::bigint + g % $2)::text,
                                       'content', 'History note ' || g || repeat(' of a saved fact', 30)),
       jsonb_build_object('outcome', 'saved', 'memory_id', g),
       now() - make_interval(secs => g * 432000.0 / $3),
       g
FROM generate_series(1, $3) g;
"""


def _history_decision() -> str:
    """A plain server save's decision as the worker stores it; the owner and content vary per row."""
    route = NoticeRoute(verbosity="minimal", hidden=False, conversation_channel_id=str(CHANNEL_BASE),
                        thought_log_channel_id=None, source_url=None, thought_log_skipped="not_configured")
    plan = SavePlan(scope="server", tool_scope="server_wide", owner_id="", user_id=None, lineage_id=1,
                    persona_id=11, persona_name=PERSONA_NAME, content="", cap=100, blocked_by=("decay_off",),
                    decay_days=30, target_label=None, teacher_id=None, proxy=False, notice=route)
    return encode(plan).decode()


@dataclass(frozen=True, slots=True)
class SeedReport:
    workspaces: int
    users: int
    full_owners: int
    at_cap_rows: int
    background_rows: int
    background_owners: int
    history_commands: int
    seconds: float


async def seed(dsn: str, world: World, background_rows: int, history: int = 20_000) -> SeedReport:
    """Write the directory, the at-cap owners, `background_rows` rows of other owners, and
    `history` commands processed before the run (inbox rows as the worker stores a save)."""
    import time

    started = time.perf_counter()
    full = world.full_workspaces()
    bg_owners = max(2, -(-background_rows // BG_ROWS_PER_OWNER))
    bg_servers, bg_users = bg_owners // 2, bg_owners - bg_owners // 2
    # Owners split the rows evenly; the last few may hold a row fewer.
    per_owner = -(-background_rows // bg_owners)
    conn = await asyncpg.connect(dsn)
    try:
        async with conn.transaction():
            await conn.execute(_SEED_DIRECTORY, WS_BASE, world.workspaces, full, CHANNEL_BASE)
            await conn.execute(_SEED_USERS, USER_BASE, world.workspaces * world.users_per_workspace)
            await conn.execute(_SEED_BG_SERVERS, BG_WS_BASE, bg_servers)
            await conn.execute(_SEED_USERS, BG_USER_BASE, bg_users)
            await conn.execute(_SEED_SERVER_MEMORIES, WS_BASE, full, world.cap, BG_WS_BASE, per_owner)
            await conn.execute(_SEED_PERSONAL_MEMORIES, USER_BASE, full, world.cap, BG_USER_BASE, per_owner,
                               world.users_per_workspace)
            await conn.execute(_SEED_INBOX_HISTORY, WS_BASE, world.workspaces, history, HISTORY_PREFIX,
                               _history_decision())
        # Trim the background to exactly the asked number of rows (owners split it unevenly).
        extra = bg_owners * per_owner - background_rows
        if extra > 0:
            await conn.execute(
                "DELETE FROM personal_memories WHERE personal_memory_id IN (SELECT m.personal_memory_id"
                " FROM personal_memories m JOIN users u USING (user_id)"
                " WHERE u.user_disc_id::bigint >= $1::bigint ORDER BY m.personal_memory_id DESC LIMIT $2)",
                BG_USER_BASE, extra)
        # A live database is vacuumed and analyzed; a bulk load is neither until autovacuum runs.
        await conn.execute("VACUUM ANALYZE")
        at_cap = await conn.fetchval(
            "SELECT (SELECT count(*) FROM server_memories m JOIN servers s USING (server_id)"
            "        WHERE s.server_disc_id::bigint < $1::bigint)"
            "     + (SELECT count(*) FROM personal_memories m JOIN users u USING (user_id)"
            "        WHERE u.user_disc_id::bigint < $2::bigint)", BG_WS_BASE, BG_USER_BASE)
        total = await conn.fetchval(
            "SELECT (SELECT count(*) FROM server_memories) + (SELECT count(*) FROM personal_memories)")
    finally:
        await conn.close()
    return SeedReport(workspaces=world.workspaces, users=world.workspaces * world.users_per_workspace,
                      full_owners=world.full_owners, at_cap_rows=at_cap, background_rows=total - at_cap,
                      background_owners=bg_owners, history_commands=history, seconds=round(time.perf_counter() - started, 2))
