"""The calibration profile: what `calibrate` writes and every face of the tool reads back.

A profile is a TOML file holding the scenario the runs describe, a sha256 fingerprint of every
input file, the measured cells (replayed exactly by `evaluate --calibration`), the fitted
constants with their tags and the built-in values they replace, residuals and warnings. It is
a record as much as an input: reading it tells you which files it rests on and how well the
model reproduced them.

`Profile` implements the hooks the core calls: `cells()` (measured cells, consulted before the
catalog's), `apply(table, r)` (the fitted table with the profile's engine constants and
refitted transport in place) and `kernel_fit(transport)` (a transport refitted to the user's
kernel log, or None).
"""

from __future__ import annotations

import hashlib
import math
import tomllib
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from ..catalog.measured import Cell
from ..errors import FileInputError, InputError, printable
from ..fit.engines import ENGINE_FIELDS
from ..fit.table import Table, TransportFit
from ..physics.deepep import KernelShape
from ..physics.step import EngineConstants
from ..quantity import Q, Tag
from ..scenario import Resolved, Scenario
from .aiperf import MIN_POSITIVE, read_text_file, stat_path

if TYPE_CHECKING:
    from .fit import EngineCalibration, FittedConstant, KernelCalibration
    from .runs import RunSet

SCHEMA_VERSION = 2  # 2: the CPU / GPU step model's constants (launch, step, proxy, TTFT)
KIND = "deepep-calc calibration profile"
MAX_PROFILE_BYTES = 4 * 1024 * 1024
MAX_PROFILE_NUMBER = 1e12
"""No figure a profile holds (ms, us, tok/s, bytes, counts) comes near this; beyond it is damage."""
CONSTANTS = ENGINE_FIELDS

_STRICT = ConfigDict(extra="forbid", frozen=True)


def _check_physical(record: QRecord | None, unit: str, name: str) -> None:
    """A constant the physics adds to others must carry its unit and be >= 0 (the fit pins at 0).

    A hand-edited unit would otherwise surface as a unit-mismatch crash deep in the step model,
    and a negative latency as negative throughput.
    """
    if record is None:
        return
    if record.unit != unit:
        raise ValueError(f"{name} is in {record.unit!r}; expected {unit!r}")
    if record.value < 0:
        raise ValueError(f"{name} is {record.value:g}; expected at least 0")


class QRecord(BaseModel):
    """A `Q` as stored: the keys of `Q.to_json()`."""

    model_config = _STRICT

    value: float
    unit: str
    tag: Literal["measured", "derived", "assumed"]
    source: str

    @classmethod
    def of(cls, q: Q) -> QRecord:
        return cls(value=q.scalar, unit=q.unit, tag=str(q.tag), source=q.source)  # type: ignore[arg-type]

    def q(self, label: str = "") -> Q:
        source = f"{label}: {self.source}" if label else self.source
        return Q(self.value, self.unit, Tag.parse(self.tag), source)


class ConstantRecord(QRecord):
    """A fitted constant (its source says what pinned it) and the built-in value it replaces."""

    builtin: float


class InputRecord(BaseModel):
    model_config = _STRICT

    role: Literal["dense", "deepep", "kernel-log"]
    path: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    size_bytes: int = Field(ge=0)
    benchmark_id: str | None = None
    aiperf_version: str | None = None
    schema_version: str | None = None
    export_format: str | None = None
    concurrency: int | None = None
    comms: int | None = None


