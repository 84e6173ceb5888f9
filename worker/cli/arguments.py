"""Arguments shared by subcommands: the types of those that name JetStream messages (out of
range, an argparse error naming the option, not the JetStream API's BadRequestError traceback),
and every listing's --json."""

from __future__ import annotations

import argparse

MAX_SEQUENCE = 2**64 - 1  # a stream sequence is a uint64; 0 names no message


def stream_sequence(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a stream sequence (a whole number), got {value!r}") from None
    if not 1 <= number <= MAX_SEQUENCE:
        raise argparse.ArgumentTypeError(f"expected a stream sequence from 1 to 2^64 - 1, got {number}")
    return number


def not_negative(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {number}")
    return number


def json_option(parser: argparse.ArgumentParser) -> None:
    """--json on a listing or a show: one JSON document on stdout (terminal.json_text) in place of
    the table, for a program to read."""
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
