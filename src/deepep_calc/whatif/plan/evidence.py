"""What the planner's configurations rest on: anchored by measured references, or assumed.

Nearly every modelled figure carries the `assumed` tag (spec-sheet HBM bandwidth, a list
price), so the tag alone cannot separate a configuration the references pin from one the
model merely extrapolates to. This module states the narrower test `--measured-only` applies,
from the catalog itself (no list of names in code):

- a DeepEP arm across nodes is anchored when its transport has a measured, in-scope,
  decode-shape kernel reference row across nodes in `transports.toml` on that very instance;
- a DeepEP arm on one node runs the library its transport loads over NVLink: anchored when
  that library has such a row inside one node there (a row of any transport that loads it);
- every arm needs its engine x graph mode to have at least one measured serving run
  (a measured cell or a serving reference, `fit.observations`);
- the tensor-parallel arm is never anchored: no serving run in the references used it.

Each configuration outside these gets a note saying which of them it misses.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from . import MEASURED_ONLY


@dataclass(frozen=True)
class Evidence:
    """The anchoring sets, read once from the catalog and the observations."""

    kernel: frozenset[tuple[str, str]]  # (instance, transport) with a measured cross-node row there
    kernel_home: dict[str, str]  # transport -> instance of its primary reference
    one_node: frozenset[tuple[str, str]]  # (instance, library) with a measured row inside one node
    serving: frozenset[tuple[str, bool]]  # (engine, cuda_graphs) with a measured serving run
    serving_arms: frozenset[str]  # model arms some measured serving run reproduces
    assumed_factor: frozenset[str]  # instances whose kernel instance factor is assumed


@cache
def evidence() -> Evidence:
    from ...base.quantity import Tag
    from ...catalog.hardware import get_instance
    from ...catalog.transports import load_transports
    from ...fit.build import built_in_table
    from ...fit.observations import observations

    kernel, one_node = set(), set()
    home = {}
    for name, t in load_transports().items():
        home[name] = t.reference.instance
        for ref in t.references():
            if ref.trust == "measured" and ref.in_scope and not ref.prefill:
                if t.fabric == "nvlink" or ref.ep <= get_instance(ref.instance).gpus_per_node:
                    one_node.add((ref.instance, t.library))
                else:
                    kernel.add((ref.instance, name))
    obs = [o for o in observations() if o.trust == "measured"]
    serving = {(o.engine, bool(o.graphs)) for o in obs}
    # A replica is EP inside one node: the single-node runs (either arm) reproduce it.
    arms = {o.arm for o in obs} | ({"replica"} if any(o.scenario.nodes == 1 for o in obs) else set())
    table = built_in_table()
    instances = {i for t in load_transports().values() for i in t.instances}
    assumed = {i for i in instances if table.instance_factor(i).tag == Tag.ASSUMED}
    return Evidence(
        frozenset(kernel), home, frozenset(one_node), frozenset(serving), frozenset(arms), frozenset(assumed)
    )


def mode_name(graphs: bool) -> str:
    return "CUDA graphs" if graphs else "eager"


# size: the six fields that identify a configuration's evidence, each independent, as plain values
def notes_for(instance: str, engine: str, graphs: bool, arm: str, transport: str, nodes: int) -> list[str]:
    """Why a configuration is outside the measured evidence (empty: it is anchored)."""
    ev = evidence()
    out: list[str] = []
    if arm == "deepep" and nodes > 1 and (instance, transport) not in ev.kernel:
        where = ev.kernel_home.get(transport, "another instance")
        text = f"no measured {transport} kernel reference on {instance}: carried over from {where}"
        if instance in ev.assumed_factor:
            text += " with an assumed instance factor of 1"
        out.append(text + " (assumed)")
    if arm == "deepep" and nodes <= 1:
        from ...catalog.transports import get_transport

        library = get_transport(transport).library
        if (instance, library) not in ev.one_node:
            out.append(f"no measured one-node {library} kernel reference on {instance} (assumed)")
    if arm not in ev.serving_arms:
        out.append(f"no serving run in the references used the {arm} arm: modelled only (assumed)")
    if (engine, graphs) not in ev.serving:
        out.append(f"no measured {engine} {mode_name(graphs)} serving run: its engine constants are borrowed")
    return out


# size: the six fields that identify a configuration's evidence, each independent, as plain values
def anchored(instance: str, engine: str, graphs: bool, arm: str, transport: str, nodes: int) -> bool:
    return not notes_for(instance, engine, graphs, arm, transport, nodes)


def definition() -> str:
    """The --measured-only rule in one paragraph (command help, docs and the web page)."""
    return MEASURED_ONLY
