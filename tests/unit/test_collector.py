"""The worker's garbage collector settings (worker/consuming/collector.py)."""

from __future__ import annotations

import gc

from worker.consuming import collector


def test_start_up_objects_are_frozen_and_young_collections_spaced_out():
    before = gc.get_threshold()
    try:
        collector.settle_after_start()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (collector.YOUNG_THRESHOLD, collector.OLDER_EVERY, collector.OLDER_EVERY)
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
