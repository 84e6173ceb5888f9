"""The notice planner of section 6: routing, cards, expand action and notice.txt."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.events import MemorySaved
from contracts.kinds.create import CommandResult, ResultData
from contracts.tool_call import Channel
from worker.domain.notice import (
    DESCRIPTION_LIMIT,
    FIELD_VALUE_LIMIT,
    NoticeSettings,
    NoticeSubject,
    channel_privacy,
    full_text,
    plan_notice,
    route_notice,
    truncate_field,
)
from worker.domain.tool_texts import SERVER_MEMORY_FOOTER, memory_embed

EMBED = memory_embed("learned", "server", persona_nickname="Tomori", user_nickname=None, content="{user} likes tea",
                     footer_key=SERVER_MEMORY_FOOTER, ref={"kind": "server_memory", "id": 1})


def notice_of(settings: NoticeSettings, chan: Channel, subject: NoticeSubject) -> Any:
    """The notice a save's result carries: routed before the save, planned with what it saved."""
    return plan_notice(route_notice(settings, chan), subject, EMBED)


LOG = "900"
URL = "https://discord.com/channels/1/42"
PLAN_KEYS = {
    "version", "key", "verbosity", "hidden", "title", "conversation", "thought_log",
    "thought_log_skipped", "dropped_reason", "embed",
}


def channel(**overrides: Any) -> Channel:
    values: dict[str, Any] = {"id": "42", "url": URL}
    values.update(overrides)
    return Channel(**values)


def saved(content: str = "{user} likes tea", scope: str = "server") -> NoticeSubject:
    return NoticeSubject(kind="saved", scope_label=scope, content_saved=content,
                         content_forgotten=None, persona_name="Tomori")


def evicted(content: str = "{user} likes tea", forgotten: str = "{user} likes coffee") -> NoticeSubject:
    return NoticeSubject(kind="saved_with_eviction", scope_label="personal: Mika",
                         content_saved=content, content_forgotten=forgotten, persona_name="Tomori")


EXPECTED_CARD = {
    "title": "Memory saved",
    "fields": [{"name": "Scope", "value": "server"}, {"name": "Saved", "value": "{user} likes tea"}],
    "footer": "Saved by Tomori",
}


@dataclass(frozen=True)
class Route:
    settings: dict[str, Any]
    channel: dict[str, Any] = field(default_factory=dict)
    conversation: str | None = None  # expected mode, or None for no conversation post
    thought_log: bool = False
    skipped: str | None = None
    dropped: str | None = None


MINIMAL_LOG = {"thought_log_channel_id": LOG}
VERBOSE_LOG = {"verbosity": "verbose", "thought_log_channel_id": LOG}
HIDDEN_LOG = {"hidden_keys": ("memory_update",), "thought_log_channel_id": LOG}
HIDDEN_VERBOSE_LOG = {**HIDDEN_LOG, "verbosity": "verbose"}
HIDDEN_NO_LOG = {"hidden_keys": ("memory_update",)}
LISTED = {"private_channel_ids": ("7", "42")}

