"""A real Prometheus for the tests: Debian's `prometheus` and `promtool` (2.42), which `make test`
installs where it can (`make prometheus`). Without them the tests that need them skip, saying so.

`PrometheusServer` runs one in its own temp dir on a free port, scraping the given targets every
`scrape_s` and evaluating the alert rules every `eval_s`, with each rule's `for:` replaced by
`for_s` (rules_for_test) so that an alert of five minutes becomes active within seconds.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from worker.local.embedded import LOOPBACK, free_port
from worker.local.processes import ChildProcess

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yaml"
ALERT_TESTS = ROOT / "deploy" / "prometheus" / "alerts.test.yaml"
DASHBOARD = ROOT / "deploy" / "grafana" / "memory-worker.json"
MISSING = ("Debian's prometheus package is not installed (prometheus and promtool 2.42): "
           "`make prometheus` installs it as root with apt-get")


def binary(name: str) -> str:
    """The path of `prometheus` or `promtool`, or the test skips saying what is missing."""
    found = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None)
    if found is None:
        pytest.skip(MISSING)
    return found


def alert_names() -> list[str]:
    rules = yaml.safe_load(ALERTS.read_text())
    return [rule["alert"] for group in rules["groups"] for rule in group["rules"] if "alert" in rule]


def rules_for_test(for_s: int, **thresholds: str) -> dict:
    """alerts.yaml with every `for:` set to `for_s` seconds and, for the alerts named in
    `thresholds`, their expression replaced (a five-minute backlog threshold made seconds)."""
    rules = yaml.safe_load(ALERTS.read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = f"{for_s}s"
            if rule.get("alert") in thresholds:
                rule["expr"] = thresholds[rule["alert"]]
    return rules


def _duration(seconds: float) -> str:
    return f"{round(seconds * 1000)}ms"


class PrometheusServer(ChildProcess):
    def __init__(self, data_dir: Path, targets: dict[str, list[str]], rules: dict, *, scrape_s: float = 1.0,
                 eval_s: float = 1.0) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://{LOOPBACK}:{self.port}"
        data_dir.mkdir(parents=True, exist_ok=True)
        (data_dir / "alerts.yaml").write_text(yaml.safe_dump(rules))
        config = {
            "global": {"scrape_interval": _duration(scrape_s), "scrape_timeout": _duration(scrape_s),
                       "evaluation_interval": _duration(eval_s)},
            "rule_files": [str(data_dir / "alerts.yaml")],
            "scrape_configs": [{"job_name": job, "static_configs": [{"targets": hosts}]}
                               for job, hosts in targets.items()],
        }
        (data_dir / "prometheus.yml").write_text(yaml.safe_dump(config))

    def start(self, timeout: float = 60.0) -> PrometheusServer:
        self.log_path = self.data_dir / "prometheus.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [binary("prometheus"), f"--config.file={self.data_dir / 'prometheus.yml'}",
                 f"--storage.tsdb.path={self.data_dir / 'tsdb'}", f"--web.listen-address={LOOPBACK}:{self.port}",
                 "--storage.tsdb.retention.time=1h", "--web.enable-lifecycle"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited:\n{self.log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:
                    if response.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"prometheus not ready:\n{self.log_path.read_text()[-3000:]}")

    def stop(self) -> None:
        import signal

        self.terminate(signal.SIGTERM, 20)

    def api(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}{query}", timeout=10) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict]:
        return self.api("query", query=expr)["result"]

    def alerts(self) -> dict[str, str]:
        """Alert name -> state ("pending" or "firing") of what Prometheus's API lists now."""
        return {a["labels"]["alertname"]: a["state"] for a in self.api("alerts")["alerts"]}

    def targets_up(self) -> dict[str, str]:
        return {t["scrapeUrl"]: t["health"] for t in self.api("targets")["activeTargets"]}
