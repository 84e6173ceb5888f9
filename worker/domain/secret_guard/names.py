"""Rule 4 of the secret guard: a secret-looking value after a credential's name ("password is
...", "api key is: ...", "PIN: ...", "the password for the Steam account is ...",
"SMTPPASSWORD=..."), where a word or a technical term after the name is not a secret."""

from __future__ import annotations

import re

from worker.domain.secret_guard.detectors import Base64HighEntropyString
from worker.domain.secret_guard.kinds import CredentialKind
from worker.domain.secret_guard.reading import UNSPACED_CHARS

# Rule 4's names of a credential, by the kind they name.
_PIN_NAMES = r"pin(?:\s+(?:code|number))?|passcode|cvv|cvc|security\s+code"
_PASSWORD_NAMES = r"passwords?|passphrase|passwd|pwd"
_KEY_NAMES = (r"(?:api|access|secret|private)[\s_-]?key|client[\s_-]?secret|secret"
              r"|(?:(?:auth|access|bearer|bot|refresh|api|session)[\s_-]?)?token")

# What a credential's name needs in the text, checked first and cheaply: a part of each name.
NAME_HINTS = ("pin", "pass", "pwd", "cvv", "cvc", "security", "key", "secret", "token")
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
_VALUE = rf"[\"'`]?(?P<value>[^\s\"'`{UNSPACED_CHARS}]+)"
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


def named_secret(text: str) -> CredentialKind | None:
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
