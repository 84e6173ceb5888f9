"""The secret guard's corpus: realistic memory contents a model writes, benign and holding
credentials, for every layer's tests and the guard's timing.

Every credential here is made up on the spot from a seeded generator: it has the format of the
real thing (prefixes, lengths, alphabets, a card's Luhn digit, a JWT's JSON parts, a key
block's armour), so a detector that knows the format must find it, and it is nobody's secret.
Nothing here was ever a real credential; none may be added.

`BENIGN` is what a memory usually holds, chosen to sit close to credentials: ids, hashes,
UUIDs, hex colours, order and tracking numbers, phone extensions, URLs with long ids, code,
the words password, token, key, secret and PIN used for something else, and technical prose
about tokens, hashes and keys (algorithms, standards, encodings after those words) in
English, Japanese and Chinese. `CREDENTIALS`
holds each content with the kind of credential the guard must name
(worker/domain/secret_guard/'s `CredentialKind`) and the credential itself.
"""

from __future__ import annotations

import base64
import json
import random
import string
import unicodedata
from collections.abc import Callable
from typing import NamedTuple

_rng = random.Random(39)

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
UPPER_DIGITS = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"


def _pick(alphabet: str, n: int, rng: random.Random = _rng) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _snowflake(rng: random.Random = _rng) -> str:
    return str(rng.randrange(10**17, 1_400_000_000_000_000_000))


# --- credentials in their formats ---------------------------------------------------------

def discord_token() -> str:
    hmac_len = _rng.choice((27, 38))
    return f"{_b64url(_snowflake().encode())}.{_pick(URLSAFE, 6)}.{_pick(URLSAFE, hmac_len)}"


def discord_webhook() -> str:
    return f"https://discord.com/api/webhooks/{_snowflake()}/{_pick(URLSAFE, 68)}"


def openai_key() -> str:
    return _rng.choice((
        lambda: f"sk-{_pick(ALNUM, 20)}T3BlbkFJ{_pick(ALNUM, 20)}",
        lambda: f"sk-proj-{_pick(URLSAFE, 74)}T3BlbkFJ{_pick(URLSAFE, 74)}",
        lambda: f"sk-proj-{_pick(URLSAFE, 48)}",
        lambda: f"sk-svcacct-{_pick(URLSAFE, 64)}",
        lambda: f"sk-{_pick(ALNUM, 48)}",
    ))()


def anthropic_key() -> str:
    kind = _rng.choice(("api03", "admin01"))
    return f"sk-ant-{kind}-{_pick(URLSAFE, 93)}AA"


def github_token() -> str:
    if _rng.random() < 0.25:
        return f"github_pat_{_pick(ALNUM, 22)}_{_pick(ALNUM, 59)}"
    return f"{_rng.choice(('ghp', 'gho', 'ghu', 'ghs', 'ghr'))}_{_pick(ALNUM, 36)}"


def gitlab_token() -> str:
    return f"{_rng.choice(('glpat', 'gldt', 'glrt'))}-{_pick(URLSAFE, 20)}"


def aws_access_key() -> str:
    return _rng.choice(("AKIA", "ASIA")) + _pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)


def aws_secret() -> str:
    return _pick(ALNUM + "/+", 40)


def google_api_key() -> str:
    return "AIza" + _pick(URLSAFE, 35)


def slack_token() -> str:
    if _rng.random() < 0.3:
        return (f"https://hooks.slack.com/services/T{_pick(UPPER_DIGITS, 8)}/B{_pick(UPPER_DIGITS, 10)}/"
                f"{_pick(ALNUM, 24)}")
    prefix = _rng.choice(("xoxb", "xoxp", "xoxa"))
    tail = _pick(string.ascii_lowercase + string.digits, 24)
    return f"{prefix}-{_rng.randrange(10**9, 10**12)}-{_rng.randrange(10**9, 10**12)}-{tail}"


def stripe_key() -> str:
    return f"{_rng.choice(('sk', 'rk'))}_{_rng.choice(('live', 'test'))}_{_pick(ALNUM, _rng.choice((24, 99)))}"


def jwt() -> str:
    header = {"alg": _rng.choice(("HS256", "RS256")), "typ": "JWT"}
    payload = {"sub": str(_rng.randrange(10**6, 10**9)), "name": _rng.choice(("Mira", "Jonas", "Aiko")),
               "iat": _rng.randrange(1_600_000_000, 1_800_000_000)}
    parts = (_b64url(json.dumps(header).encode()), _b64url(json.dumps(payload).encode()),
             _b64url(_rng.randbytes(32)))
    return ".".join(parts)


def private_key() -> str:
    label = _rng.choice(("RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY"))
    body = base64.b64encode(_rng.randbytes(96)).decode()
    return f"-----BEGIN {label}-----\n{body[:64]}\n{body[64:]}\n-----END {label}-----"


_CARD_PREFIXES = (("4", 16), ("51", 16), ("55", 16), ("2221", 16), ("34", 15), ("37", 15), ("6011", 16),
                  ("65", 16), ("3530", 16), ("4", 13))


