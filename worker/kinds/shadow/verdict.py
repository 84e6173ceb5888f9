"""When a shadow trial has shown enough to switch a kind's writes over to the worker: the
verdict `memoryctl shadow report` prints (docs/design.md, "Dry runs and shadow mode"; the
operator's side in docs/tomoribot.md, "Shadow mode"). Pure: the report counts the pairs, this
decides.

A kind is ready when, among its pairs in the report's window:

- at least `min_pairs` were compared (agreed, differed or concurrent). With none of them an
  unexplained difference, 200 pairs put a difference the trial missed below 1.5% of writes at
  95% confidence (the rule of three: 3 / 200);
- no pair differed unless the worker differs there on purpose (the pair is marked intended):
  any other difference is a rule not yet matched, to fix or to mark before the switch;
- at most `max_unmeasured` of its pairs measured nothing (timed out, unpaired, nothing
  compared, or still waiting for the bot's report): past that the compared pairs may not be
  the writes the bot does (a slow path that always times out is never compared);
- every status the kind can answer was seen, in a pair that agreed or differed on purpose,
  except those only a failure reaches (NEEDS_A_FAILURE) and those the operator says the
  deployment cannot reach (`not_expected`): a status never seen is a rule never compared.

The bot may switch when every kind it shadowed is ready; a kind with no pair in the window was
not shadowed and is named apart, never counted as ready.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, get_args

from contracts.kinds.create import CreateStatus
from contracts.kinds.manual import ManualStatus
from contracts.kinds.reinforce import ReinforceStatus
from contracts.kinds.seed_bio import SeedBioStatus
from contracts.kinds.shadow import ShadowedKind, ShadowOutcome
from contracts.kinds.update import UpdateStatus

# What a pair's row says: its outcome, or waiting while the bot's report has not come.
PairOutcome = Literal[ShadowOutcome, "waiting"]
COMPARED: frozenset[PairOutcome] = frozenset({"agreed", "differed", "concurrent"})
UNMEASURED: frozenset[PairOutcome] = frozenset({"timed_out", "unpaired", "nothing_compared", "waiting"})

# The statuses each kind's result can carry: its Literal, declared once in contracts/kinds.
KIND_STATUSES: Mapping[ShadowedKind, tuple[str, ...]] = {
    "create": get_args(CreateStatus),
    "manual": get_args(ManualStatus),
    "reinforce": get_args(ReinforceStatus),
    "seed_bio": get_args(SeedBioStatus),
    "update": get_args(UpdateStatus),
}
if set(KIND_STATUSES) != set(get_args(ShadowedKind)):  # a new kind fails at import, not in a trial
    raise ValueError(f"KIND_STATUSES must name every shadowed kind {sorted(get_args(ShadowedKind))}")
ALL_STATUSES = frozenset(status for statuses in KIND_STATUSES.values() for status in statuses)

# Statuses no trial should wait for: only a failure reaches them (the database failing every
# attempt, a throw, a command the bot built wrong, the bot's own state missing), which a
# healthy deployment does not produce on purpose. Seen, they count like any other.
NEEDS_A_FAILURE = frozenset({
    "memory_command_invalid",
    "memory_save_failed_internal_error",
    "memory_save_failed_db_error",
    "memory_update_failed_internal_error",
    "memory_update_failed_db_error",
    "memory_update_failed_error",
    "failed",
})
if not NEEDS_A_FAILURE <= ALL_STATUSES:
    raise ValueError(f"NEEDS_A_FAILURE names statuses no kind answers: {sorted(NEEDS_A_FAILURE - ALL_STATUSES)}")

DEFAULT_MIN_PAIRS = 200
DEFAULT_MAX_UNMEASURED = 0.05


@dataclass(frozen=True, slots=True)
class PairCount:
    """How many pairs of one kind had this worker status, outcome and intended mark. `status`
    is the dry run's (the bot's where no dry run came); `intended`: the worker differs there
    on purpose (the pair carries a reason, such as the secret guard's)."""

    kind: str
    status: str
    outcome: PairOutcome
    intended: bool
    pairs: int


@dataclass(frozen=True, slots=True)
class Rule:
    min_pairs: int = DEFAULT_MIN_PAIRS
    max_unmeasured: float = DEFAULT_MAX_UNMEASURED  # a share of the kind's pairs, 0 to 1
    not_expected: frozenset[str] = frozenset()  # statuses this deployment cannot reach


@dataclass(frozen=True, slots=True)
class StatusesNeverSeen:
    statuses: tuple[str, ...]  # in the kind's declared order
    expected: int  # how many statuses the rule expected to see


@dataclass(frozen=True, slots=True)
class UnexplainedDifferences:
    pairs: int


@dataclass(frozen=True, slots=True)
class TooFewPairs:
    pairs: int  # compared
    at_least: int


@dataclass(frozen=True, slots=True)
class NotMeasuring:
    pairs: int  # timed out, unpaired, nothing compared or waiting
    of: int  # all the kind's pairs
    at_most: float


Missing = StatusesNeverSeen | UnexplainedDifferences | TooFewPairs | NotMeasuring


@dataclass(frozen=True, slots=True)
class KindVerdict:
    kind: str
    missing: tuple[Missing, ...] = field(default=())

    @property
    def ready(self) -> bool:
        return not self.missing


@dataclass(frozen=True, slots=True)
class Verdict:
    kinds: tuple[KindVerdict, ...]  # every kind shadowed in the window, in KIND_STATUSES's order
    not_shadowed: tuple[str, ...]

    @property
    def switch(self) -> bool:
        return bool(self.kinds) and all(kind.ready for kind in self.kinds)


def unknown_statuses(statuses: Iterable[str]) -> list[str]:
    """The statuses given (as not expected) that no shadowed kind can answer."""
    return sorted(set(statuses) - ALL_STATUSES)


def verdict(counts: Iterable[PairCount], rule: Rule = Rule()) -> Verdict:
    """Each shadowed kind's verdict from its pairs' counts, and the kinds with none."""
    by_kind: dict[str, list[PairCount]] = {}
    for count in counts:
        if count.pairs:
            by_kind.setdefault(count.kind, []).append(count)
    return Verdict(kinds=tuple(kind_verdict(kind, by_kind[kind], rule) for kind in KIND_STATUSES if kind in by_kind),
                   not_shadowed=tuple(kind for kind in KIND_STATUSES if kind not in by_kind))


def kind_verdict(kind: ShadowedKind, counts: list[PairCount], rule: Rule) -> KindVerdict:
    total = sum(c.pairs for c in counts)
    compared = sum(c.pairs for c in counts if c.outcome in COMPARED)
    unmeasured = sum(c.pairs for c in counts if c.outcome in UNMEASURED)
    unexplained = sum(c.pairs for c in counts if c.outcome == "differed" and not c.intended)
    seen = {c.status for c in counts if c.outcome == "agreed" or (c.outcome == "differed" and c.intended)}
    expected = [s for s in KIND_STATUSES[kind] if s not in NEEDS_A_FAILURE and s not in rule.not_expected]
    missing: list[Missing] = []
    never_seen = tuple(s for s in expected if s not in seen)
    if never_seen:
        missing.append(StatusesNeverSeen(never_seen, len(expected)))
    if unexplained:
        missing.append(UnexplainedDifferences(unexplained))
    if compared < rule.min_pairs:
        missing.append(TooFewPairs(compared, rule.min_pairs))
    if unmeasured > rule.max_unmeasured * total:
        missing.append(NotMeasuring(unmeasured, total, rule.max_unmeasured))
    return KindVerdict(kind, tuple(missing))