class KernelRecord(BaseModel):
    """One transport refitted to a kernel log (beta per remote selection, alpha prior), and the
    log's medians at its shape."""

    model_config = _STRICT

    transport: str
    instance: str
    ep: int = Field(gt=0)
    tokens: int = Field(gt=0)
    hidden: int = Field(gt=0)
    topk: int = Field(gt=0)
    experts: int = Field(gt=0)
    comms: int = Field(gt=0)
    qps: int = Field(gt=0)
    reference_lanes: float = Field(gt=0)
    dispatch_alpha_us: QRecord
    combine_alpha_us: QRecord
    dispatch_beta_us: ConstantRecord
    combine_beta_us: ConstantRecord
    dispatch_p50_us: QRecord | None = None
    combine_p50_us: QRecord | None = None
    total_p50_us: QRecord | None = None

    @model_validator(mode="after")
    def _physical(self) -> KernelRecord:
        for name in (
            "dispatch_alpha_us",
            "combine_alpha_us",
            "dispatch_beta_us",
            "combine_beta_us",
            "dispatch_p50_us",
            "combine_p50_us",
            "total_p50_us",
        ):
            _check_physical(getattr(self, name), "us", name)
        return self


class PairRecord(BaseModel):
    """The derived A/B figures of one cell (DeepEP run and its dense twin)."""

    model_config = _STRICT

    cell: str
    tax_ms: QRecord
    tax_spread_ms: QRecord | None = None
    tax_from_per_user_ms: QRecord | None = None
    per_user_ratio: QRecord | None = None
    aggregate_ratio: QRecord | None = None
    ttft_ratio: QRecord | None = None


class MultiCommRecord(BaseModel):
    model_config = _STRICT

    concurrency: int
    comms_low: int
    comms_high: int
    itl_ratio: QRecord
    aggregate_ratio: QRecord | None = None
    per_user_ratio: QRecord | None = None


class ConstantsRecord(BaseModel):
    """The engine constants of the step model (physics/step.py `EngineConstants`)."""

    model_config = _STRICT

    launch_us: ConstantRecord
    step_us: ConstantRecord
    proxy_fixed_us: ConstantRecord
    proxy_lane_us: ConstantRecord
    ttft_steps: ConstantRecord

    def get(self, name: str) -> ConstantRecord:
        return getattr(self, name)

    @model_validator(mode="after")
    def _physical(self) -> ConstantsRecord:
        for name in CONSTANTS:
            _check_physical(self.get(name), "steps" if name == "ttft_steps" else "us", name)
        return self


class ResidualRecord(BaseModel):
    model_config = _STRICT

    cell: str
    arm: str
    quantity: Literal["step_ms", "tax_ms", "ttft_ms"]
    measured: float
    model: float
    residual: float


