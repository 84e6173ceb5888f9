"""memoryctl's directory commands against a real database (issue 3): users' privacy, workspace
settings, blacklist entries, proxy host links, and `memories list` with protection and dormancy.

Most tests run the commands in-process (`worker.cli.admin.run` with memoryctl's argument parser);
a few run `python -m worker.cli.memoryctl` as a subprocess, as an operator would.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import uuid

import pytest

from contracts.codec import OP_RESULT_DECODER
from contracts.kinds.manual import ADDED, BLACKLISTED, PRIVACY_BLOCKED, ManualMemory
from contracts.kinds.seed_bio import SKIPPED
from db.pool import create_pool
from db.repository import MemoryRepository
from tests.support.commands import manual_command, seed_bio_command
from tests.support.directory import add_server, add_user
from worker.cli import admin
from worker.domain.workspace import Limits
from worker.kinds.manual.service import ManualMemoryService
from worker.kinds.seed_bio.service import SeedBioService

from ..conftest import ROOT, clone_database, unique
from .helpers import add_personal_memories, add_server_memories


@pytest.fixture(scope="module")
async def database(pg_server, template_db):
    """One database for the module (url, pool): tests use their own workspaces and users."""
    url = await clone_database(pg_server, template_db)
    pool = await create_pool(url, min_size=1, max_size=5)
    yield url, pool
    await pool.close()


def parser() -> argparse.ArgumentParser:
    """memoryctl's parser for the directory commands (worker.cli.memoryctl adds the same subparsers)."""
    p = argparse.ArgumentParser(prog="memoryctl")
    admin.add_parsers(p.add_subparsers(dest="command", required=True))
    return p


async def ctl(database, *argv: str) -> tuple[int, list[str]]:
    url, _ = database
    lines: list[str] = []
    rc = await admin.run(parser().parse_args(list(argv)), url, out=lines.append)
    return rc, "\n".join(lines).splitlines()


