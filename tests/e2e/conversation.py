"""A scripted conversation of every command kind and most of their statuses, for the parity
test of the TypeScript client (tests/e2e/test_e2e_typescript_client.py): the same script runs
through the Python MemoryClient and the TypeScript one, each on a world of its own (disjoint
workspaces and users in the e2e database), and both must give the same results and rows.

A step's fields may name a memory an earlier step made: {"$memory_of": <step>} stands for
that step's result's data.memory_id; both runners resolve it the same way (clients/typescript/
test/client.test.mjs does it for the TypeScript side). `expect` is the step's status."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import msgspec

from contracts.registry import COMMANDS
from tests.e2e.bus import RAG, create_fields, unique
from tests.e2e.directory import add_old_server_memories
from tests.support.commands import manual_fields, reinforce_fields, seed_bio_fields, update_fields
from tests.support.directory import add_proxy_identity, add_server, add_user, blacklist

LINEAGE = 31
MANAGER = "130000000000000099"
OTTER = "\U0001f9a6"
_MEMORY_IN_TEXT = re.compile(r"\b([Mm]emory) (\d+)\b")


async def prepare_world(db) -> dict[str, str]:
    """Workspaces and users of one world: fresh ids, the same settings every time."""
    world = {"main": unique(), "off": unique(), "decay": unique(), "alice": unique(), "sam1": unique(),
             "sam2": unique(), "carol": unique(), "me": unique(), "host": unique(), "proxy": f"pk:{uuid.uuid4()}",
             "namespace": unique("ns-"), "blocked": unique()}
    main_id = await add_server(db, world["main"])
    await blacklist(db, main_id, world["blocked"])
    await add_server(db, world["off"], self_teaching=False)
    decay_id = await add_server(db, world["decay"], decay=True, decay_days=30)
    await add_old_server_memories(db, decay_id, LINEAGE, [(f"dormant {i}", 60 + i) for i in range(4)])
    for user in ("alice", "sam1", "sam2", "me", "host", "blocked"):
        await add_user(db, world[user])
    await add_user(db, world["carol"], privacy=2)
    await add_proxy_identity(db, world["proxy"], namespace_id=world["namespace"], hosts=[world["host"]])
    return world


def _create(world: dict[str, str], content: Any, *, ws: str = "main", **extra: Any) -> dict[str, Any]:
    return create_fields(world[ws], content, lineage_id=LINEAGE, **extra)


def _panel(world: dict[str, str], action: str, *, ws: str = "main", scope: str = "server", actor: str | None = None,
           is_manager: bool = True, lineage: int = LINEAGE, **fields: Any) -> dict[str, Any]:
    return {"workspace_id": world[ws], **manual_fields(action=action, scope=scope, actor=actor or MANAGER,
                                                       is_manager=is_manager, lineage_id=lineage, **fields)}


def _update(world: dict[str, str], memory_id: Any, content: Any, *, ws: str = "main", **extra: Any) -> dict[str, Any]:
    return update_fields(world[ws], memory_id, content, lineage_id=LINEAGE, **extra)


def script(world: dict[str, str]) -> list[dict[str, Any]]:
    """The steps: {"kind", "fields", "expect"}."""
    w = world
    alice = [{"id": w["alice"], "display_name": "Alice", "username": "alice"}]
    sams = [{"id": w["sam1"], "display_name": "Sam", "username": "sam_1"},
            {"id": w["sam2"], "display_name": "Sam", "username": "sam_2"}]
    carol = [{"id": w["carol"], "display_name": "Carol", "username": "carol"}]
    steps: list[tuple[str, dict[str, Any], str]] = [
        ("create", _create(w, "likes tea"), "memory_saved_successfully"),  # 0
        ("create", _create(w, "{user} plays chess", scope="target_user", target="Alice", member_matches=alice),
         "memory_saved_successfully"),
        ("create", _create(w, None, tool_args={"memory_content": "likes tea", "memory_scope": "everywhere"}),
         "memory_save_failed_invalid_args"),
        ("create", _create(w, "likes tea", ws="off"), "memory_save_failed_disabled"),
        ("create", create_fields(w["main"], "likes tea", lineage_id=0), "memory_save_failed_internal_error"),
        ("create", _create(w, "{user} sings", scope="target_user", target="Sam", member_matches=sams),
         "memory_save_failed_ambiguous_user"),  # 5
        ("create", _create(w, "{user} sings", scope="target_user", target="Bo", member_matches=alice),
         "memory_save_failed_user_not_found"),
        ("create", _create(w, "a" * 999 + OTTER), "memory_save_failed_invalid_content"),
        ("create", _create(w, "{user} lives in Porto", scope="target_user", target="Carol", member_matches=carol),
         "memory_save_failed_privacy_restricted"),
        ("manual", _panel(w, "add", content=" {user} likes green tea ", tags="drinks, #kitchen"), "added"),
        ("manual", _panel(w, "edit", memory_id={"$memory_of": 9}, content="{user} likes jasmine tea"),
         "updated"),  # 10
        ("manual", _panel(w, "edit", memory_id={"$memory_of": 9}, content="{user} likes jasmine tea"), "unchanged"),
        ("manual", _panel(w, "remove", memory_id={"$memory_of": 9}), "removed"),
        ("manual", _panel(w, "remove", memory_id={"$memory_of": 9}), "not-found"),
        ("manual", _panel(w, "add", content="   "), "empty-content"),
        ("manual", _panel(w, "add", content="b" * 1001), "content-too-long"),  # 15
        ("manual", _panel(w, "add_batch", contents=["one", "two", "ONE"]), "added"),
        ("manual", _panel(w, "add_batch", contents=["one", "TWO"]), "all-duplicates"),
        ("manual", _panel(w, "add", ws="off", actor=w["alice"], is_manager=False, content="x"), "teaching-disabled"),
        ("manual", _panel(w, "add", scope="personal", actor=w["carol"], content="x"), "privacy-blocked"),
        ("manual", _panel(w, "add", scope="personal", actor=w["me"], lineage=0, content="I love rain"), "added"),  # 20
        ("reinforce", {"workspace_id": w["main"], **reinforce_fields(
            [("server", {"$memory_of": 0}), ("personal", {"$memory_of": 20}), ("server", 10**12)])}, "reinforced"),
        ("reinforce", {"workspace_id": w["main"], **reinforce_fields()}, "reinforced"),
        ("seed_bio", {"workspace_id": w["main"], **seed_bio_fields(w["proxy"], "Nova.\n\n  Chases   storms.")}, "seeded"),
        ("seed_bio", {"workspace_id": w["main"], **seed_bio_fields(w["proxy"], "Nova again")}, "skipped"),
        ("create", _create(w, "fact 1", retrieval=RAG), "memory_saved_successfully"),  # 25
        ("create", _create(w, "fact 2", retrieval=RAG), "memory_saved_successfully"),
        ("create", _create(w, "fact 3", retrieval=RAG), "memory_save_failed_limit_exceeded"),
        ("manual", _panel(w, "add", content="fact 4"), "limit-reached"),
        ("create", _create(w, "fresh fact", ws="decay", retrieval=RAG), "memory_saved_successfully"),
        ("create", _create(w, "fresher fact", ws="decay", retrieval=RAG), "memory_saved_with_eviction"),  # 30
        ("manual", _panel(w, "edit", ws="decay", memory_id={"$memory_of": 30}, content="freshest fact"), "updated"),
        ("manual", _panel(w, "add", actor=w["blocked"], is_manager=False, content="fact"), "blacklisted"),
        ("manual", _panel(w, "add_batch", contents=["p", "q"]), "batch-limit-reached"),  # main is full
        ("update", _update(w, {"$memory_of": 0}, "{user} likes oolong"), "memory_updated_successfully"),
        ("update", _update(w, {"$memory_of": 1}, "{user} plays go", target="Alice", member_matches=alice),
         "memory_updated_successfully"),  # 35
        ("update", _update(w, {"$memory_of": 0}, "  "), "memory_deleted_successfully"),
        ("update", _update(w, {"$memory_of": 0}, "  "), "memory_update_failed_not_found"),
        ("update", _update(w, None, None, tool_args={"memory_id": "ID:3", "memory_content": "x"}),
         "memory_update_failed_invalid_args"),
        ("update", _update(w, 1, "x", ws="off"), "memory_update_failed_disabled"),
        ("update", _update(w, 1, "x", target="Carol", member_matches=carol),
         "memory_update_failed_privacy_restricted"),  # 40
        ("update", _update(w, 1, "", target="Sam", member_matches=sams), "memory_update_failed_ambiguous_user"),
    ]
    return [{"kind": kind, "fields": fields, "expect": expect} for kind, fields, expect in steps]


def resolve(value: Any, results: list[dict[str, Any]]) -> Any:
    """The fields with every {"$memory_of": step} replaced by that step's memory id."""
    if isinstance(value, dict):
        if set(value) == {"$memory_of"}:
            return results[value["$memory_of"]]["data"]["memory_id"]
        return {k: resolve(v, results) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, results) for v in value]
    return value


