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

from worker.domain.card_numbers import holds_card_number
from worker.domain.secret_guard.detectors import (
    AWSKeyDetector,
    AzureStorageKeyDetector,
    BasePlugin,
    DiscordBotTokenDetector,
    GitHubTokenDetector,
    GitLabTokenDetector,
    JwtTokenDetector,
    MailchimpDetector,
    NpmDetector,
    OpenAIDetector,
    PrivateKeyDetector,
    PypiTokenDetector,
    SendGridDetector,
    SlackDetector,
    SquareOAuthDetector,
    StripeDetector,
    TelegramBotTokenDetector,
    TwilioKeyDetector,
)
from worker.domain.secret_guard.kinds import NAMES, CredentialKind
from worker.domain.secret_guard.names import NAME_HINTS, named_secret
from worker.domain.secret_guard.reading import as_read, has_long_ascii_run
from worker.domain.workspace import Limits, Workspace

__all__ = ["NAMES", "CredentialKind", "find_credential", "guard_on", "holds_card_number", "known_format",
           "named_secret", "refusal_text"]

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

# What a detector needs in the text to match at all, checked first and cheaply (a few passes
# in C over the text): most memories have none of it, and then cost only these.
# - A known format (rules 1 and 2): an unbroken run of at least 16 ASCII characters (every
#   format's shortest match is longer), or a URL's "://", a key block's armour, a Slack "xox" prefix,
#   an HTTP Basic header (its value may be short).
_FORMAT_HINTS = ("://", "begin", "putty", "xox", "basic")
# - A card (rule 3): at least 13 digits.
_NOT_DIGITS = str.maketrans("", "", "0123456789")
_CARD_DIGITS = 13

# A JWT wrapped at its dots (a line break or space after or before one): read joined again.
_JWT_WRAP = re.compile(r"\s+\.\s*|\.\s+")
_JWT = JwtTokenDetector()
# An HTTP Basic authorization: base64 of user:password.
_BASIC = re.compile(r"(?i:basic)\s+([A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])")


def find_credential(text: str) -> CredentialKind | None:
    """The kind of the first credential `text` holds, or None. Only the kind leaves here."""
    text = as_read(text)
    lowered = text.lower()
    if any(hint in lowered for hint in _FORMAT_HINTS) or has_long_ascii_run(text):
        kind = known_format(text)
        if kind is not None:
            return kind
    if len(text) - len(text.translate(_NOT_DIGITS)) >= _CARD_DIGITS and holds_card_number(text):
        return "payment_card"
    if any(hint in lowered for hint in NAME_HINTS):
        return named_secret(text)
    return None


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


def known_format(text: str) -> CredentialKind | None:
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
