"""The kinds of credential the guard names, and how each is named to the model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

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
