"""What the worker concludes from the database's replication settings (db/replication.py),
without a database: the rows are those pg_stat_replication and current_setting() give."""

from __future__ import annotations

import pytest

from db.replication import Replication


def state(**kw) -> Replication:
    base = dict(in_recovery=False, synchronous_commit="on", standby_names="ANY 1 (a, b)", standbys=2,
                sync_standbys=1)
    return Replication(**{**base, **kw})


@pytest.mark.parametrize(("kw", "protected", "says"), [
    ({}, True, "in sync"),
    ({"synchronous_commit": "remote_apply"}, True, "in sync"),
    ({"synchronous_commit": "remote_write"}, True, "in sync"),
    ({"standby_names": ""}, False, "synchronous_standby_names is empty"),
    ({"standby_names": "  "}, False, "synchronous_standby_names is empty"),
    ({"synchronous_commit": "local"}, False, "synchronous_commit is 'local'"),
    ({"synchronous_commit": "off"}, False, "synchronous_commit is 'off'"),
    ({"sync_standbys": 0}, False, "none is connected and in sync"),
    ({"sync_standbys": None}, None, "grant pg_monitor"),
    ({"in_recovery": True}, False, "a standby in recovery"),
])
def test_protection_and_what_is_said(kw, protected, says):
    s = state(**kw)
    assert s.protected is protected
    assert says in s.describe()


def test_an_unnamed_standby_does_not_protect_even_when_connected():
    # A standby that streams but is not named is asynchronous: commits do not wait for it.
    assert state(standby_names="", standbys=1, sync_standbys=0).protected is False
