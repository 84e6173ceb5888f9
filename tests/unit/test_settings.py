import pytest

from worker.consuming.administration import streams
from worker.shared.settings import Settings, SettingsError


def test_defaults():
    s = Settings.from_env({})
    assert (s.memory_partitions, s.max_memory_length, s.max_server_memories, s.max_personal_memories) == (
        16, 1000, 100, 100)
    assert s.nats_url is None and s.database_url is None
    # The partition consumer's max_ack_pending follows the setting's default.
    assert s.partition_in_flight == streams.DEFAULT_IN_FLIGHT == 32
    # The command stream's limits default to what streams.CommandRetention documents.
    assert (s.command_max_age_hours * 3600.0, s.command_max_mib * 1024 * 1024) == (
        streams.CommandRetention().max_age_s, streams.CommandRetention().max_bytes)


def test_values_are_read():
    s = Settings.from_env({"MEMORY_PARTITIONS": "4", "MAX_SERVER_MEMORIES": " 7 ", "LOG_FORMAT": "JSON",
                           "NATS_URL": "nats://127.0.0.1:1"})
    assert (s.memory_partitions, s.max_server_memories, s.log_format, s.nats_url) == (
        4, 7, "json", "nats://127.0.0.1:1")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MEMORY_PARTITIONS": "many"}, "MEMORY_PARTITIONS must be an integer, got 'many'"),
        ({"MEMORY_PARTITIONS": "0"}, "MEMORY_PARTITIONS must be between 1 and 1024, got 0"),
        ({"LOG_FORMAT": "xml"}, "LOG_FORMAT must be one of console, json, got 'xml'"),
        ({"PARTITION_IN_FLIGHT": "0"}, "PARTITION_IN_FLIGHT must be between 1 and 1024, got 0"),
        # Longer than 30 days would outlive the inbox (31 days at least): a late redelivery unrecognised.
        ({"COMMAND_MAX_AGE_HOURS": "721"}, "COMMAND_MAX_AGE_HOURS must be between 1 and 720, got 721"),
        ({"COMMAND_MAX_MIB": "0"}, "COMMAND_MAX_MIB must be between 1 and"),
        ({"REQUIRE_SYNC_STANDBY": "maybe"}, "REQUIRE_SYNC_STANDBY must be true or false, got 'maybe'"),
        ({"DB_COMMAND_TIMEOUT_SECONDS": "0"}, "DB_COMMAND_TIMEOUT_SECONDS must be between 1 and 3600, got 0"),
        ({"DB_CONNECT_TIMEOUT_SECONDS": "x"}, "DB_CONNECT_TIMEOUT_SECONDS must be an integer, got 'x'"),
        # Answers go to reply inboxes only: never the worker's own or the server's subjects (issue 35).
        ({"REPLY_SUBJECT_PREFIXES": "_INBOX.bot.tomori.,memory."},
         "REPLY_SUBJECT_PREFIXES must name reply inboxes, not the worker's own or the server's subjects: 'memory.'"),
        ({"REPLY_SUBJECT_PREFIXES": "$JS."}, "REPLY_SUBJECT_PREFIXES must name reply inboxes"),
        ({"REPLY_SUBJECT_PREFIXES": "d"}, "'d' overlaps 'dlq.'"),
    ],
)
def test_bad_values_name_the_variable(env, message):
    with pytest.raises(SettingsError, match=message.replace("(", r"\(")):
        Settings.from_env(env)


@pytest.mark.parametrize(("raw", "value"), [("true", True), ("1", True), (" YES ", True), ("false", False),
                                            ("off", False), ("", False)])
def test_require_sync_standby_reads_as_a_flag(raw, value):
    assert Settings.from_env({"REQUIRE_SYNC_STANDBY": raw}).require_sync_standby is value


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("-5", 1000), ("0", 1000), ("many", 1000), ("", 1000), ("42abc", 42), ("1e3", 1), ("\ufeff 250", 250),
     ("\u0085 250", 1000), ("250000", 250000)],
)
def test_tomoribots_limits_are_read_as_it_reads_them(raw: str, expected: int) -> None:
    """The bot falls back to its default where its parseInt finds no positive integer, and
    never refuses to start over one; the worker reads the same variables the same way."""
    s = Settings.from_env({"MAX_MEMORY_LENGTH": raw, "MAX_SERVER_MEMORIES": raw, "MAX_PERSONAL_MEMORIES": raw})
    fell_back = expected == 1000
    assert (s.max_memory_length, s.max_server_memories, s.max_personal_memories) == (
        expected, 100 if fell_back else expected, 100 if fell_back else expected)
