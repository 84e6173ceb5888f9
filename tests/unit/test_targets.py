"""The target resolution, held to TomoriBot's `resolveUserTarget` (Bredrumb/TomoriBot
src/utils/discord/targetResolver.ts @a950f54c; palinalif/TomoriBot @6f5e0070 for
src/utils/text/participants/aliases.ts, targetIndex.ts and UserNamingRepository.ts), and the
ids it needs loaded."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.kinds.create import CreateMemory
from contracts.tool_call import AffixVariants, Channel, MemberMatch, Participant, Persona, PersonaNaming, Triggerer
from tests.support.commands import create_command, fixed_envelope
from worker.domain.context import CreateContext
from worker.domain.naming import format_user_name, strip_affixes
from worker.domain.people import KnownUser, PersonaNamingPreference
from worker.domain.targets import NOT_FOUND, AmbiguousTarget, Resolved, lookup_ids, normalize, resolve_target

BOT = "900000000000000001"
ALICE = "100000000000000001"
BOB = "100000000000000002"
CAROL = "100000000000000003"
DAVE = "100000000000000004"
OTHER_BOT = "900000000000000002"
TRIGGERER = "100000000000000009"
PROXY = "pk:0f8e4c1a-2b3d-4e5f-8a9b-0c1d2e3f4a5b"
MATRIX = "@alice:matrix.org"
MASTER = PersonaNaming(prefixes=AffixVariants(neutral="Master", feminine="Lady"),
                       suffixes=AffixVariants(neutral="-san"))


def command(
    *,
    participants: list[Participant] | None = None,
    members: list[MemberMatch] | None = None,
    is_dm: bool = False,
    naming: PersonaNaming | None = None,
) -> CreateMemory:
    return create_command(
        "500000000000000001", persona=Persona(id=3, lineage_id=7, name="Tomori", naming=naming), bot_user_id=BOT,
        triggerer=Triggerer(id=TRIGGERER, name="Tri"), channel=Channel(id="600000000000000001", is_dm=is_dm),
        participants=participants or [], member_matches=members or [],
        envelope_fields=fixed_envelope("c-1"))


def member(id: str, display: str | None = None, **names: Any) -> MemberMatch:
    return MemberMatch(id=id, display_name=display, **names)


def resolve(raw: str, cmd: CreateMemory, ctx: CreateContext | None = None) -> Any:
    return resolve_target(raw, cmd, ctx or CreateContext())


def user(id: str, nickname: str | None = None, *, persona: str | None = None, **naming: Any) -> KnownUser:
    preference = None
    if persona is not None or "persona_prefix" in naming or "persona_suffix" in naming:
        preference = PersonaNamingPreference(persona, naming.pop("persona_prefix", None),
                                             naming.pop("persona_suffix", None))
    return KnownUser(user_id=int(id[-3:]), disc_id=id, nickname=nickname, persona_naming=preference, **naming)


def users(*rows: KnownUser) -> CreateContext:
    return CreateContext(users={row.disc_id: row for row in rows})


# aliases.ts normalizeParticipantAlias: trim, drop every leading "@", trim, lower case, collapse blanks.
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Alice", "alice"),
        ("  @Alice  ", "alice"),
        ("@@Alice", "alice"),
        ("@ Alice", "alice"),
        ("a@lice", "a@lice"),
        ("Mary   Jane\tSmith", "mary jane smith"),
        ("\u3000Mary\u00a0Jane\ufeff", "mary jane"),
        ("ÉLODIE", "élodie"),
        ("@", ""),
        ("", ""),
    ],
)
def test_normalize(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


# --- 1 to 3: ids ------------------------------------------------------------------------------


def test_matrix_id_matches_a_participant_exactly() -> None:
    cmd = command(participants=[Participant(id=MATRIX, kind="matrix", label="Alice")])
    assert resolve(f"  {MATRIX} ", cmd) == Resolved("matrix", MATRIX, "Alice (Matrix)", "legacy_id")
    assert resolve("@Alice:matrix.org", cmd) is NOT_FOUND  # ids are compared as they are


def test_a_matrix_shaped_id_is_a_bridge_user_whatever_its_kind() -> None:
    cmd = command(participants=[Participant(id=MATRIX, kind="discord", label="Alice (Matrix)")])
    assert resolve(MATRIX, cmd) == Resolved("matrix", MATRIX, "Alice (Matrix)", "legacy_id")


def test_matrix_stage_comes_before_aliases() -> None:
    cmd = command(participants=[Participant(id=ALICE, label="Someone", aliases=[MATRIX]),
                                Participant(id=MATRIX, kind="matrix", label="Alice (Matrix)")])
    assert resolve(MATRIX, cmd) == Resolved("matrix", MATRIX, "Alice (Matrix)", "legacy_id")


@pytest.mark.parametrize("pid", [PROXY, "pb:12345", "pb:i:48:pluralbuddy:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0:7"])
def test_proxy_id_matches_a_participant_exactly(pid: str) -> None:
    cmd = command(participants=[Participant(id=pid, label="Nova")])
    assert resolve(pid, cmd) == Resolved("proxy", pid, "Nova", "legacy_id")
    assert resolve(pid.upper(), cmd) is NOT_FOUND


def test_proxy_id_without_participant_falls_through_to_the_names() -> None:
    assert resolve(PROXY, command(members=[member(ALICE, PROXY)])) == Resolved(
        "discord", ALICE, PROXY, "guild_display_name")
    assert resolve(PROXY, command(is_dm=True)) is NOT_FOUND


def test_snowflake_matches_member_then_participant() -> None:
    cmd = command(members=[member(ALICE, "Alice", username="alice_01")],
                  participants=[Participant(id=ALICE, label="Ally")])
    assert resolve(ALICE, cmd) == Resolved("discord", ALICE, "Alice (@alice_01)", "legacy_id")
    assert resolve(ALICE, command(participants=[Participant(id=ALICE, label="Ally")])) == Resolved(
        "discord", ALICE, "Ally", "legacy_id")


def test_snowflake_member_is_not_looked_up_in_a_dm() -> None:
    cmd = command(members=[member(ALICE, "Alice")], participants=[Participant(id=ALICE, label="Ally")], is_dm=True)
    assert resolve(ALICE, cmd) == Resolved("discord", ALICE, "Ally", "legacy_id")


@pytest.mark.parametrize("raw", [f"@{ALICE}", f"<@{ALICE}>", f"<@!{ALICE}>"])
def test_mentions_and_at_ids_are_not_ids(raw: str) -> None:
    """TomoriBot's snowflake test is `/^\\d{17,20}$/` on the trimmed input: nothing else."""
    cmd = command(members=[member(ALICE, "Alice", username="alice")])
    assert resolve(raw, cmd) is NOT_FOUND


