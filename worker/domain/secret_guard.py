"""What counts as a credential in what the model writes to long-term memory: the secret
guard's one home (docs/design.md, section 4.2).

A server memory goes into every prompt of the guild, a personal one follows its person into
every channel: a token, password or card number saved there can be repeated to anyone. The
model's own filters do not look at tool arguments, so the worker refuses such a memory, and
says only what kind of credential it found, never the text (`find_credential` returns the
kind alone).

What is looked for, first match wins (the most specific name first):
1. Known formats, from detect-secrets (Yelp's detector, its plugins used as pattern objects
   on the string: never its file scanner, its global settings or its network verification):
   Discord bot tokens, AWS keys, GitHub, GitLab, Slack, Stripe, OpenAI, Twilio, SendGrid,
   Telegram, Mailchimp, PyPI, npm, Square, Azure storage keys, JWTs (decoded, so a look-alike
   is not one), private key blocks.
2. Formats it lacks (`_OWN_FORMATS`): Anthropic keys, OpenAI's project and service-account
   keys, Google API keys and OAuth client secrets, GitHub's fine-grained tokens, Stripe test
   keys, Hugging Face, npm, Slack app, Shopify, DigitalOcean, Doppler, Grafana, Linear and
   Notion tokens, Discord webhook URLs, passwords in URLs, a private key's body without its
   armour lines; a JWT wrapped at its dots; an HTTP Basic header (decoded: user:password).
3. Payment card numbers (worker/domain/card_numbers.py): as cards are written, with a
   network's prefix and length and the Luhn check digit.
4. A secret-looking value after a credential's name ("password is ...", "api key is: ...",
   "PIN: ...", "the password for the Steam account is ...", "SMTPPASSWORD=..."): letters with
   digits, three kinds of character, a long high-entropy string, or digits for a PIN. A word
   after the name ("the password is on the fridge") is not a secret, nor is a technical term
   ("the refresh token is HS512-signed", "the NFT token is ERC1155", "a 256-bit key").

The text read is the text as shown: compatibility forms folded, every format character (Unicode
category Cf) and variation selector dropped, every decimal digit read as its ASCII digit, and a
space put where ASCII meets a script written without spaces (Japanese, Chinese, Thai, ...), so
that a token glued to a sentence ends where a pattern's word boundary looks for its end.

Left out on purpose: detect-secrets' public-IP plugin (an address is not a credential), its
quoted high-entropy strings and its keyword plugin (written for source files: on chat text they
either miss "password is ..." or refuse ids and hashes; rule 4 replaces them), and Artifactory's
short tokens (which match ordinary capitalised words).

Most memories hold none of what these look for: each rule first checks, cheaply, that the
text has what it needs to match at all (an unbroken run as long as the shortest format, 13
digits, a part of a credential's name), and runs only then. tests/unit/test_secret_guard.py
holds the shortcut to the rules on its corpus.
"""

from __future__ import annotations

import base64
import re
import unicodedata
import warnings
from collections.abc import Mapping
from typing import Literal

from worker.domain.card_numbers import holds_card_number
from worker.domain.model import Limits, Workspace

# detect-secrets sends the process's warnings into `logging` when imported (its logger's
# set-up); the worker's are left as they were.
_showwarning = warnings.showwarning
from detect_secrets.plugins.aws import AWSKeyDetector  # noqa: E402
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector  # noqa: E402
from detect_secrets.plugins.base import BasePlugin  # noqa: E402
from detect_secrets.plugins.discord import DiscordBotTokenDetector  # noqa: E402
from detect_secrets.plugins.github_token import GitHubTokenDetector  # noqa: E402
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector  # noqa: E402
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString  # noqa: E402
from detect_secrets.plugins.jwt import JwtTokenDetector  # noqa: E402
from detect_secrets.plugins.mailchimp import MailchimpDetector  # noqa: E402
from detect_secrets.plugins.npm import NpmDetector  # noqa: E402
from detect_secrets.plugins.openai import OpenAIDetector  # noqa: E402
from detect_secrets.plugins.private_key import PrivateKeyDetector  # noqa: E402
from detect_secrets.plugins.pypi_token import PypiTokenDetector  # noqa: E402
from detect_secrets.plugins.sendgrid import SendGridDetector  # noqa: E402
from detect_secrets.plugins.slack import SlackDetector  # noqa: E402
from detect_secrets.plugins.square_oauth import SquareOAuthDetector  # noqa: E402
from detect_secrets.plugins.stripe import StripeDetector  # noqa: E402
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector  # noqa: E402
from detect_secrets.plugins.twilio import TwilioKeyDetector  # noqa: E402

