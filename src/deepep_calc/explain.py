"""Words for a verdict: reasons with their numbers, advisories, the flip search, engine flags.

Nothing here computes physics: every number comes from a `Result` (or from `compute()` on a
scenario one input away), so the explanation cannot disagree with the model.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .catalog.measured import load_facts
from .catalog.transports import load_transports
from .errors import CalcError
from .quantity import Q
from .verdict import ARM_LABELS, SYMBOLS, classify, tagged


def _ms_per_layer(q: Q, layers: int) -> str:
    return f"{q.scalar * 1000.0 / max(layers, 1):,.0f} µs"


def _tax_words(tax: Q) -> str:
    """A negative tax is a saving: say so instead of printing a minus sign in a 'tax'."""
    if tax.scalar >= 0:
        return f"a tax of {tagged(tax)} on every step"
    saved = Q(-tax.value, tax.unit, tax.tag, tax.source)
    return f"DeepEP saves {tagged(saved)} on every step"


def reasons(result: Any, code: str, arm: str) -> list[str]:
    r = result.resolved
    dee, alt = result.arms["deepep"], result.arms[result.alternative]
    alt_label = ARM_LABELS[result.alternative]
    out: list[str] = []
    if code == "capacity":
        single = result.arms["replica"]
        m = single.memory
        out.append(
            f"On one {r.instance.name} node each GPU would need {tagged(single.memory_gb_per_gpu, 0)} "
            f"(weights {tagged(m.weights_gb, 0)}, KV {tagged(m.kv_gb, 1)}) against "
            f"{tagged(m.usable_gb, 0)} usable: experts must be sharded across nodes."
        )
        if not dee.feasible and not alt.feasible:
            out.append(
                f"Even across {r.scenario.nodes} nodes neither arm fits "
                f"({dee.why_not or alt.why_not}): add nodes or lower concurrency / context."
            )
    out.append(
        f"Per-user decode: DeepEP {tagged(dee.per_user_tok_s)} vs {alt_label} "
        f"{tagged(alt.per_user_tok_s)}: {_tax_words(result.tax_ms_per_token)}."
    )
    out.append(
        f"Aggregate at concurrency {r.scenario.concurrency}: DeepEP {tagged(dee.aggregate_tok_s)} vs "
        f"{alt_label} {tagged(alt.aggregate_tok_s)} (ratio {tagged(result.ratio_deepep_vs_alternative, 2)};"
        f" per-user ratio {tagged(result.ratio_per_user, 2)})."
    )
    proxy = dee.breakdown_ms["proxy"]
    comm = dee.breakdown_ms["moe_comm"]
    layers = r.model.moe_layers
    if r.transport.host_proxied and r.scenario.nodes > 1:
        out.append(
            f"{r.transport.name} posts every cross-node dispatch through a host CPU proxy: "
            f"{tagged(proxy)} per step ({layers} MoE layers x {_ms_per_layer(proxy, layers)}) on top "
            f"of {tagged(comm)} of kernel time; fewer bytes on the wire do not shorten an issue-bound path."
        )
    elif r.scenario.nodes > 1:
        out.append(
            f"{r.transport.name} is GPU-initiated: no host round trip per layer; its kernels cost "
            f"{tagged(comm)} per step ({_ms_per_layer(comm, layers)} per MoE layer)."
        )
    else:
        out.append("One node: expert traffic stays on NVLink and no EFA path is involved.")
    if dee.measured_cell or alt.measured_cell:
        cells = sorted({c for c in (dee.measured_cell, alt.measured_cell) if c})
        out.append(f"Measured cell(s) {', '.join(cells)} supply the tagged-measured numbers above.")
    replica = result.arms.get("replica")
    if code == "dense" and arm == "replica" and replica is not None:
        out.append(
            f"The model fits one node, so independent single-node replicas avoid the network for "
            f"experts entirely: {tagged(replica.aggregate_tok_s)} aggregate."
        )
    return out


def advisories(result: Any, code: str) -> list[str]:
    from .evaluate import compute
    from .scenario import resolve

    r = result.resolved
    s = r.scenario
    out: list[str] = []
    facts = load_facts()
    t = r.transport
    if t.comms_sensitive and s.comms < 8 and s.nodes > 1:
        better = compute(resolve(s.model_copy(update={"comms": 8}))).arms["deepep"]
        out.append(
            f"Set EP_NUM_COMMS=8: the DeepEP step falls from {tagged(result.arms['deepep'].step_ms)} "
            f"to {tagged(better.step_ms)} (measured on vLLM: ITL halves, 203 -> 100 ms)."
        )
    if t.name == "efa-proxy" and s.max_qps <= 2 and s.nodes > 1:
        gain = facts["qp_uncap_throughput_gain"].value
        out.append(
            f"Raise EP_EFA_MAX_QPS where the ring allows: uncapping it (129 vs 2) gave "
            f"+{gain * 100:.1f} % throughput [measured] on 2x p6-b200 through the vLLM proxy path."
        )
    for name, arm in result.arms.items():
        if arm.meets_slo is False:
            out.append(
                f"{ARM_LABELS[name]} misses the per-user floor of {s.slo_tok_s:g} tok/s "
                f"({tagged(arm.per_user_tok_s)})."
            )
        if arm.meets_ttft is False:
            out.append(
                f"{ARM_LABELS[name]} misses the TTFT ceiling of {s.ttft_ms:g} ms ({tagged(arm.ttft_ms, 0)})."
            )
    if r.engine.name == "trtllm" and r.world <= r.model.topk:
        out.append(
            f"TensorRT-LLM picks DeepEP only when moe_ep_size > top_k ({r.world} <= {r.model.topk}): "
            "the DeepEP arm would silently fall back."
        )
    if not r.instance.gda_supported and r.instance.fabric == "efa":
        out.append(f"EFA-GDA (GPU-initiated) is not supported on {r.instance.name}; p5en and p6 have it.")
    price = result.arms["deepep"].usd_per_mtok
    if price.scalar != price.scalar:
        out.append(f"No price for {r.instance.name}: pass --price-per-hour to get $/Mtok.")
    return out


# Transports worth proposing as a single change: the production GPU-initiated paths and the
# strongest host proxy. Research paths (CQ-poll) and older proxies are not advice.
_FLIP_TRANSPORTS = ("efa-gda", "ib-ibgda", "efa-proxy", "efa-uccl")


def _numeric_candidates(s: Any) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    if s.comms != 8:
        out.append(("--comms 8", {"comms": 8}))
    out.append(("--eager" if s.cuda_graphs else "--cuda-graphs", {"cuda_graphs": not s.cuda_graphs}))
    for factor in (4, 16):
        out.append((f"--concurrency {s.concurrency * factor}", {"concurrency": s.concurrency * factor}))
    if s.concurrency >= 4:
        out.append((f"--concurrency {s.concurrency // 4}", {"concurrency": s.concurrency // 4}))
    out.append((f"--nodes {s.nodes * 2}", {"nodes": s.nodes * 2}))
    if s.nodes > 1:
        out.append((f"--nodes {s.nodes // 2}", {"nodes": s.nodes // 2}))
    return [(label, upd) for label, upd in out if _within_limits(upd)]


def _within_limits(update: dict[str, Any]) -> bool:
    from .scenario import LIMITS

    return all(not isinstance(v, int) or isinstance(v, bool) or v <= LIMITS[k] for k, v in update.items())


def flip_advisory(result: Any, code: str) -> str:
    """The first single input change (of a short, ordered list) that changes the verdict.

    The numeric changes run as one vectorised pass of the same model; each transport change
    is one more scalar pass.
    """
    from .evaluate import compute
    from .scenario import VARIABLE, resolve
    from .verdict import classify_codes

    r = result.resolved
    s = r.scenario
    for name in _FLIP_TRANSPORTS:
        if name == s.transport or r.instance.name not in load_transports()[name].instances:
            continue
        try:
            other = compute(resolve(s.model_copy(update={"transport": name})), reuse=result)
        except CalcError:
            continue
        new_code, _ = classify(other)
        if new_code != code:
            return _flip_text(f"--transport {name}", new_code, other.ratio_deepep_vs_alternative)
    cands = _numeric_candidates(s)
    if not cands:
        return ""
    columns = {f: np.array([upd.get(f, getattr(s, f)) for _, upd in cands]) for f in VARIABLE}
    batch = compute(r.vary(**columns))
    codes, _ = classify_codes(batch)
    ratio = batch.ratio_deepep_vs_alternative
    for i, (label, _) in enumerate(cands):
        if codes[i] != code:
            q = Q(np.asarray(ratio.value)[i], ratio.unit, ratio.tag, ratio.source)
            return _flip_text(label, str(codes[i]), q)
    return ""


def _flip_text(label: str, new_code: str, ratio: Q) -> str:
    return (
        f"{label} would flip the verdict to {SYMBOLS[new_code]} {new_code} "
        f"(DeepEP / alternative aggregate {tagged(ratio, 2)})."
    )


def engine_flags(result: Any, arm: str) -> dict[str, Any]:
    """Engine arguments, config and environment that run the recommended arm."""
    r = result.resolved
    s = r.scenario
    spec = r.engine.flags.get(arm) or r.engine.flags[s.alternative]

    def fill(text: str) -> str:
        return text.replace("{world}", str(r.world)).replace("{gpus_per_node}", str(r.gpus_per_node))

    env = {k: fill(v) for k, v in spec.env.items()}
    if arm == "deepep" and s.nodes > 1:
        env.update(r.transport.env)
        if r.transport.comms_sensitive:
            env["EP_NUM_COMMS"] = str(max(s.comms, 8))
            env["EP_EFA_MAX_QPS"] = str(s.max_qps)
    return {
        "engine": r.engine.name,
        "arm": arm,
        "args": [fill(a) for a in spec.args],
        "config": {k: fill(v) for k, v in spec.config.items()},
        "env": env,
        "cuda_graphs": r.engine.graph_flag_graphs if s.cuda_graphs else r.engine.graph_flag_eager,
        "requires": r.transport.requires if arm == "deepep" else "",
    }