def ctl_process(database_url: str, *argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, DATABASE_URL=database_url, NATS_URL="nats://127.0.0.1:1", PYTHONPATH=str(ROOT),
               LOG_FORMAT="json")
    return subprocess.run([sys.executable, "-m", "worker.cli.memoryctl", *argv], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


# --- users ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("level, stored", [("full", 2), ("partial", 1), ("OPEN", 0), ("2", 2)])
async def test_user_privacy_creates_the_user_and_sets_the_level(database, level, stored):
    _, pool = database
    user = unique()

    rc, out = await ctl(database, "user", "privacy", user, level)

    assert rc == 0
    assert await pool.fetchval("SELECT privacy_level FROM users WHERE user_disc_id = $1", user) == stored
    assert out == [f"user {user}: privacy {stored} ({['open', 'partial', 'full'][stored]})"
                   " (registered now: no users row had this id)"]


async def test_user_add_registers_the_user_once(database):
    _, pool = database
    user = unique()
    rc, out = await ctl(database, "user", "add", user)
    assert (rc, out) == (0, [f"user {user} registered: privacy 0 (open), no saved nickname"])
    row = await pool.fetchrow("SELECT privacy_level, user_nickname FROM users WHERE user_disc_id = $1", user)
    assert (row["privacy_level"], row["user_nickname"]) == (0, None)

    await ctl(database, "user", "nickname", user, "Mika")
    rc, out = await ctl(database, "user", "add", user)
    assert (rc, out) == (0, [f"user {user} is already registered: nothing changed (memoryctl user show {user})"])
    assert await pool.fetchval("SELECT count(*) FROM users WHERE user_disc_id = $1", user) == 1
    assert await pool.fetchval("SELECT user_nickname FROM users WHERE user_disc_id = $1", user) == "Mika"


async def test_user_privacy_changes_an_existing_user_and_the_worker_reads_it(database):
    url, pool = database
    ws, user = unique(), unique()
    async with pool.acquire() as conn:
        await add_user(conn, user, nickname="Mika")
    svc = ManualMemoryService(MemoryRepository(pool), Limits())

    rc, _ = await ctl(database, "user", "privacy", user, "full")
    blocked = OP_RESULT_DECODER.decode((await svc.run(manual(ws, user, "personal", content="x"))).answer.result)

    assert rc == 0
    row = await pool.fetchrow("SELECT privacy_level, user_nickname FROM users WHERE user_disc_id = $1", user)
    assert (row["privacy_level"], row["user_nickname"]) == (2, "Mika")
    assert blocked.data.status == PRIVACY_BLOCKED


def test_a_bad_privacy_level_is_an_argparse_error_naming_the_value(capsys):
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(["user", "privacy", "123", "secret"])

    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "'secret'" in err and "open, partial or full" in err


async def test_a_bad_privacy_level_from_the_command_line_changes_nothing(database):
    url, pool = database
    user = unique()

    proc = await asyncio.to_thread(ctl_process, url, "user", "privacy", user, "secret")

    assert proc.returncode == 2
    assert "'secret'" in proc.stderr and "level" in proc.stderr
    assert await pool.fetchval("SELECT count(*) FROM users WHERE user_disc_id = $1", user) == 0


async def test_user_privacy_from_the_command_line(database):
    url, pool = database
    user = unique()

    proc = await asyncio.to_thread(ctl_process, url, "user", "privacy", user, "partial")

    assert proc.returncode == 0, proc.stderr
    assert f"user {user}: privacy 1 (partial)" in proc.stdout
    assert await pool.fetchval("SELECT privacy_level FROM users WHERE user_disc_id = $1", user) == 1


async def test_user_nickname_sets_and_clears(database):
    _, pool = database
    user = unique()

    await ctl(database, "user", "nickname", user, "Mika")
    set_to = await pool.fetchval("SELECT user_nickname FROM users WHERE user_disc_id = $1", user)
    await ctl(database, "user", "nickname", user, "none")
    cleared = await pool.fetchval("SELECT user_nickname FROM users WHERE user_disc_id = $1", user)

    assert (set_to, cleared) == ("Mika", None)


# --- workspaces -----------------------------------------------------------------------------------


SETTINGS = ("self_teaching_enabled, personal_memories_enabled, memory_decay_enabled, memory_decay_days,"
            " tool_notice_verbosity, tool_notice_hidden_keys, thought_log_channel_id, private_channel_ids")


async def settings(pool, ws: str) -> dict:
    row = await pool.fetchrow(f"SELECT {SETTINGS} FROM servers WHERE server_disc_id = $1", ws)
    return {k: (list(v) if isinstance(v, list) else v) for k, v in dict(row).items()}


async def test_workspace_set_changes_only_the_settings_given(database):
    _, pool = database
    ws = unique()

    rc1, first = await ctl(database, "workspace", "set", ws, "--decay", "on", "--decay-days", "45")
    after_decay = await settings(pool, ws)
    rc2, second = await ctl(database, "workspace", "set", ws, "--notice-verbosity", "verbose", "--hidden-keys",
                       " memory_update, other ,", "--thought-log", "555", "--private-channels", "1,2")
    after_notice = await settings(pool, ws)
    rc3, _ = await ctl(database, "workspace", "set", ws, "--thought-log", "none", "--self-teaching", "off",
                       "--personal-memories", "no")
    after_off = await settings(pool, ws)

    assert (rc1, rc2, rc3) == (0, 0, 0)
    # Standalone: an id without a row is registered, and the command says so (only then).
    assert first[-1] == f"(workspace {ws} registered now: no servers row had this id)"
    assert not any("registered now" in line for line in second)
    defaults = {"self_teaching_enabled": True, "personal_memories_enabled": True, "memory_decay_enabled": False,
                "memory_decay_days": 30, "tool_notice_verbosity": "minimal", "tool_notice_hidden_keys": [],
                "thought_log_channel_id": None, "private_channel_ids": []}
    assert after_decay == {**defaults, "memory_decay_enabled": True, "memory_decay_days": 45}
    notice = {"tool_notice_verbosity": "verbose", "tool_notice_hidden_keys": ["memory_update", "other"],
              "thought_log_channel_id": "555", "private_channel_ids": ["1", "2"]}
    assert after_notice == {**after_decay, **notice}
    assert after_off == {**after_notice, "thought_log_channel_id": None, "self_teaching_enabled": False,
                         "personal_memories_enabled": False}


async def test_workspace_set_keeps_a_bot_written_row_and_its_other_settings(database):
    _, pool = database
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=True, decay_days=12, self_teaching=False)

    await ctl(database, "workspace", "set", ws, "--decay", "off")

    assert await pool.fetchval("SELECT server_id FROM servers WHERE server_disc_id = $1", ws) == server_id
    row = await settings(pool, ws)
    assert (row["memory_decay_enabled"], row["memory_decay_days"], row["self_teaching_enabled"]) == (False, 12, False)