class Profile(BaseModel):
    """A calibration profile (schema 1). Field names are the TOML keys."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    kind: Literal["deepep-calc calibration profile"]
    schema_version: Literal[2]
    created_at: str
    tool_version: str
    scenario: Scenario
    inputs: list[InputRecord] = Field(min_length=1)
    constants: ConstantsRecord
    measured: list[Cell] = Field(alias="cells", min_length=1)  # `cells()` is the hook's method
    kernel: list[KernelRecord] = Field(default_factory=list, max_length=1)
    pairs: list[PairRecord] = Field(default_factory=list)
    multicomm: list[MultiCommRecord] = Field(default_factory=list)
    residuals: list[ResidualRecord] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    _name: str = PrivateAttr("")  # the file name, set when written or read

    # hooks the core calls ---------------------------------------------------------------------
    @property
    def label(self) -> str:
        """How sources name this profile: by its file name."""
        return f"profile {self._name}" if self._name else "calibration profile"

    @property
    def engine(self) -> str:
        return self.measured[0].engine

    def cells(self) -> list[Cell]:
        """The user's cells, their source prefixed with this profile's file name."""
        return [c.model_copy(update={"source": f"{self.label}: {c.source}"}) for c in self.measured]

    @property
    def graphs(self) -> bool:
        return self.measured[0].cuda_graphs

    def engine_constants(self) -> EngineConstants:
        return EngineConstants(**{k: self.constants.get(k).q(self.label) for k in CONSTANTS})

    def apply(self, table: Table, r: Resolved) -> Table:
        """The table with this profile's engine constants (its engine and graph mode) and its
        refitted transport in place."""
        if r.engine.name != self.engine:
            raise InputError(
                "--calibration",
                self._name,
                f"--engine {self.engine}: the profile's constants were fitted on {self.engine} runs, "
                f"not {r.engine.name}",
            )
        table = table.with_engine(self.engine, self.graphs, self.engine_constants())
        for k in self.kernel:
            table = table.with_transport(k.transport, self._kernel_fit(k))
        return table

    def _kernel_fit(self, k: KernelRecord) -> TransportFit:
        return TransportFit(
            k.dispatch_alpha_us.q(self.label),
            k.combine_alpha_us.q(self.label),
            k.dispatch_beta_us.q(self.label),
            k.combine_beta_us.q(self.label),
            k.reference_lanes,
        )

    def kernel_fit(self, transport: str) -> TransportFit | None:
        """The transport refitted to this profile's kernel log, else None."""
        for k in self.kernel:
            if k.transport == transport:
                return self._kernel_fit(k)
        return None

    def kernel_measured(
        self, transport: str, instance: str, ep: int, shape: KernelShape, comms: int, qps: int
    ) -> dict[str, Q] | None:
        """The log's own medians (measured) when a kernel query is exactly the logged one."""
        for k in self.kernel:
            if (
                (k.transport, k.instance, k.ep, k.comms, k.qps) == (transport, instance, ep, comms, qps)
                and (k.tokens, k.hidden) == (shape.tokens, shape.hidden)
                and (k.topk, k.experts) == (shape.topk, shape.experts)
                and shape.dispatch_dtype == "fp8"
                and k.dispatch_p50_us is not None
                and k.combine_p50_us is not None
            ):
                d, c = k.dispatch_p50_us.q(self.label), k.combine_p50_us.q(self.label)
                return {"dispatch_us": d, "combine_us": c, "total_us": (d + c).as_("us")}
        return None


# Writing -------------------------------------------------------------------------------------


def fingerprint(path: Path) -> tuple[str, int]:
    """sha256 and size of a file, read in chunks (a profile records exactly what it rests on)."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def now_utc() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def to_toml(profile: Profile) -> str:
    """The profile as TOML text; parsed back and validated before it may reach the disk."""
    import tomli_w

    doc = profile.model_dump(mode="json", exclude_none=True, by_alias=True)
    header = (
        "# deepep-calc calibration profile: written by `deepep-calc calibrate`, read by\n"
        "# `--calibration FILE`. Cells are your measurements (replayed exactly); constants are\n"
        "# fitted to them (tag derived) or kept from the built-in fit (tag assumed).\n"
    )
    text = header + tomli_w.dumps(doc)
    _validated(tomllib.loads(text), profile._name or "the profile")  # the reader's own checks
    return text


def serialise(profile: Profile, shown: str) -> tuple[bytes, Profile]:
    """The profile file's bytes and the profile as `--calibration` will read them back.

    Everything the reader checks is checked here, in memory, before anything touches the
    target: the size limit (a profile the reader would refuse is never written), the schema,
    and a full round trip through the reader's own parser. `shown` names the target in errors.
    """
    text = to_toml(profile)
    data = text.encode("utf-8")
    if len(data) > MAX_PROFILE_BYTES:
        raise FileInputError(
            shown,
            f"the profile would be {len(data) / 1e6:.1f} MB, over the "
            f"{MAX_PROFILE_BYTES // (1024 * 1024)} MB a profile may hold; nothing was written "
            "(an input carries unusually long text, e.g. a benchmark id or a model name)",
            "-o",
        )
    return data, _load(profile._name, text, shown)


def write_text_atomic(path: Path, text: str, force: bool) -> None:
    """Write a profile's text by the safe-write rules (`deepep_calc.files`): never half a profile."""
    from ..files import write_atomic

    write_atomic(path, text, "-o", overwrite=force)


