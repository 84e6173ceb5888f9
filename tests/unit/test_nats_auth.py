import pytest

from worker.shared.nats_auth import NatsAuth, NatsAuthError
from worker.shared.settings import Settings, SettingsError


@pytest.mark.parametrize(
    ("env", "options"),
    [
        ({}, {}),
        ({"NATS_USER": "worker", "NATS_PASSWORD": "s3cret"}, {"user": "worker", "password": "s3cret"}),
        ({"NATS_TOKEN": "t0ken"}, {"token": "t0ken"}),
        ({"NATS_NKEY_SEED_FILE": "/run/secrets/worker.nk"}, {"nkeys_seed": "/run/secrets/worker.nk"}),
        ({"NATS_CREDS_FILE": "/run/secrets/worker.creds"}, {"user_credentials": "/run/secrets/worker.creds"}),
    ],
)
def test_each_method_gives_its_connect_options(env, options):
    assert NatsAuth.from_env(env).connect_options() == options


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"NATS_USER": "a", "NATS_TOKEN": "t"}, "not NATS_USER/NATS_PASSWORD and NATS_TOKEN"),
        ({"NATS_USER": "a"}, "NATS_USER and NATS_PASSWORD go together"),
        ({"NATS_TLS_CERT_FILE": "c.pem"}, "NATS_TLS_CERT_FILE and NATS_TLS_KEY_FILE go together"),
    ],
)
def test_contradictions_fail_at_start_up_naming_the_variables(env, message):
    with pytest.raises(NatsAuthError, match=message):
        NatsAuth.from_env(env)
    with pytest.raises(SettingsError, match=message):
        Settings.from_env(env)