async def test_workspace_set_without_options_changes_nothing(database):
    _, pool = database
    ws = unique()

    rc, out = await ctl(database, "workspace", "set", ws)

    assert rc == 2 and "at least one option" in out[0]
    assert await pool.fetchval("SELECT count(*) FROM servers WHERE server_disc_id = $1", ws) == 0


@pytest.mark.parametrize("argv, named", [(["--decay", "maybe"], "'maybe'"), (["--decay-days", "0"], "0"),
                                         (["--decay-days", "soon"], "'soon'"),
                                         (["--notice-verbosity", "loud"], "'loud'")])
def test_bad_workspace_values_are_argparse_errors_naming_the_value(capsys, argv, named):
    with pytest.raises(SystemExit):
        parser().parse_args(["workspace", "set", "1", *argv])

    err = capsys.readouterr().err
    assert named in err and argv[0] in err


async def test_workspace_show_prints_the_settings(database):
    ws = unique()
    await ctl(database, "workspace", "set", ws, "--decay-days", "9", "--hidden-keys", "memory_update")

    rc, out = await ctl(database, "workspace", "show", ws)

    assert rc == 0
    assert out[0] == f"workspace {ws}"
    shown = {line.split()[0]: line.split(None, 1)[1] for line in out[1:]}
    assert shown["decay_days"] == "9" and shown["decay"] == "False" and shown["self_teaching"] == "True"
    assert shown["hidden_keys"] == "['memory_update']" and shown["notice_verbosity"] == "minimal"
    assert set(shown) == {"self_teaching", "personal_memories", "decay", "decay_days", "notice_verbosity",
                          "hidden_keys", "thought_log", "private_channels", "secret_guard"}
    assert shown["secret_guard"] == "default (SECRET_GUARD_DEFAULT, on unless set off)"


async def test_workspace_show_of_an_unknown_workspace_says_so(database):
    ws = unique()

    rc, out = await ctl(database, "workspace", "show", ws)

    assert rc == 1 and "not registered" in out[0]


# --- blacklist ------------------------------------------------------------------------------------


async def test_blacklist_add_list_remove(database):
    _, pool = database
    ws, a, b = unique(), unique("1"), unique("2")

    added = [await ctl(database, "blacklist", "add", ws, user) for user in (b, a, a)]
    listed = await ctl(database, "blacklist", "list", ws)
    stored = [r[0] for r in await pool.fetch(
        "SELECT b.user_disc_id FROM personalization_blacklist b JOIN servers s USING (server_id)"
        " WHERE s.server_disc_id = $1 ORDER BY 1", ws)]
    removed = await ctl(database, "blacklist", "remove", ws, a)
    removed_again = await ctl(database, "blacklist", "remove", ws, a)
    after = await ctl(database, "blacklist", "list", ws)

    assert [rc for rc, _ in added] == [0, 0, 0]
    assert "added to" in added[0][1][0] and "already on" in added[2][1][0]
    assert stored == sorted([a, b])
    assert listed == (0, sorted([a, b]))
    assert removed[0] == 0 and "removed from" in removed[1][0]
    assert removed_again[0] == 1 and "was not on" in removed_again[1][0]
    assert after == (0, [b])