def test_a_snowflake_that_matches_nobody_stops_the_resolution() -> None:
    cmd = command(members=[member(ALICE, username=DAVE)], participants=[Participant(id=BOB, aliases=[DAVE])])
    assert resolve(DAVE, cmd) is NOT_FOUND


def test_the_bots_own_id_is_not_found_unless_a_participant_carries_it() -> None:
    cmd = command(members=[member(BOT, "Tomori", is_bot=True)])
    assert resolve(BOT, cmd) is NOT_FOUND
    with_persona = command(participants=[Participant(id=BOT, label="Tomori", aliases=["Tomori"])])
    assert resolve(BOT, with_persona) == Resolved("discord", BOT, "Tomori", "legacy_id")


def test_snowflake_of_another_bot_never_resolves() -> None:
    assert resolve(OTHER_BOT, command(members=[member(OTHER_BOT, "Helper", is_bot=True)])) is NOT_FOUND


@pytest.mark.parametrize("raw", ["1234567890123456", "123456789012345678901"])
def test_snowflake_needs_17_to_20_digits(raw: str) -> None:
    cmd = command(members=[member(raw, "x")], participants=[Participant(id=raw, label="y")])
    assert resolve(raw, cmd) is NOT_FOUND


# --- 4: the participants' aliases ------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["Ally", "ally", "@ALLY", "  ally "])
def test_participants_match_by_their_aliases(raw: str) -> None:
    cmd = command(participants=[Participant(id=ALICE, label="Alice W", aliases=["Ally"])])
    assert resolve(raw, cmd) == Resolved("discord", ALICE, "Alice W", "conversation")


def test_a_label_that_is_no_alias_does_not_match() -> None:
    """projectConversationUserReferences: only tool_target aliases are matched; the label marks the primary."""
    cmd = command(participants=[Participant(id=ALICE, label="Alice W", primary_label="Alice")])
    assert resolve("alice w", cmd) is NOT_FOUND
    assert resolve("alice", cmd) is NOT_FOUND