ROUTES = [
    # minimal: title in the conversation, full card mirrored only from public channels
    pytest.param(Route(MINIMAL_LOG, {}, "title", True), id="minimal-public-mirrored"),
    pytest.param(Route(MINIMAL_LOG, {"is_dm": True}, "title", skipped="dm"), id="minimal-dm"),
    pytest.param(Route(MINIMAL_LOG, {"is_private": True}, "title", skipped="private"),
                 id="minimal-private-flag"),
    pytest.param(Route({**MINIMAL_LOG, **LISTED}, {}, "title", skipped="listed_private"),
                 id="minimal-listed-private"),
    pytest.param(Route({**MINIMAL_LOG, "private_channel_ids": ("7",)}, {}, "title", True),
                 id="minimal-other-channel-listed-private"),
    pytest.param(Route(MINIMAL_LOG, {"everyone_can_view": False}, "title",
                       skipped="not_readable_by_everyone"), id="minimal-not-readable-by-everyone"),
    pytest.param(Route({}, {}, "title", skipped="not_configured"), id="minimal-no-thought-log"),
    pytest.param(Route({"thought_log_channel_id": "  "}, {}, "title", skipped="not_configured"),
                 id="minimal-blank-thought-log"),
    pytest.param(Route({}, {"is_dm": True}, "title", skipped="not_configured"),
                 id="minimal-dm-no-thought-log"),
    # verbose: the full card in the conversation, no mirror
    pytest.param(Route(VERBOSE_LOG, {}, "card"), id="verbose-public"),
    pytest.param(Route(VERBOSE_LOG, {"is_dm": True}, "card"), id="verbose-dm"),
    pytest.param(Route({"verbosity": "verbose"}, {"is_private": True}, "card"),
                 id="verbose-private-no-thought-log"),
    # hidden key: nothing in the conversation; thought log only from public channels
    pytest.param(Route(HIDDEN_LOG, {}, None, True), id="hidden-public-thought-log"),
    pytest.param(Route(HIDDEN_VERBOSE_LOG, {}, None, True), id="hidden-verbose-public-thought-log"),
    pytest.param(Route(HIDDEN_NO_LOG, {}, None, skipped="not_configured",
                       dropped="hidden_key_no_thought_log"), id="hidden-public-no-thought-log"),
    pytest.param(Route(HIDDEN_LOG, {"is_dm": True}, None, skipped="dm",
                       dropped="hidden_key_non_public_channel"), id="hidden-dm-dropped"),
    pytest.param(Route(HIDDEN_NO_LOG, {"is_dm": True}, None, skipped="not_configured",
                       dropped="hidden_key_no_thought_log"), id="hidden-dm-no-thought-log-dropped"),
    pytest.param(Route(HIDDEN_LOG, {"is_private": True}, None, skipped="private",
                       dropped="hidden_key_non_public_channel"), id="hidden-private-flag-dropped"),
    pytest.param(Route({**HIDDEN_LOG, **LISTED}, {}, None, skipped="listed_private",
                       dropped="hidden_key_non_public_channel"), id="hidden-listed-private-dropped"),
    pytest.param(Route(HIDDEN_LOG, {"everyone_can_view": False}, None,
                       skipped="not_readable_by_everyone", dropped="hidden_key_non_public_channel"),
                 id="hidden-not-readable-dropped"),
    pytest.param(Route(HIDDEN_VERBOSE_LOG, {"is_dm": True}, None, skipped="dm",
                       dropped="hidden_key_non_public_channel"), id="hidden-verbose-dm-dropped"),
    pytest.param(Route({"hidden_keys": ["web_search", " Memory_Update "], "thought_log_channel_id": LOG},
                       {}, None, True), id="hidden-key-among-others-any-case"),
    pytest.param(Route({"hidden_keys": ("web_search", "memory"), "thought_log_channel_id": LOG},
                       {}, "title", True), id="other-keys-hidden-only"),
]


@pytest.mark.parametrize("route", ROUTES)
def test_routing(route: Route) -> None:
    plan = notice_of(NoticeSettings(**route.settings), channel(**route.channel), saved())

    assert set(plan) == PLAN_KEYS
    assert plan["key"] == "memory_update"
    assert plan["title"] == "Memory saved"
    assert plan["hidden"] is (route.conversation is None)
    assert plan["thought_log_skipped"] == route.skipped
    assert plan["dropped_reason"] == route.dropped

    conversation = plan["conversation"]
    if route.conversation is None:
        assert conversation is None
    else:
        assert conversation is not None
        assert conversation["channel_id"] == "42"
        assert conversation["mode"] == route.conversation
        assert conversation["title"] == "Memory saved"
        assert conversation["card"] == (EXPECTED_CARD if route.conversation == "card" else None)
        assert conversation["expand"] is None
        assert conversation["attachment"] is None

    if route.thought_log:
        assert plan["thought_log"] == {
            "channel_id": LOG, "card": EXPECTED_CARD, "source_url": URL,
            "expand": None, "attachment": None,
        }
    else:
        assert plan["thought_log"] is None


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        pytest.param({}, None, id="public"),
        pytest.param({"is_dm": True}, "dm", id="dm"),
        pytest.param({"is_private": True}, "private", id="private"),
        pytest.param({"id": "7"}, "listed_private", id="listed"),
        pytest.param({"everyone_can_view": False}, "not_readable_by_everyone", id="not-readable"),
    ],
)
def test_channel_privacy(overrides: dict[str, Any], expected: str | None) -> None:
    assert channel_privacy(channel(**overrides), ("7",)) == expected


