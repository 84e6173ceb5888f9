"""deploy/prometheus/alerts.yaml as Prometheus reads it: `promtool check rules`, and
`promtool test rules` on alerts.test.yaml, which has a firing and a healthy case for every alert."""

from __future__ import annotations

import subprocess

import yaml

from tests.support.prometheus import ALERT_TESTS, ALERTS, alert_names, binary


def test_promtool_accepts_the_rule_file():
    done = subprocess.run([binary("promtool"), "check", "rules", str(ALERTS)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(alert_names())} rules found" in done.stdout


def test_promtool_rule_tests_pass():
    done = subprocess.run([binary("promtool"), "test", "rules", str(ALERT_TESTS)], capture_output=True, text=True,
                          cwd=ALERT_TESTS.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_every_alert_has_a_firing_and_a_healthy_rule_test():
    cases = [case for test in yaml.safe_load(ALERT_TESTS.read_text())["tests"]
             for case in test.get("alert_rule_test", [])]
    fires = {case["alertname"] for case in cases if case.get("exp_alerts")}
    silent = {case["alertname"] for case in cases if not case.get("exp_alerts")}
    for name in alert_names():
        assert name in fires, f"alert {name} has no rule test in {ALERT_TESTS.name} where it fires"
        assert name in silent, f"alert {name} has no rule test in {ALERT_TESTS.name} where it stays silent"
    assert fires | silent <= set(alert_names()), "a rule test names an alert alerts.yaml does not have"
