"""What counts as a credential in what the model writes to long-term memory: the secret
guard's one home (docs/design.md, section 4.2; issue 39).

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
   keys, Hugging Face tokens, Discord webhook URLs, passwords in URLs.
3. Payment card numbers (worker/domain/card_numbers.py): as cards are written, with a
   network's prefix and length and the Luhn check digit.
4. A secret-looking value right after a credential's name ("password is ...", "api key:
   ...", "PIN: ..."): letters with digits, three kinds of character, a long high-entropy
   string, or digits for a PIN. A word after the name ("the password is on the fridge") is
   not a secret.

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
    ("huggingface_token", re.compile(r"hf_[A-Za-z]{34}\b")),
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
# - A known format (rules 1 and 2): an unbroken run of at least 16 characters (every format's
#   shortest match is longer), or a URL's "://", a key block's armour, a Slack "xox" prefix.
_FORMAT_HINTS = ("://", "begin", "putty", "xox")
_LONGEST_FORMAT = 16
# - A card (rule 3): at least 13 digits.
_NOT_DIGITS = str.maketrans("", "", "0123456789")
_CARD_DIGITS = 13
# - Rule 4: a part of each credential's name above.
_NAME_HINTS = ("pin", "pass", "pwd", "cvv", "cvc", "security", "key", "secret", "token")
# The letters the names above start with: looked ahead for first, which spares the engine the
# rest of the pattern at every other position (2 to 3 times faster on long text).
_NAME_INITIALS = "pcsabrt"

# Rule 4: a credential's name, a separator ("is", "was", ":", "=", "to"), then the value.
_NAMED = re.compile(
    rf"(?=[{_NAME_INITIALS}])(?<![A-Za-z])(?:(?P<pin>{_PIN_NAMES})|(?P<password>{_PASSWORD_NAMES})|(?P<api_key>{_KEY_NAMES}))"
    r"(?:'s)?(?:\s*[:=]\s*|\s+(?:is|was|=|:|to|set\s+to)\s+)[\"'`]?(?P<value>[^\s\"'`]+)",
    re.IGNORECASE)
_TRAILING = ".,;:!?)]}>"
_ENTROPY = Base64HighEntropyString()
# Zero-width and other invisible format characters a model might leave inside a token.
_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u2060-\u2064\ufeff]")


def find_credential(text: str) -> CredentialKind | None:
    """The kind of the first credential `text` holds, or None. Only the kind leaves here."""
    text = _as_read(text)
    lowered = text.lower()
    if any(hint in lowered for hint in _FORMAT_HINTS) or max(map(len, text.split()), default=0) >= _LONGEST_FORMAT:
        kind = _known_format(text)
        if kind is not None:
            return kind
    if len(text) - len(text.translate(_NOT_DIGITS)) >= _CARD_DIGITS and holds_card_number(text):
        return "payment_card"
    if any(hint in lowered for hint in _NAME_HINTS):
        return _named_secret(text)
    return None


def _as_read(text: str) -> str:
    """The text the rules read: compatibility forms folded (NFKC: fullwidth letters, ...) and
    invisible characters dropped, so neither hides a token."""
    return text if text.isascii() else _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))


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
    return None


def _named_secret(text: str) -> CredentialKind | None:
    for match in _NAMED.finditer(text):
        value = match.group("value").rstrip(_TRAILING)
        if match.group("pin") is not None:
            if value.isdigit() and 3 <= len(value) <= 8:
                return "pin"
        elif _looks_secret(value):
            return "password" if match.group("password") is not None else "api_key"
    return None


def _looks_secret(value: str) -> bool:
    """A value a person would not write as a word: letters with digits, three kinds of
    character, digits only (a numeric password), or a long high-entropy string."""
    if len(value) < 6:
        return False
    kinds = sum((any(c.islower() for c in value), any(c.isupper() for c in value), any(c.isdigit() for c in value),
                 any(not c.isalnum() for c in value)))
    has_letter, has_digit = any(c.isalpha() for c in value), any(c.isdigit() for c in value)
    if (has_letter and has_digit) or kinds >= 3 or value.isdigit():
        return True
    return len(value) >= 16 and _ENTROPY.calculate_shannon_entropy(value) >= 3.5