warnings.showwarning = _showwarning

__all__ = ["NAMES", "CredentialKind", "find_credential", "guard_on", "refusal_text"]

# The kinds the guard names: stored in a refused create's decision and the metric's label, so
# a kind is only ever added, never renamed or removed.
CredentialKind = Literal[
    "discord_token", "discord_webhook", "openai_key", "anthropic_key", "github_token", "gitlab_token", "aws_key",
    "google_api_key", "google_oauth_secret", "slack_token", "stripe_key", "twilio_key", "sendgrid_key",
    "telegram_token", "mailchimp_key", "pypi_token", "npm_token", "square_secret", "azure_storage_key",
    "huggingface_token", "jwt", "private_key", "payment_card", "url_password", "password", "pin", "api_key",
    "shopify_token", "digitalocean_token", "doppler_token", "grafana_token", "linear_key", "notion_token",
    "basic_auth",
]

# How each kind is named to the model: what was refused, never the text.
NAMES: Mapping[CredentialKind, str] = {
    "discord_token": "a Discord bot token",
    "discord_webhook": "a Discord webhook URL (its token lets anyone post)",
    "openai_key": "an OpenAI API key",
    "anthropic_key": "an Anthropic API key",
    "github_token": "a GitHub access token",
    "gitlab_token": "a GitLab access token",
    "aws_key": "an AWS access key",
    "google_api_key": "a Google API key",
    "google_oauth_secret": "a Google OAuth client secret",
    "slack_token": "a Slack token or webhook URL",
    "stripe_key": "a Stripe secret key",
    "twilio_key": "a Twilio API key",
    "sendgrid_key": "a SendGrid API key",
    "telegram_token": "a Telegram bot token",
    "mailchimp_key": "a Mailchimp API key",
    "pypi_token": "a PyPI upload token",
    "npm_token": "an npm access token",
    "square_secret": "a Square OAuth secret",
    "azure_storage_key": "an Azure storage account key",
    "huggingface_token": "a Hugging Face access token",
    "jwt": "a JSON Web Token (a login or session token)",
    "private_key": "a private key",
    "payment_card": "a payment card number",
    "url_password": "a password inside a URL",
    "password": "a password",
    "pin": "a PIN or security code",
    "api_key": "an API key, token or secret",
    "shopify_token": "a Shopify access token",
    "digitalocean_token": "a DigitalOcean access token",
    "doppler_token": "a Doppler access token",
    "grafana_token": "a Grafana access token",
    "linear_key": "a Linear API key",
    "notion_token": "a Notion integration token",
    "basic_auth": "a user name and password (an HTTP Basic authorization)",
}

_LIBRARY: tuple[tuple[CredentialKind, BasePlugin], ...] = (
    ("private_key", PrivateKeyDetector()),
    ("discord_token", DiscordBotTokenDetector()),
    ("openai_key", OpenAIDetector()),
    ("github_token", GitHubTokenDetector()),
    ("gitlab_token", GitLabTokenDetector()),
    ("aws_key", AWSKeyDetector()),
    ("slack_token", SlackDetector()),
    ("stripe_key", StripeDetector()),
    ("twilio_key", TwilioKeyDetector()),
    ("sendgrid_key", SendGridDetector()),
    ("telegram_token", TelegramBotTokenDetector()),
    ("mailchimp_key", MailchimpDetector()),
    ("pypi_token", PypiTokenDetector()),
    ("npm_token", NpmDetector()),
    ("square_secret", SquareOAuthDetector()),
    ("azure_storage_key", AzureStorageKeyDetector()),
    ("jwt", JwtTokenDetector()),
)