def test_the_one_whose_label_it_is_wins_a_shared_alias() -> None:
    cmd = command(participants=[Participant(id=ALICE, label="Misuzu", aliases=["Misuzu", "mimi"]),
                                Participant(id=BOB, label="Mimi", aliases=["Mimi"])])
    assert resolve("Mimi", cmd) == Resolved("discord", BOB, "Mimi", "conversation")


@pytest.mark.parametrize("labels", [("Sam A", "Sam B"), ("Sam", "Sam")])
def test_an_alias_tie_without_one_label_match_is_ambiguous(labels: tuple[str, str]) -> None:
    cmd = command(participants=[Participant(id=ALICE, label=labels[0], aliases=["Sam"]),
                                Participant(id=BOB, label=labels[1], aliases=["sam"])])
    assert resolve("sam", cmd) == AmbiguousTarget(labels)


def test_participant_duplicates_of_one_id_resolve() -> None:
    cmd = command(participants=[Participant(id=ALICE, label="Alice", aliases=["Alice"]),
                                Participant(id=ALICE, label="Alice", aliases=["alice"])])
    assert resolve("alice", cmd) == Resolved("discord", ALICE, "Alice", "conversation")


def test_participant_kinds_and_bridge_labels() -> None:
    cmd = command(participants=[Participant(id=MATRIX, kind="matrix", label="Mx", aliases=["mx"]),
                                Participant(id=PROXY, label="Nova", aliases=["Nova"])])
    assert resolve("mx", cmd) == Resolved("matrix", MATRIX, "Mx (Matrix)", "conversation")
    assert resolve("nova", cmd) == Resolved("proxy", PROXY, "Nova", "conversation")


def test_participants_beat_member_matches() -> None:
    cmd = command(participants=[Participant(id=ALICE, label="Sam", aliases=["Sam"])], members=[member(BOB, "Sam")])
    assert resolve("Sam", cmd) == Resolved("discord", ALICE, "Sam", "conversation")


def test_participant_ambiguity_reports_at_most_three() -> None:
    cmd = command(participants=[Participant(id=str(10**17 + i), label=f"Jo {i}", aliases=["jo"]) for i in range(5)])
    assert resolve("jo", cmd) == AmbiguousTarget(("Jo 0", "Jo 1", "Jo 2"))


def test_dm_stops_after_the_participants() -> None:
    assert resolve("Alice", command(members=[member(ALICE, "Alice")], is_dm=True)) is NOT_FOUND
    cmd = command(participants=[Participant(id=ALICE, label="Alice", aliases=["Alice"])], is_dm=True)
    assert resolve("alice", cmd) == Resolved("discord", ALICE, "Alice", "conversation")


# --- 5: the name ladder over the members ----------------------------------------------------------


def test_bots_in_member_matches_are_ignored() -> None:
    cmd = command(members=[member(OTHER_BOT, "Alice", is_bot=True), member(ALICE, "Alice")])
    assert resolve("Alice", cmd) == Resolved("discord", ALICE, "Alice", "guild_display_name")
    assert resolve("Helper", command(members=[member(OTHER_BOT, "Helper", is_bot=True)])) is NOT_FOUND


def test_display_name_falls_back_as_discord_computes_it() -> None:
    cmd = command(members=[member(ALICE, None, nickname="Ally", username="alice")])
    assert resolve("ally", cmd) == Resolved("discord", ALICE, "Ally (@alice)", "guild_display_name")


BOBBY = member(BOB, "Bobby", global_name="Kit", username="kit")


# Each stage beats every later one: Bob only matches in later stages and loses.
@pytest.mark.parametrize(
    ("winner", "loser", "ctx", "source"),
    [
        (member(ALICE, "Kit"), BOBBY, users(user(BOB, "Kit", persona="Kit")), "guild_display_name"),
        (member(ALICE, "Al"), BOBBY, users(user(ALICE, persona="Kit"), user(BOB, "Kit")), "persona_nickname"),
        (member(ALICE, "Al"), BOBBY, users(user(ALICE, "Kit")), "db_nickname"),
        (member(ALICE, "Al", global_name="Kit"), member(BOB, "Bobby", username="kit"), CreateContext(),
         "global_name"),
    ],
)
def test_member_name_stages_in_order(winner: MemberMatch, loser: MemberMatch, ctx: CreateContext,
                                     source: str) -> None:
    found = resolve("kit", command(members=[loser, winner]), ctx)
    assert isinstance(found, Resolved) and (found.id, found.source) == (ALICE, source)


