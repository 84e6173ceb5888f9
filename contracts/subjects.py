"""Subject names and the token encoding of docs/design.md, section 3.1."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

# The command kinds are the registry's (contracts/registry.py), which builds on this module.

COMMANDS_STREAM = "MEMORY_COMMANDS"
EVENTS_STREAM = "MEMORY_EVENTS"
DLQ_STREAM = "MEMORY_DLQ"

# Where the server files a command after partitioning: cmd.<partition>.<kind>.<workspace token>.
PARTITIONED_PREFIX = "cmd"

_SAFE = re.compile(r"[A-Za-z0-9_:\-]+")
_SAFE_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_:-")


def encode_token(value: str) -> str:
    """A subject token for an id: kept as is when it is safe, else percent-encoded bytes."""
    if value and _SAFE.fullmatch(value):
        return value
    if not value:
        raise ValueError("an id used in a subject must not be empty")
    return "".join(chr(b) if b in _SAFE_BYTES else f"%{b:02X}" for b in value.encode("utf-8"))


def decode_token(token: str) -> str:
    """Inverse of encode_token."""
    if "%" not in token:
        return token
    out = bytearray()
    i = 0
    while i < len(token):
        ch = token[i]
        if ch == "%" and _is_hex(token[i + 1 : i + 3]):
            out.append(int(token[i + 1 : i + 3], 16))
            i += 3
        else:
            out += ch.encode("utf-8")
            i += 1
    return out.decode("utf-8", errors="strict")


_PERCENT = re.compile(r"%[0-9a-fA-F]{2}")


def canonical_token(token: str) -> str:
    """The token as publishers write it: percent-escapes in upper-case hex (%2e is %2E)."""
    return _PERCENT.sub(lambda m: m.group(0).upper(), token) if "%" in token else token


def _is_hex(s: str) -> bool:
    return len(s) == 2 and all(c in "0123456789abcdefABCDEF" for c in s)


# A command's subject as bots publish it: memory.<kind>.<workspace token>.
COMMAND_PREFIX = "memory."


def command_subject(kind: str, workspace_id: str) -> str:
    """Any kind, known to this contract or not: a worker refuses the ones it does not handle."""
    return f"{COMMAND_PREFIX}{kind}.{encode_token(workspace_id)}"


def command_filter(kind: str = "*", workspace_token: str = "*") -> str:
    """A filter on command subjects as bots publish them: one kind, one workspace, or any."""
    return f"{COMMAND_PREFIX}{kind}.{workspace_token}"


def result_subject(workspace_id: str, command_id: str) -> str:
    """Core request/reply (no stream): ask the worker for a command's stored result.

    A command re-sent inside JetStream's duplicate window is dropped by the server, so the
    re-sender gets its result here instead of from a second delivery. Scoped by workspace:
    a result is only ever answered to its own workspace's subject.
    """
    return f"{RESULT_LOOKUP_PREFIX}{encode_token(workspace_id)}.{encode_token(command_id)}"


RESULT_LOOKUP_PREFIX = "memory.result."
RESULT_LOOKUP_SUBJECTS = "memory.result.*.*"


def saved_subject(scope: str, owner_id: str) -> str:
    return f"memory.saved.{scope}.{encode_token(owner_id)}"


def evicted_subject(scope: str, owner_id: str) -> str:
    return f"memory.evicted.{scope}.{encode_token(owner_id)}"


def removed_subject(scope: str, owner_id: str) -> str:
    return f"memory.removed.{scope}.{encode_token(owner_id)}"


def updated_subject(scope: str, owner_id: str) -> str:
    return f"memory.updated.{scope}.{encode_token(owner_id)}"


def invalidate_subject(cache: str, key: str) -> str:
    return f"cache.invalidate.{cache}.{encode_token(key)}"


METRIC_EVICTION_SUBJECT = "metrics.memory_eviction"

# Filters of the event consumers, and the subjects MEMORY_EVENTS stores.
INVALIDATE_PREFIX = "cache.invalidate."
INVALIDATE_FILTER = "cache.invalidate.>"
METRICS_PREFIX = "metrics."
METRICS_FILTER = "metrics.>"
SAVED_FILTER = "memory.saved.>"
EVICTED_FILTER = "memory.evicted.>"
UPDATED_FILTER = "memory.updated.>"
EVENT_SUBJECTS = (SAVED_FILTER, EVICTED_FILTER, "memory.removed.>", INVALIDATE_FILTER, METRICS_FILTER, UPDATED_FILTER)
# Every command subject, placed or not: what the unplaced commands' consumer filters on.
ALL_COMMANDS = "memory.>"


# A dead letter's subject: dlq.<the command's original subject>.
DLQ_PREFIX = "dlq."
DLQ_FILTER = "dlq.>"


def dlq_subject(original_subject: str) -> str:
    return f"{DLQ_PREFIX}{original_subject}"


def partition_transform(partitions: int) -> tuple[str, str]:
    """(src, dest) of the stream subject transform that files commands under a partition.

    The partition is a hash of the workspace token only, so every kind of command of one
    workspace lands in the same partition and keeps its publish order.
    """
    return (
        command_filter(),
        f"{PARTITIONED_PREFIX}.{{{{partition({partitions},2)}}}}.{{{{wildcard(1)}}}}.{{{{wildcard(2)}}}}",
    )


def partition_filter(partition: int) -> str:
    return f"{PARTITIONED_PREFIX}.{partition}.>"


def partitioned_workspace_filter(workspace_token: str) -> str:
    """Every stored command of one workspace, whatever its partition and kind."""
    return f"{PARTITIONED_PREFIX}.*.*.{workspace_token}"


def parse_partitioned(subject: str) -> tuple[str, str]:
    """(kind, workspace token) from a command subject as the stream stores it."""
    parts = subject.split(".")
    if len(parts) == 4 and parts[0] == PARTITIONED_PREFIX:
        return parts[2], parts[3]
    raise ValueError(f"not a partitioned command subject: {subject!r}")


def original_subject(kind: str, workspace_token: str) -> str:
    return command_filter(kind, workspace_token)


@dataclass(frozen=True, slots=True)
class CommandSubject:
    """What the subject of a message in MEMORY_COMMANDS says about its command."""

    original: str  # the subject as the bot published it
    kind: str  # "?" when the subject names none
    workspace_token: str  # "" when the partition mapping could not place it
    placed: bool  # filed under a partition (else stored as published: a literal wildcard token)

    @property
    def lane_key(self) -> str:
        """What a partition orders by: its commands of one workspace run one at a time."""
        return self.workspace_token if self.placed else self.original.rpartition(".")[2]


def parse_stored(subject: str) -> CommandSubject:
    """A stored command's subject: cmd.<partition>.<kind>.<workspace token> when placed, else
    the original memory.<kind>.<...> the partition mapping left as it was."""
    parts = subject.split(".")
    if len(parts) == 4 and parts[0] == PARTITIONED_PREFIX:
        return CommandSubject(original_subject(parts[2], parts[3]), parts[2], parts[3], placed=True)
    return CommandSubject(subject, kind_of(subject), "", placed=False)


def kind_of(original: str) -> str:
    """The command kind an original subject (memory.<kind>.<workspace token>) names, or "?"."""
    parts = original.split(".")
    return parts[1] if len(parts) > 1 else "?"


def split_workspace_token(original: str) -> tuple[str, str]:
    """(everything before the workspace token, the token) of an original command subject."""
    prefix, _, token = original.rpartition(".")
    return prefix, token


def parse_result_lookup(subject: str) -> tuple[str, str]:
    """(workspace token, command token) of a lookup on memory.result.<workspace>.<command>."""
    parts = subject.split(".", 3)
    if len(parts) != 4 or f"{parts[0]}.{parts[1]}." != RESULT_LOOKUP_PREFIX:
        raise ValueError(f"not a result lookup subject: {subject!r}")
    return parts[2], parts[3]


# Where the worker may publish results: the operator's REPLY_SUBJECT_PREFIXES, by default
# reply inboxes only (never event or command subjects).
DEFAULT_REPLY_PREFIXES = ("_INBOX.",)
# A subject the worker can publish to: dot-separated tokens, no wildcards, no whitespace.
REPLY_SUBJECT_PATTERN = r"^[^\s*>.]+(\.[^\s*>.]+)*$"
REPLY_SUBJECT_MAX = 256
_PLAIN_SUBJECT_RE = re.compile(REPLY_SUBJECT_PATTERN)

# What no answer may ever be published under, whatever REPLY_SUBJECT_PREFIXES says: the
# project's own subjects (commands, lookups, events, dead letters, the partitioned and staging
# command subjects) and every server subject ($JS.API, $JS.ACK, $SYS, $KV ...). A message
# published there is a command to the server or a fact to every reader (issue 35).
RESERVED_SUBJECT_ROOTS = ("$", "memory.", "cache.", "metrics.", DLQ_PREFIX, f"{PARTITIONED_PREFIX}.",
                          "_memory_upgrade.")


def is_plain_subject(value: str) -> bool:
    """A subject one can publish to: dot-separated non-empty tokens, no wildcard, no whitespace."""
    return _PLAIN_SUBJECT_RE.match(value) is not None


def is_reply_subject(value: str) -> bool:
    return len(value) <= REPLY_SUBJECT_MAX and is_plain_subject(value)


def reserved_root(prefix: str) -> str | None:
    """The reserved root a reply prefix overlaps, or None: a prefix that starts one (`m`
    starts `memory.`) or lies under one (`dlq.x.`) would let answers reach it (settings refuse it)."""
    return next((root for root in RESERVED_SUBJECT_ROOTS if root.startswith(prefix) or prefix.startswith(root)),
                None)


def may_answer(reply_to: str, reply_prefixes: tuple[str, ...]) -> bool:
    """Whether the worker publishes an answer to `reply_to`, a subject it took from a message:
    a plain subject under one of the allowed prefixes and under no reserved root. The one rule
    of every answer: a command's reply_to (the handler, the poison path, the stranded sweep),
    the result lookup's reply subject, and what the lookup says of a dead letter."""
    return (is_reply_subject(reply_to) and reply_to.startswith(reply_prefixes)
            and not reply_to.startswith(RESERVED_SUBJECT_ROOTS))


