"""Choosing from the planner's rows: the cheapest that meets the targets, the frontier, the misses.

Pure array work on the columns `plan_space.Search` filled; nothing here evaluates the model.

- *best*: least $ per million output tokens among rows that fit, can be split, sustain the
  load and meet every target (ties: fewer nodes, then the anchored one, then arm order).
- *frontier*: rows no other compared row beats on both per-user tok/s (higher) and $/Mtok
  (lower); a second frontier trades per-user tok/s against aggregate tok/s per node.
- *misses*: how far each row is from each target, as a fraction of the target, so "closest"
  compares a TTFT miss with a per-user miss on one scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TARGETS = ("slo_tok_s", "ttft_ms", "budget_per_hour", "request_rate", "memory")


@dataclass
class Columns:
    """The figures selection needs, one entry per row."""

    per_user: np.ndarray
    usd_per_mtok: np.ndarray
    ttft_ms: np.ndarray
    usd_per_hour: np.ndarray
    aggregate_per_node: np.ndarray
    memory_gb: np.ndarray
    usable_gb: np.ndarray
    fits: np.ndarray
    split: np.ndarray  # routed experts divide evenly over the arm's EP ranks
    sustainable: np.ndarray
    max_rate: np.ndarray  # requests / s at the batch limit (rate plans; inf otherwise)
    compared: np.ndarray  # priced and inside the evidence the request allows
    nodes: np.ndarray
    arm: np.ndarray
    anchored: np.ndarray


@dataclass(frozen=True)
class Goals:
    slo_tok_s: float | None
    ttft_ms: float | None
    budget_per_hour: float | None
    request_rate: float | None


def shortfalls(c: Columns, g: Goals) -> dict[str, np.ndarray]:
    """Per target, how far each row misses it (0 = met), as a fraction of the target."""
    zero = np.zeros(c.per_user.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = {
            "slo_tok_s": zero if g.slo_tok_s is None else np.maximum(g.slo_tok_s / c.per_user - 1.0, 0.0),
            "ttft_ms": zero if g.ttft_ms is None else np.maximum(c.ttft_ms / g.ttft_ms - 1.0, 0.0),
            "budget_per_hour": zero
            if g.budget_per_hour is None
            else np.maximum(c.usd_per_hour / g.budget_per_hour - 1.0, 0.0),
            "request_rate": zero
            if g.request_rate is None
            else np.where(c.sustainable, 0.0, g.request_rate / c.max_rate - 1.0),
            "memory": np.where(c.fits, 0.0, c.memory_gb / c.usable_gb - 1.0),
        }
    for k, v in out.items():
        out[k] = np.where(np.isnan(v), np.inf, v)
    # An unsustainable row has no steady-state TTFT: its TTFT is not a separate miss.
    out["ttft_ms"] = np.where(c.sustainable, out["ttft_ms"], 0.0)
    return out


def valid(c: Columns) -> np.ndarray:
    """Rows the comparison may use: priced, allowed, splittable, with finite figures."""
    return c.compared & c.split & np.isfinite(c.per_user) & np.isfinite(c.usd_per_mtok)


def meets(c: Columns, miss: dict[str, np.ndarray]) -> np.ndarray:
    ok = valid(c)
    for v in miss.values():
        ok = ok & (v == 0)
    return ok


def best(c: Columns, ok: np.ndarray) -> int | None:
    idx = np.flatnonzero(ok)
    if idx.size == 0:
        return None
    order = np.lexsort((c.arm[idx], ~c.anchored[idx], c.nodes[idx], c.usd_per_mtok[idx]))
    return int(idx[order[0]])


def pareto(x_low: np.ndarray, y_high: np.ndarray, rows: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Rows of `rows` not dominated on (x lower, y higher), ordered by x; ties keep the first."""
    idx = np.flatnonzero(rows)
    if idx.size == 0:
        return idx
    order = idx[np.lexsort((nodes[idx], -y_high[idx], x_low[idx]))]
    y = y_high[order]
    running = np.maximum.accumulate(y)
    keep = np.ones(order.size, dtype=bool)
    keep[1:] = y[1:] > running[:-1]
    return order[keep]