@pytest.mark.parametrize(
    ("members", "ctx", "raw", "source", "label"),
    [
        ([member(ALICE, "Alice")], CreateContext(), "alice", "guild_display_name", "Alice"),
        ([member(ALICE, "Alice")], users(user(ALICE, persona="Sunny")), "sunny", "persona_nickname", "Alice"),
        ([member(ALICE, "Alice")], users(user(ALICE, "Ali  B")), "ali b", "db_nickname", "Alice"),
        ([member(ALICE, "Alice", global_name="Ally G")], CreateContext(), "ally g", "global_name", "Alice"),
        ([member(ALICE, "Alice", username="alice_w")], CreateContext(), "@alice_w", "username", "Alice (@alice_w)"),
    ],
)
def test_each_member_stage_resolves(members: list[MemberMatch], ctx: CreateContext, raw: str, source: str,
                                    label: str) -> None:
    assert resolve(raw, command(members=members), ctx) == Resolved("discord", ALICE, label, source)  # type: ignore[arg-type]


def test_a_persona_nickname_counts_for_its_lineage_only() -> None:
    """UserNamingRepository.findByPersonaNickname is scoped by lineage: the context holds this lineage's."""
    assert resolve("sunny", command(members=[member(ALICE, "Alice")]), users(user(ALICE))) is NOT_FOUND


def test_nicknames_of_members_not_sent_are_not_found() -> None:
    """TomoriBot fetches the database's matches from the guild; the bot must send them as members."""
    assert resolve("sunny", command(), users(user(ALICE, persona="Sunny"))) is NOT_FOUND


def test_persona_nickname_of_a_bot_is_ignored() -> None:
    cmd = command(members=[member(OTHER_BOT, "Helper", is_bot=True)])
    assert resolve("sunny", cmd, users(user(OTHER_BOT, persona="Sunny"))) is NOT_FOUND


def test_two_members_with_one_persona_nickname_are_ambiguous() -> None:
    cmd = command(members=[member(ALICE, "Alice", username="a1"), member(BOB, "Bob", username="b1")])
    ctx = users(user(ALICE, persona="Kit"), user(BOB, persona="kit"))
    assert resolve("kit", cmd, ctx) == AmbiguousTarget(("Alice (@a1)", "Bob (@b1)"))


@pytest.mark.parametrize("raw", ["Ali", "Alic", "Alice W", "lice", "alice!", "A lice"])
def test_no_fuzzy_or_prefix_matching(raw: str) -> None:
    cmd = command(participants=[Participant(id=BOB, label="Alice Wonder", aliases=["Alice Wonder"])],
                  members=[member(ALICE, "Alice", global_name="Alice", username="alice")])
    assert resolve(raw, cmd) is NOT_FOUND


def test_member_ambiguity_reports_at_most_three_labels() -> None:
    cmd = command(members=[member(ALICE, "Sam", username="sam1"), member(BOB, "Sam", username="sam2"),
                           member(CAROL, "Sam", username="sam3"), member(DAVE, "Sam", username="sam4")])
    assert resolve("sam", cmd) == AmbiguousTarget(("Sam (@sam1)", "Sam (@sam2)", "Sam (@sam3)"))


def test_member_labels_omit_an_equal_username() -> None:
    cmd = command(members=[member(ALICE, "Sam", username="sam"), member(BOB, "SAM", username="other")])
    assert resolve("sam", cmd) == AmbiguousTarget(("Sam", "SAM (@other)"))


def test_same_member_twice_is_one_id() -> None:
    cmd = command(members=[member(ALICE, "Sam"), member(ALICE, "Sam")])
    assert resolve("sam", cmd) == Resolved("discord", ALICE, "Sam", "guild_display_name")


# --- 6: the ladder again without a persona affix ---------------------------------------------------


@pytest.mark.parametrize("raw", ["Master Alice", "master alice", "Lady Alice", "Alice-san", "Master Alice -san",
                                 "Master   Alice"])
