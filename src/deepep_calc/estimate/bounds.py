"""What bounds an arm's decode step, as the faces show it: named, banded, with the NIC's load.

`physics/bounds.py` holds the formulas; this module runs them on an arm's own step (the model's,
also where a measured cell replaces the figure shown) and attaches the bands. Nothing is computed
until a face reads it: `evaluate()` pays for none of it, and the take-over search (a few more
runs of the model) runs only for the faces that print it.

Bands: a part of the step carries the step's band, an exchange part the kernel band where DeepEP's
kernels cross nodes (the out-of-sample misses of the kernels themselves; NCCL's collectives have
no held-out test of their own, so theirs take the step's). A NIC busy fraction is bytes over a
time: the bytes are protocol counts (uniform routing), so its band is the inverse of its time's,
the step's or the kernels'. The take-over load is where two modelled parts cross and carries no
band: its source says so.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from ..base.arrays import every_some, floats, is_array, minimum
from ..base.quantity import Q
from ..fit.table import Table
from ..physics import bounds as pb
from ..physics.step import Step, StepConstants
from ..physics.take_over import take_over
from ..question.scenario import Resolved
from .bands import banded


class ArmBounds:
    """One arm's bound, its exchange's bound and the NIC's busy fraction (lazy, per arm)."""

    # size: it keeps the pieces model_arm already holds, so each bound is worked out lazily from them
    def __init__(
        self,
        r: Resolved,
        arm: str,
        c: StepConstants,
        step: Step,
        memo: dict[Any, Any],
        table: Table,
        covered: Any,
        max_concurrency: Q,
    ) -> None:
        self.r, self.arm, self.c, self.step, self.memo = r, arm, c, step, memo
        self.table, self.covered, self.max_concurrency = table, covered, max_concurrency

    @cached_property
    def physics(self) -> pb.StepBound:
        return pb.step_bound(self.r, self.arm, self.c, self.step, self.memo)

    @property
    def _kernel_band(self) -> bool:
        """Whether the exchange is DeepEP's kernels across nodes (banded by the kernel misses; over
        a pass of many rows, when any row is)."""
        if self.arm != "deepep" or self.r.transport.fabric == "nvlink":
            return False
        return every_some(floats(self.r.scenario.nodes) > 1.0)[1]

    def _ms(self, q: Q, kind: str = "step") -> Q:
        ms = q.over(1000.0, "ms")
        return banded(ms, self.table, kind, covered=self.covered if kind == "step" else True)

    # the step's bound -----------------------------------------------------------------------
    @cached_property
    def name(self) -> str:
        return pb.bound_name(self.physics)

    @property
    def label(self) -> str:
        return pb.LABELS[self.name]

    @property
    def index(self) -> Any:
        """The bound as a position in `physics.bounds.BOUNDS` (per row over a sweep's pass)."""
        return pb.bound_index(self.physics)

    @property
    def exchange_index(self) -> Any:
        """The exchange's bound as a position in `physics.bounds.EXCHANGE_BOUNDS` (per row)."""
        return pb.exchange_class_index(self.physics)

    @property
    def path(self) -> str:
        """The path that sets the step: `cpu` (eager, the launches outlast the GPU) or `gpu`."""
        return "cpu" if bool(self.physics.cpu_binds) else "gpu"

    @cached_property
    def parts_ms(self) -> dict[str, Q]:
        """The step along its binding path, by part (those that add to it: over a sweep's rows,
        every part); they add up to `step_ms`."""
        return {n: self._ms(q) for n, q in self.physics.parts.items() if is_array(q.value) or q.value > 0.0}

    @cached_property
    def part_ms(self) -> Q:
        """What the bound adds to the step (an exchange part: its class, e.g. all its latency)."""
        return self._ms(pb.bound_part(self.physics, self.name))

    @cached_property
    def step_ms(self) -> Q:
        return self._ms(self.physics.step_us)

    @cached_property
    def hidden_ms(self) -> Q:
        return self._ms(self.physics.hidden_us)

    @cached_property
    def runner_up(self) -> str | None:
        """The next part in size on the binding path (None when the bound is alone on it)."""
        order = pb.ranking(self.physics)
        rest = [n for n in order if n != self.name]
        return rest[0] if rest else None

    @cached_property
    def take_over(self) -> dict[str, Any] | None:
        """The smallest load above this one at which another part binds (solved on the model),
        or None within `physics.take_over.MAX_FACTOR`."""
        if not self.r.measured:
            return None
        found = take_over(self.r, self.arm, self.c, self.physics, self.memo)
        if found is None:
            return None
        lay = self.memo.get(("layout", self.arm))
        serving = float(lay.ranks) * float(lay.groups) if lay is not None and lay.data_parallel else 1.0
        src = (
            f"solved on the model: the step re-evaluated at other loads ({found.evaluations} "
            "passes); where two modelled parts cross, no band"
        )
        return {
            "name": found.bound,
            "label": pb.LABELS[found.bound],
            "factor": Q(found.factor, "x", self.physics.step_us.tag, src),
            "running": found.running,
            "tokens_per_rank": Q(found.running / serving, "tokens", self.step.ms.tag, src),
            "fits": bool(found.running <= self.max_concurrency.scalar),
        }

    # the exchange's own bound -------------------------------------------------------------------
    @cached_property
    def exchange_name(self) -> str:
        return pb.exchange_bound(self.physics)

    @property
    def exchange_label(self) -> str:
        return pb.EXCHANGE_LABELS[self.exchange_name]

    @cached_property
    def exchange_ms(self) -> dict[str, Q]:
        kind = "kernel" if self._kernel_band else "step"
        return {n: self._ms(q, kind) for n, q in pb.exchange_classes(self.physics).items()}

    @cached_property
    def exchange_own_ms(self) -> Q:
        return self._ms(self.physics.exchange_us, "kernel" if self._kernel_band else "step")

    # the NIC ------------------------------------------------------------------------------------
    @cached_property
    def wire_mb(self) -> Q:
        return self.physics.wire_mb

    @cached_property
    def nic_busy_pct(self) -> Q:
        """Wire bytes of the step's exchanges over the step x the line rate per GPU."""
        q = banded(pb.nic_busy_pct(self.physics), self.table, "step", inverse=True, covered=self.covered)
        return _at_most_all(q)

    @cached_property
    def nic_busy_exchange_pct(self) -> Q:
        """The same over the exchange's own duration."""
        q = pb.nic_busy_exchange_pct(self.physics)
        if self._kernel_band:
            return _at_most_all(banded(q, self.table, "kernel", inverse=True))
        return _at_most_all(banded(q, self.table, "step", inverse=True, covered=self.covered))

    @property
    def many(self) -> bool:
        """Whether this is a pass over many rows (a sweep's block): no one bound to name."""
        return is_array(self.step.ms.value)

    def to_json(self) -> dict[str, Any]:
        """The additive keys of one arm's JSON: `bound`, `exchange_bound`, the NIC's busy shares
        (one scenario's; a pass over many rows has its bounds in a sweep's columns instead)."""
        if self.many:
            return {}
        runner = self.runner_up
        over = self.take_over
        return {
            "bound": {
                "name": self.name,
                "label": self.label,
                "path": self.path,
                "part_ms": self.part_ms.to_json(),
                "step_ms": self.step_ms.to_json(),
                "hidden_ms": None if self.r.scenario.cuda_graphs is True else self.hidden_ms.to_json(),
                "parts_ms": {n: q.to_json() for n, q in self.parts_ms.items()},
                "runner_up": None
                if runner is None
                else {
                    "name": runner,
                    "label": pb.LABELS[runner],
                    "part_ms": self._ms(pb.bound_part(self.physics, runner)).to_json(),
                },
                "takes_over": None
                if over is None
                else {
                    **over,
                    "factor": over["factor"].to_json(),
                    "tokens_per_rank": over["tokens_per_rank"].to_json(),
                },
            },
            "exchange_bound": {
                "name": self.exchange_name,
                "label": self.exchange_label,
                "parts_ms": {n: q.to_json() for n, q in self.exchange_ms.items()},
                "exchange_ms": self.exchange_own_ms.to_json(),
                "wire_mb": self.wire_mb.to_json(),
            },
            "nic_busy_pct": self.nic_busy_pct.to_json(),
            "nic_busy_exchange_pct": self.nic_busy_exchange_pct.to_json(),
        }


def _at_most_all(q: Q) -> Q:
    """A busy fraction's band ends at 100 %: a NIC cannot be busier than all the time."""
    if q.high is None:
        return q
    return q.with_band(q.low, minimum(floats(q.high), 100.0))