# Reading -------------------------------------------------------------------------------------


def load_profile(path: str | Path) -> Profile:
    """Read a profile (parsed once per name and content); one-line errors otherwise.

    The cache is keyed by the text itself, not by mtime and size: two writes of the same size
    inside one timestamp tick must not serve the older profile. Symbolic links are followed.
    """
    p = Path(path).expanduser()
    try:
        p.stat()
    except FileNotFoundError:
        dangling = "; it is a symbolic link to a missing target" if p.is_symlink() else ""
        raise FileInputError(
            p, f"no such file (expected a profile written by `deepep-calc calibrate`){dangling}"
        ) from None
    except (OSError, ValueError):
        stat_path(p)  # raises the one-line reason (symlink loop, bad name, permission)
        raise
    if p.is_dir():
        raise FileInputError(p, "is a directory; expected a calibration profile (.toml)")
    text = read_text_file(p, MAX_PROFILE_BYTES)
    profile = _load(p.resolve().name, text, str(path))
    verify_inputs(profile, p.resolve().parent)
    return profile


def _out_of_range(value: object, where: str = "") -> str | None:
    """The dotted key of the first number a profile cannot hold (NaN, inf, beyond 1e12), if any.

    TOML can spell nan and inf, and a hand-edited profile can hold any magnitude; either would
    flow unchecked into every number `--calibration` produces.
    """
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return where if not (math.isfinite(value) and abs(value) <= MAX_PROFILE_NUMBER) else None
    for key, item in items:
        found = _out_of_range(item, f"{where}.{key}" if where else str(key))
        if found is not None:
            return found
    return None


@lru_cache(maxsize=32)
def _load(name: str, text: str, shown: str) -> Profile:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FileInputError(shown, f"not a TOML file ({' '.join(str(exc).split())})") from None
    except RecursionError:
        raise FileInputError(shown, "not a TOML file (nested too deeply)") from None
    except ValueError:  # the only other parse failure: an integer beyond Python's digit limit
        raise FileInputError(shown, "not a TOML file (a number with thousands of digits)") from None
    profile = _validated(doc, shown)
    profile._name = printable(name)
    return profile


