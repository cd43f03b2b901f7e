"""`switchboard worker` masks its children's failures as its log is (`gateway.logging.redact`): a tool's error
and a failed model call's reach the child's model, its workflow's history and its parent from there. What the
activities do with it: tests/lifecycle/test_child_error_masking.py."""

from __future__ import annotations

import pytest

from gateway.logging import MASK, register_secret
from gateway.testing import make_config
from gateway.worker import WorkerModels, _close, worker_toolbox

pytest.importorskip("temporalio")

SECRET = "pt3-worker-secret-4f19a0c3"
"""Registered for the whole process: no other test writes it, so masking it hides nothing of theirs."""


async def test_a_workers_toolbox_masks_as_its_log_does(tmp_path):
    register_secret(SECRET)
    models = WorkerModels(make_config(tmp_path))
    toolbox, routing, plugins = await worker_toolbox(models.config, models)
    try:
        assert toolbox.redact(f"401 (key {SECRET})") == f"401 (key {MASK})"
    finally:
        await _close(models, routing, plugins)