def test_a_persona_affix_comes_off(raw: str) -> None:
    cmd = command(members=[member(ALICE, "Alice")], naming=MASTER)
    assert resolve(raw, cmd) == Resolved("discord", ALICE, "Alice", "guild_display_name")


def test_affixes_come_off_only_with_the_personas_naming() -> None:
    assert resolve("Master Alice", command(members=[member(ALICE, "Alice")])) is NOT_FOUND


def test_the_whole_name_is_tried_first() -> None:
    cmd = command(members=[member(ALICE, "Alice"), member(BOB, "Master Alice")], naming=MASTER)
    assert resolve("Master Alice", cmd) == Resolved("discord", BOB, "Master Alice", "guild_display_name")


def test_the_stripped_ladder_reads_every_stage() -> None:
    cmd = command(members=[member(ALICE, "Alice")], naming=MASTER)
    assert resolve("Master Sunny", cmd, users(user(ALICE, persona="Sunny"))) == Resolved(
        "discord", ALICE, "Alice", "persona_nickname")


def test_an_affix_alone_is_no_name() -> None:
    cmd = command(members=[member(ALICE, "Master")], naming=MASTER)
    assert resolve("Master", cmd) == Resolved("discord", ALICE, "Master", "guild_display_name")
    assert resolve("-san", command(naming=MASTER)) is NOT_FOUND


# --- 7: composed names ------------------------------------------------------------------------------


def test_a_composed_name_with_a_persons_own_affixes() -> None:
    """Affixes the person set for themselves (globally or for the lineage) are rebuilt, with
    the persona's own where they set none."""
    cmd = command(members=[member(ALICE, "Alice")], naming=MASTER)
    ctx = users(user(ALICE, "Ali", prefix_override="Captain"))
    assert resolve("Captain Ali-san", cmd, ctx) == Resolved("discord", ALICE, "Alice", "composed_name")
    ctx = users(user(ALICE, "Ali", prefix_override="Captain", suffix_override=""))
    assert resolve("Captain Ali", cmd, ctx) == Resolved("discord", ALICE, "Alice", "composed_name")
    ctx = users(user(ALICE, "Ali", persona="Sparrow", persona_prefix="Sir", persona_suffix=""))
    assert resolve("Sir Sparrow", cmd, ctx) == Resolved("discord", ALICE, "Alice", "composed_name")


def test_a_name_the_persona_composed_is_found_by_taking_its_affix_off() -> None:
    cmd = command(members=[member(ALICE, "Alice")], naming=MASTER)
    assert resolve("Master Ali-san", cmd, users(user(ALICE, "Ali"))) == Resolved(
        "discord", ALICE, "Alice", "db_nickname")


def test_the_addressing_style_picks_the_personas_variant() -> None:
    naming = PersonaNaming(suffixes=AffixVariants(feminine="-chan", neutral="-san"))
    cmd = command(members=[member(ALICE, "Alice")], naming=naming)
    ctx = users(user(ALICE, "Ali", addressing_style="feminine", prefix_override="Captain"))
    assert resolve("Captain Ali-chan", cmd, ctx) == Resolved("discord", ALICE, "Alice", "composed_name")
    assert resolve("Captain Ali-san", cmd, ctx) is NOT_FOUND


def test_a_composed_name_needs_a_stored_nickname_inside_the_input() -> None:
    cmd = command(members=[member(ALICE, "Alice")], naming=MASTER)
    assert resolve("Captain Ali", cmd, users(user(ALICE, None, prefix_override="Captain"))) is NOT_FOUND


def test_two_composed_names_alike_are_ambiguous() -> None:
    cmd = command(members=[member(ALICE, "Alice", username="a1"), member(BOB, "Bob", username="b1")])
    ctx = users(user(ALICE, "Kit", prefix_override="Sir"), user(BOB, "kit", prefix_override="sir"))
    assert resolve("Sir Kit", cmd, ctx) == AmbiguousTarget(("Alice (@a1)", "Bob (@b1)"))


@pytest.mark.parametrize("raw", ["", "   ", "@", "nobody"])
def test_not_found(raw: str) -> None:
    assert resolve(raw, command(members=[member(ALICE, "Alice")])) is NOT_FOUND


# --- what the decision reads ----------------------------------------------------------------------


