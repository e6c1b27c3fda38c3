"""Turn a user's AIPerf runs into one consistent calibration set: the scenario, A/B pairs, cells.

Why a separate step: before anything is fitted, the runs must describe one workload (same
model, ISL, OSL), every dense run must have its DeepEP twin at the same concurrency, and each
run must be placed at a concurrency and an EP_NUM_COMMS. Values the exports state are
authoritative (a flag that contradicts them is an error); values only a file name hints at
(engine, EP_NUM_COMMS) give way to an explicit flag, with a warning.

The measured cells built here are what `evaluate --calibration` reproduces exactly, and what
`calibrate.fit` solves the engine constants from.

Why one module: the checks (one engine, model and cluster; one run per cell; the shared ISL /
OSL), the placing of each run and the cells are one pass over the same runs, and a refusal
must name the files the placing saw; split, a check could judge runs the placing changed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..base.errors import FileInputError, InputError
from ..base.quantity import Q
from ..catalog.measured import Cell, LegMetrics
from ..catalog.model_catalog import load_models
from ..fit.pairs import OSL_TOLERANCE, ABPair, check_pair, derive_pair, group_by_concurrency, workload_length
from ..question.scenario import ModelReader, Resolved, Scenario, resolve

if TYPE_CHECKING:  # the runs are handed in parsed (io/aiperf): calibrate reads no file
    from ..io.aiperf import AIPerfRun

CELL_PREFIX = "your"
"""Ids of the user's cells read `your-c<concurrency>-k<EP_NUM_COMMS>`."""


@dataclass(frozen=True)
class MultiComm:
    """DeepEP at two EP_NUM_COMMS values, same concurrency: the multi-comm effect, derived."""

    concurrency: int
    comms_low: int
    comms_high: int
    aggregate_ratio: Q | None  # high / low
    per_user_ratio: Q | None  # high / low
    itl_ratio: Q  # low / high: how much shorter the step got


@dataclass
class RunSet:
    """The checked runs, keyed by where they sit, and the scenario they share."""

    scenario: Scenario
    resolved: Resolved
    dense: dict[int, AIPerfRun]  # by concurrency
    deepep: dict[tuple[int, int], AIPerfRun]  # by (concurrency, EP_NUM_COMMS)
    pairs: dict[tuple[int, int], ABPair]  # DeepEP key -> its A/B with the dense twin
    multicomm: list[MultiComm]
    warnings: list[str] = field(default_factory=list)

    def cell_id(self, concurrency: int, comms: int) -> str:
        return f"{CELL_PREFIX}-c{concurrency}-k{comms}"


def _warn(warnings: list[str], text: str) -> None:
    if text not in warnings:
        warnings.append(text)


def _refuse_unusable(runs: Sequence[AIPerfRun]) -> None:
    seen: dict[str, AIPerfRun] = {}
    for run in runs:
        key = str(run.path.resolve())
        if key in seen:
            raise FileInputError(run.path, "given twice; pass each run once")
        seen[key] = run
        if run.itl_ms is None:
            raise FileInputError(
                run.path,
                "no inter-token latency (not a streaming run?): nothing to fit; re-run AIPerf streaming",
            )


def _engine(runs: Sequence[AIPerfRun], base: Scenario, explicit: Collection[str], warnings: list[str]) -> str:
    hints = sorted({r.engine for r in runs if r.engine})
    if "engine" in explicit:
        if hints and hints != [base.engine.strip().lower()]:
            _warn(warnings, f"the file names say engine {', '.join(hints)}; using --engine {base.engine}")
        return base.engine
    if len(hints) > 1:
        says = " and ".join(hints)
        raise InputError(
            "--engine",
            None,
            f"the file names say {says}; calibrate the runs of one engine at a time "
            "(or pass --engine if a file name is wrong)",
        )
    if not hints:
        raise InputError(
            "--engine",
            None,
            "not given, and the file names do not say which engine ran; pass trtllm, vllm or sglang",
        )
    return hints[0]


