"""memoryctl shadow report: what an operator decides a switch-over from (docs/design.md,
"Dry runs and shadow mode"; README.md, "Trying the worker beside the bot: shadow mode").

Per kind and per status (the worker's, or the bot's where no dry run came), how many pairs
agreed, differed, were not comparable (concurrent), timed out, had no dry run (unpaired), had
nothing to compare (nothing_compared) or are still waiting for the bot's report; then the most
frequent differences, each with one example, the secret guard's marked as intended; and since
when. A credential is shown as its kind only, also in pairs kept by an earlier release.

First, the verdict: per kind shadowed, ready or what is missing, and whether the bot may switch
(the rule: worker/kinds/shadow/verdict.py)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import textwrap
from collections.abc import Callable
from datetime import datetime
from typing import Any

import asyncpg

from worker.cli import reach, terminal
from worker.kinds.shadow.comparison import withheld
from worker.kinds.shadow.verdict import (
    ALL_STATUSES,
    DEFAULT_MIN_PAIRS,
    NEEDS_A_FAILURE,
    Missing,
    NotMeasuring,
    PairCount,
    Rule,
    StatusesNeverSeen,
    TooFewPairs,
    UnexplainedDifferences,
    Verdict,
    verdict,
)

Out = Callable[[str], None]
KIND_WIDTH, STATUS_WIDTH, VALUE_WIDTH = 24, 48, 200  # a bot reports the status, the fields and the values
VERDICT_WIDTH = 120  # a verdict's line wraps here: a kind may miss many statuses
OUTCOMES = ("agreed", "differed", "concurrent", "timed_out", "unpaired", "nothing_compared", "waiting")

_FILTER = ("WHERE tenant = $1 AND ($2::double precision IS NULL OR created_at >= now() - make_interval(secs => $2 * 3600))"
           " AND ($3::text IS NULL OR workspace_id = $3)")
_COUNTS = ("SELECT kind, coalesce(dry_status, bot_status, '') AS status, coalesce(outcome, 'waiting') AS outcome,"
           " intended IS NOT NULL AS intended, count(*) AS pairs"
           f" FROM memory_worker.shadow_pairs {_FILTER} GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4")
_SPAN = f"SELECT min(created_at), max(created_at), count(*) FROM memory_worker.shadow_pairs {_FILTER}"
# A difference is the pairs that differed the same way: the same kind, the same statuses on
# each side and the same fields; its example is the latest such pair.
_DIFFERENCES = (
    "WITH differed AS (SELECT p.*, (SELECT array_agg(d ->> 'field' ORDER BY d ->> 'field')"
    "                               FROM jsonb_array_elements(p.differences) d) AS fields"
    f"                  FROM memory_worker.shadow_pairs p {_FILTER} AND p.outcome = 'differed')"
    " SELECT kind, coalesce(dry_status, '') AS worker_status, coalesce(bot_status, '') AS bot_status, fields,"
    " intended, count(*) AS pairs, (array_agg(command_id ORDER BY created_at DESC))[1] AS example,"
    " (array_agg(differences ORDER BY created_at DESC))[1]::text AS example_differences"
    " FROM differed GROUP BY 1, 2, 3, 4, 5 ORDER BY pairs DESC, 1, 2, 3 LIMIT $4")


def _hours(value: str) -> float:
    try:
        hours = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of hours, got {value!r}") from None
    if not 0 < hours <= 24 * 36_500:
        raise argparse.ArgumentTypeError(f"expected more than 0 hours and at most 100 years, got {value}")
    return hours


def _top(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 1000:
        raise argparse.ArgumentTypeError(f"expected 1 to 1000 differences, got {value!r}")
    return int(value)


def _min_pairs(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 10**9:
        raise argparse.ArgumentTypeError(f"expected a number of pairs from 1, got {value!r}")
    return int(value)


def _status(value: str) -> str:
    if value not in ALL_STATUSES:
        raise argparse.ArgumentTypeError(f"{value!r} is no status of a shadowed kind; the statuses are:"
                                         f" {', '.join(sorted(ALL_STATUSES))}")
    return value


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    shadow = sub.add_parser("shadow", help="shadow mode: how the worker's dry runs compare with the bot's own writes"
                            ).add_subparsers(dest="action", required=True)
    p = shadow.add_parser("report", help="per kind and status: agreed, differed, not comparable, timed out; the"
                          " most frequent differences with an example each")
    p.add_argument("--hours", type=_hours, default=None, help="only pairs of the last N hours (default: all kept)")
    p.add_argument("--workspace", default=None, help="only this workspace's pairs")
    p.add_argument("--top", type=_top, default=10, help="how many differences to list (default 10)")
    p.add_argument("--tenant", default=None, help="the bot whose pairs to read (default: TENANT, '' for none)")
    p.add_argument("--min-pairs", type=_min_pairs, default=DEFAULT_MIN_PAIRS,
                   help=f"compared pairs a kind needs to be ready (default {DEFAULT_MIN_PAIRS}: with no unexplained"
                   " difference among them, a missed one is rarer than 1.5%% of writes at 95%% confidence)")
    p.add_argument("--not-expected", type=_status, action="append", default=[], metavar="STATUS",
                   help="a status this deployment cannot reach (a feature it does not use): a kind is ready"
                   " without seeing it; repeat for several")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")


async def run(args: argparse.Namespace, database_url: str, tenant: str, out: Out = terminal.say) -> int:
    conn = await reach.database_connection(database_url)
    try:
        report = await build_report(conn, tenant if args.tenant is None else args.tenant, hours=args.hours,
                                    workspace=args.workspace, top=args.top,
                                    rule=Rule(min_pairs=args.min_pairs, not_expected=frozenset(args.not_expected)))
    finally:
        await conn.close()
    out(terminal.json_text(report) if args.json else render(report))
    return 0


async def build_report(conn: asyncpg.Connection, tenant: str, *, hours: float | None = None,
                       workspace: str | None = None, top: int = 10, rule: Rule = Rule()) -> dict[str, Any]:
    first, last, total = await conn.fetchrow(_SPAN, tenant, hours, workspace)
    by_status: dict[tuple[str, str], dict[str, int]] = {}
    counts = [PairCount(kind=row["kind"], status=row["status"], outcome=row["outcome"], intended=row["intended"],
                        pairs=row["pairs"]) for row in await conn.fetch(_COUNTS, tenant, hours, workspace)]
    for count in counts:
        by_status.setdefault((count.kind, count.status), dict.fromkeys(OUTCOMES, 0))[count.outcome] += count.pairs
    differences = [
        {"kind": r["kind"], "worker_status": r["worker_status"], "bot_status": r["bot_status"],
         "fields": withheld(list(r["fields"])), "pairs": r["pairs"], "intended": r["intended"],
         "example": {"command_id": r["example"], "differences": withheld(json.loads(r["example_differences"]))}}
        for r in await conn.fetch(_DIFFERENCES, tenant, hours, workspace, top)]
    return {
        **_verdict_json(verdict(counts, rule), rule),
        "tenant": tenant, "since": _iso(first), "until": _iso(last), "pairs": total,
        "totals": {outcome: sum(counts[outcome] for counts in by_status.values()) for outcome in OUTCOMES},
        "by_status": [{"kind": kind, "status": status, **counts} for (kind, status), counts in by_status.items()],
        "differences": differences,
    }


_REASONS: dict[type[Missing], str] = {
    StatusesNeverSeen: "statuses_never_seen", UnexplainedDifferences: "unexplained_differences",
    TooFewPairs: "too_few_pairs", NotMeasuring: "not_measuring"}


def _verdict_json(shown: Verdict, rule: Rule) -> dict[str, Any]:
    return {
        "switch": shown.switch,
        "verdicts": {kind.kind: {"ready": kind.ready,
                                 "missing": [{"reason": _REASONS[type(m)], **dataclasses.asdict(m)} for m in kind.missing]}
                     for kind in shown.kinds},
        "not_shadowed": list(shown.not_shadowed),
        "rule": {"min_pairs": rule.min_pairs, "max_unmeasured": rule.max_unmeasured,
                 "not_expected": sorted(rule.not_expected), "needs_a_failure": sorted(NEEDS_A_FAILURE)},
    }


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def render_verdict(report: dict[str, Any]) -> list[str]:
    rule = report["rule"]
    lines = ["verdict: switch: every kind shadowed is ready" if report["switch"]
             else "verdict: not yet: not every kind shadowed is ready"]
    for kind, shown in report["verdicts"].items():
        said = "ready" if shown["ready"] else "not ready: " + ", ".join(_missing_text(m) for m in shown["missing"])
        lines.extend(_wrapped(f"{terminal.cell(kind, KIND_WIDTH)}: {said}"))
    if report["not_shadowed"]:
        lines.extend(_wrapped(f"not shadowed (no pair, not counted): {', '.join(report['not_shadowed'])}"))
    not_expected = f" and {', '.join(rule['not_expected'])} (not expected)" if rule["not_expected"] else ""
    lines.extend(_wrapped(f"(ready: at least {rule['min_pairs']} pairs compared, no unexplained difference, at most"
                          f" {rule['max_unmeasured']:.0%} measuring nothing, every status seen but those only a"
                          f" failure reaches{not_expected})"))
    return lines


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, VERDICT_WIDTH, initial_indent="  ", subsequent_indent="      ",
                         break_long_words=False, break_on_hyphens=False)


def _missing_text(missing: dict[str, Any]) -> str:
    match missing["reason"]:
        case "statuses_never_seen":
            statuses = missing["statuses"]
            return (f"{len(statuses)} of {missing['expected']} statuses never seen"
                    f" ({', '.join(terminal.cell(s, STATUS_WIDTH) for s in statuses)})")
        case "unexplained_differences":
            return f"{missing['pairs']} unexplained difference{'' if missing['pairs'] == 1 else 's'}"
        case "too_few_pairs":
            return f"{missing['pairs']} of at least {missing['at_least']} pairs compared"
        case _:
            return f"{missing['pairs']} of {missing['of']} pairs measured nothing (at most {missing['at_most']:.0%})"


def render(report: dict[str, Any]) -> str:
    if not report["pairs"]:
        return (f"no shadow pairs (tenant {report['tenant']!r}): no bot has shadowed a write yet\n"
                "verdict: not yet: nothing shadowed")
    lines = [*render_verdict(report), ""]
    lines.append(f"shadow pairs since {report['since']} (latest {report['until']}), tenant {report['tenant']!r}:"
                 f" {report['pairs']} in all, " + ", ".join(f"{n} {o}" for o, n in report["totals"].items() if n))
    header = ("kind", "status", *OUTCOMES)
    rows = [(terminal.cell(r["kind"], KIND_WIDTH), terminal.cell(r["status"] or "-", STATUS_WIDTH),
             *(str(r[o]) for o in OUTCOMES)) for r in report["by_status"]]
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows, strict=True)]
    for row in (header, *rows):
        lines.append("  ".join(str(c).ljust(w) if i < 2 else str(c).rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths, strict=True))))
    if report["differences"]:
        lines.append("")
        lines.append("most frequent differences (outcome differed):")
        for d in report["differences"]:
            why = "  [intended: the secret guard]" if d["intended"] == "secret_guard" else ""
            lines.append(f"  {d['pairs']:>5} x {terminal.cell(d['kind'], KIND_WIDTH)}, worker"
                         f" {terminal.cell(d['worker_status'] or '-', STATUS_WIDTH)}, bot"
                         f" {terminal.cell(d['bot_status'] or '-', STATUS_WIDTH)}:"
                         f" {terminal.cell(', '.join(d['fields']), VALUE_WIDTH)}{why}")
            lines.append(f"          e.g. command {terminal.cell(d['example']['command_id'], VALUE_WIDTH)}:")
            for field in d["example"]["differences"]:
                lines.append(f"            {terminal.cell(field['field'], VALUE_WIDTH)}: worker"
                             f" {terminal.cell(terminal.json_text(field['worker'], indent=None), VALUE_WIDTH)},"
                             f" bot {terminal.cell(terminal.json_text(field['bot'], indent=None), VALUE_WIDTH)}")
    elif report["totals"]["differed"] == 0:
        lines.append("")
        lines.append("no differences")
    return "\n".join(lines)