def test_eviction_card_shows_saved_and_forgotten() -> None:
    plan = notice_of(NoticeSettings(verbosity="verbose"), channel(), evicted())
    assert plan["title"] == "Memory saved (one forgotten to make room)"
    conversation = plan["conversation"]
    assert conversation is not None
    assert conversation["title"] == "Memory saved (one forgotten to make room)"
    assert conversation["card"] == {
        "title": "Memory saved (one forgotten to make room)",
        "fields": [
            {"name": "Scope", "value": "personal: Mika"},
            {"name": "Saved", "value": "{user} likes tea"},
            {"name": "Forgotten", "value": "{user} likes coffee"},
        ],
        "footer": "Saved by Tomori",
    }


def test_eviction_card_is_mirrored_whole_in_minimal_mode() -> None:
    plan = notice_of(NoticeSettings(thought_log_channel_id=LOG), channel(), evicted())
    conversation, log = plan["conversation"], plan["thought_log"]
    assert conversation is not None and log is not None
    assert conversation["mode"] == "title"
    assert conversation["title"] == "Memory saved (one forgotten to make room)"
    values = [f["value"] for f in log["card"]["fields"]]
    assert values == ["personal: Mika", "{user} likes tea", "{user} likes coffee"]


def test_field_at_the_limit_is_not_cut() -> None:
    content = "a" * FIELD_VALUE_LIMIT
    plan = notice_of(NoticeSettings(verbosity="verbose"), channel(), saved(content))
    conversation = plan["conversation"]
    assert conversation is not None and conversation["card"] is not None
    assert conversation["card"]["fields"][1]["value"] == content
    assert conversation["expand"] is None
    assert conversation["attachment"] is None


def test_long_content_gets_an_ellipsis_and_an_expand_action() -> None:
    content = "tea " * 300 + "END"  # 1203 characters
    plan = notice_of(NoticeSettings(verbosity="verbose"), channel(), saved(content))
    conversation = plan["conversation"]
    assert conversation is not None and conversation["card"] is not None
    value = conversation["card"]["fields"][1]["value"]
    assert len(value) <= FIELD_VALUE_LIMIT
    assert value.endswith("…")
    assert content.startswith(value[:-1])
    assert "END" not in value
    expand = conversation["expand"]
    assert expand is not None
    assert expand["delivery"] == "description"
    assert expand["description"] == full_text(saved(content))
    assert content in (expand["description"] or "")
    assert conversation["attachment"] is None


def test_one_character_over_the_limit_is_cut() -> None:
    content = "b" * (FIELD_VALUE_LIMIT + 1)
    value, cut = truncate_field(content)
    assert cut
    assert len(value) == FIELD_VALUE_LIMIT
    assert value == "b" * (FIELD_VALUE_LIMIT - 1) + "…"


def test_long_forgotten_content_also_triggers_expand() -> None:
    forgotten = "coffee " * 200
    plan = notice_of(NoticeSettings(verbosity="verbose"), channel(), evicted(forgotten=forgotten))
    conversation = plan["conversation"]
    assert conversation is not None and conversation["card"] is not None
    assert conversation["card"]["fields"][1]["value"] == "{user} likes tea"
    assert conversation["card"]["fields"][2]["value"].endswith("…")
    assert conversation["expand"] is not None
    assert forgotten in (conversation["expand"]["description"] or "")


def test_expanded_text_past_4096_becomes_an_ephemeral_notice_txt() -> None:
    content = "x" * 5000
    plan = notice_of(NoticeSettings(verbosity="verbose"), channel(), saved(content))
    conversation = plan["conversation"]
    assert conversation is not None
    assert conversation["expand"] == {"label": "Show full text", "delivery": "attachment",
                                      "description": None}
    attachment = conversation["attachment"]
    assert attachment == {"filename": "notice.txt", "content": full_text(saved(content)),
                          "ephemeral": True}
    assert content in attachment["content"]


