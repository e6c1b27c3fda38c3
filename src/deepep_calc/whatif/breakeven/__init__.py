"""Break-even answers: where does the verdict of one scenario change, and by how much?

Each answer is solved on the model, not read off a blind scan:

kernel_tie_us      per-MoE-layer dispatch + combine latency at which DeepEP's aggregate equals
                   the alternative's. The latency enters as a shift of the library's local
                   fixed latency (every dispatch pays it, prefill included); the ratio falls
                   monotonically with it, so a bisection finds the root. In an eager engine the
                   kernels can hide under the CPU path: then no latency moves the ratio, and the
                   answer says so.
concurrency_tie    smallest concurrency at which DeepEP's aggregate reaches the alternative's:
concurrency_win    ... and beats it by more than the noise band (the verdict's threshold). Tokens
                   per rank = concurrency / EP, so this is where the alternative's all-rank
                   traffic outgrows DeepEP's top-k traffic.
capacity_isl       smallest input length (at this concurrency) at which capacity forces EP.
capacity_conc      smallest concurrency (at this context) at which capacity forces EP.
capacity_nodes     smallest node count at which single-node replicas hold the load (below it,
                   capacity forces EP).
ep_nodes           fewest nodes on which the DeepEP arm fits in HBM.
comms_proxy        EP_NUM_COMMS beyond which the host proxy stops being issue-bound: its fitted
                   per-layer cost (eager) is proxy_fixed_us + proxy_lane_us / K (physics/step.py); the
                   proxy is issue-bound while the part that more comms divide, lane / K, exceeds
                   the part they do not, so K* = proxy_lane_us / proxy_fixed_us.
comms_bandwidth    EP_NUM_COMMS beyond which more comms add no scale-out bandwidth: the measured
                   curve k1 * K^e reaches the line rate at K = (line / k1)^(1/e).
qps_kernel         EP_EFA_MAX_QPS beyond which the kernel's issue term (work requests x op cost /
                   lanes) is no longer the largest of the three pipes of physics/deepep.py in either
                   direction; bisection on the kernel model against the same kernel with a free
                   issue path.

Integer answers come from a search that first evaluates a geometric + linear grid over the whole
allowed range in one vectorised pass (so a first crossing is not jumped over), then narrows the
bracket with further vectorised passes. The model's figures are used throughout (measured-cell
substitution does not respond to a what-if). "Never" is an answer, not an error.

How answers read: every note is a sentence a user can act on, with units. Where the knob is whole
(nodes, concurrency, EP_NUM_COMMS, EP_EFA_MAX_QPS) the value is a whole number, rounded in the
direction that keeps the sentence true (a threshold "from K" is rounded up) and the note says so;
the exact solution stays in `check["solution"]`. The concurrency search stops where the card's
max concurrency does (the most sequences both arms hold in KV cache at once), so "never" names
the same limit the card prints.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...estimate.passes import first_true, model
from ...question.scenario import Resolved, Scenario, resolve
from .capacity import capacity_field, capacity_nodes, ep_nodes
from .concurrency import concurrency_cross, held_concurrency
from .kernel import kernel_shifted, kernel_tie
from .search import Answer
from .transport import comms_bandwidth, comms_proxy, issue_bound, qps_kernel

__all__ = [
    "Answer",
    "breakeven",
    "capacity_field",
    "capacity_nodes",
    "comms_bandwidth",
    "comms_proxy",
    "concurrency_cross",
    "ep_nodes",
    "first_true",
    "held_concurrency",
    "issue_bound",
    "kernel_shifted",
    "kernel_tie",
    "model",
    "qps_kernel",
]


# how the face turns a scenario into a question: the catalog only (`resolve`, the default), or
# with the config.json and the profile it names read (`io.inputs.resolve_files`)
Resolver = Callable[[Scenario], Resolved]


def breakeven(
    question: Resolved | Scenario | None = None, /, *, resolve: Resolver = resolve, **fields: Any
) -> list[Answer]:
    """Every break-even answer for a question (keyword fields on top of it, or of the defaults).

    `question`: what the face resolved, or a scenario and `resolve`, the face's way of
    resolving it (`io.inputs.resolve_files` reads the config.json and the profile it names; the
    default reads no file), so every answer is solved on one question and no file is read here.
    """
    if isinstance(question, Resolved):
        r = question.change(**fields) if fields else question
    elif question is None:
        r = resolve(Scenario(**fields))
    else:
        r = resolve(question.copy(**fields) if fields else question)
    return [
        kernel_tie(r),
        concurrency_cross(r, win=False),
        concurrency_cross(r, win=True),
        capacity_field(r, "isl"),
        capacity_field(r, "concurrency"),
        capacity_nodes(r),
        ep_nodes(r),
        comms_proxy(r),
        comms_bandwidth(r),
        qps_kernel(r),
    ]