async def test_a_blacklist_entry_written_by_the_cli_refuses_a_non_manager(database):
    _, pool = database
    ws, user = unique(), unique()
    await ctl(database, "blacklist", "add", ws, user)
    svc = ManualMemoryService(MemoryRepository(pool), Limits())

    result = OP_RESULT_DECODER.decode((await svc.run(manual(ws, user, "server", content="x"))).answer.result)

    assert result.data.status == BLACKLISTED


async def test_blacklist_list_of_an_empty_workspace(database):
    rc, out = await ctl(database, "blacklist", "list", unique())

    assert rc == 0 and out[0].startswith("no blacklist entries")


# --- proxy links ----------------------------------------------------------------------------------


def manual(ws: str, actor: str, scope: str, **fields) -> ManualMemory:
    return manual_command(ws, **{"actor": actor, "is_manager": False, "scope": scope, "lineage_id": 7,
                                 "persona_id": None, **fields})


async def test_proxy_link_registers_identity_namespace_and_host_and_the_worker_honours_it(database):
    _, pool = database
    ws, host, ns, proxy = unique(), unique(), unique("ns-"), f"pk:{uuid.uuid4()}"

    rc, out = await ctl(database, "proxy", "link", proxy, "--namespace", ns, "--host", host)

    assert rc == 0 and out == [f"{proxy} in namespace {ns}, hosted by {host}"
                               " (registered now: no users row had this id)"]
    row = await pool.fetchrow(
        "SELECT i.namespace_id, a.host_user_disc_id FROM users u JOIN message_proxy_identities i USING (user_id)"
        " JOIN message_proxy_namespace_accounts a ON a.namespace_id = i.namespace_id WHERE u.user_disc_id = $1",
        proxy)
    assert (row["namespace_id"], row["host_user_disc_id"]) == (ns, host)
    assert await ctl(database, "proxy", "show", proxy) == (0, [f"{proxy}: namespace {ns}, hosts {host}"])
    svc = ManualMemoryService(MemoryRepository(pool), Limits())
    added = OP_RESULT_DECODER.decode((await svc.run(manual(ws, host, "personal", identity_id=proxy,
                                                           content="Nova chases storms"))).answer.result)
    assert added.data.status == ADDED


@pytest.mark.parametrize("identity", ["123456789012345678", "pk:not-a-uuid", "pb:12a", "PK:" + str(uuid.UUID(int=1))])
async def test_proxy_link_refuses_a_non_synthetic_id(database, identity):
    _, pool = database
    ns, host = unique("ns-"), unique()

    rc, out = await ctl(database, "proxy", "link", identity, "--namespace", ns, "--host", host)

    assert rc == 2 and "not a proxy identity id" in out[0]
    assert await pool.fetchval("SELECT count(*) FROM users WHERE user_disc_id = $1", identity) == 0
    assert await pool.fetchval("SELECT count(*) FROM message_proxy_namespace_accounts WHERE namespace_id = $1",
                               ns) == 0


async def test_proxy_unlink_removes_the_host_and_the_identity_is_then_protected(database):
    _, pool = database
    ws, host, ns, proxy = unique(), unique(), unique("ns-"), f"pb:{unique()}"
    await ctl(database, "proxy", "link", proxy, "--namespace", ns, "--host", host)

    rc, out = await ctl(database, "proxy", "unlink", "--namespace", ns, "--host", host)
    again, _ = await ctl(database, "proxy", "unlink", "--namespace", ns, "--host", host)
    shown = await ctl(database, "proxy", "show", proxy)

    assert rc == 0 and "removed from" in out[0]
    assert again == 1
    assert shown[0] == 0 and "hosts none" in shown[1][0]
    seed = seed_bio_command(ws, proxy, "bio")
    skipped = OP_RESULT_DECODER.decode((await SeedBioService(MemoryRepository(pool), Limits(), 1000).run(seed)).answer.result)
    assert skipped.data.status == SKIPPED
    assert await pool.fetchval("SELECT count(*) FROM personal_memories m JOIN users u USING (user_id)"
                               " WHERE u.user_disc_id = $1", proxy) == 0


