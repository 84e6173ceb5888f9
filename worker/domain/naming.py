"""How TomoriBot composes and takes apart people's names, for target resolution (no I/O).

A persona may address people with affixes ("Master Mika", "Mika-san"): its own per addressing
style (the command's `persona.naming`), which a person may override globally or per persona
lineage. TomoriBot's resolver uses this twice (src/utils/discord/targetResolver.ts,
src/utils/text/userNaming.ts, src/utils/db/repositories/UserNamingRepository.ts; read at
palinalif/TomoriBot@6f5e0070 and Bredrumb/TomoriBot@a950f54c):

- `strip_affixes`: one persona prefix and one persona suffix are taken off the requested
  name, so "Master Mika" can be looked up as "Mika";
- `composed_name`: each candidate's name is rebuilt from its naming layers and compared whole,
  for affixes a person set for themselves.
"""

from __future__ import annotations

import regex

from contracts.tool_call import AffixVariants, PersonaNaming
from worker.domain.content import JS_SPACE_RUN, JS_WHITESPACE, js_trim, utf16_length
from worker.domain.people import AddressingStyle, KnownUser

__all__ = ["composed_name", "effective_nickname", "format_user_name", "lookup_normalize", "strip_affixes"]

_CJK = regex.compile(r"[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}"
                     r"\u3005\u303B\u309D\u309E\u30FC\u30FD\u30FE]")
_PUNCTUATION_OR_SYMBOL = regex.compile(r"[\p{P}\p{S}]")
# Punctuation that closes a prefix into its own word: "Ms. Sparrow", "Yo! Sparrow".
_TERMINAL_PUNCTUATION = frozenset(".,;:!?")


def lookup_normalize(value: str) -> str:
    """The database stages' comparison form (TomoriBot's SQL `regexp_replace(lower(trim(x)),
    '[[:space:]]+', ' ', 'g')`; trim there removes spaces only)."""
    return JS_SPACE_RUN.sub(" ", value.strip(" ").lower())


def _binds(char: str) -> bool:
    """Whether an affix ending (or starting) with `char` joins the name without a space."""
    return _PUNCTUATION_OR_SYMBOL.fullmatch(char) is not None or _CJK.fullmatch(char) is not None


def _with_prefix(prefix: str, nickname: str) -> str:
    trimmed = js_trim(prefix)
    if not trimmed:
        return nickname
    if prefix[-1] in JS_WHITESPACE or trimmed[-1] in _TERMINAL_PUNCTUATION or not _binds(trimmed[-1]):
        return f"{trimmed} {nickname}"
    return f"{trimmed}{nickname}"


def _with_suffix(name: str, suffix: str) -> str:
    trimmed = js_trim(suffix)
    if not trimmed:
        return name
    if suffix[0] in JS_WHITESPACE or not _binds(trimmed[0]):
        return f"{name} {trimmed}"
    return f"{name}{trimmed}"


def _capitalized(name: str) -> str:
    # JavaScript's charAt(0) is a UTF-16 unit: a character outside the BMP is left as it is.
    if not name or ord(name[0]) > 0xFFFF:
        return name
    return name[0].upper() + name[1:]


def format_user_name(nickname: str, prefix: str = "", suffix: str = "") -> str:
    """TomoriBot's `formatUserName`: the affixes joined to the nickname, the first character
    capitalised only when the leading token (the prefix, else the nickname) is all lower case."""
    nickname = js_trim(nickname)
    assembled = _with_suffix(_with_prefix(prefix, nickname), suffix)
    leading = js_trim(prefix) or nickname
    return _capitalized(assembled) if leading == leading.lower() else assembled


def _variant(values: AffixVariants, style: AddressingStyle) -> str:
    chosen: str | None = getattr(values, style)
    if chosen is None:
        chosen = values.neutral
    return chosen if chosen is not None else ""


def _affix(own_for_persona: str | None, own: str | None, persona: AffixVariants, style: AddressingStyle) -> str:
    # Presence, not truthiness, decides: an empty override is a deliberate "none".
    if own_for_persona is not None:
        return own_for_persona
    if own is not None:
        return own
    return _variant(persona, style)


def effective_nickname(user: KnownUser) -> str | None:
    """The nickname a composed name is built on: the lineage's override, else the saved one
    (each trimmed of spaces, blank counting as unset); None when neither is set."""
    for value in (user.persona_naming.nickname if user.persona_naming else None, user.nickname):
        if value is not None and value.strip(" "):
            return value.strip(" ")
    return None


def composed_name(user: KnownUser, persona: PersonaNaming | None) -> str | None:
    """TomoriBot's `resolveEffectiveUserNaming(...).formattedName` for a person with a stored
    nickname (no live display name); None without one."""
    if effective_nickname(user) is None:
        return None
    naming = persona or PersonaNaming()
    style: AddressingStyle = user.addressing_style or "neutral"
    preference = user.persona_naming
    nickname = (js_trim(preference.nickname) if preference and preference.nickname else "") \
        or js_trim(user.nickname or "")
    prefix = _affix(preference.prefix if preference else None, user.prefix_override, naming.prefixes, style)
    suffix = _affix(preference.suffix if preference else None, user.suffix_override, naming.suffixes, style)
    return format_user_name(nickname, prefix, suffix)


def _variants(values: AffixVariants) -> list[str]:
    """The distinct trimmed non-empty affixes, longest first (a two-word affix is not
    half-consumed by a shorter one sharing its first word)."""
    found = dict.fromkeys(v for v in (js_trim(x or "") for x in (values.masculine, values.feminine, values.neutral))
                          if v)
    return sorted(found, key=utf16_length, reverse=True)


def strip_affixes(raw: str, naming: PersonaNaming | None) -> str | None:
    """TomoriBot's `stripNamingAffixes`: at most one persona prefix, then one suffix, taken off
    the requested name (ignoring case); None when nothing came off or nothing is left."""
    if naming is None:
        return None
    trimmed = js_trim(raw)
    stripped = trimmed
    for prefix in _variants(naming.prefixes):
        if utf16_length(stripped) > utf16_length(prefix) and stripped.lower().startswith(prefix.lower()):
            stripped = js_trim(stripped[len(prefix):])
            break
    for suffix in _variants(naming.suffixes):
        if utf16_length(stripped) > utf16_length(suffix) and stripped.lower().endswith(suffix.lower()):
            stripped = js_trim(stripped[:len(stripped) - len(suffix)])
            break
    return stripped if stripped and stripped != trimmed else None
