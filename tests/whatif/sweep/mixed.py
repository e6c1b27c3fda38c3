"""The mixed grid the sweep tests share: two models over three instances and two transports,
where efa-gda does not run on p5 (its combinations are skipped, not refused)."""

from __future__ import annotations

# efa-gda does not run on p5: 2 of the 6 (instance, transport) pairs are invalid, per model
MIXED = {
    "model": "deepseek-v3,kimi-k2",
    "instance": "p5,p5en,p6-b200",
    "transport": "efa-proxy,efa-gda",
    "nodes": "2,4",
    "concurrency": "8,64",
}
