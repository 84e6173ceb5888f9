"""NATS credentials from configuration: the keyword arguments every process passes to nats.connect().

One method at a time: user and password, a token, an nkey seed file, or a creds file
(JWT + nkey, the decentralised-auth form); optionally TLS with a CA file (and a client
certificate for mutual TLS).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class NatsAuthError(ValueError):
    """Contradictory or incomplete credentials; the message names the variables."""


@dataclass(frozen=True, slots=True)
class NatsAuth:
    user: str | None = None
    password: str | None = None
    token: str | None = None
    nkey_seed_file: str | None = None
    creds_file: str | None = None
    tls_ca_file: str | None = None
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    inbox_prefix: str | None = None  # a client's private reply prefix, as its permissions allow

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> NatsAuth:
        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        auth = cls(get("NATS_USER"), get("NATS_PASSWORD"), get("NATS_TOKEN"), get("NATS_NKEY_SEED_FILE"),
                   get("NATS_CREDS_FILE"), get("NATS_TLS_CA_FILE"), get("NATS_TLS_CERT_FILE"),
                   get("NATS_TLS_KEY_FILE"), get("NATS_INBOX_PREFIX"))
        methods = [name for name, on in (("NATS_USER/NATS_PASSWORD", auth.user or auth.password),
                                         ("NATS_TOKEN", auth.token),
                                         ("NATS_NKEY_SEED_FILE", auth.nkey_seed_file),
                                         ("NATS_CREDS_FILE", auth.creds_file)) if on]
        if len(methods) > 1:
            raise NatsAuthError(f"set one NATS credential method, not {' and '.join(methods)}")
        if bool(auth.user) != bool(auth.password):
            raise NatsAuthError("NATS_USER and NATS_PASSWORD go together")
        if bool(auth.tls_cert_file) != bool(auth.tls_key_file):
            raise NatsAuthError("NATS_TLS_CERT_FILE and NATS_TLS_KEY_FILE go together")
        return auth

    def ssl_context(self) -> ssl.SSLContext | None:
        if not (self.tls_ca_file or self.tls_cert_file):
            return None
        context = ssl.create_default_context(cafile=self.tls_ca_file)
        if self.tls_cert_file:
            context.load_cert_chain(self.tls_cert_file, self.tls_key_file)
        return context

    def connect_options(self) -> dict[str, Any]:
        """Keyword arguments for nats.connect()."""
        options: dict[str, Any] = {}
        if self.user:
            options.update(user=self.user, password=self.password)
        elif self.token:
            options["token"] = self.token
        elif self.nkey_seed_file:
            options["nkeys_seed"] = self.nkey_seed_file
        elif self.creds_file:
            options["user_credentials"] = self.creds_file
        context = self.ssl_context()
        if context is not None:
            options["tls"] = context
        if self.inbox_prefix:
            options["inbox_prefix"] = self.inbox_prefix
        return options
