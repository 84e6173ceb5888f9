"""The secret guard (worker/domain/secret_guard/, docs/design.md, section 4.2): on the corpus
of tests/support/secret_corpus.py every credential is refused under its kind and no benign
memory is; the cheap shortcuts never hide what the rules find; a create is refused after its
length check and before privacy, per workspace; what the model is told and what is stored
name the kind, never the secret."""

from __future__ import annotations

import sys
import unicodedata
from typing import Any, get_args

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.codec import encode
from contracts.kinds.create import INVALID_CONTENT, CommandResult, CreateMemory
from contracts.tool_call import Channel, MemberMatch, Triggerer
from tests.support.commands import create_command, fixed_envelope
from tests.support.secret_corpus import (
    BENIGN,
    CREDENTIALS,
    armourless_private_key,
    basic_authorization,
    card_number,
    digitalocean_token,
    doppler_token,
    github_token,
    grafana_token,
    huggingface_token,
    jwt,
    linear_key,
    luhn_complete,
    notion_token,
    npm_token,
    openai_key,
    shopify_token,
    slack_app_token,
    wrapped_jwt,
)
from worker.domain import secret_guard
from worker.domain.context import CreateContext
from worker.domain.notice import NoticeSettings
from worker.domain.people import KnownUser, Privacy
from worker.domain.secret_guard import NAMES, CredentialKind, find_credential, guard_on, reading
from worker.domain.workspace import Limits, Workspace
from worker.kinds.create.arguments import parse_tool_args
from worker.kinds.create.decision import decide_create
from worker.kinds.create.record import CreateDecision, CreateSecretRefused, InvalidContent, PrivacyRestricted, SavePlan
from worker.kinds.create.rendering import render_create

ALICE = "100000000000000001"
TRIGGERER = "110000000000000009"  # who caused the turn: the bot knows them (a users row)
LIMITS = Limits(max_memory_length=1000)


def all_rules(text: str) -> CredentialKind | None:
    """What the rules find without the shortcuts that skip them."""
    text = reading.as_read(text)
    return (secret_guard.known_format(text) or ("payment_card" if secret_guard.holds_card_number(text) else None)
            or secret_guard.named_secret(text))


# --- the corpus -----------------------------------------------------------------------------


def test_the_corpus_holds_every_kind_and_enough_of_each_side():
    assert len(BENIGN) >= 350 and len(CREDENTIALS) >= 250
    assert {c.kind for c in CREDENTIALS} == set(get_args(CredentialKind))


def test_no_benign_memory_is_refused():
    refused = [(text, find_credential(text)) for text in BENIGN if find_credential(text) is not None]
    # The figure the docs report (docs/design.md, section 4.2): false refusals on the corpus.
    print(f"\nsecret guard: {len(refused)} false refusals of {len(BENIGN)} benign memories")
    assert refused == []


def test_every_credential_is_refused_under_its_kind():
    wrong = [(c.content, c.kind, find_credential(c.content)) for c in CREDENTIALS if find_credential(c.content) != c.kind]
    print(f"\nsecret guard: {len(CREDENTIALS) - len(wrong)} of {len(CREDENTIALS)} credentials refused under their kind")
    assert wrong == []


def test_the_shortcuts_never_hide_what_the_rules_find_on_the_corpus():
    for text in [*BENIGN, *(c.content for c in CREDENTIALS)]:
        assert find_credential(text) == all_rules(text), text


_FRAGMENTS = [*(c.secret for c in CREDENTIALS[::3]), *BENIGN[::7], "password is", "pin:", "token =", "api key:",
              "://u:", "@", "BEGIN", "4111 1111", "1111 1111", "-", "\n", "  "]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=6), st.text(max_size=12))
def test_the_shortcuts_never_hide_what_the_rules_find_in_mixed_text(parts, noise):
    text = " ".join([*parts, noise]) if len(parts) % 2 else "".join([noise, *parts])
    assert find_credential(text) == all_rules(text)


def test_every_kind_is_named_and_none_is_named_by_its_secret():
    assert set(NAMES) == set(get_args(CredentialKind))
    for kind in NAMES:
        text = secret_guard.refusal_text(kind, "create_long_term_memory")
        assert NAMES[kind] in text and "must never be stored" in text


def test_invisible_characters_inside_a_token_do_not_hide_it():
    token = next(c.secret for c in CREDENTIALS if c.kind == "github_token")
    hidden = token[:10] + "\u200b" + token[10:20] + "\u2060" + token[20:]
    assert find_credential(f"my token {hidden}") == "github_token"