def is_command_subject(subject: str, kinds: Collection[str]) -> bool:
    """`memory.<kind>.<workspace token>` of one of `kinds` (the registry's, contracts/registry.py,
    which this module sits below), one plain token: the only subjects a command is ever
    republished to (a dead letter's replay, the stream upgrade's restore), whatever a stored
    header says."""
    parts = subject.split(".")
    return (len(parts) == 3 and f"{parts[0]}." == COMMAND_PREFIX and parts[1] in kinds
            and is_plain_subject(subject))


def is_event_subject(subject: str) -> bool:
    """A plain subject MEMORY_EVENTS stores (EVENT_SUBJECTS): the only subjects events, stored
    in a command's inbox row, are published to."""
    return is_plain_subject(subject) and any(subject.startswith(f[:-1]) for f in EVENT_SUBJECTS)


def is_dead_letter_subject(subject: str) -> bool:
    """dlq.memory.<...>: where a dead letter goes, made from the command's stored subject."""
    return is_plain_subject(subject) and subject.startswith(f"{DLQ_PREFIX}{COMMAND_PREFIX}")


# A JetStream delivery's reply subject, the one a client acknowledges on:
# $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<timestamp>.<pending>, or
# with <domain>.<account hash> after ACK (and a trailing token) on newer servers.
_ACK_V1_TOKENS = 9


def is_ack_subject(reply: str, stream: str, consumer: str) -> bool:
    """Whether `reply` is the acknowledgement subject of a delivery of `consumer` on `stream`:
    the only subject a reader publishes an ack, nak or progress to. Anything else on its inbox
    was not delivered by its consumer, and is neither applied nor answered."""
    if not is_plain_subject(reply):
        return False
    tokens = reply.split(".")
    if tokens[:2] != ["$JS", "ACK"]:
        return False
    at = 2 if len(tokens) == _ACK_V1_TOKENS else 4 if len(tokens) >= _ACK_V1_TOKENS + 2 else 0
    return bool(at) and tokens[at] == stream and tokens[at + 1] == consumer and all(
        token.isdigit() for token in tokens[at + 2:at + 7])
