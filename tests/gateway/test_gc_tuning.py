"""The serving GC settings, applied in a process of their own (they are process-wide)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import gc
from gateway import gc_tuning
before = gc.get_threshold()
gc_tuning.tune_for_serving()
print(before[1:] == gc.get_threshold()[1:], gc.get_threshold()[0], gc.get_freeze_count() > 0)
"""


def test_young_objects_are_collected_less_often_and_start_up_objects_are_frozen():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["True", "50000", "True"]
