"""Rows read from files: frozen dataclasses that pydantic validates only when a row is new.

Building pydantic model classes and importing pydantic cost a CLI run about as much as
importing numpy, and the packaged catalogs are the same rows on every run. So a catalog row is a
stdlib dataclass: its constraints are `annotated_types` metadata in the annotations (which
pydantic honours), the cross-field rules are in `__post_init__`, and `Record.validate` runs a
pydantic `TypeAdapter`, built on first use, for rows that come from a file or a user. A packaged
catalog is validated when its text (or the code of its rows) changes and is read back from a
cache after that (`catalog/_toml.py`).

`copy()` is `dataclasses.replace` (the rules of `__post_init__` run again on the copy);
`as_dict()` is `dataclasses.asdict` with pydantic's `exclude` options.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from functools import cache
from operator import attrgetter
from typing import Any, ClassVar, TypeVar, dataclass_transform

R = TypeVar("R", bound="Record")
T = TypeVar("T", bound=type)


@dataclass_transform(frozen_default=True, kw_only_default=True)
def row(cls: T) -> T:
    """`@dataclass(frozen=True, kw_only=True)` for a `Record` subclass, its `repr`, `==` and hash
    inherited from `Record` rather than generated: Python 3.11 compiles each generated method
    with `exec`, and three fewer per row class are ~8 ms of every CLI start."""
    made = dataclass(frozen=True, kw_only=True, repr=False, eq=False)(cls)
    made._row_key = staticmethod(_key_getter(made))  # type: ignore[attr-defined]
    return made  # type: ignore[no-any-return]


class RecordError(ValueError):
    """A row that does not validate: the first problem, as a dotted field path and a message.

    `loc` is empty for a cross-field rule (a `__post_init__` check), which has no one field.
    """

    def __init__(self, loc: str, msg: str) -> None:
        super().__init__(f"{loc}: {msg}" if loc else msg)
        self.loc = loc
        self.msg = msg


class Record:
    """Base of the frozen dataclass rows (catalog rows, measured cells, kernel references)."""

    # pydantic reads the config of a stdlib dataclass from this attribute (a plain dict).
    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "forbid"}

    @classmethod
    def validate(cls: type[R], raw: Any, *, strict: bool = False) -> R:
        """`raw` (a mapping) checked against the annotations and rules; RecordError if not."""
        from pydantic import ValidationError

        try:
            return _adapter(cls).validate_python(raw, strict=strict)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first.get("loc", ()))
            msg = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
            raise RecordError(loc, " ".join(msg.split())) from None

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))  # type: ignore[arg-type]

    # What `@dataclass` would generate for a frozen row, written once (see `row`). Rows are
    # hashed on every evaluation (the physics caches what it derives from a model by its row),
    # so the key is a C-level getter `row` stores on the class.
    @staticmethod
    def _row_key(obj: Any) -> tuple[Any, ...]:
        return _key_getter(type(obj))(obj)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._row_key(self) == self._row_key(other)

    def __hash__(self) -> int:
        return hash(self._row_key(self))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _names(type(self), "repr"))
        return f"{type(self).__qualname__}({shown})"

    def copy(self: R, **update: Any) -> R:
        return replace(self, **update)  # type: ignore[type-var]

    def as_dict(
        self, exclude: set[str] | frozenset[str] = frozenset(), exclude_none: bool = False
    ) -> dict[str, Any]:
        """Plain (deep-copied) fields; nested rows become dicts too."""
        out = asdict(self)  # type: ignore[call-overload]
        for name in exclude:
            out.pop(name, None)
        if exclude_none:
            out = {k: v for k, v in out.items() if v is not None}
        return out


def constraint_names() -> dict[str, Any]:
    """The names the rows' annotations use for their constraints, for pydantic to resolve.

    The rows' modules name their constraints (`Annotated[int, Gt(0)]`) in string annotations
    and import `annotated_types` only for type checkers, so that reading a catalog imports
    nothing more; whatever builds a validator of a row (or of a model that embeds one, as the
    calibration profile does: `model_rebuild(_types_namespace=constraint_names())`) supplies
    the names from here.
    """
    import annotated_types

    return {name: getattr(annotated_types, name) for name in ("Ge", "Gt", "Le", "Lt")}


@cache
def _adapter(cls: type) -> Any:
    """The validator of one row class, built once. Pydantic resolves the string annotations
    in the namespace of the frame that builds the adapter, so the names are bound here."""
    from annotated_types import Ge, Gt, Le, Lt  # noqa: F401 - resolved by pydantic in this frame
    from pydantic import TypeAdapter

    return TypeAdapter(cls)


@cache
def _names(cls: type, role: str) -> tuple[str, ...]:
    """The fields of a row class that take part in `role` ("compare" or "repr")."""
    return tuple(f.name for f in fields(cls) if getattr(f, role))  # type: ignore[arg-type]


@cache
def _key_getter(cls: type) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of a row's compared fields (what the generated `__eq__` compares), read in C."""
    names = _names(cls, "compare")
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return attrgetter(*names) if names else lambda obj: ()
