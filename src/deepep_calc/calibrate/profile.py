"""Writing a calibration profile: built from the user's runs and fits, checked, serialised.

The profile's schema and its checks live in `fit/profile_records.py` and `fit/profile.py` (the
estimate reads profiles; this room only builds them). Everything the reader checks is checked
here too, in memory, before the file is written (`serialise`). This room reads and writes no
file: the face fingerprints the inputs (`io/profile.py: fingerprint`, over `input_files`) and
writes the bytes `serialise` returns (`io/safe_write.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import FileInputError, printable
from ..base.quantity import Q
from ..catalog.measured import Cell
from ..fit.profile import parse_profile, parse_toml, validate_document
from ..fit.profile_records import (
    CONSTANTS,
    KIND,
    MAX_PROFILE_BYTES,
    SCHEMA_VERSION,
    ConstantRecord,
    ConstantsRecord,
    InputRecord,
    KernelRecord,
    MultiCommRecord,
    PairRecord,
    Profile,
    QRecord,
    ResidualRecord,
)

if TYPE_CHECKING:
    from ..io.aiperf import AIPerfRun
    from .fit import EngineCalibration, FittedConstant, KernelCalibration
    from .runs import RunSet


def now_utc() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def to_toml(profile: Profile) -> str:
    """The profile as TOML text; parsed back and validated before it may reach the disk."""
    doc = profile.model_dump(mode="json", exclude_none=True, by_alias=True)
    header = (
        "# deepep-calc calibration profile: written by `deepep-calc calibrate`, read by\n"
        "# `--calibration FILE`. Cells are your measurements (replayed exactly); constants are\n"
        "# fitted to them (tag derived) or kept from the built-in fit (tag assumed).\n"
    )
    import tomli_w  # the TOML text only: the face writes it

    text = header + tomli_w.dumps(doc)
    shown = profile._name or "the profile"
    validate_document(parse_toml(text, shown), shown)  # the reader's own checks
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
    return data, parse_profile(profile._name, text, shown)


# Building ------------------------------------------------------------------------------------


def _opt(q: Q | None) -> QRecord | None:
    return QRecord.of(q) if q is not None else None


def _constant(c: FittedConstant) -> ConstantRecord:
    return ConstantRecord(**QRecord.of(c.q).model_dump(), builtin=c.builtin.scalar)


def _roles(rs: RunSet) -> list[tuple[str, AIPerfRun]]:
    """The runs in the order the profile records them: dense first, then DeepEP."""
    return [("dense", run) for run in rs.dense.values()] + [("deepep", run) for run in rs.deepep.values()]


def input_files(rs: RunSet, kernel_log: Path | None) -> list[Path]:
    """Every file the profile rests on, in its order: what the face fingerprints."""
    return [run.path for _, run in _roles(rs)] + ([kernel_log] if kernel_log is not None else [])


def input_records(
    rs: RunSet, kernel_log: Path | None, prints: Mapping[Path, tuple[str, int]]
) -> list[InputRecord]:
    """The record of every file the profile rests on; `prints` holds each one's sha256 and size
    (`io.profile.fingerprint` over `input_files`), read by the face."""
    out = []
    for role, run in _roles(rs):
        sha, size = prints[run.path]
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
        sha, size = prints[kernel_log]
        out.append(InputRecord(role="kernel-log", path=str(kernel_log), sha256=sha, size_bytes=size))
    return out


# size: six parameters because a calibrate run (and its tests) computes each part on its own; this joins them.
def build_profile(
    rs: RunSet,
    cells: list[Cell],
    calib: EngineCalibration,
    kernel_fit: KernelCalibration | None,
    inputs: list[InputRecord],
    name: str,
) -> Profile:
    """Assemble the profile; `name` (the output file name) labels its sources."""
    from ..base.version import __version__

    residuals = [  # the record keeps schema 3's key `arm` for the leg
        ResidualRecord.model_validate(
            {
                "cell": x.cell,
                "arm": x.leg,
                "quantity": x.quantity,
                "measured": x.measured,
                "model": x.model,
                "residual": x.residual,
            }
        )
        for x in calib.residuals
    ]
    warnings = list(rs.warnings) + (kernel_fit.warnings if kernel_fit is not None else [])
    profile = Profile(
        kind=KIND,
        schema_version=SCHEMA_VERSION,
        created_at=now_utc(),
        tool_version=f"deepep-calc {__version__}",
        scenario=rs.scenario,
        inputs=inputs,
        constants=ConstantsRecord(**{k: _constant(calib.constants[k]) for k in CONSTANTS}),
        cells=cells,
        kernel=_kernel_records(kernel_fit),
        pairs=_pair_records(rs),
        multicomm=_multicomm_records(rs),
        residuals=residuals,
        warnings=list(dict.fromkeys(warnings)),
    )
    profile._name = printable(name)
    return profile


def _kernel_records(kernel_fit: KernelCalibration | None) -> list[KernelRecord]:
    """The kernel-log refit as the profile stores it: none, or one record."""
    if kernel_fit is None:
        return []
    sh = kernel_fit.shape
    return [
        KernelRecord(
            transport=kernel_fit.transport,
            instance=kernel_fit.instance,
            ep=kernel_fit.ep,
            tokens=int(sh.tokens),
            hidden=sh.hidden,
            topk=sh.topk,
            experts=sh.experts,
            comms=kernel_fit.comms,
            qps=kernel_fit.qps,
            reference_lanes=kernel_fit.fit.reference_lanes,
            dispatch_alpha_us=QRecord.of(kernel_fit.fit.leaving_dispatch_us),
            combine_alpha_us=QRecord.of(kernel_fit.fit.leaving_combine_us),
            dispatch_beta_us=_constant(kernel_fit.dispatch),
            combine_beta_us=_constant(kernel_fit.combine),
            signal_ratio=QRecord.of(kernel_fit.fit.signal_ratio),
            dispatch_p50_us=_opt(kernel_fit.dispatch_p50),
            combine_p50_us=_opt(kernel_fit.combine_p50),
            total_p50_us=_opt(kernel_fit.total_p50),
        )
    ]


def _pair_records(rs: RunSet) -> list[PairRecord]:
    """Each DeepEP / dense pair's tax and ratios, in cell order."""
    return [
        PairRecord(
            cell=rs.cell_id(*key),
            tax_ms=QRecord.of(p.tax_ms),
            tax_spread_ms=_opt(p.tax_spread_ms),
            tax_from_per_user_ms=_opt(p.tax_from_per_user_ms),
            per_user_ratio=_opt(p.per_user_ratio),
            aggregate_ratio=_opt(p.aggregate_ratio),
            ttft_ratio=_opt(p.ttft_ratio),
            steady_aggregate_ratio=_opt(p.steady_aggregate_ratio),
        )
        for key, p in sorted(rs.pairs.items())
    ]


def _multicomm_records(rs: RunSet) -> list[MultiCommRecord]:
    """The EP_NUM_COMMS comparisons: what more communicators gained at each concurrency."""
    return [
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