async def test_proxy_show_of_an_unknown_identity(database):
    rc, out = await ctl(database, "proxy", "show", f"pk:{uuid.uuid4()}")

    assert rc == 1 and "not a registered proxy identity" in out[0]


# --- memories list --------------------------------------------------------------------------------


def listing(out: list[str]) -> dict[int, dict]:
    """The rows of `memories list`, by id: protected, idle days, state, source, used."""
    rows = {}
    for line in out[1:]:
        if not line:
            break  # the legend of the states follows
        memory_id, lineage, protected, idle, state, source, used, *_ = line.split()
        rows[int(memory_id)] = {"lineage": int(lineage), "protected": protected, "idle": float(idle[:-1]),
                                "state": state, "source": source, "used": int(used)}
    return rows


@pytest.mark.parametrize("decay", [True, False])
async def test_memories_list_shows_protection_and_dormancy_of_server_memories(database, decay):
    _, pool = database
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=decay, decay_days=30)
        (manual_row,) = await add_server_memories(conn, server_id, 7, [200], manual=True, source="manual")
        (recent,) = await add_server_memories(conn, server_id, 7, [1], source="model")
        (old,) = await add_server_memories(conn, server_id, 7, [100])
        (used,) = await add_server_memories(conn, server_id, 8, [100], reinforced_days_ago=[2])
        await conn.execute("UPDATE server_memories SET reinforcement_count = 3 WHERE server_memory_id = $1", used)

    rc, out = await ctl(database, "memories", "list", "--workspace", ws)

    assert rc == 0
    assert out[0].split()[:5] == ["id", "lineage", "protected", "idle", "state"]
    rows = listing(out)
    assert list(rows) == [manual_row, recent, old, used]
    assert {i: r["protected"] for i, r in rows.items()} == {manual_row: "yes", recent: "no", old: "no", used: "no"}
    states = {i: r["state"] for i, r in rows.items()}
    if decay:
        assert states == {manual_row: "protected", recent: "active", old: "dormant", used: "active"}
    else:
        assert states == {manual_row: "protected", recent: "kept", old: "kept", used: "kept"}
    # The listing ends with what each state it shows means.
    legend = out[out.index("") + 1:]
    assert sorted(line.split(":")[0] for line in legend) == sorted(set(states.values()))
    if not decay:
        assert "kept: decay is off for this workspace: never replaced, a save at the cap is refused" in legend
    assert 99.9 < rows[old]["idle"] < 100.1 and 1.9 < rows[used]["idle"] < 2.1
    assert (rows[used]["used"], rows[used]["lineage"], rows[old]["source"]) == (3, 8, "legacy")


async def test_memories_list_filters_by_lineage(database):
    _, pool = database
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws)
        await add_server_memories(conn, server_id, 7, [1])
        (eight,) = await add_server_memories(conn, server_id, 8, [1])

    rc, out = await ctl(database, "memories", "list", "--workspace", ws, "--lineage", "8")

    assert list(listing(out)) == [eight]


async def test_memories_list_of_personal_memories_uses_the_given_decay_days(database):
    _, pool = database
    user = unique()
    async with pool.acquire() as conn:
        user_id = await add_user(conn, user)
        (global_row,) = await add_personal_memories(conn, user_id, 0, [400])
        (old,) = await add_personal_memories(conn, user_id, 7, [100])

    _, default = await ctl(database, "memories", "list", "--user", user)
    _, longer = await ctl(database, "memories", "list", "--user", user, "--decay-days", "200")

    assert {i: r["state"] for i, r in listing(default).items()} == {global_row: "global", old: "dormant"}
    assert {i: r["state"] for i, r in listing(longer).items()} == {global_row: "global", old: "active"}


async def test_memories_list_of_an_owner_without_memories(database):
    rc, out = await ctl(database, "memories", "list", "--user", unique())

    assert (rc, out) == (0, ["no memories"])


