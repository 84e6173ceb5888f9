"""detect-secrets' plugins, imported in one place: the library sends the process's warnings
into `logging` when imported (its logger's set-up), and the worker's are left as they were."""

from __future__ import annotations

import warnings

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

__all__ = [
    "AWSKeyDetector", "AzureStorageKeyDetector", "Base64HighEntropyString", "BasePlugin", "DiscordBotTokenDetector",
    "GitHubTokenDetector", "GitLabTokenDetector", "JwtTokenDetector", "MailchimpDetector", "NpmDetector",
    "OpenAIDetector", "PrivateKeyDetector", "PypiTokenDetector", "SendGridDetector", "SlackDetector",
    "SquareOAuthDetector", "StripeDetector", "TelegramBotTokenDetector", "TwilioKeyDetector",
]
