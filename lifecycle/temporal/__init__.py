"""Children on Temporal: `lifecycle.engine: temporal` and the workers that run them.

Needs the ``temporal`` extra (``pip install '.[temporal]'`` in the checkout); nothing else
in `lifecycle` imports this package. The gateway's lifecycle service uses
`TemporalEngine`; ``switchboard worker`` runs a `ChildWorker` built from a
`WorkerToolbox`. Both reach the service through `connect`. See docs/scale-out.md.
"""

from lifecycle.temporal._activities import WorkerToolbox
from lifecycle.temporal._connect import TemporalUnavailable, connect
from lifecycle.temporal._engine import TemporalEngine
from lifecycle.temporal._wire import WORKFLOW, ChildLimits
from lifecycle.temporal._worker import ChildWorker
from lifecycle.temporal._workflow import ChildWorkflow

__all__ = [
    "ChildLimits",
    "ChildWorker",
    "ChildWorkflow",
    "TemporalEngine",
    "TemporalUnavailable",
    "WORKFLOW",
    "WorkerToolbox",
    "connect",
]