@pytest.mark.parametrize("text", [
    "the password is on the fridge", "the password is case-sensitive", "my password manager is Bitwarden",
    "PIN is required", "the secret to good ramen is kombu", "token: 42", "the pin is 12",
    "{user} has 4111 1111 1111 1112 (not a card: its Luhn digit is wrong)",
    "{user}'s Discord id is 412345678901234567",  # 18 digits in one run: no card is written so
    "archived at https://web.archive.org/web/2020/https://example.social/@inkmoth",
])
def test_near_misses_are_not_refused(text):
    assert find_credential(text) is None


@pytest.mark.parametrize("text, kind", [
    ("my password is hunter2", "password"), ("the wifi pwd: 12345678", "password"),
    ("PIN: 0042", "pin"), ("cvv 123", None), ("cvv is 123", "pin"),
    ("postgres://app:s3cret@db:5432/app", "url_password"),
    ("Authorization: Bearer token = abcdef1234567890", "api_key"),
])
def test_credentials_named_in_the_text(text, kind):
    assert find_credential(text) == kind


@pytest.mark.parametrize("name", ["pin", "PIN code", "pin number", "passcode", "cvv", "CVC", "security code",
                                  "password", "Passwords", "passphrase", "passwd", "pwd", "api key", "API_KEY",
                                  "access-key", "secret key", "private key", "client secret", "secret", "token",
                                  "auth token", "access_token", "Bearer token", "bot token", "refresh token",
                                  "api token", "session token"])
def test_every_name_of_a_credential_is_read(name):
    value = "4821" if name.lower() in ("pin", "pin code", "pin number", "passcode", "cvv", "cvc", "security code") \
        else "Xy7kQ2mP9w"
    assert find_credential(f"the {name} is {value}") is not None
    assert find_credential(f"the x{name.lower()} is {value}") in (None, "api_key")  # a longer word, or its last word


def test_card_numbers_need_a_network_a_length_and_the_luhn_digit():
    number = luhn_complete("411111111111111")
    assert find_credential(f"card {number}") == "payment_card"
    assert find_credential(f"card {number[:-1]}{(int(number[-1]) + 1) % 10}") is None
    assert find_credential(f"card {luhn_complete('911111111111111')}") is None  # no network starts with 9
    assert find_credential(f"card {card_number()}") == "payment_card"


# --- how people write them in a chat ------------------------------------------------------


@pytest.mark.parametrize("text, kind", [
    ("my password is: hunter2", "password"), ("{user}'s password was: Maple2024", "password"),
    ("PIN is: 4821", "pin"), ("the PIN was:4821", "pin"), ("api key is: Xy7kQ2mP9wZ", "api_key"),
    ("the secret is = 9fQ2xLm7Rt", "api_key"), ("{user}'s PIN was changed to 227068", "pin"),
])
def test_a_colon_after_the_verb_still_separates_the_value(text, kind):
    assert find_credential(text) == kind


@pytest.mark.parametrize("phrasing", ["トークンは{x}だよ", "密钥{x}别告诉别人", "MiraのAPIキー{x}を覚えておいて",
                                      "토큰은{x}입니다", "โทเค็นคือ{x}ครับ", "我的令牌是{x}，不要告诉别人"])
@pytest.mark.parametrize("make, kind", [(github_token, "github_token"), (openai_key, "openai_key"),
                                        (npm_token, "npm_token"), (huggingface_token, "huggingface_token"),
                                        (lambda: "glpat-" + "Ab3dE6gH9jK2mN5pQ8sT", "gitlab_token")])
def test_a_key_written_against_text_without_spaces_is_found(phrasing, make, kind):
    assert find_credential(phrasing.format(x=make())) == kind


def test_a_name_written_against_japanese_or_chinese_is_read():
    assert find_credential("{user}のpasswordはhunter22です") == "password"
    assert find_credential("我的password是Maple2024") == "password"
    assert find_credential("{user}のpasswordは冷蔵庫に貼ってある") is None


def test_every_format_character_and_variation_selector_inside_a_token_is_dropped():
    hidden = [chr(c) for c in range(sys.maxunicode + 1)
              if unicodedata.category(chr(c)) == "Cf" or 0xFE00 <= c <= 0xFE0F or 0xE0100 <= c <= 0xE01EF]
    token = github_token()
    assert len(hidden) > 400
    missed = [hex(ord(ch)) for ch in hidden if find_credential(f"my token {token[:9]}{ch}{token[9:]}") != "github_token"]
    assert missed == []


