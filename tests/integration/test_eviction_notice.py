"""The eviction notice is planned once, before the save, and completed inside the save's
transaction by memory_eviction_notice() (worker/domain/eviction_notice.py): on a table of
forgotten contents and notice settings, what the SQL completes is exactly what the planner
(plan_notice) makes when it knows the forgotten content."""

from __future__ import annotations

import msgspec

from contracts.codec import encode
from contracts.commands import Channel
from worker.domain.eviction_notice import eviction_template
from worker.domain.notice import DESCRIPTION_LIMIT, FIELD_VALUE_LIMIT, NoticeSettings, NoticeSubject, plan_notice

# Every character Python's str.isspace() strips, and a few it does not, at the cut.
WHITE = "".join(c for c in map(chr, range(0x110000)) if c.isspace())
NOT_WHITE = "\u200b\u180e\ufeffx"

FORGOTTEN = [
    "",
    "likes coffee",
    "x" * FIELD_VALUE_LIMIT,
    "x" * (FIELD_VALUE_LIMIT + 1),
    "😀" * (FIELD_VALUE_LIMIT + 5),  # a code point each, as both count
    *("y" * (FIELD_VALUE_LIMIT - 3) + c * 3 + "tail" for c in WHITE + NOT_WHITE),
    "z" * (DESCRIPTION_LIMIT - 200),
    "z" * DESCRIPTION_LIMIT,
    "z" * (DESCRIPTION_LIMIT * 2),
]
SAVED = ["a short fact", "s" * (FIELD_VALUE_LIMIT + 10)]
SETTINGS = [
    NoticeSettings(),
    NoticeSettings(verbosity="verbose"),
    NoticeSettings(thought_log_channel_id="300"),
    NoticeSettings(verbosity="verbose", thought_log_channel_id="300"),
    NoticeSettings(hidden_keys=("memory_update",), thought_log_channel_id="300"),
    NoticeSettings(hidden_keys=("memory_update",)),
]
CHANNELS = [Channel(id="200", everyone_can_view=True, url="https://discord.com/channels/1/200/9"),
            Channel(id="201", is_private=True)]


async def test_the_sql_completes_the_notice_the_planner_makes(pool):
    cases = [(settings, channel, saved, forgotten)
             for settings in SETTINGS for channel in CHANNELS for saved in SAVED for forgotten in FORGOTTEN]
    templates = [encode(eviction_template(settings, channel, "personal: Mika", saved, "Tomori")).decode()
                 for settings, channel, saved, _ in cases]

    completed = await pool.fetchval(
        "SELECT array_agg(memory_eviction_notice(t::jsonb, f) ORDER BY n)"
        " FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS c(t, f, n)",
        templates, [forgotten for *_, forgotten in cases])

    for (settings, channel, saved, forgotten), sql in zip(cases, completed, strict=True):
        subject = NoticeSubject(kind="saved_with_eviction", scope_label="personal: Mika", content_saved=saved,
                                content_forgotten=forgotten, persona_name="Tomori")
        expected = msgspec.json.decode(encode(plan_notice(settings, channel, subject)))
        assert msgspec.json.decode(sql) == expected, (settings, channel, len(saved), forgotten[-12:])