def test_eviction_attachment_holds_both_contents_in_full() -> None:
    subject = evicted(content="s" * 3000, forgotten="f" * 3000)
    plan = notice_of(NoticeSettings(verbosity="verbose"), channel(), subject)
    conversation = plan["conversation"]
    assert conversation is not None and conversation["attachment"] is not None
    text = conversation["attachment"]["content"]
    assert "s" * 3000 in text and "f" * 3000 in text
    assert text.index("Saved:") < text.index("Forgotten:")


def _content_for_full_text_length(length: int) -> str:
    overhead = len(full_text(saved("")))
    return "y" * (length - overhead)


def test_expanded_text_of_exactly_4096_stays_a_description() -> None:
    content = _content_for_full_text_length(DESCRIPTION_LIMIT)
    assert len(full_text(saved(content))) == DESCRIPTION_LIMIT
    plan = notice_of(NoticeSettings(verbosity="verbose"), channel(), saved(content))
    conversation = plan["conversation"]
    assert conversation is not None and conversation["expand"] is not None
    assert conversation["expand"]["delivery"] == "description"
    assert conversation["attachment"] is None


def test_expanded_text_of_4097_becomes_an_attachment() -> None:
    content = _content_for_full_text_length(DESCRIPTION_LIMIT + 1)
    plan = notice_of(NoticeSettings(verbosity="verbose"), channel(), saved(content))
    conversation = plan["conversation"]
    assert conversation is not None and conversation["expand"] is not None
    assert conversation["expand"]["delivery"] == "attachment"
    assert conversation["attachment"] is not None


@pytest.mark.parametrize(
    ("settings_kwargs", "length"),
    [
        pytest.param(MINIMAL_LOG, 2000, id="minimal-expand"),
        pytest.param(MINIMAL_LOG, 6000, id="minimal-attachment"),
        pytest.param(HIDDEN_LOG, 6000, id="hidden-attachment"),
    ],
)
def test_long_content_in_the_thought_log_keeps_the_full_text(
    settings_kwargs: dict[str, Any], length: int
) -> None:
    content = "z" * length
    plan = notice_of(NoticeSettings(**settings_kwargs), channel(), saved(content))
    log = plan["thought_log"]
    assert log is not None and log["expand"] is not None
    assert len(log["card"]["fields"][1]["value"]) == FIELD_VALUE_LIMIT
    if length > DESCRIPTION_LIMIT:
        assert log["attachment"] is not None and content in log["attachment"]["content"]
    else:
        assert log["attachment"] is None and content in (log["expand"]["description"] or "")
    conversation = plan["conversation"]
    if conversation is not None:  # minimal: title only, nothing to expand there
        assert conversation["expand"] is None and conversation["attachment"] is None


def test_source_url_is_the_command_channel_url() -> None:
    plan = notice_of(NoticeSettings(thought_log_channel_id=LOG), channel(url=None), saved())
    assert plan["thought_log"] is not None
    assert plan["thought_log"]["source_url"] is None
    plan = notice_of(NoticeSettings(thought_log_channel_id=LOG),
                       channel(url="https://discord.com/channels/5/6"), saved())
    assert plan["thought_log"] is not None
    assert plan["thought_log"]["source_url"] == "https://discord.com/channels/5/6"


def test_empty_content_gets_a_placeholder_value() -> None:
    plan = notice_of(NoticeSettings(verbosity="verbose"), channel(), saved(""))
    conversation = plan["conversation"]
    assert conversation is not None and conversation["card"] is not None
    assert conversation["card"]["fields"][1]["value"] == "(empty)"


def test_plan_is_json_ready_and_travels_in_result_and_event() -> None:
    plan = notice_of(NoticeSettings(verbosity="verbose"), channel(), evicted(content="q" * 5000))
    assert msgspec.json.decode(msgspec.json.encode(plan)) == plan

    result = CommandResult(command_id="c-1", success=True,
                           data=ResultData(status="memory_saved_with_eviction"), notice=dict(plan))
    decoded = msgspec.json.decode(msgspec.json.encode(result), type=CommandResult)
    assert decoded.notice == plan

    event = MemorySaved(event_id="e", command_id="c-1", occurred_at="2025-06-01T00:00:00Z",
                        scope="server", workspace_id="1", owner_id="1", lineage_id=1, memory_id=2,
                        content="q", source="model", manually_written=False, notice=dict(plan))
    assert msgspec.json.decode(msgspec.json.encode(event), type=MemorySaved).notice == plan