def _model(runs: Sequence[AIPerfRun], base: Scenario, explicit: Collection[str], warnings: list[str]) -> str:
    named = [r for r in runs if r.model]
    for run in named[1:]:
        assert run.model is not None and named[0].model is not None
        if run.model.lower() != named[0].model.lower():
            raise InputError(
                "model",
                run.model,
                f"the same model in every run; {named[0].name} ran {named[0].model!r}, {run.name} differs",
            )
    exported = named[0].model if named else None
    presets = load_models()
    if "model" in explicit:
        spec = presets.get(base.model.strip().lower())
        if exported and spec is not None and spec.hf_id and spec.hf_id.lower() != exported.lower():
            _warn(warnings, f"the exports ran {exported!r} but --model {base.model} is {spec.hf_id!r}")
        return base.model
    if exported is None:
        raise InputError(
            "--model",
            None,
            "not given, and the exports do not name the model; pass a preset or a config.json",
        )
    for name, spec in presets.items():
        if spec.hf_id and spec.hf_id.lower() == exported.lower():
            return name
    raise InputError("--model", exported, "a preset name or config.json path (no preset has this HF id)")


def _shape_length(runs: Sequence[AIPerfRun], which: str, base: Scenario, explicit: Collection[str]) -> int:
    """The ISL or OSL every run shares: requested where exported, else the measured mean."""
    label, flag = which.upper(), f"--{which}"
    known = [(run, *workload_length(run, which)) for run in runs]
    known = [(run, v, exact) for run, v, exact in known if v is not None]

    def differ(a: float, a_exact: bool, b: float, b_exact: bool) -> bool:
        return a != b if a_exact and b_exact else abs(a - b) > OSL_TOLERANCE * max(a, b)

    for run, value, exact in known[1:]:
        ref, ref_value, ref_exact = known[0]
        if differ(ref_value, ref_exact, value, exact):
            raise InputError(
                which,
                value,
                f"the same {label} in every run; {ref.name} ran {ref_value:g}, {run.name} ran {value:g}",
            )
    exact_values = [v for _, v, exact in known if exact]
    value = exact_values[0] if exact_values else (known[0][1] if known else None)
    if which in explicit:
        given = getattr(base, which)
        if value is not None and differ(float(given), True, value, bool(exact_values)):
            raise InputError(flag, given, f"the {label} the runs used ({value:g})")
        return int(given)
    if value is None:
        raise InputError(flag, None, f"not given, and the exports state no {label}; pass {flag}")
    return round(value)


def _place(
    runs: Sequence[AIPerfRun], base: Scenario, explicit: Collection[str], deepep: bool, warnings: list[str]
) -> list[AIPerfRun]:
    """Give every run a concurrency (and DeepEP runs an EP_NUM_COMMS)."""
    out = []
    for run in runs:
        if run.concurrency is None and "concurrency" in explicit:
            run = replace(run, concurrency=base.concurrency)
        if deepep:
            if "comms" in explicit:
                if run.comms is not None and run.comms != base.comms:
                    says = f"the file name says EP_NUM_COMMS={run.comms}"
                    _warn(warnings, f"{run.name}: {says}; using --comms {base.comms}")
                run = replace(run, comms=base.comms)
            elif run.comms is None:
                _warn(
                    warnings,
                    f"{run.name}: EP_NUM_COMMS not stated (no 'epnc<K>' in the file name); "
                    f"assumed {base.comms}, pass --comms",
                )
                run = replace(run, comms=base.comms)
        out.append(run)
    return out


# What one calibration's runs must share, and how each run says it: (what, plural, reader,
# where it is read, the flag that overrides a wrong name).
_SHARED: tuple[tuple[str, str, Callable[[AIPerfRun], str | None], str, str], ...] = (
    ("engine", "engines", lambda r: r.engine, "file names", "--engine"),
    ("model", "models", lambda r: r.model, "exports", "--model"),
    ("cluster", "clusters", lambda r: r.instances, "file names", ""),
)