async def test_memories_list_from_the_command_line(database):
    url, pool = database
    ws = unique()
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=True)
        (old,) = await add_server_memories(conn, server_id, 7, [100])

    proc = await asyncio.to_thread(ctl_process, url, "memories", "list", "--workspace", ws)

    assert proc.returncode == 0, proc.stderr
    assert listing(proc.stdout.splitlines())[old]["state"] == "dormant"


@pytest.mark.parametrize("argv, named", [
    (["memories", "list", "--workspace", "1", "--lineage", str(2**63)], "--lineage"),
    (["memories", "list", "--workspace", "1", "--lineage", "-1"], "--lineage"),
    (["memories", "list", "--user", "1", "--decay-days", "36501"], "--decay-days"),
    (["workspace", "set", "1", "--decay-days", "99999999999"], "--decay-days")])
async def test_values_beyond_what_the_tables_hold_are_refused_naming_the_argument(database, argv, named):
    """A lineage beyond bigint or decay days beyond the tables' CHECK: an argument error, not
    the database driver's traceback, and nothing written."""
    url, pool = database
    proc = await asyncio.to_thread(ctl_process, url, *argv)

    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert named in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert await pool.fetchval("SELECT count(*) FROM servers WHERE server_disc_id = '1'") == 0


# --- --json -----------------------------------------------------------------------------------

async def test_every_directory_listing_and_show_prints_one_json_document_with_what_the_table_shows(database):
    _, pool = database
    ws, user, proxy, ns = unique(), unique(), f"pk:{uuid.uuid4()}", unique("ns-")
    hostile = "\x1b]52;c;aGk=\x07 \u202e memory"
    async with pool.acquire() as conn:
        server_id = await add_server(conn, ws, decay=True, decay_days=30)
        (kept,) = await add_server_memories(conn, server_id, 7, [100], manual=True, source="manual")
        await conn.execute("UPDATE server_memories SET content = $2 WHERE server_memory_id = $1", kept, hostile)
        (old,) = await add_server_memories(conn, server_id, 7, [100])
    await ctl(database, "user", "nickname", user, "Mika")
    await ctl(database, "blacklist", "add", ws, user)
    await ctl(database, "proxy", "link", proxy, "--namespace", ns, "--host", user)

    def parsed(done: tuple[int, list[str]]):
        rc, lines = done
        text = "\n".join(lines)
        assert "\x1b" not in text and "\u202e" not in text  # escaped, as the tables escape them
        return rc, json.loads(text)

    memories = parsed(await ctl(database, "memories", "list", "--workspace", ws, "--json"))
    assert memories[0] == 0
    assert [(m["memory_id"], m["state"], m["protected"], m["content"]) for m in memories[1]] == [
        (kept, "protected", True, hostile), (old, "dormant", False, memories[1][1]["content"])]
    assert 99.9 < memories[1][1]["idle_days"] < 100.1
    assert parsed(await ctl(database, "memories", "list", "--user", unique(), "--json")) == (0, [])
    assert parsed(await ctl(database, "user", "show", user, "--json")) == (0, {
        "user_id": user, "privacy_level": 0, "privacy": "open", "nickname": "Mika", "blacklisted_in": [ws]})
    assert parsed(await ctl(database, "user", "show", unique(), "--json")) == (1, None)
    shown = parsed(await ctl(database, "workspace", "show", ws, "--json"))
    assert shown[0] == 0 and shown[1]["workspace_id"] == ws
    assert (shown[1]["settings"]["decay"], shown[1]["settings"]["decay_days"]) == (True, 30)
    assert parsed(await ctl(database, "workspace", "show", unique(), "--json")) == (1, None)
    assert parsed(await ctl(database, "blacklist", "list", ws, "--json")) == (0, {"workspace_id": ws,
                                                                                 "blacklisted": [user]})
    assert parsed(await ctl(database, "proxy", "show", proxy, "--json")) == (0, {
        "identity_id": proxy, "namespace_id": ns, "hosts": [user]})
    assert parsed(await ctl(database, "proxy", "show", f"pk:{uuid.uuid4()}", "--json")) == (1, None)
