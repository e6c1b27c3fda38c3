"""Rows for `models`, `instances` and `transports` (JSON and terminal tables share them)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from . import term


def models_rows() -> list[dict[str, Any]]:
    from ..catalog.model_catalog import load_models
    from ..physics.params import count_params, kv_bytes_per_token, weight_bytes

    rows = []
    for name, m in load_models().items():
        p = count_params(m)
        rows.append(
            {
                "name": name,
                "hf_id": m.hf_id,
                "family": m.family,
                "hidden": m.hidden,
                "layers": m.layers,
                "moe_layers": m.moe_layers,
                "experts": m.experts,
                "shared_experts": m.shared_experts,
                "topk": m.topk,
                "attention": m.attention.kind,
                "weight_dtype": m.weight_dtype,
                "expert_dtype": m.routed_dtype,
                "total_params_b": round(p.total / 1e9, 2),
                "active_params_b": round(p.active / 1e9, 2),
                "weights_gb": round(weight_bytes(m).total / 1e9, 1),
                "kv_bytes_per_token": round(kv_bytes_per_token(m)),
                "tag": "derived" if m.verified else "assumed",
                "source": m.source,
            }
        )
    return rows


def instances_rows() -> list[dict[str, Any]]:
    from ..catalog.hardware import load_instances

    rows = []
    for name, i in load_instances().items():
        net = i.net_gb_s_per_gpu()
        rows.append(
            {
                "name": name,
                "aws_name": i.aws_name,
                "fabric": i.fabric,
                "gpu": i.gpu,
                "gpus_per_node": i.gpus_per_node,
                "hbm_gb": i.hbm_gb,
                "hbm_tb_s": i.hbm_tb_s,
                "nvlink_gb_s_per_dir": i.nvlink_gb_s_bidir / 2,
                "network_gbit_per_node": i.nic_count * i.nic_gbit_each,
                "network_gb_s_per_gpu_per_dir": net.value,
                "network_conversion": net.source,
                "price_per_hour": i.price_per_hour,
                "price_kind": i.price_kind,
                "price_source": i.price_source,
                "efa_gda": i.gda_supported,
                "tag": "assumed",
                "source": i.source,
            }
        )
    return rows


def transports_rows() -> list[dict[str, Any]]:
    from ..catalog.transports import load_transports
    from ..fit.build import built_in_table

    table = built_in_table()
    rows = []
    for name, t in load_transports().items():
        fit = table.transports[name]
        a_d, a_c = fit.leaving_dispatch_us, fit.leaving_combine_us
        local = (table.nvlink_fit(t.library).alpha_us * 0.5).as_("us")
        ref = t.reference
        rows.append(
            {
                "name": name,
                "label": t.label,
                "fabric": t.fabric,
                "initiation": t.initiation,
                "library": t.library,
                "ops_per_token": t.ops_per_token,
                "instances": t.instances,
                "reference": {
                    "instance": ref.instance,
                    "ep": ref.ep,
                    "dispatch_us": ref.dispatch_us,
                    "combine_us": ref.combine_us,
                    "total_us": ref.total,
                    "setting": ref.setting,
                    "tag": "measured",
                    "source": ref.source,
                },
                "other_runs_of_the_reference_cell": [
                    {"setting": other.setting, "total_us": other.total, "source": other.source}
                    for other in t.references()
                    if other is not ref
                    and other.in_scope
                    and not other.dispatch_only
                    and other.same_point(ref)
                ],
                "local_us": round(local.scalar, 2),
                "alpha_dispatch_us": round(a_d.scalar, 2),
                "alpha_combine_us": round(a_c.scalar, 2),
                "beta_dispatch_us": round(fit.beta_dispatch_us.scalar, 4),
                "beta_combine_us": round(fit.beta_combine_us.scalar, 4),
                "signal_ratio": round(fit.signal_ratio.scalar, 3),
                "graphs_evidence": t.graphs_evidence,
                "bandwidth": t.bw_source,
                "env": t.env,
            }
        )
    return rows


# Terminal views ---------------------------------------------------------------------------------
# Each view fits 80 columns with the figures that decide a choice; from term.WIDE columns on it
# adds the rest. Units are in the headers; tags are markers; sources come with --sources.


def print_models(rows: list[dict[str, Any]], sources: bool = False, c: Console | None = None) -> None:
    """Model presets: routing, size, memory, KV per token; structure details when wide."""
    c = c or term.console()
    wide = term.wide(c)
    cols = [term.id_col("preset"), term.num_col("experts\n(top-k)")]
    if wide:
        cols += [term.num_col("shared"), term.num_col("hidden"), term.num_col("layers")]
    cols += [term.num_col("MoE\nlayers")]
    if wide:
        cols += [term.id_col("attn")]
    cols += [term.id_col("dtype"), term.num_col("params\nB total")]
    if wide:
        cols += [term.num_col("params\nB active")]
    cols += [term.num_col("weights\nGB"), term.num_col("KV bytes\nper token"), term.id_col("")]
    if wide:
        cols += [term.id_col("Hugging Face id")]
    table = term.table(*cols, title="Model presets")
    for r in rows:
        dtype = r["weight_dtype"] if r["expert_dtype"] == r["weight_dtype"] else f"{r['expert_dtype']}*"
        cells: list[Any] = [r["name"], f"{r['experts']} ({r['topk']})"]
        if wide:
            cells += [str(r["shared_experts"]), f"{r['hidden']:,}", str(r["layers"])]
        cells += [str(r["moe_layers"])]
        if wide:
            cells += [r["attention"]]
        cells += [dtype, term.number(r["total_params_b"], 1)]
        if wide:
            cells += [term.number(r["active_params_b"], 1)]
        cells += [term.number(r["weights_gb"], 1), f"{r['kv_bytes_per_token']:,}", term.marker(r["tag"])]
        if wide:
            cells += [r["hf_id"] or ""]
        table.add_row(*cells)
    c.print(table)
    starred = sorted({r["weight_dtype"] for r in rows if r["expert_dtype"] != r["weight_dtype"]})
    if starred:
        rest = " or ".join(starred)
        c.print(Text(f"* the routed experts' dtype; the rest of the model is in {rest}", style="dim"))
    c.print(Text("parameter counts, weights and KV bytes come from each preset's structure", style="dim"))
    c.print(term.legend())
    if sources:
        term.print_sources_by_row(c, [(r["name"], r["source"]) for r in rows])
    else:
        c.print(term.sources_hint("deepep-calc models"))


KIND_SHORT = {"on-demand": "OD", "capacity-block": "CB", "quote": "Q"}


def print_instances(rows: list[dict[str, Any]], sources: bool = False, c: Console | None = None) -> None:
    """Instances: GPUs, HBM, network per GPU per direction (with the Gb/s it comes from), price."""
    c = c or term.console()
    wide = term.wide(c)
    cols = [term.id_col("instance")]
    if wide:
        cols += [term.id_col("AWS name"), term.id_col("fabric")]
    cols += [term.id_col("GPUs"), term.num_col("HBM\nGB"), term.num_col("HBM\nTB/s")]
    if wide:
        cols += [term.num_col("NVLink GB/s\nper dir")]
    cols += [
        term.num_col("network\nGb/s/node"),
        term.num_col("GB/s per\nGPU per dir"),
        term.num_col("$ per\nnode-hour"),
        term.id_col("EFA-GDA"),
    ]
    table = term.table(*cols, title="Instances")
    for r in rows:
        cells: list[Any] = [r["name"]]
        if wide:
            cells += [r["aws_name"], r["fabric"].upper()]
        cells += [
            f"{r['gpus_per_node']}x {r['gpu']}",
            term.number(r["hbm_gb"], 0),
            term.number(r["hbm_tb_s"], 2),
        ]
        if wide:
            cells += [term.number(r["nvlink_gb_s_per_dir"], 0)]
        price = "—" if r["price_per_hour"] is None else term.number(r["price_per_hour"], 2)
        cells += [
            term.number(r["network_gbit_per_node"], 0),
            term.number(r["network_gb_s_per_gpu_per_dir"], 1),
            price + (f" {KIND_SHORT[r['price_kind']]}" if r["price_kind"] else ""),
            "yes" if r["efa_gda"] else "no",
        ]
        table.add_row(*cells)
    c.print(table)
    c.print(
        Text.assemble(
            term.marker("assumed"),
            (
                " every figure here is a spec-sheet value or a list price: verify locally. "
                "GB/s per GPU = Gb/s per node / 8 / GPUs. — = no catalog price: pass --price-per-hour. "
                "Price kinds: OD on-demand, CB AWS Capacity Block, Q a quote (unchecked); plan ranks "
                "one kind at a time unless told to mix them (--price-kinds all).",
                "dim",
            ),
        )
    )
    c.print(term.legend())
    if sources:
        term.print_sources_by_row(
            c,
            [
                (r["name"], f"{r['source']}; network: {r['network_conversion']}; price: {r['price_source']}")
                for r in rows
            ],
        )
    else:
        c.print(term.sources_hint("deepep-calc instances"))


def print_transports(rows: list[dict[str, Any]], sources: bool = False, c: Console | None = None) -> None:
    """Transports: who posts the work requests, the measured reference, and the fixed cost."""
    c = c or term.console()
    wide = term.wide(c)
    c.print(_transports_table(rows, wide))
    _print_transport_notes(c, rows, wide)
    c.print(term.legend())
    if sources:
        term.print_sources_by_row(
            c,
            [
                (r["name"], f"reference: {r['reference']['source']}; bandwidth: {r['bandwidth']}")
                for r in rows
            ],
        )
    else:
        c.print(term.sources_hint("deepep-calc transports"))


def _transports_table(rows: list[dict[str, Any]], wide: bool) -> Table:
    """One row per transport; a wide terminal adds the library, fabric and per-message costs."""
    cols = [term.id_col("transport"), term.id_col("posted by")]
    if wide:
        cols += [
            term.id_col("library"),
            term.id_col("fabric"),
            term.num_col("WRs per\ntoken"),
            term.id_col("runs on"),
        ]
    cols += [
        term.id_col("reference"),
        term.num_col("reference\nµs/layer"),
        term.num_col("local µs\nper dir."),
        term.num_col("leaving µs\nD / C"),
    ]
    if wide:
        cols += [term.num_col("µs per message\nD / C"), term.num_col("signal\n÷ put")]
    table = term.table(*cols, title="DeepEP transports")
    for r in rows:
        ref = r["reference"]
        cells: list[Any] = [r["name"], "host proxy" if r["initiation"] == "host-proxy" else "GPU"]
        if wide:
            cells += [r["library"], r["fabric"], str(r["ops_per_token"]), ", ".join(r["instances"])]
        cells += [
            f"{ref['instance']} EP{ref['ep']}",
            term.qcell({"value": ref["total_us"], "tag": ref["tag"], "unit": "us"}, 1),
            term.number(r["local_us"], 1),
            "—" if r["fabric"] == "nvlink" else f"{r['alpha_dispatch_us']:.1f} / {r['alpha_combine_us']:.1f}",
        ]
        if wide:  # NVLink-only EP sends nothing off the node: no such cost
            beta = f"{r['beta_dispatch_us']:.3f} / {r['beta_combine_us']:.3f}"
            one_node = r["fabric"] == "nvlink"
            cells += ["—" if one_node else beta, "—" if one_node else f"{r['signal_ratio']:.2f}"]
        table.add_row(*cells)
    return table


def _print_transport_notes(c: Console, rows: list[dict[str, Any]], wide: bool) -> None:
    """What the columns mean, then each reference that is one of several runs of its cell."""
    per_message = (
        "; µs per message = the issue path's cost of each put (one per token-expert pair sent off "
        "the node) and, times 'signal ÷ put', of each signal (one per expert on another node)"
        if wide
        else ""
    )
    c.print(
        Text(
            "reference = the transport's primary kernel run (dispatch + combine, one MoE layer); "
            "local = the library's own fixed part, paid inside one node too (fitted to one-node runs "
            "at several token counts); leaving = the latency of leaving the node, which the messages "
            "and bytes overlap (fitted where small-token runs exist, else the fabric's)"
            f"{per_message}. docs/model.md §3 and §6.",
            style="dim",
        )
    )
    for r in rows:  # one cell, several runs: the reference's figure is one of them, said so
        others = r["other_runs_of_the_reference_cell"]
        if others:
            ref = r["reference"]
            spread = ", ".join(f"{o['total_us']:,.1f}" for o in others)
            c.print(
                Text(
                    f"{r['name']}: the reference ({ref['total_us']:,.1f} µs) is the {ref['setting']} run; "
                    f"other runs of the same cell measured {spread} µs (deepep-calc kernel lists them with "
                    "their settings).",
                    style="dim",
                )
            )


VIEWS = {"Model presets": print_models, "Instances": print_instances, "Transports": print_transports}


def print_rows(title: str, rows: list[dict[str, Any]], sources: bool = False) -> None:
    """The terminal view of one catalog (`models`, `instances`, `transports`)."""
    VIEWS[title](rows, sources)