def _listed(names: list[str], most: int = 3) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def _one_workload(dense: Sequence[AIPerfRun], deepep: Sequence[AIPerfRun], explicit: Collection[str]) -> None:
    """Refuse runs of different engines, models or clusters given together, naming the files.

    A folder holding several engines' runs would otherwise fail later as two runs in one
    cell, which names the wrong thing; the cause is the mixture, and the files say which.
    An engine or model typed as a flag is the user's word over the file names (a warning
    follows in `_engine` / `_model`), so it is not checked here.
    """
    given = [("--dense", run) for run in dense] + [("--deepep", run) for run in deepep]
    for what, plural, read, where, override in _SHARED:
        if what in explicit:
            continue
        groups: dict[str, list[str]] = {}  # spelled as first seen; compared in any case
        flags: dict[str, set[str]] = {}
        spelled: dict[str, str] = {}
        for flag, run in given:
            value = read(run)
            if value:
                value = spelled.setdefault(value.lower(), value)
                groups.setdefault(value, []).append(run.name)
                flags.setdefault(value, set()).add(flag)
        if len(groups) < 2:
            continue
        used = sorted(set().union(*flags.values()))
        field = used[0] if len(used) == 1 else "--dense / --deepep"
        listed = "; ".join(f"{value}: {_listed(names)}" for value, names in sorted(groups.items()))
        says = " and ".join(sorted(groups))
        wrong = f" (or pass {override} if a {where[:-1]} is wrong)" if override else ""
        raise InputError(
            field,
            None,
            f"the runs of one {what}, but the {where} say {says}: these mix {len(groups)} {plural} "
            f"({listed}); calibrate one {what} at a time: point --dense and --deepep at that "
            f"{what}'s files only{wrong}",
        )


def _differences(runs: Sequence[AIPerfRun]) -> str:
    """What two runs placed in one cell differ in, as file names state it ('' when nothing)."""
    out = []
    readers = [(what, read) for what, _, read, _, _ in _SHARED]
    for what, read in (*readers, ("ISL", lambda r: str(r.isl_requested or "") or None)):
        values = sorted({v for v in (read(r) for r in runs) if v})
        if len(values) > 1:
            out.append(f"{what} {' vs '.join(values)}")
    return "; they differ in " + ", ".join(out) if out else ""


def _one_per_slot(
    groups: dict[Any, list[AIPerfRun]], what: str, where: Callable[[Any], str]
) -> dict[Any, AIPerfRun]:
    for key, runs in groups.items():
        if len(runs) > 1:
            names = ", ".join(r.name for r in runs)
            raise InputError(
                what,
                None,
                f"one run per cell, but {len(runs)} runs sit at {where(key)} ({names}){_differences(runs)}; "
                "keep one of them",
            )
    return {key: runs[0] for key, runs in groups.items()}


def _multicomm(deepep: dict[tuple[int, int], AIPerfRun]) -> list[MultiComm]:
    out = []
    for conc in sorted({c for c, _ in deepep}):
        ks = sorted(k for c, k in deepep if c == conc)
        if len(ks) < 2:
            continue
        lo, hi = deepep[(conc, ks[0])], deepep[(conc, ks[-1])]
        assert lo.itl_ms is not None and hi.itl_ms is not None
        ratios = [
            (a / b).as_("x") if a is not None and b is not None else None
            for a, b in ((hi.aggregate_tok_s, lo.aggregate_tok_s), (hi.per_user_tok_s, lo.per_user_tok_s))
        ]
        out.append(MultiComm(conc, ks[0], ks[-1], *ratios, (lo.itl_ms / hi.itl_ms).as_("x")))
    return out


