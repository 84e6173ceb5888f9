"""Which lineages a bot's worker accepts, and whose stored results it takes for its own (issue 29)."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from contracts.envelope import Envelope
from contracts.kinds.create import CreateMemory
from contracts.kinds.manual import ManualMemory
from contracts.kinds.reinforce import ReinforceMemories
from contracts.registry import COMMANDS, GLOBAL_ONLY
from db.inbox import StoredInboxRow
from tests.e2e.bus import create_fields
from tests.support.commands import create_command, manual_command, reinforce_command, seed_bio_command
from worker.consuming.administration import streams
from worker.domain import tenancy
from worker.services.stored import seen_before
from worker.shared.settings import Settings, SettingsError

ENVELOPE = {"command_id": "c-1", "issued_at": datetime.now(UTC).isoformat(), "workspace_id": "42"}


def create(lineage: int) -> CreateMemory:
    return create_command("42", lineage_id=lineage)


def manual(lineage: int) -> ManualMemory:
    return manual_command("42", actor="1", is_manager=False, lineage_id=lineage, persona_id=None, content="x")


def reinforce(lineage: int) -> ReinforceMemories:
    return reinforce_command("42", lineage_id=lineage)


SEED = seed_bio_command("42", "pk:1", "b")


@pytest.mark.parametrize("build", [create, manual, reinforce])
def test_a_bot_names_its_own_lineages_and_lineage_0_only(build):
    mine = frozenset({7, 12})
    assert tenancy.foreign_lineage(build(7), mine) is None
    assert tenancy.foreign_lineage(build(12), mine) is None
    assert tenancy.foreign_lineage(build(0), mine) is None  # a user's global memories: every bot's
    assert tenancy.foreign_lineage(build(8), mine) == (
        "lineage 8 is not one of this bot's lineages (7, 12): a bot reads and writes only its own personas' memories")


def test_without_a_tenant_every_lineage_is_accepted_and_a_seed_names_none():
    assert tenancy.foreign_lineage(create(8), None) is None
    assert COMMANDS["seed_bio"].lineage is GLOBAL_ONLY  # it writes lineage 0 only
    assert tenancy.foreign_lineage(SEED, frozenset({7})) is None


class DeleteMemory(Envelope, kw_only=True, frozen=True):
    """A kind the registry does not know: one that deletes, naming another bot's lineage."""

    lineage_id: int


class CreateLookalike(CreateMemory, kw_only=True, frozen=True):
    """A create by shape, not by type."""


@pytest.mark.parametrize("allowed", [frozenset({7}), None])
def test_a_command_of_a_type_the_registry_does_not_know_is_refused(allowed):
    deleting = DeleteMemory(**{**ENVELOPE, "issued_at": datetime.now(UTC)}, lineage_id=8)
    assert tenancy.foreign_lineage(deleting, allowed) == (
        "DeleteMemory is not a command kind this worker knows (contracts/registry.py): "
        "refused rather than run without its lineage checked")
    lookalike = msgspec.convert({**ENVELOPE, **create_fields("42", lineage_id=7)}, CreateLookalike)
    assert tenancy.foreign_lineage(lookalike, allowed).startswith("CreateLookalike is not a command kind")


def stored(workspace: str | None, tenant: str) -> StoredInboxRow:
    return StoredInboxRow(command_id="c", kind="reinforce", workspace_id=workspace, tenant=tenant, event_time="t",
                         status="reinforced", result='{"stored": true}')


def test_a_stored_result_answers_only_a_command_of_its_own_workspace_and_tenant():
    cmd = create(7)
    assert seen_before(cmd, stored("42", "kaede"), "kaede").answer.result == b'{"stored": true}'
    assert seen_before(cmd, stored("42", ""), "").answer.result == b'{"stored": true}'  # a worker without a tenant
    assert seen_before(cmd, None, "kaede") is None
    # Another bot's row of the same workspace, another workspace's row: each a clash, refused,
    # never answered with the stored result.
    for row, tenant in ((stored("42", "tomori"), "kaede"), (stored("42", "kaede"), ""),
                        (stored("42", ""), "kaede"), (stored("43", "kaede"), "kaede")):
        answer = seen_before(cmd, row, tenant)
        result = msgspec.json.decode(answer.answer.result)
        assert (result["data"]["status"], answer.duplicate) == ("memory_command_invalid", True), (row, tenant)
        assert "another workspace or another bot" in result["error"]


def test_tenant_settings():
    settings = Settings.from_env({"TENANT": "kaede", "TENANT_LINEAGES": "8, 12"})
    assert (settings.tenant, settings.tenant_lineages) == ("kaede", frozenset({8, 12}))
    assert (Settings.from_env({}).tenant, Settings.from_env({}).tenant_lineages) == ("", None)


@pytest.mark.parametrize(("env", "message"), [
    ({"TENANT": "Kaede", "TENANT_LINEAGES": "8"}, "TENANT must be 1 to 32 lower-case"),
    ({"TENANT": "a/b", "TENANT_LINEAGES": "8"}, "TENANT must be"),
    ({"TENANT": "kaede"}, "TENANT_LINEAGES must name at least one lineage"),
    ({"TENANT": "kaede", "TENANT_LINEAGES": "8,x"}, "TENANT_LINEAGES must be comma-separated lineage ids"),
    ({"TENANT": "kaede", "TENANT_LINEAGES": "0,8"}, "must not list 0"),
    ({"TENANT_LINEAGES": "8"}, "TENANT_LINEAGES is set but TENANT is not"),
])
def test_bad_tenant_settings_name_the_variable(env, message):
    with pytest.raises(SettingsError, match=message):
        Settings.from_env(env)


def test_the_bots_consumers_are_pull_consumers_of_its_own_events():
    configs = streams.bot_consumers("kaede")
    assert [(c.name, c.durable_name, c.filter_subject, c.deliver_subject) for c in configs] == [
        ("bot-kaede-saved", "bot-kaede-saved", "memory.saved.>", None),
        ("bot-kaede-evicted", "bot-kaede-evicted", "memory.evicted.>", None)]