@pytest.mark.parametrize("text, kind", [
    ("SMTPPASSWORD=Xy7kQ2mP9w", "password"), ("export REDISPASSWORD='Maple2024'", "password"),
    ("MYSQLPWD=hunter22", "password"), ("MYAPPSECRET=9fQ2xLm7RtZ", "api_key"), ("DISCORDBOTTOKEN: 9fQ2xLm7RtZ", "api_key"),
    ("WEATHERAPIKEY=9fQ2xLm7RtZ", "api_key"), ("smtpPassword: hunter22", "password"), ("clientSecret = 9fQ2xLm7RtZ", "api_key"),
    # glued in prose, or to a value that is no secret, it is a word
    ("the xpassword is Maple2024", None), ("MAXTOKENS=4096", None), ("GITHUBTOKEN=$GITHUB_TOKEN", None),
    ("MYAPPSECRET=changeme", None),
])
def test_a_name_glued_to_a_prefix_as_variables_are_written(text, kind):
    assert find_credential(text) == kind


def _in_digits_from(zero: int, number: str) -> str:
    return "".join(chr(zero + int(c)) if c.isdigit() else c for c in number)


def test_a_card_number_in_any_scripts_decimal_digits_is_found():
    zeros = [c for c in range(sys.maxunicode + 1) if unicodedata.decimal(chr(c), None) == 0 and c > 0x7F
             and all(unicodedata.decimal(chr(c + i), None) == i for i in range(10))]
    number = luhn_complete("411111111111111")
    assert len(zeros) > 50
    missed = [hex(z) for z in zeros if find_credential(f"card {_in_digits_from(z, number)}") != "payment_card"]
    assert missed == []
    assert find_credential(f"PIN: {_in_digits_from(0x0660, '4821')}") == "pin"
    # A wrong check digit stays wrong in any script.
    assert find_credential(f"card {_in_digits_from(0x0966, number[:-1] + str((int(number[-1]) + 1) % 10))}") is None


@pytest.mark.parametrize("text, kind", [
    ("{user}'s password for the Steam account is Maple2024", "password"),
    ("token for the weather API: a8f7d6e5c4b3a2f1e0d9", "api_key"), ("the PIN to the front door is 4821", "pin"),
    ("the password on the school portal was set to letmein2024", "password"),
    ("the API key of the map service is 9fQ2xLm7RtZ", "api_key"), ("{user}'s passcode to the safe: 2580", "pin"),
    # what it is for, then a word
    ("the password for the wifi is on the fridge", None), ("the token for the board game is the blue meeple", None),
    ("the PIN to the safe is written in the notebook", None), ("the key to success is consistency", None),
])
def test_the_name_then_what_it_is_for_then_the_value(text, kind):
    assert find_credential(text) == kind


@pytest.mark.parametrize("make, kind", [
    (npm_token, "npm_token"), (huggingface_token, "huggingface_token"), (slack_app_token, "slack_token"),
    (shopify_token, "shopify_token"), (digitalocean_token, "digitalocean_token"), (doppler_token, "doppler_token"),
    (grafana_token, "grafana_token"), (linear_key, "linear_key"), (notion_token, "notion_token"),
    (lambda: "rk_live_" + "a1B2c3D4e5F6g7H8i9J0k1L2", "stripe_key"),
    (wrapped_jwt, "jwt"), (armourless_private_key, "private_key"), (basic_authorization, "basic_auth"),
])
def test_formats_the_library_lacks(make, kind):
    for _ in range(8):  # each generator draws among the format's variants
        assert find_credential(f"keep this: {make()}") == kind


@pytest.mark.parametrize("text", [
    "a JWT has three parts. eyJ is where the header starts. Then the payload.",
    "The public key is MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0g",
    "the cert starts MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJRTESMBAGA1UE",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx8b4Vd2hJkL9sYt3QwPzN7mA1cR5eF6uH0iK2jL3oM mira@laptop",
    "the Basic plan costs $5", "basic training in 2019", "Authorization: Basic $CREDENTIALS",
    "Authorization: Basic dXNlcjo=",  # user: with no password
    f"{jwt()[:40]} is cut short",
])
def test_look_alikes_of_the_new_formats_are_not_refused(text):
    assert find_credential(text) is None


@pytest.mark.parametrize("text", [
    "the refresh token is HS512-signed", "the NFT token is ERC1155", "the API key is UTF8-encoded",
    "the session token is base64url-encoded", "the signing key is secp256k1", "the key is AES-256-GCM",
    "the access token is RS256-signed", "the JWT secret is 256-bit", "the private key is Ed25519",
    "the password hash is SHA3-256", "the token is JWT-encoded", "the token is URL-safe", "the token is TLS1.3-only",
    "the webhook secret is HMAC-SHA256-signed", "the secret is PBKDF2-derived", "the API key is 32-byte",
    "token是ERC1155标准", "リフレッシュトークンはHS512で署名されている",
])
def test_a_technical_term_after_a_name_is_not_a_secret(text):
    assert find_credential(text) is None


