"""The target-resolution ladder and the ids it needs loaded."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from contracts.commands import Channel, CreateMemory, MemberMatch, Participant, Persona
from worker.domain.arguments import parse_tool_args
from worker.domain.model import CreateContext, KnownUser
from worker.domain.targets import (
    NOT_FOUND,
    Ambiguous,
    Resolved,
    bridge_name,
    lookup_ids,
    normalize,
    resolve_target,
)

BOT = "900000000000000001"
ALICE = "100000000000000001"
BOB = "100000000000000002"
CAROL = "100000000000000003"
DAVE = "100000000000000004"
OTHER_BOT = "900000000000000002"
PROXY = "pk:0f8e4c1a-2b3d-4e5f-8a9b-0c1d2e3f4a5b"
MATRIX = "@alice:matrix.org"


def ids_of(cmd: CreateMemory) -> tuple[str, ...]:
    return lookup_ids(cmd, parse_tool_args(cmd.tool_args))


def command(
    *,
    participants: list[Participant] | None = None,
    members: list[MemberMatch] | None = None,
    is_dm: bool = False,
    tool_args: Any = None,
) -> CreateMemory:
    return CreateMemory(
        command_id="c-1",
        issued_at=datetime(2025, 1, 1, tzinfo=UTC),
        workspace_id="500000000000000001",
        persona=Persona(id=3, lineage_id=7, name="Tomori"),
        bot_user_id=BOT,
        channel=Channel(id="600000000000000001", is_dm=is_dm),
        participants=participants or [],
        member_matches=members or [],
        tool_args=tool_args,
    )


def member(id: str, display: str | None = None, **names: Any) -> MemberMatch:
    return MemberMatch(id=id, display_name=display, **names)


def resolve(raw: str, cmd: CreateMemory, ctx: CreateContext | None = None) -> Any:
    return resolve_target(raw, cmd, ctx or CreateContext())


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Alice", "alice"),
        ("  @Alice  ", "alice"),
        ("@@Alice", "alice"),
        ("Mary   Jane\tSmith", "mary jane smith"),
        ("ÉLODIE", "élodie"),
        ("@", ""),
        ("", ""),
    ],
)
def test_normalize(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


@pytest.mark.parametrize("raw", ["self", "SELF", "@Self", "  self  ", "@ self"])
def test_self_is_the_bot(raw: str) -> None:
    assert resolve(raw, command()) == Resolved("bot", BOT, "Tomori")


def test_resolving_to_the_bot_id_is_the_bot() -> None:
    cmd = command(participants=[Participant(id=BOT, label="Tomori", aliases=["tomo"])])
    assert resolve("Tomo", cmd) == Resolved("bot", BOT, "Tomori")


@pytest.mark.parametrize("raw", [BOT, f"<@{BOT}>", f"<@!{BOT}>"])
def test_bot_snowflake_is_the_bot(raw: str) -> None:
    assert resolve(raw, command()) == Resolved("bot", BOT, "Tomori")


def test_matrix_id_matches_matrix_participant() -> None:
    cmd = command(participants=[Participant(id=MATRIX, kind="matrix", label="Alice (Matrix)")])
    assert resolve("@Alice:matrix.org", cmd) == Resolved("matrix", MATRIX, "Alice (Matrix)")


def test_matrix_id_ignores_non_matrix_participants() -> None:
    cmd = command(participants=[Participant(id=MATRIX, kind="discord", label="x")])
    assert resolve(MATRIX, cmd) is NOT_FOUND


def test_matrix_stage_comes_before_aliases() -> None:
    cmd = command(
        participants=[
            Participant(id=ALICE, label="Someone", aliases=[MATRIX]),
            Participant(id=MATRIX, kind="matrix", label="Alice (Matrix)"),
        ]
    )
    assert resolve(MATRIX, cmd) == Resolved("matrix", MATRIX, "Alice (Matrix)")


@pytest.mark.parametrize(
    ("label", "expected"),
    [("Alice (Matrix)", "Alice"), ("Alice  (Matrix)", "Alice"), ("Alice", "Alice"), ("(Matrix) Bob", "(Matrix) Bob")],
)
def test_bridge_name(label: str, expected: str) -> None:
    assert bridge_name(label) == expected


@pytest.mark.parametrize("pid", [PROXY, "pb:12345"])
def test_proxy_id_matches_participant(pid: str) -> None:
    cmd = command(participants=[Participant(id=pid, kind="proxy", label="Nova")])
    assert resolve(pid.upper() if pid.startswith("pk") else pid, cmd) == Resolved("proxy", pid, "Nova")


def test_proxy_id_without_participant_falls_through() -> None:
    assert resolve(PROXY, command(members=[member(ALICE, PROXY)])) == Resolved("discord", ALICE, PROXY)
    assert resolve(PROXY, command(is_dm=True)) is NOT_FOUND


@pytest.mark.parametrize("raw", [ALICE, f"@{ALICE}", f"<@{ALICE}>", f"<@!{ALICE}>"])
def test_snowflake_matches_member(raw: str) -> None:
    cmd = command(members=[member(ALICE, "Alice", username="alice")])
    assert resolve(raw, cmd) == Resolved("discord", ALICE, "Alice")


def test_snowflake_matches_participant() -> None:
    cmd = command(participants=[Participant(id=ALICE, label="Alice")])
    assert resolve(ALICE, cmd) == Resolved("discord", ALICE, "Alice")


def test_snowflake_of_another_bot_never_resolves() -> None:
    cmd = command(members=[member(OTHER_BOT, "Helper", is_bot=True)])
    assert resolve(OTHER_BOT, cmd) is NOT_FOUND


@pytest.mark.parametrize("raw", ["1234567890123456", "123456789012345678901"])
def test_snowflake_needs_17_to_20_digits(raw: str) -> None:
    cmd = command(members=[member(raw, "x")], participants=[Participant(id=raw, label="y")])
    assert resolve(raw, cmd) is NOT_FOUND


def test_unknown_snowflake_falls_through_to_names() -> None:
    cmd = command(members=[member(ALICE, username=DAVE)])
    assert resolve(DAVE, cmd) == Resolved("discord", ALICE, DAVE)


@pytest.mark.parametrize("raw", ["Ally", "ally", "@ALLY", "Alice W", "alice   w"])
def test_participant_alias_and_label(raw: str) -> None:
    cmd = command(participants=[Participant(id=ALICE, label="Alice W", aliases=["Ally"])])
    assert resolve(raw, cmd) == Resolved("discord", ALICE, "Alice W")


def test_participant_primary_label_matches() -> None:
    cmd = command(participants=[Participant(id=ALICE, label="A. W.", primary_label="Alice")])
    assert resolve("alice", cmd) == Resolved("discord", ALICE, "A. W.")


def test_participant_primary_label_breaks_ties() -> None:
    cmd = command(
        participants=[
            Participant(id=ALICE, label="Misuzu", primary_label="Misuzu", aliases=["mimi"]),
            Participant(id=BOB, label="Mimi", primary_label="Mimi"),
        ]
    )
    assert resolve("Mimi", cmd) == Resolved("discord", BOB, "Mimi")


@pytest.mark.parametrize("primaries", [(None, None), ("Sam", "Sam")])
def test_participant_alias_tie_without_single_primary_is_ambiguous(primaries: tuple[Any, Any]) -> None:
    cmd = command(
        participants=[
            Participant(id=ALICE, label="Sam A", primary_label=primaries[0], aliases=["Sam"]),
            Participant(id=BOB, label="Sam B", primary_label=primaries[1], aliases=["sam"]),
        ]
    )
    assert resolve("sam", cmd) == Ambiguous(("Sam A", "Sam B"))


def test_participant_duplicates_of_one_id_resolve() -> None:
    cmd = command(participants=[Participant(id=ALICE, label="Alice"), Participant(id=ALICE, label="Alice")])
    assert resolve("alice", cmd) == Resolved("discord", ALICE, "Alice")


def test_participant_kind_carries_over() -> None:
    cmd = command(
        participants=[
            Participant(id=MATRIX, kind="matrix", label="Mx (Matrix)", aliases=["mx"]),
            Participant(id=PROXY, kind="proxy", label="Nova"),
        ]
    )
    assert resolve("mx", cmd) == Resolved("matrix", MATRIX, "Mx (Matrix)")
    assert resolve("nova", cmd) == Resolved("proxy", PROXY, "Nova")


def test_participants_beat_member_matches() -> None:
    cmd = command(
        participants=[Participant(id=ALICE, label="Sam")],
        members=[member(BOB, "Sam")],
    )
    assert resolve("Sam", cmd) == Resolved("discord", ALICE, "Sam")


def test_dm_stops_before_member_matches() -> None:
    cmd = command(members=[member(ALICE, "Alice")], is_dm=True)
    assert resolve("Alice", cmd) is NOT_FOUND
    assert resolve("Alice", command(members=[member(ALICE, "Alice")])) == Resolved("discord", ALICE, "Alice")


def test_dm_still_uses_participants() -> None:
    cmd = command(participants=[Participant(id=ALICE, label="Alice")], is_dm=True)
    assert resolve("alice", cmd) == Resolved("discord", ALICE, "Alice")


def test_bots_in_member_matches_are_ignored() -> None:
    cmd = command(members=[member(OTHER_BOT, "Alice", is_bot=True), member(ALICE, "Alice")])
    assert resolve("Alice", cmd) == Resolved("discord", ALICE, "Alice")
    only_bot = command(members=[member(OTHER_BOT, "Helper", is_bot=True)])
    assert resolve("Helper", only_bot) is NOT_FOUND


def test_display_name_falls_back_to_guild_nickname() -> None:
    cmd = command(members=[member(ALICE, None, nickname="Ally", username="alice")])
    assert resolve("ally", cmd) == Resolved("discord", ALICE, "Ally")


def _ctx(persona: dict[str, str] | None = None, saved: dict[str, str] | None = None) -> CreateContext:
    users = {id: KnownUser(user_id=i, disc_id=id, nickname=nick) for i, (id, nick) in enumerate((saved or {}).items())}
    return CreateContext(users=users, persona_nicknames=persona or {})


BOBBY = member(BOB, "Bobby", global_name="Kit", username="kit")


# Each name stage beats every later one: Bob only matches in later stages and loses.
@pytest.mark.parametrize(
    ("winner", "loser", "ctx"),
    [
        (member(ALICE, "Kit"), BOBBY, _ctx(persona={BOB: "Kit"}, saved={BOB: "Kit"})),
        (member(ALICE, "Al"), BOBBY, _ctx(persona={ALICE: "Kit"}, saved={BOB: "Kit"})),
        (member(ALICE, "Al"), BOBBY, _ctx(saved={ALICE: "Kit"})),
        (member(ALICE, "Al", global_name="Kit"), member(BOB, "Bobby", username="kit"), _ctx()),
    ],
)
def test_member_name_stages_in_order(winner: MemberMatch, loser: MemberMatch, ctx: CreateContext) -> None:
    found = resolve("kit", command(members=[loser, winner]), ctx)
    assert found == Resolved("discord", ALICE, winner.display_name)


@pytest.mark.parametrize(
    ("members", "ctx", "raw"),
    [
        ([member(ALICE, "Alice")], _ctx(), "alice"),
        ([member(ALICE, "Alice")], _ctx(persona={ALICE: "Sunny"}), "sunny"),
        ([member(ALICE, "Alice")], _ctx(saved={ALICE: "Ali B"}), "ali  b"),
        ([member(ALICE, "Alice", global_name="Ally G")], _ctx(), "ally g"),
        ([member(ALICE, "Alice", username="alice_w")], _ctx(), "@alice_w"),
    ],
)
def test_each_member_stage_resolves(members: list[MemberMatch], ctx: CreateContext, raw: str) -> None:
    assert resolve(raw, command(members=members), ctx) == Resolved("discord", ALICE, "Alice")


def test_persona_nickname_of_a_bot_is_ignored() -> None:
    cmd = command(members=[member(OTHER_BOT, "Helper", is_bot=True)])
    assert resolve("sunny", cmd, _ctx(persona={OTHER_BOT: "Sunny"})) is NOT_FOUND


@pytest.mark.parametrize("raw", ["Ali", "Alic", "Alice W", "lice", "alice!", "A lice"])
def test_no_fuzzy_or_prefix_matching(raw: str) -> None:
    cmd = command(
        participants=[Participant(id=BOB, label="Alice Wonder")],
        members=[member(ALICE, "Alice", global_name="Alice", username="alice")],
    )
    assert resolve(raw, cmd) is NOT_FOUND


def test_member_ambiguity_reports_at_most_three_labels() -> None:
    cmd = command(
        members=[
            member(ALICE, "Sam", username="sam1"),
            member(BOB, "Sam", username="sam2"),
            member(CAROL, "Sam", username="sam3"),
            member(DAVE, "Sam", username="sam4"),
        ]
    )
    assert resolve("sam", cmd) == Ambiguous(("Sam (@sam1)", "Sam (@sam2)", "Sam (@sam3)"))


def test_member_ambiguity_label_omits_equal_username() -> None:
    cmd = command(members=[member(ALICE, "Sam", username="sam"), member(BOB, "SAM", username="other")])
    assert resolve("sam", cmd) == Ambiguous(("Sam", "SAM (@other)"))


def test_same_member_twice_is_one_id() -> None:
    cmd = command(members=[member(ALICE, "Sam"), member(ALICE, "Sam")])
    assert resolve("sam", cmd) == Resolved("discord", ALICE, "Sam")


def test_participant_ambiguity_reports_at_most_three() -> None:
    cmd = command(participants=[Participant(id=str(10**17 + i), label=f"Jo {i}", aliases=["jo"]) for i in range(5)])
    assert resolve("jo", cmd) == Ambiguous(("Jo 0", "Jo 1", "Jo 2"))


@pytest.mark.parametrize("raw", ["", "   ", "@", "nobody"])
def test_not_found(raw: str) -> None:
    assert resolve(raw, command(members=[member(ALICE, "Alice")])) is NOT_FOUND


def _args(target: Any, scope: str = "target_user") -> dict[str, Any]:
    return {"memory_content": "x", "memory_scope": scope, "target_user": target}


def test_lookup_ids_lists_what_the_decision_reads() -> None:
    cmd = command(
        tool_args=_args("Sam"),
        participants=[
            Participant(id=ALICE, label="A"),
            Participant(id=MATRIX, kind="matrix", label="M"),
            Participant(id=PROXY, kind="proxy", label="P"),
            Participant(id=BOT, label="Tomori"),
        ],
        members=[member(BOB, "B"), member(OTHER_BOT, "H", is_bot=True), member(ALICE, "A"), member(CAROL, "C")],
    )
    assert ids_of(cmd) == (ALICE, PROXY, BOB, CAROL)


def test_lookup_ids_puts_a_raw_snowflake_or_proxy_id_first() -> None:
    assert ids_of(command(tool_args=_args(f"<@{DAVE}>"), members=[member(ALICE, "A")])) == (DAVE, ALICE)
    assert ids_of(command(tool_args=_args(PROXY.upper()))) == (PROXY,)


def test_lookup_ids_skip_member_matches_in_dm() -> None:
    cmd = command(
        tool_args=_args("Sam"), is_dm=True, participants=[Participant(id=ALICE)], members=[member(BOB, "B")]
    )
    assert ids_of(cmd) == (ALICE,)


@pytest.mark.parametrize(
    "tool_args",
    [None, "Sam", _args("Sam", scope="server_wide"), _args("self"), _args("@SELF"), _args(""), {"memory_content": ""}],
)
def test_lookup_ids_empty_when_no_resolution_happens(tool_args: Any) -> None:
    cmd = command(tool_args=tool_args, participants=[Participant(id=ALICE)], members=[member(BOB, "B")])
    assert ids_of(cmd) == ()


def test_command_decoded_from_json_resolves() -> None:
    cmd = msgspec.convert(
        {
            "command_id": "c-2",
            "issued_at": "2025-01-01T00:00:00Z",
            "workspace_id": "1",
            "persona": {"id": 1, "lineage_id": 2, "name": "T"},
            "bot_user_id": BOT,
            "channel": {"id": "2"},
            "member_matches": [{"id": ALICE, "display_name": "Alice"}],
        },
        CreateMemory,
    )
    assert resolve_target("alice", cmd, CreateContext()) == Resolved("discord", ALICE, "Alice")