def _escaped(value: Any) -> Any:
    """Every string of a parsed profile with control characters escaped: its names, ids and
    sources reach the terminal (`evaluate`, `kernel`, the calibrate summary), and a shared
    profile must not be able to drive it."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {k: _escaped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_escaped(v) for v in value]
    return value


def _validated(doc: dict[str, Any], shown: str) -> Profile:
    """Every check a profile must pass, applied alike when reading and before writing one."""
    doc = _escaped(doc)
    if doc.get("kind") != KIND or "schema_version" not in doc:
        raise FileInputError(
            shown, "not a deepep-calc calibration profile (no kind / schema_version at the top)"
        )
    if doc["schema_version"] != SCHEMA_VERSION:
        raise FileInputError(
            shown,
            f"schema_version {doc['schema_version']!r} is not supported (this deepep-calc reads "
            f"{SCHEMA_VERSION}); re-run deepep-calc calibrate",
        )
    bad = _out_of_range(doc)
    if bad is not None:
        raise FileInputError(
            shown, f"not a valid calibration profile: {bad} is not a finite number within +-1e12"
        )
    inputs = doc.get("inputs")
    if isinstance(inputs, list):
        for i, item in enumerate(inputs):
            missing = [k for k in ("sha256", "size_bytes") if not isinstance(item, dict) or k not in item]
            if missing:
                raise FileInputError(
                    shown,
                    f"input {i + 1} has no fingerprint ({', '.join(missing)} missing), so the profile "
                    "cannot say what it rests on; re-run deepep-calc calibrate",
                )
    try:
        # strict: TOML values are typed, so the string "NaN" in a number field is an error, not nan
        profile = Profile.model_validate(doc, strict=True)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(part) for part in err["loc"]) or "(top level)"
        raise FileInputError(shown, f"not a valid calibration profile: {loc}: {err['msg']}") from None
    _check_scenario(profile.scenario, shown)
    for i, cell in enumerate(profile.measured):
        for arm in ("deepep", "allgather", "versus"):
            metrics = cell.arm(arm)
            for key, value in (metrics.model_dump() if metrics is not None else {}).items():
                if value is not None and value < MIN_POSITIVE:  # 1000 / 5e-324 is inf
                    raise FileInputError(
                        shown,
                        f"not a valid calibration profile: cells.{i}.{arm}.{key} = {value:g}; "
                        f"expected at least {MIN_POSITIVE:g}",
                    )
    return profile


def _check_scenario(s: Scenario, shown: str) -> None:
    """The profile's [scenario] obeys the rules a typed scenario does (nodes -5 is no scenario).

    Its numbers take the CLI's checks and its instance, engine and transport must be catalog
    rows; the model is not re-read here (a config.json path may have moved since calibration).
    """
    from ..catalog.engines import get_engine
    from ..catalog.hardware import get_instance
    from ..catalog.transports import get_transport
    from ..scenario import check_numbers

    try:
        check_numbers(s)
        get_instance(s.instance)
        get_engine(s.engine)
        transport = get_transport(s.transport)
        if s.instance.strip().lower() not in transport.instances:
            raise InputError("--transport", s.transport, f"a transport available on {s.instance}")
    except InputError as exc:
        key = (exc.field or "").lstrip("-").replace("-", "_")
        raise FileInputError(
            shown,
            f"not a valid calibration profile: scenario.{key} = {exc.value!r} is not allowed; "
            f"expected {exc.allowed}",
            field=f"scenario.{key}",
        ) from None


def verify_inputs(profile: Profile, folder: Path) -> None:
    """Check the recorded fingerprint of every input that can be found again.

    A profile's measured cells are only as good as the files they were read from. When such a
    file is present again (at its recorded path, or beside the profile) with other contents,
    the profile no longer describes it: refuse, naming the file, rather than replay stale
    measurements as "measured". Files that are gone are fine: profiles travel without inputs.
    """
    for item in profile.inputs:
        recorded = Path(item.path)
        places = (
            [recorded] if recorded.is_absolute() else [recorded, folder / recorded, folder / recorded.name]
        )
        seen: list[tuple[Path, str]] = []
        for place in dict.fromkeys(places):
            found = _fingerprint_if_file(place)
            if found is None:
                continue
            if found == (item.sha256, item.size_bytes):
                seen = []
                break
            seen.append((place, found[0]))
        if seen:
            place, digest = seen[0]
            raise FileInputError(
                profile._name or "the profile",
                f"its {item.role} input {place} has changed since calibration (sha256 "
                f"{item.sha256[:12]}... recorded, {digest[:12]}... now): re-run deepep-calc calibrate "
                "on the current files, or restore the originals",
                field="inputs",
            )


@lru_cache(maxsize=256)
def _fingerprint_cached(path: str, mtime_ns: int, size: int) -> tuple[str, int]:
    return fingerprint(Path(path))


def _fingerprint_if_file(path: Path) -> tuple[str, int] | None:
    """sha256 and size of a regular file (cached by path, mtime and size), else None."""
    try:
        st = path.stat()
        if not path.is_file():
            return None
        return _fingerprint_cached(str(path.resolve()), st.st_mtime_ns, st.st_size)
    except (OSError, ValueError):
        return None


# Building ------------------------------------------------------------------------------------


def _opt(q: Q | None) -> QRecord | None:
    return QRecord.of(q) if q is not None else None


def _constant(c: FittedConstant) -> ConstantRecord:
    return ConstantRecord(**QRecord.of(c.q).model_dump(), builtin=c.builtin.scalar)


def input_records(rs: RunSet, kernel_log: Path | None) -> list[InputRecord]:
    """Fingerprints of every file the profile rests on."""
    out = []
    runs = [("dense", run) for run in rs.dense.values()] + [("deepep", run) for run in rs.deepep.values()]
    for role, run in runs:
        sha, size = fingerprint(run.path)
        out.append(
            InputRecord(
                role=role,  # type: ignore[arg-type]
                path=str(run.path),
                sha256=sha,
                size_bytes=size,
                benchmark_id=run.benchmark_id,
                aiperf_version=run.aiperf_version,
                schema_version=run.schema_version,
                export_format=run.export_format,
                concurrency=run.concurrency,
                comms=run.comms if role == "deepep" else None,
            )
        )
    if kernel_log is not None:
        sha, size = fingerprint(kernel_log)
        out.append(InputRecord(role="kernel-log", path=str(kernel_log), sha256=sha, size_bytes=size))
    return out


def build_profile(
    rs: RunSet,
    cells: list[Cell],
    calib: EngineCalibration,
    alpha: KernelCalibration | None,
    inputs: list[InputRecord],
    name: str,
) -> Profile:
    """Assemble the profile; `name` (the output file name) labels its sources."""
    from .. import __version__

    kernel = []
    if alpha is not None:
        sh = alpha.shape
        kernel.append(
            KernelRecord(
                transport=alpha.transport,
                instance=alpha.instance,
                ep=alpha.ep,
                tokens=int(sh.tokens),
                hidden=sh.hidden,
                topk=sh.topk,
                experts=sh.experts,
                comms=alpha.comms,
                qps=alpha.qps,
                reference_lanes=alpha.fit.reference_lanes,
                dispatch_alpha_us=QRecord.of(alpha.fit.alpha_dispatch_us),
                combine_alpha_us=QRecord.of(alpha.fit.alpha_combine_us),
                dispatch_beta_us=_constant(alpha.dispatch),
                combine_beta_us=_constant(alpha.combine),
                dispatch_p50_us=_opt(alpha.dispatch_p50),
                combine_p50_us=_opt(alpha.combine_p50),
                total_p50_us=_opt(alpha.total_p50),
            )
        )
    pairs = [
        PairRecord(
            cell=rs.cell_id(*key),
            tax_ms=QRecord.of(p.tax_ms),
            tax_spread_ms=_opt(p.tax_spread_ms),
            tax_from_per_user_ms=_opt(p.tax_from_per_user_ms),
            per_user_ratio=_opt(p.per_user_ratio),
            aggregate_ratio=_opt(p.aggregate_ratio),
            ttft_ratio=_opt(p.ttft_ratio),
        )
        for key, p in sorted(rs.pairs.items())
    ]
    multicomm = [
        MultiCommRecord(
            concurrency=m.concurrency,
            comms_low=m.comms_low,
            comms_high=m.comms_high,
            itl_ratio=QRecord.of(m.itl_ratio),
            aggregate_ratio=_opt(m.aggregate_ratio),
            per_user_ratio=_opt(m.per_user_ratio),
        )
        for m in rs.multicomm
    ]
    residuals = [ResidualRecord.model_validate({**vars(x), "residual": x.residual}) for x in calib.residuals]
    warnings = list(rs.warnings) + (alpha.warnings if alpha is not None else [])
    profile = Profile(
        kind=KIND,
        schema_version=SCHEMA_VERSION,
        created_at=now_utc(),
        tool_version=f"deepep-calc {__version__}",
        scenario=rs.scenario,
        inputs=inputs,
        constants=ConstantsRecord(**{k: _constant(calib.constants[k]) for k in CONSTANTS}),
        cells=cells,
        kernel=kernel,
        pairs=pairs,
        multicomm=multicomm,
        residuals=residuals,
        warnings=list(dict.fromkeys(warnings)),
    )
    profile._name = printable(name)
    return profile
