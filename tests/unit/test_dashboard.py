"""The Grafana dashboard only charts metrics the worker exports."""

import json
import re
from pathlib import Path

from worker.consuming.metrics import REGISTRY

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "memory-worker.json"


def _exported() -> set[str]:
    names = set()
    for family in REGISTRY.collect():
        names |= {sample.name for sample in family.samples} | {family.name}
        if family.type == "counter":
            names.add(family.name + "_total")
        if family.type == "histogram":
            names |= {family.name + suffix for suffix in ("_bucket", "_count", "_sum")}
    return names


def test_every_query_uses_an_exported_metric():
    board = json.loads(DASHBOARD.read_text())
    exported = _exported()
    queried = set()
    for panel in board["panels"]:
        for target in panel["targets"]:
            queried |= set(re.findall(r"\bmemory_[a-z_]+", target["expr"]))
    assert queried, "the dashboard queries nothing"
    assert queried <= exported, queried - exported


def test_the_dashboard_covers_the_issue_s_metrics():
    text = DASHBOARD.read_text()
    for metric in ("memory_commands_total", "memory_command_duration_seconds_bucket", "memory_evictions_total",
                   "memory_dead_letters_total", "memory_events_not_stored_total",
                   "memory_redeliveries_total", "memory_commands_oldest_unconsumed_age_seconds",
                   "memory_commands_max_age_seconds", "memory_commands_stream_bytes", "memory_lookups_refused_total",
                   "memory_secrets_refused_total", "memory_shadow_pairs_total", "memory_dry_runs_total"):
        assert metric in text, metric
