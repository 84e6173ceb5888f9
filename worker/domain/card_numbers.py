"""Payment card numbers in text: a card network's prefix and length, and the Luhn check digit
(the secret guard's rule 3, worker/domain/secret_guard/)."""

from __future__ import annotations

import re

__all__ = ["holds_card_number"]

# Card networks: (prefix range, lengths). Visa, Mastercard, American Express, Discover, JCB,
# Diners Club, UnionPay.
_NETWORKS: tuple[tuple[int, int, frozenset[int]], ...] = (
    (4, 4, frozenset({13, 16, 19})),
    (51, 55, frozenset({16})),
    (2221, 2720, frozenset({16})),
    (34, 34, frozenset({15})),
    (37, 37, frozenset({15})),
    (6011, 6011, frozenset({16, 17, 18, 19})),
    (644, 649, frozenset({16, 17, 18, 19})),
    (65, 65, frozenset({16, 17, 18, 19})),
    (3528, 3589, frozenset({16, 17, 18, 19})),
    (300, 305, frozenset({14, 16})),
    (36, 36, frozenset({14, 16})),
    (38, 39, frozenset({16})),
    (62, 62, frozenset({16, 17, 18, 19})),
)
# As cards are written: the digits in one run (13 to 16 of them: a longer run is more often a
# Discord id than a card, and longer cards are written in groups), or in groups of four with a
# shorter last group, or American Express's and Diners' 4-6-5 and 4-6-4. Ids, order and
# tracking numbers of other shapes are left alone. The first digit comes before the look back
# (no digit or dash before it), so the engine skips to digits.
_CARD = re.compile(r"\d(?<![\d-]\d)(?:\d{12,15}|\d{3}(?:([ -])\d{4}){2,3}(?:\1\d{1,4})?|\d{3}([ -])\d{6}\2\d{4,5})(?![\d-])")


def holds_card_number(text: str) -> bool:
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if _issued(digits) and _luhn(digits):
            return True
    return False


def _issued(digits: str) -> bool:
    for low, high, lengths in _NETWORKS:
        prefix = int(digits[:len(str(low))])
        if low <= prefix <= high and len(digits) in lengths:
            return True
    return False


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0