# Each starts with its literal prefix, which lets the regular expression engine skip to where
# the prefix is (a leading \b would make it try every position: 20 times slower on long text).
_OWN_FORMATS: tuple[tuple[CredentialKind, re.Pattern[str]], ...] = (
    ("anthropic_key", re.compile(r"sk-ant-[a-z]+\d\d-[A-Za-z0-9_-]{80,}")),
    ("openai_key", re.compile(r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}")),
    ("openai_key", re.compile(r"sk-[A-Za-z0-9]{48}\b")),
    ("google_api_key", re.compile(r"AIza[0-9A-Za-z_-]{35}")),
    ("google_oauth_secret", re.compile(r"GOCSPX-[0-9A-Za-z_-]{28}")),
    ("github_token", re.compile(r"github_pat_[A-Za-z0-9_]{80,}")),
    ("stripe_key", re.compile(r"sk_(?:live|test)_[0-9A-Za-z]{24,}")),
    ("stripe_key", re.compile(r"rk_(?:live|test)_[0-9A-Za-z]{24,}")),
    ("stripe_key", re.compile(r"whsec_[A-Za-z0-9]{32,}")),
    ("huggingface_token", re.compile(r"(?:hf|api_org)_[A-Za-z]{34}\b")),
    ("npm_token", re.compile(r"npm_[A-Za-z0-9]{36}\b")),
    ("slack_token", re.compile(r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+")),
    ("shopify_token", re.compile(r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}")),
    ("digitalocean_token", re.compile(r"do[opr]_v1_[a-f0-9]{64}")),
    ("doppler_token", re.compile(r"dp\.(?:pt|st|sa|ct)\.(?:[a-z0-9_-]{2,35}\.)?[A-Za-z0-9]{40,44}")),
    ("grafana_token", re.compile(r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}")),
    ("grafana_token", re.compile(r"glc_[A-Za-z0-9+/]{32,400}")),
    ("linear_key", re.compile(r"lin_api_[A-Za-z0-9]{40}")),
    ("notion_token", re.compile(r"ntn_\d{11}[A-Za-z0-9]{35}")),
    ("notion_token", re.compile(r"secret_[A-Za-z0-9]{43}\b")),
    # A key block's base64 body pasted without its armour: the DER (or OpenSSH) start that only a
    # private key has (PKCS#1 RSA, PKCS#8, SEC1 EC, Ed25519, openssh-key-v1); a public key's or a
    # certificate's body starts otherwise and is left alone.
    ("private_key", re.compile(r"(?:MII[A-Za-z0-9+/]{3}IBA(?:AK|DAN)|MHcCAQEE|MIGkAgEBBD|MIGHAgEAMBMG"
                               r"|MC4CAQAwBQYDK2Vw|b3BlbnNzaC1rZXktdjE)[A-Za-z0-9+/=]{20,}")),
    ("discord_webhook", re.compile(r"discord(?:app)?\.com/api/webhooks/\d{5,20}/[A-Za-z0-9_-]{60,}")),
    # user:password@host, the user without '/' (detect-secrets' lets it run across a path, and
    # so refuses an archive link such as https://web.archive.org/web/2020/https://example.social/@name).
    ("url_password", re.compile(r"://[^\s/@:]+:[^\s/@]+@")),
)

# Rule 4's names of a credential, by the kind they name.
_PIN_NAMES = r"pin(?:\s+(?:code|number))?|passcode|cvv|cvc|security\s+code"
_PASSWORD_NAMES = r"passwords?|passphrase|passwd|pwd"
_KEY_NAMES = (r"(?:api|access|secret|private)[\s_-]?key|client[\s_-]?secret|secret"
              r"|(?:(?:auth|access|bearer|bot|refresh|api|session)[\s_-]?)?token")

# What a detector needs in the text to match at all, checked first and cheaply (a few passes
# in C over the text): most memories have none of it, and then cost only these.
# - A known format (rules 1 and 2): an unbroken run of at least 16 ASCII characters (every
#   format's shortest match is longer), or a URL's "://", a key block's armour, a Slack "xox" prefix,
#   an HTTP Basic header (its value may be short).
_FORMAT_HINTS = ("://", "begin", "putty", "xox", "basic")
_LONGEST_FORMAT = 16
_ASCII_RUN = re.compile(rf"[!-~]{{{_LONGEST_FORMAT},}}")
# - A card (rule 3): at least 13 digits.
_NOT_DIGITS = str.maketrans("", "", "0123456789")
_CARD_DIGITS = 13
# - Rule 4: a part of each credential's name above.
_NAME_HINTS = ("pin", "pass", "pwd", "cvv", "cvc", "security", "key", "secret", "token")
# The letters the names above start with: looked ahead for first, which spares the engine the
# rest of the pattern at every other position (2 to 3 times faster on long text).
_NAME_INITIALS = "pcsabrt"

# Rule 4: a credential's name, then perhaps what it is for ("for the Steam account", "to the
# front door": up to five words), then a separator ("is", "was", "is:", ":", "=", "to", "set to",
# a Japanese or Chinese copula), then the value.
_NAME = re.compile(
    rf"(?=[{_NAME_INITIALS}])(?<![A-Za-z])(?:(?P<pin>{_PIN_NAMES})|(?P<password>{_PASSWORD_NAMES})|(?P<api_key>{_KEY_NAMES}))"
    r"(?:'s)?", re.IGNORECASE)
# An environment variable's or a field's name glued to what it is for: SMTPPASSWORD=...,
# MYAPPSECRET=..., smtpPassword: ...; only before "=" or ":", as such names are written. A
# glued lower-case word ("xpassword") is a word, not a name.
_GLUED_NAME = re.compile(
    r"(?=[PSTAp-t])(?:(?<=[A-Z0-9])(?:PASSWORD|PASSWD|PASSPHRASE|PWD|SECRET|TOKEN|(?:API|ACCESS|SECRET|PRIVATE)_?KEY)"
    r"|(?<=[a-z0-9])(?:Password|Passwd|Passphrase|Pwd|Secret|Token|(?:Api|Access|Secret|Private)Key))(?=\s*[:=])")
# The longest separator first: "was" must not end "was set to" before its value.
_SEPARATOR = (r"(?:\s*[:=]\s*|\s+(?:(?:(?:is|was|has\s+been)\s+)?(?:set|changed|reset)\s+to|is|was|to)(?:\s*[:=]\s*|\s+)"
              r"|\s*[はが是为為]\s*)")
# A value ends at a letter of a script written without spaces ("token是ERC1155标准").
_UNSPACED_CHARS = ("\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf"
                   "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff")
_VALUE = rf"[\"'`]?(?P<value>[^\s\"'`{_UNSPACED_CHARS}]+)"
_TAILS = (
    re.compile(rf"\s+(?:for|to|of|on|at|in)(?:\s+[^\s:=]+){{1,5}}?{_SEPARATOR}{_VALUE}", re.IGNORECASE),
    re.compile(rf"{_SEPARATOR}{_VALUE}", re.IGNORECASE),
)
_TRAILING = ".,;:!?)]}>"
_ENTROPY = Base64HighEntropyString()

# A technical term is not a secret, though it mixes letters and digits: an algorithm, standard
# or encoding (HS512, ERC1155, UTF-8, SHA3-256, Ed25519, secp256k1, base64url, x509, AES-256-GCM),
# a size ("256-bit", "32-byte"), and either joined to words by hyphens ("HS512-signed",
# "UTF8-encoded", "HMAC-SHA256", "JWT-encoded"). A password is seldom written so; one that is
# passes.
_FAMILIES = (r"hs|rs|es|ps|sha|sha3|md|aes|des|3des|rsa|dsa|ecdsa|hmac|erc|eip|bep|bip|utf|ucs|rfc|iso|pkcs"
             r"|tls|ssl|http|ipv|ecma|argon|pbkdf|crc|base|fips|secp|curve|ed|chacha|poly|blake|keccak|xxh"
             r"|murmur|oauth|saml|oaep|gcm|cp|latin|win|x86|arm|iec|ieee|p-?(?=256|384|521)|x(?=509|25519|448)")
_TECH_TERM = rf"(?:{_FAMILIES})[-_]?\d{{1,5}}(?:\.\d{{1,3}})?(?:[a-z]{{1,3}}\d?)?"
_SIZE = r"\d{1,5}-?(?:bits?|bytes?|chars?|characters?|digits?|letters?|words?|rounds?|days?|hours?|minutes?|bit|byte)"
_WORD = r"[a-z]+"  # in either case: the patterns ignore it
_TECHNICAL = re.compile(rf"(?:(?:{_WORD})-)*(?:{_TECH_TERM}|{_SIZE}|{_WORD})(?:-(?:{_TECH_TERM}|{_SIZE}|{_WORD}))*",
                        re.IGNORECASE)
_TECH_PART = re.compile(rf"(?:{_TECH_TERM}|{_SIZE})", re.IGNORECASE)

# How the text is read (`_as_read`). Format characters (Cf: zero-width spaces and joiners,
# bidirectional marks, soft hyphens, tags, ...) and variation selectors are dropped, other
# decimal digits read as ASCII. Planes 0, 1 and 14 hold every format character and decimal digit
# (2 and 3 are ideographs, 15 and 16 private use): scanning only them keeps the import quick.
def _read_as_table() -> dict[int, str | None]:
    variation_selectors = {*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)}
    table: dict[int, str | None] = {}
    for code in (*range(0x80, 0x20000), *range(0xE0000, 0xF0000)):
        if code in variation_selectors or unicodedata.category(chr(code)) == "Cf":
            table[code] = None
        elif (digit := unicodedata.decimal(chr(code), None)) is not None:
            table[code] = str(digit)
    return table


_READ_AS = _read_as_table()


def _char_class(codes: list[int]) -> str:
    ranges: list[list[int]] = []
    for code in sorted(codes):
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return "".join(re.escape(chr(low)) + ("-" + re.escape(chr(high)) if high > low else "") for low, high in ranges)


# Most text holds none of these: found first in one pass in C, translated only then. The engine
# tests a class of the first plane alone against a bitmap, so the others get their own.
_TO_READ_AS = (re.compile(f"[{_char_class([code for code in _READ_AS if code <= 0xFFFF])}]"),
               re.compile(f"[{_char_class([code for code in _READ_AS if code > 0xFFFF])}]"))
# Scripts written without spaces between words: a token written against them ("トークンはghp_...だよ")
# ends at a letter that a pattern's \b or (?!\w) reads as part of the word. Only an ASCII run as
# long as the shortest format is set apart: it is found in C, and it is rare.
_UNSPACED = re.compile(f"[{_UNSPACED_CHARS}\U00020000-\U0003134f]")

# A JWT wrapped at its dots (a line break or space after or before one): read joined again.
_JWT_WRAP = re.compile(r"\s+\.\s*|\.\s+")
_JWT = JwtTokenDetector()
# An HTTP Basic authorization: base64 of user:password.
_BASIC = re.compile(r"(?i:basic)\s+([A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])")


def find_credential(text: str) -> CredentialKind | None:
    """The kind of the first credential `text` holds, or None. Only the kind leaves here."""
    text = _as_read(text)
    lowered = text.lower()
    if any(hint in lowered for hint in _FORMAT_HINTS) or _has_long_ascii_run(text):
        kind = _known_format(text)
        if kind is not None:
            return kind
    if len(text) - len(text.translate(_NOT_DIGITS)) >= _CARD_DIGITS and holds_card_number(text):
        return "payment_card"
    if any(hint in lowered for hint in _NAME_HINTS):
        return _named_secret(text)
    return None


def _has_long_ascii_run(text: str) -> bool:
    # Splitting is the quicker test on ASCII text; other text may have long runs of its own letters.
    if max(map(len, text.split()), default=0) < _LONGEST_FORMAT:
        return False
    return text.isascii() or _ASCII_RUN.search(text) is not None


def _as_read(text: str) -> str:
    """The text the rules read: compatibility forms folded (NFKC: fullwidth letters, ...),
    invisible characters dropped, digits read as ASCII, and ASCII set apart from a script
    written without spaces, so that none of these hides a token."""
    if text.isascii():
        return text
    if _TO_READ_AS[0].search(text) is not None or (max(text) > "\uffff" and _TO_READ_AS[1].search(text) is not None):
        text = text.translate(_READ_AS)
    text = unicodedata.normalize("NFKC", text)
    parts, at = [], 0
    for run in _ASCII_RUN.finditer(text):
        start, end = run.span()
        parts.append(text[at:start])
        parts.append(" " if start and _UNSPACED.match(text, start - 1) else "")
        parts.append(run.group())
        parts.append(" " if _UNSPACED.match(text, end) else "")
        at = end
    if not parts:
        return text
    parts.append(text[at:])
    return "".join(parts)


def guard_on(workspace: Workspace, limits: Limits) -> bool:
    """Does the guard check this workspace's memories? Its own choice (`memoryctl workspace
    set --secret-guard`), else the operator's default (SECRET_GUARD_DEFAULT, on)."""
    if workspace.secret_guard_enabled is None:
        return limits.secret_guard_default
    return workspace.secret_guard_enabled


def refusal_text(kind: CredentialKind, tool: str) -> str:
    """What the model is told when `tool` (its name) was refused: what kind of thing, and that
    secrets are never stored. The credential itself is never repeated."""
    return (
        f"Nothing was saved: the memory contains {NAMES[kind]}, and secrets (passwords, PINs, API keys, tokens, "
        "private keys, card numbers) must never be stored in long-term memory, where they could be repeated to "
        f"anyone this bot talks with. Do not call {tool} with this secret again, in any form. If there is a fact "
        "worth remembering, save it without the secret. Tell the user it was not remembered, and that a secret "
        "posted in a chat should be changed."
    )




def _known_format(text: str) -> CredentialKind | None:
    """Rules 1 and 2."""
    for kind, plugin in _LIBRARY:
        if next(iter(plugin.analyze_string(text)), None) is not None:
            return kind
    for kind, pattern in _OWN_FORMATS:
        if pattern.search(text):
            return kind
    if "eyJ" in text and (joined := _JWT_WRAP.sub(".", text)) != text \
            and next(iter(_JWT.analyze_string(joined)), None) is not None:
        return "jwt"
    if "basic" in text.lower() and any(_is_user_password(m.group(1)) for m in _BASIC.finditer(text)):
        return "basic_auth"
    return None


def _is_user_password(value: str) -> bool:
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode()
    except ValueError:  # not base64, or not UTF-8 (binascii.Error and UnicodeDecodeError are)
        return False
    user, colon, password = decoded.partition(":")
    return bool(user and colon and password) and decoded.isprintable()


def _named_secret(text: str) -> CredentialKind | None:
    for match in _NAME.finditer(text):
        kind: CredentialKind = "pin" if match.group("pin") is not None else \
            "password" if match.group("password") is not None else "api_key"
        for tail in _TAILS:
            after = tail.match(text, match.end())
            if after is not None and _is_secret(kind, after.group("value").rstrip(_TRAILING)):
                return kind
    if "=" in text or ":" in text:
        for match in _GLUED_NAME.finditer(text):
            after = _TAILS[1].match(text, match.end())
            glued: CredentialKind = "password" if match.group().upper().startswith(("PASS", "PWD")) else "api_key"
            if after is not None and _is_secret(glued, after.group("value").rstrip(_TRAILING)):
                return glued
    return None


def _is_secret(kind: CredentialKind, value: str) -> bool:
    if kind == "pin":
        return value.isdigit() and 3 <= len(value) <= 8
    return _looks_secret(value)


def _looks_secret(value: str) -> bool:
    """A value a person would not write as a word: letters with digits, three kinds of
    character, digits only (a numeric password), or a long high-entropy string; not a
    technical term."""
    if len(value) < 6:
        return False
    kinds = sum((any(c.islower() for c in value), any(c.isupper() for c in value), any(c.isdigit() for c in value),
                 any(not c.isalnum() for c in value)))
    has_letter, has_digit = any(c.isalpha() for c in value), any(c.isdigit() for c in value)
    if (has_letter and has_digit) or kinds >= 3:
        return not _is_technical(value)
    if value.isdigit():
        return True
    return len(value) >= 16 and _ENTROPY.calculate_shannon_entropy(value) >= 3.5


def _is_technical(value: str) -> bool:
    """Words, sizes and algorithm or standard names joined by hyphens, with at least one of
    the last two or one hyphen between words ("URL-safe")."""
    if _TECHNICAL.fullmatch(value) is None:
        return False
    return "-" in value or _TECH_PART.fullmatch(value) is not None
