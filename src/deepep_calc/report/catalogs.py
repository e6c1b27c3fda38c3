"""Rows for `models`, `instances` and `transports` (JSON and terminal tables share them)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


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
        a_d, a_c = fit.alpha_dispatch_us, fit.alpha_combine_us
        if t.fabric == "nvlink":
            a_d = a_c = (table.nvlink_alpha_us * 0.5).as_("us")
        ref = t.reference
        rows.append(
            {
                "name": name,
                "label": t.label,
                "fabric": t.fabric,
                "initiation": t.initiation,
                "ops_per_token": t.ops_per_token,
                "instances": t.instances,
                "reference": {
                    "instance": ref.instance,
                    "ep": ref.ep,
                    "dispatch_us": ref.dispatch_us,
                    "combine_us": ref.combine_us,
                    "total_us": ref.total,
                    "tag": "measured",
                    "source": ref.source,
                },
                "alpha_dispatch_us": round(a_d.scalar, 2),
                "alpha_combine_us": round(a_c.scalar, 2),
                "beta_dispatch_us": round(fit.beta_dispatch_us.scalar, 4),
                "beta_combine_us": round(fit.beta_combine_us.scalar, 4),
                "bandwidth": t.bw_source,
                "env": t.env,
            }
        )
    return rows


_SHOWN = {
    "Model presets": [
        "name",
        "experts",
        "topk",
        "hidden",
        "moe_layers",
        "attention",
        "weight_dtype",
        "total_params_b",
        "weights_gb",
        "kv_bytes_per_token",
        "tag",
    ],
    "Instances": [
        "name",
        "gpu",
        "gpus_per_node",
        "hbm_gb",
        "hbm_tb_s",
        "network_gbit_per_node",
        "network_gb_s_per_gpu_per_dir",
        "price_per_hour",
        "efa_gda",
    ],
    "Transports": [
        "name",
        "initiation",
        "fabric",
        "ops_per_token",
        "reference",
        "alpha_dispatch_us",
        "alpha_combine_us",
    ],
}


def print_rows(title: str, rows: list[dict[str, Any]]) -> None:
    table = Table(title=title)
    cols = _SHOWN[title]
    for i, c in enumerate(cols):
        table.add_column(c.replace("_", " "), no_wrap=i == 0, overflow="fold")
    for row in rows:
        cells = []
        for c in cols:
            v = row[c]
            if isinstance(v, dict):
                v = f"{v['instance']} EP{v['ep']}: {v['total_us']:g} us [measured]"
            cells.append("" if v is None else str(v))
        table.add_row(*cells)
    Console().print(table)