def test_lookup_ids_lists_what_the_decision_reads() -> None:
    cmd = command(
        participants=[Participant(id=ALICE, label="A"), Participant(id=MATRIX, kind="matrix", label="M"),
                      Participant(id=PROXY, kind="proxy", label="P"), Participant(id=BOT, label="Tomori")],
        members=[member(BOB, "B"), member(OTHER_BOT, "H", is_bot=True), member(ALICE, "A"), member(CAROL, "C")],
    )
    assert lookup_ids(cmd, "Sam") == (TRIGGERER, ALICE, PROXY, BOT, BOB, CAROL)


def test_lookup_ids_adds_a_raw_snowflake_or_proxy_id() -> None:
    assert lookup_ids(command(members=[member(ALICE, "A")]), f" {DAVE} ") == (TRIGGERER, DAVE, ALICE)
    assert lookup_ids(command(), PROXY) == (TRIGGERER, PROXY)
    assert lookup_ids(command(), PROXY.upper()) == (TRIGGERER,)


def test_lookup_ids_skip_member_matches_in_dm() -> None:
    cmd = command(is_dm=True, participants=[Participant(id=ALICE)], members=[member(BOB, "B")])
    assert lookup_ids(cmd, "Sam") == (TRIGGERER, ALICE)


@pytest.mark.parametrize("target", [None, "", " ", "@"])
def test_lookup_ids_only_the_triggerer_without_a_target(target: str | None) -> None:
    cmd = command(participants=[Participant(id=ALICE)], members=[member(BOB, "B")])
    assert lookup_ids(cmd, target) == (TRIGGERER,)


def test_command_decoded_from_json_resolves() -> None:
    cmd = msgspec.convert(
        {
            "command_id": "c-2",
            "issued_at": "2025-01-01T00:00:00Z",
            "workspace_id": "1",
            "persona": {"id": 1, "lineage_id": 2, "name": "T", "naming": {"prefixes": {"neutral": "Master"}}},
            "bot_user_id": BOT,
            "channel": {"id": "2"},
            "member_matches": [{"id": ALICE, "display_name": "Alice"}],
        },
        CreateMemory,
    )
    assert resolve_target("master alice", cmd, CreateContext()) == Resolved(
        "discord", ALICE, "Alice", "guild_display_name")


# --- userNaming.ts formatUserName (palinalif/TomoriBot @6f5e0070): how a composed name is joined ----


@pytest.mark.parametrize(("nickname", "prefix", "suffix", "name"), [
    ("Sparrow", "Master", "", "Master Sparrow"),
    ("Sparrow", "dad", "", "Dad Sparrow"),  # an all-lower-case leading token is capitalised
    ("sparrow", "", "", "Sparrow"),
    ("sparrow", "Dr", "", "Dr sparrow"),  # the leading token decides, not the nickname
    ("Sparrow", "Ms.", "", "Ms. Sparrow"),  # terminal punctuation keeps its space
    ("Sparrow", "Yo!", "", "Yo! Sparrow"),
    ("sparrow", "@", "", "@sparrow"),  # other punctuation and symbols bind
    ("Sparrow", "super-", "", "Super-Sparrow"),  # capitalised: the code does, whatever its comment says
    ("Sparrow", "super- ", "", "Super- Sparrow"),  # a blank after the raw prefix keeps one
    ("スズメ", "お", "", "おスズメ"),  # kana and CJK bind
    ("Sparrow", "", "-san", "Sparrow-san"),
    ("Sparrow", "", "さん", "Sparrowさん"),
    ("Sparrow", "", "jr", "Sparrow jr"),
    ("Sparrow", "", " -san", "Sparrow -san"),  # a blank before the raw suffix keeps one
    ("  Sparrow ", " ", " ", "Sparrow"),
])
def test_format_user_name(nickname: str, prefix: str, suffix: str, name: str) -> None:
    assert format_user_name(nickname, prefix, suffix) == name


def test_strip_affixes_takes_off_at_most_one_of_each_longest_first() -> None:
    naming = PersonaNaming(prefixes=AffixVariants(neutral="Sir", masculine="Sir Knight"),
                           suffixes=AffixVariants(neutral="-san", feminine="-chan"))
    assert strip_affixes("Sir Knight Kit-san", naming) == "Kit"
    assert strip_affixes("Sir Sir Kit", naming) == "Sir Kit"
    assert strip_affixes("Kit", naming) is None
    assert strip_affixes("Sir", naming) is None  # nothing would be left