def luhn_complete(partial: str) -> str:
    """`partial` with the check digit that makes it pass the Luhn test."""
    total = 0
    for i, ch in enumerate(reversed(partial)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d * 2 > 9 else d * 2
        total += d
    return partial + str((10 - total % 10) % 10)


def card_number() -> str:
    prefix, length = _rng.choice(_CARD_PREFIXES)
    number = luhn_complete(prefix + _pick(string.digits, length - len(prefix) - 1))
    style = _rng.choice(("plain", "spaces", "dashes"))
    if style == "plain" or length == 13:
        return number
    sep = " " if style == "spaces" else "-"
    groups = (4, 6, 5) if length == 15 else (4, 4, 4, 4)
    out, at = [], 0
    for g in groups:
        out.append(number[at:at + g])
        at += g
    return sep.join(out)


def url_with_password() -> str:
    scheme = _rng.choice(("postgres", "mysql", "https", "redis", "amqp"))
    user = _rng.choice(("admin", "app", "mira", "deploy"))
    return f"{scheme}://{user}:{_pick(ALNUM, 14)}@{_rng.choice(('db.example.com', 'cache.internal', 'example.org'))}"


def password_value() -> str:
    return _rng.choice((
        lambda: _rng.choice(("Sunflower", "Dragon", "Maple", "Tigger", "Winter")) + str(_rng.randrange(10, 9999)),
        lambda: _pick(ALNUM + "!@#$%&*", 12),
        lambda: _rng.choice(("P@ssw0rd", "Tr0ub4dor&3", "hunter2", "qwerty123!", "letmein2024")),
        lambda: _pick(ALNUM, 20),
    ))()


def other_provider_key() -> tuple[str, str]:
    return _rng.choice((
        lambda: ("twilio_key", "SK" + _pick(HEX, 32)),
        lambda: ("sendgrid_key", f"SG.{_pick(URLSAFE, 22)}.{_pick(URLSAFE, 43)}"),
        lambda: ("telegram_token", f"{_rng.randrange(10**8, 10**10)}:AA{_pick(URLSAFE, 33)}"),
        lambda: ("mailchimp_key", f"{_pick(HEX, 32)}-us{_rng.randrange(1, 21)}"),
        lambda: ("pypi_token", "pypi-AgEIcHlwaS5vcmc" + _pick(URLSAFE, 80)),
        lambda: ("huggingface_token", "hf_" + _pick(string.ascii_letters, 34)),
        lambda: ("google_oauth_secret", "GOCSPX-" + _pick(URLSAFE, 28)),
    ))()


# --- memories holding them ------------------------------------------------------------------

class Credential(NamedTuple):
    content: str  # the memory as the model writes it
    kind: str  # what the guard must name it
    secret: str  # the credential itself, as it appears in the content



_PEOPLE = ("{user}", "Mira", "Jonas", "Aiko", "Priya", "Tomás", "the server owner", "{user}'s brother")


def _who() -> str:
    return _rng.choice(_PEOPLE)


def _credential_memories() -> list[Credential]:
    out: list[Credential] = []
    templates: list[tuple[str, Callable[[], str], tuple[str, ...]]] = [
        ("discord_token", discord_token, (
            "{who}'s Discord bot token is {x}", "{who} pasted the bot token for Tomori-dev: {x}",
            "Remember the token of {who}'s music bot: {x}", "{x} is the token {who} uses for the moderation bot",
            "{who} said their bot token is {x}, keep it handy")),
        ("discord_webhook", discord_webhook, (
            "The announcements webhook is {x}", "{who} set up a webhook for the art channel: {x}")),
        ("openai_key", openai_key, (
            "{who}'s OpenAI API key: {x}", "{who} shared their OpenAI key {x} so I can use GPT for the quiz",
            "OpenAI key for the server's bot is {x}")),
        ("anthropic_key", anthropic_key, (
            "{who}'s Anthropic key is {x}", "{who} uses Claude with the key {x}")),
        ("github_token", github_token, (
            "{who}'s GitHub token: {x}", "{who} gave me a personal access token for the repo, {x}",
            "The CI uses {x} to push releases")),
        ("gitlab_token", gitlab_token, (
            "{who}'s GitLab token is {x}", "Deploy token for the gitlab mirror: {x}")),
        ("aws_key", aws_access_key, (
            "{who}'s AWS access key id is {x}", "AWS key for the backups bucket: {x}")),
        ("google_api_key", google_api_key, (
            "{who}'s Google Maps API key is {x}", "The YouTube Data API key {who} set up: {x}")),
        ("slack_token", slack_token, (
            "{who}'s Slack token: {x}", "The Slack integration uses {x}")),
        ("stripe_key", stripe_key, (
            "{who}'s Stripe secret key is {x}", "Shop backend stripe key {x}")),
        ("jwt", jwt, (
            "{who}'s session token for the dashboard is {x}", "{who} pasted this login token: {x}")),
        ("private_key", private_key, (
            "{who}'s SSH key for the server:\n{x}", "{who} shared the deploy key {x}")),
        ("payment_card", card_number, (
            "{who}'s credit card number is {x}", "{who} pays with the card {x}, expiry 09/28",
            "Card on file for {who}: {x}", "{who}'s Visa: {x} (cvv on the back)", "{who} uses {x} for the shop")),
        ("url_password", url_with_password, (
            "{who}'s database URL is {x}/app", "Connection string for the bot's cache: {x}")),
        ("password", password_value, (
            "{who}'s password is {x}", "{who}'s wifi password: {x}", "{who} changed their Steam password to {x}",
            "The admin panel password is {x}", "{who}'s email password is \"{x}\"", "password = {x}",
            "DB_PASSWORD={x}", "{who}'s Netflix login: password is {x}")),
    ]
    for kind, make, phrasings in templates:
        repeats = 3 if kind in ("payment_card", "password", "discord_token") else 2
        for _ in range(repeats):
            for phrasing in phrasings:
                secret = make()
                out.append(Credential(phrasing.format(who=_who(), x=secret), kind, secret))
    for _ in range(12):
        kind, secret = other_provider_key()
        out.append(Credential(f"{_who()}'s API key for the integration is {secret}", kind, secret))
    secret = aws_secret()
    out.append(Credential(f"{_who()}'s AWS secret access key: aws_secret_access_key = \"{secret}\"", "aws_key", secret))
    for value in ("4821", "0934", "775512"):
        out.append(Credential(f"{_who()}'s bank PIN is {value}", "pin", value))
    out.append(Credential("The door PIN: 2580", "pin", "2580"))
    for _ in range(6):
        secret = _pick(ALNUM, 32)
        out.append(Credential(f"{_who()}'s api key: {secret}", "api_key", secret))
        secret = _pick(URLSAFE, 40)
        out.append(Credential(f"the access token is {secret}", "api_key", secret))
    secret = _pick(ALNUM, 24)
    out.append(Credential(f"client_secret = \"{secret}\"", "api_key", secret))
    secret = f"{_pick(string.ascii_lowercase, 8)}-{_pick(string.digits, 4)}"
    out.append(Credential(f"{_who()}'s recovery passphrase is {secret}", "password", secret))
    return out


# --- more shapes: new formats, other scripts, hidden characters, names glued or far from values

HEX_LOWER = HEX
_INVISIBLES = ("\u200b", "\u200c", "\u200d", "\u2060", "\u2066", "\u2069", "\u00ad", "\u061c", "\u180e", "\ufeff",
               "\u202e", "\U000e0041", "\ufe0f", "\ufe00", "\U000e0100")
# Decimal digits of other scripts: Arabic-Indic, Extended Arabic-Indic, Devanagari, Bengali, Thai, fullwidth.
_DIGIT_ZEROS = (0x0660, 0x06F0, 0x0966, 0x09E6, 0x0E50, 0xFF10)


def npm_token() -> str:
    return "npm_" + _pick(ALNUM, 36)


def huggingface_token() -> str:
    return _rng.choice(("hf_", "api_org_")) + _pick(string.ascii_letters, 34)


def pypi_token() -> str:
    return "pypi-AgEIcHlwaS5vcmc" + _pick(URLSAFE, 80)


def slack_app_token() -> str:
    return f"xapp-1-A{_pick(UPPER_DIGITS, 10)}-{_rng.randrange(10**12, 10**13)}-{_pick(HEX, 64)}"


def stripe_restricted_key() -> str:
    return "rk_live_" + _pick(ALNUM, _rng.choice((24, 99)))


def sendgrid_key() -> str:
    return f"SG.{_pick(URLSAFE, 22)}.{_pick(URLSAFE, 43)}"


def shopify_token() -> str:
    return f"{_rng.choice(('shpat', 'shpss', 'shpca', 'shppa'))}_{_pick(HEX + 'ABCDEF', 32)}"


def digitalocean_token() -> str:
    return f"{_rng.choice(('dop', 'doo', 'dor'))}_v1_{_pick(HEX, 64)}"


def doppler_token() -> str:
    return f"dp.{_rng.choice(('pt', 'st', 'sa', 'ct'))}.{_pick(ALNUM, 43)}"


def grafana_token() -> str:
    if _rng.random() < 0.5:
        return f"glsa_{_pick(ALNUM, 32)}_{_pick(HEX, 8)}"
    return "glc_" + _pick(ALNUM, 60)


def linear_key() -> str:
    return "lin_api_" + _pick(ALNUM, 40)


def notion_token() -> str:
    if _rng.random() < 0.5:
        return f"ntn_{_pick(string.digits, 11)}{_pick(ALNUM, 35)}"
    return "secret_" + _pick(ALNUM, 43)


def square_secret() -> str:
    return "sq0csp-" + _pick(URLSAFE, 43)


def azure_storage_key() -> str:
    key = base64.b64encode(_rng.randbytes(64)).decode()
    return f"DefaultEndpointsProtocol=https;AccountName=inkmoth;AccountKey={key};EndpointSuffix=core.windows.net"


def wrapped_jwt() -> str:
    """A JWT as a chat client wraps it: a line break or a space after (or before) a dot."""
    return _rng.choice((".\n", ". ", "\n.", " .\n")).join(jwt().split("."))


def armourless_private_key() -> str:
    """A private key's base64 body, its BEGIN and END lines left off: the DER start of PKCS#1
    RSA, PKCS#8, SEC1 EC or Ed25519, or openssh-key-v1's, then random bytes."""
    start = _rng.choice(("MIIEowIBAAKCAQEA", "MIIJKAIBAAKCAgEA", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "MHcCAQEEI",
                         "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0", "MC4CAQAwBQYDK2VwBCIEI",
                         "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB"))
    body = start + base64.b64encode(_rng.randbytes(120)).decode()
    return "\n".join(body[i:i + 64] for i in range(0, len(body), 64))


def basic_authorization() -> str:
    user = _rng.choice(("admin", "mira", "deploy", "bot"))
    return "Basic " + base64.b64encode(f"{user}:{password_value()}".encode()).decode()


def in_other_digits(number: str) -> str:
    zero = _rng.choice(_DIGIT_ZEROS)
    return "".join(chr(zero + int(c)) if c.isdigit() else c for c in number)


def with_invisibles(secret: str) -> str:
    """`secret` split by invisible characters (format characters, variation selectors)."""
    out = list(secret)
    for _ in range(_rng.randrange(1, 4)):
        out.insert(_rng.randrange(1, len(out)), _rng.choice(_INVISIBLES))
    return "".join(out)


def pin_value() -> str:
    return _pick(string.digits, _rng.choice((4, 4, 6)))


def _more_credential_memories() -> list[Credential]:
    out: list[Credential] = []

    def add(kind: str, make: Callable[[], str], phrasings: tuple[str, ...], repeats: int = 1) -> None:
        for _ in range(repeats):
            for phrasing in phrasings:
                secret = make()
                out.append(Credential(phrasing.format(who=_who(), x=secret), kind, secret))

    # A colon after the verb.
    add("password", password_value, ("my password is: {x}", "{who}'s password was: {x}", "the wifi password is: {x}",
                                     "{who}'s new passphrase is: {x}", "pwd is:{x}"), 2)
    add("pin", pin_value, ("PIN is: {x}", "{who}'s bank PIN was: {x}", "the door passcode is: {x}"), 2)
    add("api_key", lambda: _pick(ALNUM, 32), ("api key is: {x}", "{who}'s secret is: {x}",
                                              "the bot token was: {x}", "access key is = {x}"), 2)
    # The name, what it is for, then the value.
    add("password", password_value, (
        "{who}'s password for the Steam account is {x}", "the password to the NAS is {x}",
        "{who}'s password on the school portal was set to {x}", "password for wifi: {x}",
        "{who}'s password of the shared Netflix is \"{x}\"", "the passphrase for the backup drive is {x}"), 2)
    add("api_key", lambda: _pick(URLSAFE, 40), (
        "token for the weather API: {x}", "the API key for OpenWeather is {x}", "{who}'s secret for the webhook is {x}",
        "the access token of the Spotify app is {x}"), 2)
    add("pin", pin_value, ("the PIN to the front door is {x}", "the pin for the bike lock is {x}",
                           "{who}'s passcode to the safe: {x}", "the PIN of {who}'s debit card was changed to {x}"), 2)
    # A name glued to what it is for, as environment variables and fields are written.
    add("password", password_value, ("SMTPPASSWORD={x}", "export REDISPASSWORD={x}", "MYSQLPWD={x}",
                                     "smtpPassword: {x}", "{who}'s .env has ADMINPASSWORD=\"{x}\""), 2)
    add("api_key", lambda: _pick(ALNUM, 36), ("MYAPPSECRET={x}", "DISCORDBOTTOKEN={x}", "WEATHERAPIKEY={x}",
                                              "clientSecret: {x}", "{who}'s config: appToken = {x}"), 2)
    # Formats the library lacks, in several languages.
    providers: tuple[tuple[str, Callable[[], str]], ...] = (
        ("npm_token", npm_token), ("huggingface_token", huggingface_token), ("pypi_token", pypi_token),
        ("slack_token", slack_app_token), ("stripe_key", stripe_restricted_key), ("gitlab_token", gitlab_token),
        ("shopify_token", shopify_token), ("sendgrid_key", sendgrid_key), ("digitalocean_token", digitalocean_token),
        ("doppler_token", doppler_token), ("grafana_token", grafana_token), ("linear_key", linear_key),
        ("notion_token", notion_token), ("square_secret", square_secret), ("azure_storage_key", azure_storage_key))
    languages = ("{who}'s token for the release script: {x}", "{who}のトークンは {x} です",
                 "{who}的密钥是 {x}", "Der Schlüssel von {who} lautet {x}", "La clave de {who} es {x}")
    for i, (kind, make) in enumerate(providers):
        for phrasing in (languages[i % 5], languages[(i + 2) % 5]):
            add(kind, make, (phrasing,))
    # Written against Japanese, Chinese, Korean or Thai text, with no space between.
    glued = ("トークンは{x}だよ", "密钥{x}别告诉别人", "{who}のAPIキー{x}を覚えておいて", "我的令牌是{x}，不要告诉别人",
             "토큰은{x}입니다", "โทเค็นคือ{x}ครับ", "{who}さんのパスワードはpassword:{x}です")
    glued_formats: tuple[tuple[str, Callable[[], str]], ...] = (
        ("github_token", github_token), ("openai_key", openai_key), ("gitlab_token", gitlab_token),
        ("anthropic_key", anthropic_key), ("npm_token", npm_token), ("huggingface_token", huggingface_token),
        ("slack_token", slack_token), ("stripe_key", stripe_key), ("google_api_key", google_api_key),
        ("aws_key", aws_access_key), ("notion_token", notion_token), ("linear_key", linear_key))
    for i, (kind, make) in enumerate(glued_formats):
        add(kind, make, (glued[i % 6], glued[(i + 3) % 6]))
    add("password", password_value, (glued[6], "我的password是{x}", "{who}のpasswordは{x}"))
    # Split by invisible characters.
    for kind, make in (*glued_formats[:8], ("discord_token", discord_token), ("jwt", jwt)):
        for _ in range(2):
            secret = with_invisibles(make())
            out.append(Credential(f"{_who()}'s token is {secret}", kind, secret))
    for _ in range(3):
        secret = with_invisibles(password_value() + "7")
        out.append(Credential(f"{_who()}'s password is {secret}", "password", secret))
    # Card numbers in other scripts' digits.
    cards = ("رقم بطاقة {who} هو {x}", "{who} का कार्ड नंबर {x} है", "{who}'s card: {x}", "{who}のカード番号は{x}")
    add("payment_card", lambda: in_other_digits(card_number()), cards, 2)
    add("pin", lambda: in_other_digits(pin_value()), ("{who}'s PIN is {x}", "الرمز PIN: {x}"))
    # A JWT wrapped at its dots, a key body without armour, a Basic header.
    add("jwt", wrapped_jwt, ("{who}'s session token:\n{x}", "{who} pasted the login token {x}",
                             "{who}のセッショントークン:\n{x}"), 2)
    add("private_key", armourless_private_key, ("{who}'s SSH key:\n{x}", "{who} pasted the key body\n{x}\nfor the VPS",
                                                "{who}的私钥：\n{x}"), 2)
    add("basic_auth", basic_authorization, ("{who}'s API header is Authorization: {x}",
                                            "curl -H \"Authorization: {x}\" https://api.example.com",
                                            "{who}のリクエストヘッダー Authorization: {x}"), 2)
    return out


CREDENTIALS: list[Credential] = _credential_memories() + _more_credential_memories()

# The ways of writing a credential that a reader of only "name is value" and whole-word formats
# misses, each with the test that picks one of the corpus.
_SHAPES: dict[str, Callable[[Credential], bool]] = {
    "a colon after the verb": lambda c: " is: " in c.content or " was: " in c.content,
    "written against text without spaces": lambda c: c.content.startswith(("トークンは", "密钥")),
    "split by invisible characters": lambda c: any(unicodedata.category(ch) == "Cf" for ch in c.secret),
    "a name glued to a prefix": lambda c: c.content.startswith(("SMTPPASSWORD=", "MYAPPSECRET=")),
    "other scripts' digits": lambda c: c.kind == "payment_card" and not c.secret.isascii(),
    "the name, what it is for, the value": lambda c: " for the Steam account is " in c.content,
    "a format the library lacks": lambda c: c.kind in ("npm_token", "doppler_token", "linear_key"),
    "a JWT wrapped at its dots": lambda c: c.kind == "jwt" and any(ch.isspace() for ch in c.secret),
    "a key body without armour": lambda c: c.kind == "private_key" and "BEGIN" not in c.secret,
    "an HTTP Basic authorization": lambda c: c.kind == "basic_auth",
}
ONE_OF_EACH_SHAPE: dict[str, Credential] = {shape: next(c for c in CREDENTIALS if picks(c)) for shape, picks in _SHAPES.items()}


# --- benign memories ------------------------------------------------------------------------

def _uuid(rng: random.Random) -> str:
    h = _pick(HEX, 32, rng)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def _benign() -> list[str]:
    rng = random.Random(3939)
    fixed = [
        # names, preferences, plans
        "{user} likes tea more than coffee", "{user}'s favourite colour is teal", "{user} is learning Japanese",
        "{user} has a cat called Miso", "{user} prefers to be called Sam", "{user} is vegetarian",
        "{user} plays bass in a band called The Lanterns", "{user} wants to visit Lisbon next spring",
        "{user} is allergic to peanuts", "{user} works night shifts on weekends",
        "{user}'s birthday is on March 14", "{user} is studying for the bar exam in July",
        "{user} and Jonas are planning a game night on Friday at 8pm",
        "The server's movie night is every second Saturday", "{bot} should answer in English unless asked otherwise",
        "{user} dislikes spoilers for One Piece", "{user} runs a 5k every Sunday morning",
        "{user} uses Arch Linux and a tiling window manager", "{user}'s main in Street Fighter is Chun-Li",
        "{user} has two kids, Ana (7) and Leo (4)", "{user} moved from Porto to Berlin in 2021",
        "{user} is saving for a Steam Deck", "{user} started a sourdough starter called Doughy",
        "{user} writes fanfiction under the name inkmoth", "{user} prefers metric units",
        "{user} is colourblind (deuteranopia)", "{user} speaks Tagalog and English at home",
        "The server's timezone for events is UTC+2", "{user} is a nurse at St. Mary's",
        "{user} doesn't like being pinged after 11pm", "{user}'s favourite anime is Mushishi",
        "{user} has a dentist appointment on the 3rd", "{user} is training for a half marathon in October",
        "{char} promised to help {user} with their cover letter", "{user} thinks pineapple belongs on pizza",
        "{user} has a 1999 Honda Civic they are restoring", "{user} likes lo-fi music while studying",
        "{user} lost their keys twice this week", "The server mascot is a frog named Pickles",
        # the words of credentials used for something else
        "{user} uses a password manager (Bitwarden) for everything",
        "{user} forgot their Steam password again and had to reset it",
        "{user} changed their Netflix password yesterday", "The wifi password is on the fridge",
        "{user} says the password is case-sensitive", "{user} wants passwordless login on the club site",
        "The password is the same as last year's, {user} knows it", "{user} thinks password rules are silly",
        "{user} collects old subway tokens", "{user} has 500 tokens left on their AI plan this month",
        "The bot's token limit per reply is 2048", "{user} is reading about token economies in games",
        "{user} keeps the spare key under the flower pot", "The song {user} wrote is in the key of F# minor",
        "API key rotation is planned for Friday, {user} is in charge", "{user} asked how API keys work",
        "{user}'s secret ingredient in chili is cocoa", "Secret Santa exchange is on December 20",
        "{user} is keeping the surprise party a secret from Mira", "{user} pinned the rules message",
        "{user} knocked down 9 pins in the last frame", "{user}'s PIN reminder: it's in their notebook",
        "{user} has a keycard for the office", "The office door code changes every month",
        "{user} got a security key (YubiKey) for Christmas", "{user} rotated their credentials after the leak",
        "{user} is learning about JWT and OAuth for work", "{user} works on the auth service at their job",
        "{user}'s zip code is 90210", "{user}'s area code is 415", "The access code for the event will be emailed",
        "{user} uses two-factor authentication everywhere", "Never ask {user} for their password",
        "{user} lost the secret key to their old bitcoin wallet years ago",
        "The token for the board game is the blue meeple", "{user} says passwords should be at least 12 characters",
        # numbers and ids
        "{user}'s desk phone extension is 4417", "Call the front desk at ext. 2203",
        "{user}'s phone number is +1 555 010 2233", "{user}'s office line: (555) 013-7788 ext. 12",
        "{user}'s order #112-4432189-5562310 ships Tuesday", "Order id 7731 was refunded",
        "{user}'s UPS tracking number is 1Z999AA10123456784", "{user}'s library card ends in 0042",
        "{user}'s student id is 20231187", "{user}'s Discord id is 123456789012345678",
        "{user}'s alt account id: 987654321098765432", "{user} was born in 1994",
        "The ISBN of {user}'s favourite book is 978-0-316-76948-8", "{user}'s flight is LH 1234 on 2025-07-03 at 06:45",
        "{user}'s seat is 23C", "{user}'s license plate is B-MX 4402", "Room 1204 at the Hilton for the meetup",
        "{user}'s high score in Tetris is 1,204,330", "{user} owes Jonas $45.50 for the concert tickets",
        "{user}'s postcode is SW1A 1AA", "{user}'s rent is 1,150 euros a month",
        "{user} has 3,482 hours in Factorio", "{user}'s Minecraft server runs on port 25565",
        "The event starts at 2025-11-08T18:30:00Z", "{user}'s GPU is an RTX 4070 Ti",
        "{user} uses Node 20.11.1 and Python 3.12.2", "{user}'s build number was 4.2.0-rc.3+build.1182",
        "{user}'s Steam friend code is 412339087", "{user}'s Switch friend code is SW-1234-5678-9012",
        "{user}'s IBAN starts with DE89, they asked me not to keep the rest",
        "{user}'s game save is slot 3", "{user} weighs 72 kg and is 181 cm tall",
        "The server reached 10,000 members on 2024-05-02", "Invoice 2024-00087 is still unpaid",
        # colours, hashes, uuids
        "{user}'s brand colour is #3fa9f5", "The server theme uses #ff8800 and #1e1e2e",
        "{user} wants the role colour changed to #C0FFEE", "Use rgb(34, 139, 34) for the garden channel banner",
        "{user} fixed the bug in commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "The release tag points at a1b2c3d", "{user}'s dotfiles are at commit 4e1243bd22c66e76c2ba9eddc1f91394e57f9f83",
        "The sha256 of the installer is 2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",
        "{user}'s MD5 checksum for the mod: 5d41402abc4b2a76b9719d911017c592",
        "The container image is ghcr.io/acme/app@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        # urls
        "{user}'s portfolio is https://inkmoth.art", "{user} recommends https://www.youtube.com/watch?v=dQw4w9WgXcQ",
        "{user}'s playlist: https://open.spotify.com/playlist/37i9dQZF1DXcBWIGoYBM5M",
        "The club's shared doc is https://docs.google.com/document/d/1aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789abcdEFGH/edit",
        "{user}'s GitHub is https://github.com/inkmoth/dotfiles", "Event map: https://goo.gl/maps/Xy12AbCdEfGh34",
        "{user}'s store page https://store.steampowered.com/app/1145360/Hades/",
        "The bug report is https://github.com/acme/app/issues/4412#issuecomment-1829934512",
        "{user} shared https://imgur.com/gallery/aZ3kP9q of their cat",
        "{user}'s blog post https://example.com/blog/2024/05/how-i-learned-to-love-rust?utm_source=discord&utm_medium=chat",
        "The raid signup sheet: https://forms.gle/9xKq2LmN3pRsT4uV6",
        "{user} follows https://twitter.com/NASA", "{user}'s Twitch is twitch.tv/inkmoth_live",
        "Wiki page: https://en.wikipedia.org/wiki/Mushishi", "{user}'s tiktok is @inkmoth.art",
        "{user}'s email is mira.k@example.com", "Contact the mods at mods@example.org",
        "The server invite is discord.gg/pickles", "{user}'s git remote is git@github.com:inkmoth/site.git",
        "{user} hosts their site on https://inkmoth.pages.dev/projects/2024/frog-game/index.html",
        "{user} used https://api.example.com/v2/users?page=2&per_page=50 in their script",
        "Meeting link: https://meet.example.com/abc-defg-hij",
        # code snippets
        "{user}'s fix was `const theme = localStorage.getItem('theme') ?? 'dark';`",
        "{user} always forgets `git push --set-upstream origin main`",
        "{user}'s query: SELECT id, name FROM users WHERE created_at > now() - interval '7 days'",
        "{user} likes `for i in range(10): print(i)` as a first example",
        "{user}'s alias: alias ll='ls -alF --color=auto'", "{user} uses `docker compose up -d --build`",
        "{user} showed `def token_count(text: str) -> int: return len(text.split())`",
        "{user}'s regex for dates is ^\\d{4}-\\d{2}-\\d{2}$",
        "{user} prefers `password: str = Field(min_length=12)` in their pydantic models",
        "{user}'s config has `api_key = os.environ[\"OPENAI_API_KEY\"]`",
        "{user} writes `export PATH=\"$HOME/.local/bin:$PATH\"` in their zshrc",
        "{user}'s CSS trick: `.card { box-shadow: 0 2px 8px rgba(0,0,0,.15); }`",
        "{user} uses `curl -H \"Authorization: Bearer $TOKEN\" https://api.example.com/me`",
        "{user}'s Rust snippet: `let v: Vec<u8> = Vec::with_capacity(1024);`",
        "{user} runs `pip install -e '.[test]'` before tests", "{user} uses `ssh-keygen -t ed25519 -C \"mira@laptop\"`",
        "{user}'s public SSH key fingerprint is SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s",
        "{user} likes `Array.from({ length: 5 }, (_, i) => i * 2)`",
        "{user}'s Makefile target is `test: ; pytest -q tests/unit`",
        "{user}'s base64 example: aGVsbG8gd29ybGQ= means hello world",
        "{user} keeps secrets out of git with `.env` in .gitignore",
        "{user}'s tip: never commit your API_KEY, use a vault",
        "{user} tested the login form with the account test@example.com",
        "{user} likes the quote \"The key to success is consistency\"",
        "{user}'s favourite Pokémon is Gengar (#094)",
        "{user}'s Wordle streak is 143 days",
        "{user}'s D&D character is a level 7 tiefling warlock named Vex",
        "{user} said: remember to water the basil on Tuesdays and Fridays",
        "{user}'s coffee order: oat flat white, extra hot",
        "{user} is moving on 2025-09-01 to flat 4B, 22 Elm Street",
        # uuids and other ids
    ]
    uuids = [f"{p} {_uuid(rng)}" for p in (
        "{user}'s save file id is", "Ticket", "{user}'s character UUID:", "The tournament bracket id is",
        "{user}'s Minecraft UUID is", "Request id", "{user}'s Notion page id:", "Webhook delivery",
        "The shipment reference", "{user}'s Azure subscription id is")]
    snowflakes = [f"{p} {_snowflake(rng)}" for p in (
        "The welcome channel id is", "{user}'s message id with the rules:", "The role id for mods is",
        "{user}'s main account id:", "Pinned message id")]
    orders = [f"{p} {n}" for p, n in (
        ("{user}'s Amazon order is", f"{rng.randrange(100, 999)}-{rng.randrange(10**6, 10**7)}-{rng.randrange(10**6, 10**7)}"),
        ("{user}'s eBay order:", f"{rng.randrange(10, 99)}-{rng.randrange(10**4, 10**5)}-{rng.randrange(10**4, 10**5)}"),
        ("Return authorisation", f"RMA-{rng.randrange(10**5, 10**6)}"),
        ("{user}'s booking reference is", _pick(string.ascii_uppercase, 6, rng)),
        ("{user}'s parcel tracking:", f"JD{rng.randrange(10**15, 10**16)}GB"),
        ("{user}'s USPS tracking number is", f"9400 1000 0000 0000 0000 {rng.randrange(10, 99)}"),
        ("{user}'s FedEx tracking:", str(rng.randrange(10**11, 10**12))),
        ("{user}'s customer number is", str(rng.randrange(10**7, 10**8))),
        ("{user}'s membership number:", f"{rng.randrange(1000, 9999)} {rng.randrange(1000, 9999)} {rng.randrange(10, 99)}"),
        ("{user}'s insurance policy number:", f"POL-{rng.randrange(10**8, 10**9)}"),
    )]
    colours = [f"{p} #{_pick(HEX, 6, rng)}" for p in (
        "{user}'s embed colour is", "The highlight colour for events is", "{user}'s favourite shade is",
        "The bot's accent colour:", "Role colour for artists:")]
    commits = [f"{p} {_pick(HEX, 40, rng)}" for p in (
        "The deploy was at commit", "{user} bisected the bug to", "Last known good build:")]
    phones = [f"{p}" for p in (
        f"{{user}}'s extension is {rng.randrange(100, 9999)}", f"Call {{user}} at ext {rng.randrange(100, 999)}",
        f"{{user}}'s mobile is +44 7700 900{rng.randrange(100, 999)}",
        f"{{user}}'s work number: +49 30 {rng.randrange(1000000, 9999999)}",
        f"The hotline is 1-800-{rng.randrange(100, 999)}-{rng.randrange(1000, 9999)}",
    )]
    return fixed + uuids + snowflakes + orders + colours + commits + phones


def _technical_benign() -> list[str]:
    """Technical prose about tokens, hashes and keys: a credential's name followed by an
    algorithm, a standard, an encoding or a size, which mixes letters and digits or cases yet is
    no secret; and the same in Japanese and Chinese."""
    names = ("the refresh token", "the NFT token", "the API key", "the session token", "the signing key",
             "the JWT secret", "{user}'s access token", "the private key", "the password hash", "the bot token",
             "the client secret", "the webhook secret", "the key")
    values = ("HS512-signed", "ERC1155", "UTF8-encoded", "HS256-signed", "RS256-signed", "ES384-signed", "ERC721",
              "ERC-20", "UTF-8-encoded", "UTF16-encoded", "base64url-encoded", "SHA256-hashed", "SHA3-256",
              "AES-256-GCM", "AES128-encrypted", "2048-bit", "4096-bit", "32-byte", "64-character", "Ed25519",
              "X25519", "secp256k1", "P-256", "argon2id-hashed", "PBKDF2-derived", "OAuth2-issued",
              "RFC7519-compliant", "ISO8601-dated", "x509-signed", "PKCS8-encoded", "HMAC-SHA256-signed",
              "JWT-encoded", "URL-safe", "ASCII-armored", "RSA-OAEP-256", "ChaCha20-Poly1305", "SHA512",
              "128-bit", "BLAKE2b-hashed", "PKCS1-padded", "TLS1.3-only", "EIP712-signed", "BIP39-derived")
    verbs = ("is", "was", "is:", "=")
    out = [f"{names[i % len(names)]} {verbs[i % len(verbs)]} {value}".replace(" =", " =")
           for i, value in enumerate(values)]
    out += [f"{names[(i + 5) % len(names)]} for the dashboard is {value}" for i, value in enumerate(values[::2])]
    out += [
        # the false refusals the review found, and their kin
        "the refresh token is HS512-signed", "the NFT token is ERC1155", "the API key is UTF8-encoded",
        "{user}'s token is an ERC-721 token", "the API key is 40 characters long", "the token expires after 3600 seconds",
        "the PIN is 4 digits long", "the PIN must be 6 digits", "the password must have 12 characters",
        "the secret is stored in AWS Secrets Manager", "the key is stored in a YubiKey 5C",
        "the access token is valid for 15 minutes, the refresh token for 30 days",
        "the session token is sent as an HttpOnly cookie", "the token is a UUIDv4",
        "the token for the weather API is in the .env file", "the password for the wifi is on the fridge",
        "the PIN to the safe is written in {user}'s notebook", "the API key for the map is in Bitwarden",
        "the password for the Steam account is saved in the password manager",
        "the token for the board game is the blue meeple", "the key to the garage is under the mat",
        "the password is: in the vault", "my PIN is: a secret", "the token was: expired",
        "{user}'s password for work is rotated every 90 days", "the secret for good bread is time",
        "MAXTOKENS=4096 is the limit in {user}'s config", "GITHUBTOKEN=$GITHUB_TOKEN in the workflow",
        "JWTSECRET=${JWT_SECRET} comes from the vault", "the secret is read from SECRET_KEY_BASE",
        "APITOKEN=changeme is the placeholder in the template",
        # technical prose with hashes and keys
        "{user} signs JWTs with RS256 and rotates the keys every 90 days",
        "the API returns a JWT whose header starts with eyJ, base64 of {\"",
        "{user} explained that bcrypt, scrypt and argon2id are password hashes",
        "SHA-1 is broken for signatures, {user} uses SHA-256", "{user}'s keys are Ed25519, never RSA-1024",
        "{user}'s public key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx8b4Vd2hJkL9sYt3QwPzN7mA1cR5eF6uH0iK2jL3oM mira@laptop",
        "The server's public key is MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0t"
        "RgeLezV6ffAt0gunVTLw7onLRnrq0",
        "{user}'s certificate starts MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJRTESMBAGA1UE",
        "HTTP Basic authentication sends base64 of user:password, so it needs TLS",
        "the Basic plan costs $5 a month", "{user} did basic training in 2019", "Authorization: Basic $CREDENTIALS",
        "{user} says a JWT has three parts. The header. The payload. The signature.",
        "{user} prefers TOTP over SMS codes", "an Ethereum private key is 32 bytes, 64 hex characters",
        "{user} learned that npm tokens start with npm_ and GitHub's with ghp_",
        "{user} stores the Hugging Face token in HF_TOKEN, never in code",
        "{user}'s favourite emoji are ❤️ and 👨‍👩‍👧", "{user} writes the flag as 🏳️‍🌈",
        "{user}'s phone number is ٠١٢٣ ٤٥٦ ٧٨٩", "{user}'s postcode in Hindi digits is ११०००१",
        # Japanese
        "リフレッシュトークンはHS512で署名されている", "APIキーはUTF8でエンコードされる", "JWTのsecretはHS256用",
        "{user}はトークンをRS256で検証している", "パスワードはbcryptでハッシュ化される", "秘密鍵はEd25519形式",
        "NFTトークンはERC1155規格", "トークンの有効期限は3600秒", "{user}はSHA256でファイルを確認した",
        "{user}のAPIキーは.envファイルにある", "パスワードは冷蔵庫に貼ってある", "トークンは32バイトの乱数",
        "{user}はPython3.12とNode20を使っている", "公開鍵はssh-ed25519で始まる", "暗証番号は4桁",
        "{user}のtokenはERC721です", "このAPI keyはUTF-8でエンコードされる",
        # Chinese
        "令牌使用RS256签名", "这个API key是UTF-8编码的", "私钥是Ed25519格式", "密码用bcrypt哈希", "token是ERC1155标准",
        "{user}用SHA256校验文件", "刷新令牌是HS512签名的", "密钥长度是2048位", "{user}的密码保存在密码管理器里",
        "访问令牌有效期是15分钟", "{user}把API key放在环境变量里", "这个secret是AES-256-GCM加密的",
        "{user}在学习JWT和OAuth2", "{user}的公钥是RSA2048", "验证码是6位数字",
    ]
    return out


BENIGN: list[str] = _benign() + _technical_benign()
