import msgspec
import pytest

from contracts.registry import COMMAND_TYPES
from worker.consuming.intake.handlers import CommandHandler, Invalid, retry_delay
from worker.consuming.probe import answerable
from worker.shared.settings import DEFAULT_REPLY_PREFIXES


@pytest.mark.parametrize(("deliveries", "delay"), [(1, 0.5), (2, 1.0), (3, 2.0), (6, 16.0), (7, 30.0), (50, 30.0)])
def test_retry_delay_grows_and_is_capped(deliveries, delay):
    assert retry_delay(deliveries) == delay


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (b"not json", (None, None)),
        (b'{"command_id": "c1", "reply_to": "_INBOX.a.b"}', ("c1", "_INBOX.a.b")),
        (b'{"command_id": 5, "reply_to": "_INBOX.a.b"}', (None, "_INBOX.a.b")),
        (b'{"command_id": "c1", "reply_to": "bad subject.*"}', ("c1", None)),
        (b'{"command_id": "c1", "reply_to": "a..b"}', ("c1", None)),
        (b"[1, 2]", (None, None)),
    ],
)
def test_probe_reads_what_a_broken_command_still_tells(payload, expected):
    assert answerable(payload, DEFAULT_REPLY_PREFIXES) == expected


def _create(**over) -> bytes:
    body = {"command_id": "c", "issued_at": "2026-01-01T00:00:00Z", "workspace_id": "a.b",
            "persona": {"id": 1, "lineage_id": 1, "name": "T"}, "bot_user_id": "1", "channel": {"id": "2"}}
    body.update(over)
    return msgspec.json.encode(body)


def test_decode_checks_the_workspace_against_the_subject_token():
    assert not isinstance(CommandHandler._decode("create", "a%2Eb", _create()), Invalid)
    # Hex is case-insensitive (RFC 3986, docs/design.md, section 3.1); an over-encoded safe byte is not the same token.
    assert not isinstance(CommandHandler._decode("create", "a%2eb", _create()), Invalid)
    assert isinstance(CommandHandler._decode("create", "%61%2Eb", _create()), Invalid)
    mismatch = CommandHandler._decode("create", "other", _create())
    assert isinstance(mismatch, Invalid) and "does not match" in mismatch.reason


def test_decode_refuses_unknown_kinds_and_names_bad_fields():
    assert "not handled" in CommandHandler._decode("teleport", "x", _create()).reason
    bad = CommandHandler._decode("create", "a%2Eb", _create(persona={"id": "one"}))
    assert isinstance(bad, Invalid) and "$.persona" in bad.reason


def test_the_log_line_says_how_long_a_command_waited_in_the_stream():
    import time

    from nats.aio.msg import Msg

    from worker.consuming.intake.handlers import _queued_ms

    stored_ns = time.time_ns() - 250_000_000  # stored a quarter of a second ago
    msg = Msg(_client=None, subject="cmd.0.create.a", reply=f"$JS.ACK.MEMORY_COMMANDS.p0.1.9.9.{stored_ns}.0")
    assert 250 <= _queued_ms(msg) < 250 + 60_000


def test_a_handler_without_a_service_for_every_command_kind_is_refused_at_construction():
    services = {kind: object() for kind in COMMAND_TYPES}
    CommandHandler(None, None, None, services, None, max_deliver=5, reply_prefixes=("_INBOX",))
    del services["reinforce"]
    with pytest.raises(ValueError, match="reinforce"):
        CommandHandler(None, None, None, services, None, max_deliver=5, reply_prefixes=("_INBOX",))