def assemble(
    dense_runs: Sequence[AIPerfRun],
    deepep_runs: Sequence[AIPerfRun],
    base: Scenario,
    explicit: Collection[str] = (),
    read_model: ModelReader | None = None,
) -> RunSet:
    """Check the runs against each other and the flags; return them placed, paired and resolved.

    `explicit` names the scenario fields the user typed (the rest are defaults the exports may
    replace). `read_model` reads a config.json the scenario names (the face hands in
    `io.hf_config.load_hf_config`), at the point the model is checked, so its errors come where
    they always did; the spec read is kept in `resolved.models` for the fit. Raises InputError /
    FileInputError on anything that would make the fit a comparison of different workloads.
    """
    _refuse_flags(deepep_runs, base)
    _refuse_unusable([*dense_runs, *deepep_runs])
    _one_workload(dense_runs, deepep_runs, explicit)
    warnings: list[str] = []
    dense_list = _place(dense_runs, base, explicit, False, warnings)
    deepep_list = _place(deepep_runs, base, explicit, True, warnings)

    dense = _one_per_slot(group_by_concurrency(dense_list), "--dense", lambda c: f"concurrency {c}")
    deepep = _deepep_slots(deepep_list)
    pairs = _pair_up(dense, deepep, deepep_list, warnings)
    scenario = base.copy(**_shared_fields(dense, deepep, base, explicit, warnings))
    resolved = resolve(scenario, read_model=read_model)  # calibration is None: no profile to read
    if resolved.gpus_per_node != resolved.instance.gpus_per_node:
        _warn(
            warnings,
            f"--gpus-per-node {resolved.gpus_per_node}: measured cells are replayed only at the instance's "
            f"full {resolved.instance.gpus_per_node} GPUs; the fitted constants still apply",
        )
    return RunSet(scenario, resolved, dense, deepep, pairs, _multicomm(deepep), warnings)


def _refuse_flags(deepep_runs: Sequence[AIPerfRun], base: Scenario) -> None:
    """Refuse a calibration with no DeepEP run, or flags it cannot honour (a TP alternative, a
    profile to read)."""
    if not deepep_runs:
        raise InputError("--deepep", None, "give at least one DeepEP run (an AIPerf export file or folder)")
    if base.alternative != "allgather":
        raise InputError(
            "--alternative", base.alternative, "allgather (the dense runs are read as the allgather arm)"
        )
    if base.calibration is not None:
        raise InputError("--calibration", base.calibration, "none: calibrate writes a profile, it reads none")


def _deepep_slots(deepep_list: list[AIPerfRun]) -> dict[tuple[int, int], AIPerfRun]:
    """The DeepEP runs by (concurrency, EP_NUM_COMMS), refusing two runs in one slot."""
    deepep: dict[tuple[int, int], AIPerfRun] = {}
    for conc, group in group_by_concurrency(deepep_list).items():
        by_k: dict[int, list[AIPerfRun]] = {}
        for run in group:
            assert run.comms is not None
            by_k.setdefault(run.comms, []).append(run)
        slots = _one_per_slot(by_k, "--deepep", lambda k, c=conc: f"concurrency {c} with EP_NUM_COMMS={k}")
        for k, one in slots.items():
            deepep[(conc, k)] = one
    return deepep


