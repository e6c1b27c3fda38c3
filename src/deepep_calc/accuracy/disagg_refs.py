"""The disaggregated references against the model: rows for `validate`, folds, and their band.

Each `[[disagg]]` row of `catalog/data/references.toml` is a whole deployment (both sides'
layouts, the KV transport, the load); it is evaluated through `estimate/disagg.py` and its
measured TPOT, TTFT and output tok/s compared with the model's. None of them is fitted, so a
leave-one-out prediction is the built-in fit's own; the leave-a-group-out folds refit the
constants without a whole engine or model (serving references and measured cells of it) and
predict the disaggregated rows of that group.

The band the compared rows were missed by (10th-90th percentile of model / reference per kind
of figure) is written to `catalog/data/disagg_bands.toml` (`fresh_text` here, the file by the tool):

    python tools/regenerate.py disagg-bands

and a disaggregated figure outside the range of every reference carries the wider of it and
its kind's own band (`estimate/disagg.py`). `tests/accuracy/test_disagg_refs.py` fails when the
shipped file and a fresh computation disagree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..catalog.references import DisaggRef, load_disagg_refs, reference_models
from ..estimate.disagg import compute_disagg
from ..fit.build import built_in_table, fit_table
from ..fit.kernels import kernel_rows
from ..fit.observations import observations
from ..fit.table import Table
from ..question.scenario import Resolved, Scenario, resolve

KINDS = (
    ("step", "tpot_ms", "TPOT ms"),
    ("ttft", "ttft_ms", "TTFT ms"),
    ("aggregate", "output_tok_s", "output tok/s"),
)
BAND_PERCENTILES = (10.0, 90.0)


@dataclass
class Figure:
    """One compared figure, in the order `validate.Row` takes them (this module's own record, so
    the band can be computed without the accuracy report that embeds these rows)."""

    kind: str
    reference: str
    metric: str
    measured: float
    predicted: float
    held_out: float | None
    source: str
    fitted: bool
    in_scope: bool
    scope_note: str
    groups: dict[str, str] = field(default_factory=dict)

    @property
    def error(self) -> float:
        return (self.predicted - self.measured) / self.measured


def scenario_of(ref: DisaggRef) -> Scenario:
    return Scenario(
        model=ref.model,
        instance=ref.instance,
        engine=ref.engine,
        cuda_graphs=ref.decode_cuda_graphs,
        concurrency=ref.concurrency,
        isl=ref.isl,
        osl=ref.osl,
        prefill_nodes=ref.prefill_nodes,
        decode_nodes=ref.decode_nodes,
        prefill_arm=ref.prefill_arm,
        decode_arm=ref.decode_arm,
        prefill_transport=_reaching(ref.prefill_transport, ref.prefill_nodes),
        decode_transport=_reaching(ref.decode_transport, ref.decode_nodes),
        prefill_cuda_graphs=ref.prefill_cuda_graphs,
        decode_cuda_graphs=ref.decode_cuda_graphs,
        kv_transport=ref.kv_transport,
        transport="efa-proxy",  # the aggregated twin's; the sides name their own
    )


def _reaching(transport: str, nodes: int) -> str | None:
    """A side's DeepEP transport as the scenario takes it: NVLink only on one node (a
    multi-node side of replicas or the allgather and TP arms leaves it to the default)."""
    return None if transport == "nvlink" and nodes > 1 else transport


def resolved_of(ref: DisaggRef) -> Resolved:
    """The reference's scenario with the layout knobs only references have (attention TP)."""
    r = resolve(scenario_of(ref), reference_models())
    return replace(r, attention_tp=ref.attention_tp)


def predict(ref: DisaggRef, table: Table) -> dict[str, float]:
    """The model's TPOT, TTFT and output tok/s for one reference, at these constants."""
    d = compute_disagg(resolved_of(ref), table)
    return {"step": d.tpot_ms.scalar, "ttft": d.ttft_ms.scalar, "aggregate": d.aggregate_tok_s.scalar}


def measured(ref: DisaggRef) -> list[tuple[str, str, float]]:
    return [
        (kind, label, getattr(ref, name)) for kind, name, label in KINDS if getattr(ref, name) is not None
    ]


def rows(row_type: Any, table: Table | None = None) -> list[Any]:
    """Every measured figure of every disaggregated reference as the report's rows."""
    table = table if table is not None else built_in_table()
    out = []
    for ref in load_disagg_refs().values():
        pred = predict(ref, table)
        for kind, label, value in measured(ref):
            compare = ref.use == "compare"
            out.append(
                row_type(
                    kind,
                    ref.id,
                    label,
                    value,
                    pred[kind],
                    pred[kind],  # never fitted: the built-in fit has not seen it
                    ref.source,
                    False,
                    compare,
                    "" if compare else f"check only: {ref.use_note}",
                    {
                        "engine": ref.engine,
                        "model": ref.model,
                        "kv_transport": ref.kv_transport,
                        "group": ref.group,
                        **({} if compare else {"check": "1"}),
                    },
                )
            )
    return out


def group_folds(group_type: Any) -> list[Any]:
    """Leave each engine and each model of the references out of the fit, whole, and predict
    the disaggregated rows that share it (compared rows only)."""
    krows, obs = kernel_rows(), observations()
    refs = [r for r in load_disagg_refs().values() if r.use == "compare"]
    out = []
    for by in ("engine", "model"):
        folds = []
        for group in sorted({getattr(r, by) for r in refs}):
            train = [o for o in obs if getattr(o, by) != group]
            table = fit_table(krows, train)
            errs = []
            for ref in (r for r in refs if getattr(r, by) == group):
                pred = predict(ref, table)
                errs += [(pred[k] - v) / v for k, _, v in measured(ref)]
            folds.append((group, len(errs), float(np.mean(np.abs(errs))) if errs else float("nan")))
        out.append(
            group_type(f"disaggregated, {by}", folds, "disaggregated references, refit without the group")
        )
    return out


def bands(report_rows: Sequence[Any]) -> dict[str, tuple[float, float]]:
    """Band factors per kind from the compared rows (at least three of a kind)."""
    logs: dict[str, list[float]] = {}
    for r in report_rows:
        if r.in_scope and r.held_out is not None and r.held_out > 0:
            logs.setdefault(r.kind, []).append(math.log(r.held_out / r.measured))
    out = {}
    for kind, values in logs.items():
        if len(values) >= 3:
            lo, hi = np.percentile(values, BAND_PERCENTILES)
            out[kind] = (round(math.exp(min(lo, 0.0)), 4), round(math.exp(max(hi, 0.0)), 4))
    return out


def fresh_text() -> str:
    """The text `catalog/data/disagg_bands.toml` must hold for today's references and model."""
    import tomli_w

    found = bands(rows(Figure))
    doc = {
        "note": (
            "generated by `python tools/regenerate.py disagg-bands`: the 10th-90th percentile of "
            "model / reference over the compared disaggregated references, per kind of figure"
        ),
        "band": {k: {"low": lo, "high": hi} for k, (lo, hi) in sorted(found.items())},
    }
    return tomli_w.dumps(doc)