def frontier(c: Columns, eligible: np.ndarray) -> np.ndarray:
    """Per-user tok/s against $/Mtok: cheapest first."""
    return pareto(c.usd_per_mtok, c.per_user, eligible, c.nodes)


def frontier_per_node(c: Columns, eligible: np.ndarray) -> np.ndarray:
    """Per-user tok/s against aggregate tok/s per node: most aggregate per node first."""
    return pareto(-c.aggregate_per_node, c.per_user, eligible, c.nodes)


def dominated_by_any(x_low: np.ndarray, y_high: np.ndarray, i: int, rows: np.ndarray) -> bool:
    """Whether row i is beaten on both axes (one strictly) by a row of `rows` (for checks)."""
    x, y = x_low[rows], y_high[rows]
    return bool(np.any((x <= x_low[i]) & (y >= y_high[i]) & ((x < x_low[i]) | (y > y_high[i]))))


def nearest(c: Columns, miss: dict[str, np.ndarray], group: np.ndarray, count: int = 5) -> list[int]:
    """The rows closest to meeting every target (summed fractional misses), one per group."""
    candidates = c.compared & c.split & np.isfinite(c.per_user)
    total = sum(miss.values())
    total = np.where(candidates & np.isfinite(total), total, np.inf)
    order = np.lexsort((c.usd_per_mtok, total))
    out: list[int] = []
    seen: set[int] = set()
    for i in order:
        if not np.isfinite(total[i]) or len(out) >= count:
            break
        if int(group[i]) in seen:
            continue
        seen.add(int(group[i]))
        out.append(int(i))
    return out


def relaxations(c: Columns, miss: dict[str, np.ndarray], g: Goals) -> list[tuple[float, str, int, float]]:
    """For each target, the least change of it alone that lets some row meet everything.

    (fractional change, target, row, value the target would have to take), smallest first.
    """
    base = c.compared & c.split & np.isfinite(c.per_user) & np.isfinite(c.usd_per_mtok)
    out: list[tuple[float, str, int, float]] = []
    for name, goal in (
        ("slo_tok_s", g.slo_tok_s),
        ("ttft_ms", g.ttft_ms),
        ("budget_per_hour", g.budget_per_hour),
        ("request_rate", g.request_rate),
    ):
        if goal is None:
            continue
        others = base.copy()
        for k, v in miss.items():
            if k != name and not (name == "request_rate" and k == "ttft_ms"):
                others &= v == 0
        if name == "request_rate" and g.ttft_ms is not None:
            # at the rate it can take, an unsustainable row runs at its batch limit: the
            # figures in the rows, TTFT included
            others &= c.ttft_ms <= g.ttft_ms
        others &= miss[name] > 0
        idx = np.flatnonzero(others)
        if idx.size == 0:
            continue
        if name == "slo_tok_s":
            i = int(idx[np.argmax(c.per_user[idx])])
            value, change = float(c.per_user[i]), 1.0 - float(c.per_user[i]) / goal
        elif name == "ttft_ms":
            i = int(idx[np.argmin(c.ttft_ms[idx])])
            value, change = float(c.ttft_ms[i]), float(c.ttft_ms[i]) / goal - 1.0
        elif name == "budget_per_hour":
            i = int(idx[np.argmin(c.usd_per_hour[idx])])
            value, change = float(c.usd_per_hour[i]), float(c.usd_per_hour[i]) / goal - 1.0
        else:
            i = int(idx[np.argmax(c.max_rate[idx])])
            value, change = float(c.max_rate[i]), 1.0 - float(c.max_rate[i]) / goal
        out.append((change, name, i, value))
    return sorted(out)