def _pair_up(
    dense: dict[int, AIPerfRun],
    deepep: dict[tuple[int, int], AIPerfRun],
    deepep_list: list[AIPerfRun],
    warnings: list[str],
) -> dict[tuple[int, int], ABPair]:
    """Each DeepEP run paired with the dense run at its concurrency; every dense run needs one.

    The warnings of each pair, and of each DeepEP run left unpaired, go to `warnings`.
    """
    pairs: dict[tuple[int, int], ABPair] = {}
    for conc, d in dense.items():
        twins = [key for key in deepep if key[0] == conc]
        if not twins:  # an A/B whose arms ran different concurrencies: check_pair names it
            check_pair(d, deepep_list[0])
            theirs = ", ".join(str(c) for c in sorted({c for c, _ in deepep}))
            raise InputError(
                "--deepep",
                None,
                f"a DeepEP run at the concurrency of every dense run; the dense run {d.name} ran "
                f"concurrency {conc}, the DeepEP runs ran {theirs}",
            )
        for key in twins:
            pair = derive_pair(d, deepep[key])
            pairs[key] = pair
            for w in pair.warnings:
                _warn(warnings, w)
    for key, run in deepep.items():
        if key not in pairs:
            for w in run.warnings:
                _warn(warnings, f"DeepEP run ({run.name}): {w}")
    return pairs


def _shared_fields(
    dense: dict[int, AIPerfRun],
    deepep: dict[tuple[int, int], AIPerfRun],
    base: Scenario,
    explicit: Collection[str],
    warnings: list[str],
) -> dict[str, Any]:
    """The scenario fields the runs settle (engine, model, ISL, OSL, concurrency, comms), the
    typed flags checked against them."""
    runs = [*dense.values(), *deepep.values()]
    shared: dict[str, Any] = {
        "engine": _engine(runs, base, explicit, warnings),
        "model": _model(runs, base, explicit, warnings),
        "isl": _shape_length(runs, "isl", base, explicit),
        "osl": _shape_length(runs, "osl", base, explicit),
    }
    concs = sorted({c for c, _ in deepep})
    if "concurrency" in explicit and base.concurrency not in concs:
        raise InputError("--concurrency", base.concurrency, f"one of the runs' concurrencies ({concs})")
    shared["concurrency"] = base.concurrency if "concurrency" in explicit else concs[0]
    if "comms" not in explicit:  # the scenario names one cell: the first at its concurrency
        shared["comms"] = min(k for c, k in deepep if c == shared["concurrency"])
    return shared


def _metrics(run: AIPerfRun) -> LegMetrics:
    def positive(q: Q | None) -> float | None:
        return q.scalar if q is not None and q.scalar > 0 else None

    return LegMetrics(
        aggregate_tok_s=positive(run.aggregate_tok_s),
        per_user_tok_s=positive(run.per_user_tok_s),
        itl_ms=positive(run.itl_ms),
        ttft_p50_ms=positive(run.ttft_p50_ms),
        steady_aggregate_tok_s=positive(run.steady_aggregate_tok_s),
    )


def _cold_start(runs: list[AIPerfRun]) -> str:
    """The cell's note on the runs that waited for a cold start (io/aiperf/cold_start.py)."""
    return "; ".join(r.steady_aggregate_tok_s.source for r in runs if r.steady_aggregate_tok_s is not None)


def build_cells(rs: RunSet) -> list[Cell]:
    """One measured cell per DeepEP run, carrying its dense twin when there is one."""
    s, r = rs.scenario, rs.resolved
    cells = []
    for (conc, k), run in sorted(rs.deepep.items()):
        twin = rs.dense.get(conc)
        source = f"your DeepEP run {run.source}" + (f"; your dense run {twin.source}" if twin else "")
        cells.append(
            Cell(
                id=rs.cell_id(conc, k),
                role="calibration",
                title=f"your {r.engine.name} runs: DeepEP EP_NUM_COMMS={k}, concurrency {conc}"
                + (" with its dense twin" if twin else ""),
                engine=r.engine.name,
                transport=r.transport.name,
                comms=k,
                concurrency=conc,
                isl=s.isl,
                osl=s.osl,
                cuda_graphs=s.cuda_graphs,
                max_qps=s.max_qps,
                source=source,
                cold_start=_cold_start([run, *([twin] if twin else [])]),
                deepep=_metrics(run),
                allgather=_metrics(twin) if twin else None,
                model=s.model.strip().lower(),
                instance=r.instance.name,
                nodes=s.nodes,
            )
        )
    return cells
