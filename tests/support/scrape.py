"""Reading a running worker's /metrics and /healthz, as Prometheus and a probe would."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def get(url: str) -> tuple[int, str]:
    """(HTTP status, body) of a GET."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


async def samples(metrics_url: str) -> dict[tuple[str, tuple], float]:
    """Every sample of /metrics by (name, sorted labels)."""
    status, text = await asyncio.to_thread(get, f"{metrics_url}/metrics")
    assert status == 200
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(found: dict[tuple[str, tuple], float], name: str, **labels) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)