async def run_python(client, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each step through the Python MemoryClient's send(), in order; results as plain JSON values."""
    results: list[dict[str, Any]] = []
    for step in steps:
        result = await client.send(COMMANDS[step["kind"]], resolve(step["fields"], results))
        results.append(msgspec.to_builtins(result))
    return results


class Normaliser:
    """Makes two worlds' values comparable: world ids become their role names, memory ids
    their order of first appearance (per table: server and personal ids are separate
    sequences), command ids the step that sent them."""

    def __init__(self, world: dict[str, str]) -> None:
        self.world = world
        self.memories: dict[tuple[str, int], str] = {}
        self.scope = "server"  # the table the ids of the value being normalised are from

    def memory(self, memory_id: int, scope: str | None = None) -> str:
        key = (scope or self.scope, memory_id)
        return self.memories.setdefault(key, f"{key[0]}-memory-{len(self.memories)}")

    def text(self, value: str) -> str:
        for role, real in sorted(self.world.items(), key=lambda kv: -len(kv[1])):
            value = value.replace(real, f"<{role}>")
        # Messages name memories by id ("Memory 18 was not found ...").
        return _MEMORY_IN_TEXT.sub(lambda m: f"{m.group(1)} {self.memory(int(m.group(2)))}", value)

    def value(self, value: Any, key: str | None = None) -> Any:
        if key == "memory_id" and isinstance(value, int):
            return self.memory(value)
        if key == "memory_id" and isinstance(value, str) and value.isdigit():  # an update notice's variable
            return self.memory(int(value))
        if key == "memory_ids" and isinstance(value, list):
            return [self.memory(v) for v in value]
        if key == "ref" and isinstance(value, dict) and isinstance(value.get("id"), int):
            # A notice's embed names the memory it stands for.
            scope = "personal" if value.get("kind") == "personal_memory" else "server"
            return {**value, "id": self.memory(value["id"], scope)}
        if isinstance(value, dict):
            return {k: self.value(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        return value

    def results(self, results: list[dict[str, Any]], steps: list[dict[str, Any]]) -> list[Any]:
        out = []
        for i, (result, step) in enumerate(zip(results, steps, strict=True)):
            self.scope = step_scope(step)
            out.append(self.value({**result, "command_id": f"step-{i}"}))
        return out


def step_scope(step: dict[str, Any]) -> str:
    """The table a step's memory ids are from."""
    fields = step["fields"]
    if step["kind"] == "manual":
        return fields["scope"]
    if step["kind"] == "seed_bio":
        return "personal"
    if step["kind"] == "create" and isinstance(fields.get("tool_args"), dict):
        return "personal" if fields["tool_args"].get("memory_scope") == "target_user" else "server"
    if step["kind"] == "update" and isinstance(fields.get("tool_args"), dict):
        return "personal" if "target_user" in fields["tool_args"] else "server"
    return "server"


async def rows(db, world: dict[str, str], normaliser: Normaliser) -> dict[str, Any]:
    """Every memory row of the world, and what became of each, normalised."""
    server = await db.fetch(
        """SELECT s.server_disc_id AS owner, m.server_memory_id AS id, m.persona_lineage_id AS lineage, m.content,
                  m.manually_written, m.source, m.reinforcement_count AS reinforced
           FROM server_memories m JOIN servers s USING (server_id)
           WHERE s.server_disc_id = ANY($1::text[]) ORDER BY m.server_memory_id""",
        [world["main"], world["off"], world["decay"]])
    personal = await db.fetch(
        """SELECT u.user_disc_id AS owner, m.personal_memory_id AS id, m.persona_lineage_id AS lineage, m.content,
                  m.manually_written, m.source, m.reinforcement_count AS reinforced
           FROM personal_memories m JOIN users u USING (user_id)
           WHERE u.user_disc_id = ANY($1::text[]) ORDER BY m.personal_memory_id""",
        [world[u] for u in ("alice", "sam1", "sam2", "carol", "me", "host", "proxy", "blocked")])
    def row(record, scope: str) -> Any:
        normaliser.scope = scope
        return normaliser.value({**dict(record), "id": normaliser.memory(record["id"])})
    return {"server": [row(r, "server") for r in server], "personal": [row(r, "personal") for r in personal]}


def dump(steps: list[dict[str, Any]]) -> str:
    return json.dumps(steps, ensure_ascii=False)
