"""The constrained values commands share: ids, texts and times as the wire bounds them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from msgspec import Meta

# PostgreSQL text and jsonb cannot hold NUL: a string with one is refused at decoding, with
# the field's path, instead of failing the database on every retry.
NO_NUL = r"^[^\x00]*$"
CommandId = Annotated[str, Meta(min_length=1, max_length=128, pattern=NO_NUL)]
DiscordId = Annotated[str, Meta(min_length=1, max_length=64, pattern=NO_NUL)]
ShortText = Annotated[str, Meta(max_length=512, pattern=NO_NUL)]
IssuedAt = Annotated[datetime, Meta(extra_json_schema={"format": "date-time"})]
# Ids of the bot's database: PostgreSQL integer columns.
Int32 = Annotated[int, Meta(ge=0, le=2**31 - 1)]
# Persona lineages: TomoriBot's lineage columns are bigint (widened from int32, additively).
LineageId = Annotated[int, Meta(ge=0, le=2**63 - 1)]
MemoryId = Annotated[int, Meta(ge=1, le=2**63 - 1)]
# Long enough for any panel entry; MAX_MEMORY_LENGTH is checked by the worker with its own
# refusal (content-too-long), so only absurd payloads fail decoding.
PanelText = Annotated[str, Meta(max_length=20_000, pattern=NO_NUL)]
# A message-proxy identity's id, in TomoriBot's grammar (worker/domain/proxy.py): `pk:<uuid>`,
# `pb:<digits>`, or a custom instance's `<prefix>i:<length>:<instance>:<key>`.
SyntheticId = Annotated[str, Meta(min_length=1, max_length=128, pattern=NO_NUL)]
MemoryScope = Literal["server", "personal"]