@pytest.mark.parametrize("text, kind", [
    ("the password is Maple2024-signed", "password"), ("the api key is kdjfhske-4821", "api_key"),
    ("the token is ERC1155x9Q", "api_key"), ("the password is Winter2024", "password"),
])
def test_a_secret_that_only_looks_technical_is_still_one(text, kind):
    assert find_credential(text) == kind


# --- the switch -----------------------------------------------------------------------------


@pytest.mark.parametrize("choice, default, on", [(None, True, True), (None, False, False), (True, False, True),
                                                 (False, True, False)])
def test_a_workspaces_choice_wins_over_the_operators_default(choice, default, on):
    assert guard_on(Workspace(secret_guard_enabled=choice), Limits(secret_guard_default=default)) is on


def test_on_by_default():
    assert guard_on(Workspace(), Limits()) is True


# --- in the create's decision ---------------------------------------------------------------


def command(content: str, scope: str = "server_wide") -> CreateMemory:
    args: dict[str, Any] = {"memory_content": content, "memory_scope": scope}
    if scope == "target_user":
        args["target_user"] = "Alice"
    return create_command("5", persona_id=3, bot_user_id="9", channel=Channel(id="6"), tool_args=args,
                          triggerer=Triggerer(id=TRIGGERER, name="Tri"),
                          member_matches=[MemberMatch(id=ALICE, display_name="Alice", username="alice")],
                          envelope_fields=fixed_envelope("cmd-39"))


def decide(cmd: CreateMemory, workspace: Workspace = Workspace(), privacy: int = Privacy.OPEN,
           limits: Limits = LIMITS) -> CreateDecision:
    ctx = CreateContext(workspace=workspace, users={ALICE: KnownUser(11, ALICE, privacy_level=privacy),
                                                    TRIGGERER: KnownUser(5, TRIGGERER)})
    return decide_create(cmd, parse_tool_args(cmd.tool_args), ctx, limits, NoticeSettings())


SECRET = next(c for c in CREDENTIALS if c.kind == "discord_token")


def test_a_memory_holding_a_credential_is_refused_naming_only_its_kind():
    decision = decide(command(SECRET.content))
    assert decision == CreateSecretRefused("server_wide", "discord_token")

    result = render_create("cmd-1", decision, None)
    assert isinstance(result, CommandResult)
    assert (result.success, result.data.status, result.data.scope) == (False, INVALID_CONTENT, "server_wide")
    assert result.error == result.data.reason and "a Discord bot token" in result.error
    assert "must never be stored" in result.error and "create_long_term_memory" in result.error
    for part in (SECRET.secret, *SECRET.secret.split(".")):
        assert part not in encode(result).decode()


def test_what_is_stored_of_a_refusal_is_its_kind_and_scope():
    decision = decide(command(SECRET.content, "target_user"))
    stored = msgspec.json.encode(decision)
    assert msgspec.json.decode(stored) == {"decided": "secret_refused", "tool_scope": "target_user",
                                           "kind": "discord_token"}
    assert msgspec.json.decode(stored, type=CreateDecision) == decision


def test_a_stored_refusal_renders_as_the_code_words_it_now():
    # The stored format: rows written by this release read back, and any later release words them.
    stored = b'{"decided":"secret_refused","tool_scope":"server_wide","kind":"payment_card"}'
    result = render_create("c-1", msgspec.json.decode(stored, type=CreateDecision), None)
    assert result.data.status == INVALID_CONTENT and "a payment card number" in (result.data.reason or "")


def test_the_guard_comes_after_the_length_check_and_before_privacy():
    too_long = f"{SECRET.content} {'x' * 1000}"
    assert isinstance(decide(command(too_long)), InvalidContent)
    assert isinstance(decide(command(SECRET.content, "target_user"), privacy=Privacy.FULL), CreateSecretRefused)
    assert isinstance(decide(command("{user} likes tea", "target_user"), privacy=Privacy.FULL), PrivacyRestricted)


def test_the_guard_reads_the_cleaned_content():
    # Cleaning turns {token} into its bare word; what is checked is what would be stored.
    assert decide(command("{password} is {user}'s favourite word")) != CreateSecretRefused("server_wide", "password")


@pytest.mark.parametrize("workspace, limits, saved", [
    (Workspace(secret_guard_enabled=False), LIMITS, True),
    (Workspace(), Limits(secret_guard_default=False), True),
    (Workspace(secret_guard_enabled=True), Limits(secret_guard_default=False), False),
    (Workspace(), LIMITS, False),
])
def test_a_workspace_or_the_operator_may_turn_it_off(workspace, limits, saved):
    decision = decide(command(SECRET.content), workspace, limits=limits)
    assert isinstance(decision, SavePlan) is saved
    if saved:
        assert isinstance(decision, SavePlan) and decision.content == SECRET.content
