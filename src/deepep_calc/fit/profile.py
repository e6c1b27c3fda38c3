"""Reading a calibration profile: every check on what it holds, and the one way the estimate finds it.

A profile is a TOML file written by `deepep-calc calibrate` (`calibrate/profile.py`): the
scenario the runs describe, a sha256 fingerprint of every input file, the measured cells
(replayed exactly by `evaluate --calibration`), the fitted constants with their tags and the
built-in values they replace, residuals and warnings. It is a record as much as an input:
reading it tells you which files it rests on and how well the model reproduced them. It lives
with the fit because that is what it is: the user's runs turned into constants (the schema is
`fit/profile_records.py`). Its bytes are read and its inputs fingerprinted by `io/profile.py`
(`load_profile`); parsing and every check on the document are here (`validate_document`, shared with the
writer). `profile_of(r)` is the one way the estimate finds a scenario's profile, read by then.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..base.errors import FileInputError, InputError, printable
from ..base.quantity import MIN_POSITIVE
from ..catalog.measured import LEGS

if TYPE_CHECKING:
    from ..question.scenario import Resolved, Scenario
    from .profile_records import Profile

# The profile's schema (pydantic records) is imported by the functions that read a profile, so
# an evaluation with no --calibration never builds it (`profile_of` is on every evaluation).


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
        from .profile_records import MAX_PROFILE_NUMBER

        return where if not (math.isfinite(value) and abs(value) <= MAX_PROFILE_NUMBER) else None
    for key, item in items:
        found = _out_of_range(item, f"{where}.{key}" if where else str(key))
        if found is not None:
            return found
    return None


def parse_toml(text: str, shown: str) -> dict[str, Any]:
    """A profile's TOML text as a document; every parse failure one line naming `shown`."""
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FileInputError(shown, f"not a TOML file ({' '.join(str(exc).split())})") from None
    except RecursionError:
        raise FileInputError(shown, "not a TOML file (nested too deeply)") from None
    except ValueError:  # the only other parse failure: an integer beyond Python's digit limit
        raise FileInputError(shown, "not a TOML file (a number with thousands of digits)") from None


@lru_cache(maxsize=32)
def parse_profile(name: str, text: str, shown: str) -> Profile:
    """A profile's text, parsed and checked (once per name and content: the cache is keyed by
    the text itself, so two writes of one size inside one timestamp tick never serve the older)."""
    profile = validate_document(parse_toml(text, shown), shown)
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


def validate_document(doc: dict[str, Any], shown: str) -> Profile:
    """Every check a profile must pass, applied alike when reading and before writing one."""
    from pydantic import ValidationError

    from .profile_records import KIND, SCHEMA_VERSION, Profile

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
        # strict: TOML values are typed, so the string "NaN" in a number field is an error, not
        # nan. Validated as JSON text, where pydantic's strict mode takes an object for the
        # dataclass rows (`Scenario`, `Cell`) as it does for models; a TOML date becomes text.
        profile = Profile.model_validate_json(json.dumps(doc, default=str), strict=True)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(part) for part in err["loc"]) or "(top level)"
        raise FileInputError(shown, f"not a valid calibration profile: {loc}: {err['msg']}") from None
    _check_scenario(profile.scenario, shown)
    for i, cell in enumerate(profile.measured):
        for leg in LEGS:
            metrics = cell.leg(leg)
            for key, value in (metrics.as_dict() if metrics is not None else {}).items():
                if value is not None and value < MIN_POSITIVE:  # 1000 / 5e-324 is inf
                    raise FileInputError(
                        shown,
                        f"not a valid calibration profile: cells.{i}.{leg}.{key} = {value:g}; "
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
    from ..question.scenario import check_numbers

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


def profile_of(r: Resolved) -> Profile | Any | None:
    """The calibration profile a resolved scenario runs with, or None.

    The profile is read before the question is resolved (`io/inputs.py: resolve_files`) and
    travels in `Resolved.profile`; the estimate reads no file. A scenario that names one whose
    profile was never read is a caller's mistake, said loudly rather than run uncalibrated.
    """
    if r.profile is None and r.scenario.calibration is not None:
        raise RuntimeError(
            f"--calibration {r.scenario.calibration} was never read: resolve the scenario with "
            "deepep_calc.io.inputs.resolve_files (or pass profile=) so the estimate gets it"
        )
    return r.profile