def test_settings_reject_an_unknown_verbosity() -> None:
    with pytest.raises(ValueError, match="verbosity"):
        NoticeSettings(verbosity="loud")  # type: ignore[arg-type]


def test_settings_accept_database_lists() -> None:
    s = NoticeSettings(hidden_keys=["memory_update"], private_channel_ids=[42])  # type: ignore[arg-type]
    assert s.hidden_keys == ("memory_update",)
    assert s.private_channel_ids == ("42",)
    assert hash(s) == hash(NoticeSettings(hidden_keys=("memory_update",), private_channel_ids=("42",)))


@pytest.mark.parametrize(
    ("kind", "forgotten"),
    [
        pytest.param("saved_with_eviction", None, id="eviction-without-forgotten"),
        pytest.param("saved", "old", id="save-with-forgotten"),
        pytest.param("updated", "old", id="update-with-forgotten"),
        pytest.param("teleported", None, id="unknown-kind"),
    ],
)
def test_subject_rejects_inconsistent_values(kind: str, forgotten: str | None) -> None:
    with pytest.raises(ValueError):
        NoticeSubject(kind=kind, scope_label="server", content_saved="x",  # type: ignore[arg-type]
                      content_forgotten=forgotten, persona_name="Tomori")


@settings(max_examples=200, deadline=None)
@given(
    saved_text=st.text(max_size=5000),
    forgotten=st.none() | st.text(max_size=5000),
    verbosity=st.sampled_from(["minimal", "verbose"]),
)
def test_every_field_fits_and_the_full_text_is_always_reachable(
    saved_text: str, forgotten: str | None, verbosity: str
) -> None:
    kind = "saved" if forgotten is None else "saved_with_eviction"
    subject = NoticeSubject(
        kind=kind,  # type: ignore[arg-type]
        scope_label="server", content_saved=saved_text, content_forgotten=forgotten,
        persona_name="Tomori",
    )
    notice_settings = NoticeSettings(
        verbosity=verbosity,  # type: ignore[arg-type]
        thought_log_channel_id=LOG,
    )
    plan = notice_of(notice_settings, channel(), subject)
    destination = plan["conversation"] if verbosity == "verbose" else plan["thought_log"]
    assert destination is not None
    card = destination["card"]
    assert card is not None
    assert all(0 < len(f["value"]) <= FIELD_VALUE_LIMIT for f in card["fields"])
    assert sum(len(f["name"]) + len(f["value"]) for f in card["fields"]) + len(card["title"]) \
        + len(card["footer"]) <= 6000
    cut = any(f["value"].endswith("…") and f["value"] not in (saved_text, forgotten)
              for f in card["fields"])
    expand, attachment = destination["expand"], destination["attachment"]
    assert (expand is not None) is cut
    if expand is not None:
        text = expand["description"] if attachment is None else attachment["content"]
        assert text == full_text(subject)
        assert (attachment is not None) is (len(text) > DESCRIPTION_LIMIT)
        if attachment is None:
            assert len(text) <= DESCRIPTION_LIMIT


@pytest.mark.parametrize("settings_, chan, subject", [
    (NoticeSettings(), channel(), saved()),
    (NoticeSettings(verbosity="verbose"), channel(), evicted(content="q" * 5000)),
    (NoticeSettings(verbosity="verbose"), channel(), evicted(content="q" * 2000)),
    (NoticeSettings(thought_log_channel_id="77"), channel(url="https://x/1"), evicted(content="q" * 5000)),
    (NoticeSettings(hidden_keys=("memory_update",)), channel(is_dm=True), saved()),
])
def test_every_plan_is_a_published_notice_plan(settings_, chan, subject) -> None:
    """The planner's dicts and the contract's typed NoticePlan (contracts/notice.py, the
    published notice schema) are the same shape: every key present, every value allowed."""
    import json

    import jsonschema

    from contracts import notice as published
    from contracts.schema import SCHEMA_DIR

    plan = notice_of(settings_, chan, subject)
    typed = msgspec.convert(plan, published.NoticePlan, strict=True)
    assert msgspec.to_builtins(typed) == plan
    jsonschema.validate(plan, json.loads((SCHEMA_DIR / "notice.schema.json").read_text()))
