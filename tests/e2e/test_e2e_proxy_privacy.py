"""Personal saves for stable proxy identities (docs/design.md, section 4 steps 4 and 7).

A proxy identity (`pk:<uuid>`, `pb:<digits>`) owns a synthetic users row and stays a personal
target. Privacy also covers every host account linked to it, and fails closed: a host at
FULL privacy, a host blacklisted in this workspace, or no resolvable host link refuses.
"""

from __future__ import annotations

import uuid

import pytest

from contracts.kinds.create import PRIVACY_RESTRICTED, SAVED
from contracts.result_parts import CacheKey
from tests.e2e.bus import create_fields, unique
from tests.e2e.directory import personal_memories
from tests.support.directory import add_proxy_identity, add_server, add_user, blacklist


def proxy_save(ws: str, proxy_id: str):
    participants = [{"id": proxy_id, "kind": "proxy", "label": "Nova", "aliases": ["Nova"]}]
    return create_fields(ws, "{user} loves thunderstorms", scope="target_user", target="nova",
                         participants=participants)


def new_proxy_id() -> str:
    return f"pk:{uuid.uuid4()}"


@pytest.mark.parametrize("host_privacy", [0, 1])
async def test_proxy_identity_with_an_open_host_gets_a_personal_memory(e2e_worker, memory, bot_db, host_privacy):
    ws, host, proxy = unique(), unique(), new_proxy_id()
    await add_server(bot_db, ws)
    await add_user(bot_db, host, privacy=host_privacy)  # only FULL privacy of a host refuses
    await add_proxy_identity(bot_db, proxy, namespace_id=unique("ns-"), hosts=[host])

    result = await memory.create(proxy_save(ws, proxy))

    assert result.data.status == SAVED, result
    assert result.data.scope == "target_user"
    assert result.invalidated == [CacheKey("user", proxy)]
    assert [r["content"] for r in await personal_memories(bot_db, proxy)] == ["{user} loves thunderstorms"]
    assert await personal_memories(bot_db, host) == []


@pytest.mark.parametrize("case", ["host-full-privacy", "host-blacklisted", "one-of-two-hosts-full", "no-host-link"])
async def test_proxy_identity_protected_by_its_hosts_is_refused(e2e_worker, memory, bot_db, case):
    ws, host, other_host, proxy = unique(), unique(), unique(), new_proxy_id()
    server_id = await add_server(bot_db, ws)
    await add_user(bot_db, host, privacy=2 if case in ("host-full-privacy", "one-of-two-hosts-full") else 0)
    await add_user(bot_db, other_host)
    if case == "no-host-link":
        await add_proxy_identity(bot_db, proxy, namespace_id=None)
    elif case == "one-of-two-hosts-full":
        await add_proxy_identity(bot_db, proxy, namespace_id=unique("ns-"), hosts=[other_host, host])
    else:
        await add_proxy_identity(bot_db, proxy, namespace_id=unique("ns-"), hosts=[host])
    if case == "host-blacklisted":
        await blacklist(bot_db, server_id, host)

    result = await memory.create(proxy_save(ws, proxy))

    assert await personal_memories(bot_db, proxy) == []
    assert result.success is False, result
    assert result.data.status == PRIVACY_RESTRICTED, result
