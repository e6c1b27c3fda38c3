"""Shell completion of catalog names: presets, instances, engines, transports.

click completes flags and subcommands by itself (`_DEEPEP_CALC_COMPLETE=bash_source`, see the
README); these callbacks add the values. The names are read from the catalogs, so a row added
to a TOML file completes without a code change. A `--model` value that looks like a path
falls back to the shell's file completion, since a config.json path is accepted there too.
Comma-separated lists (`sweep --instance p5,p5en`) complete their last item.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from click.shell_completion import CompletionItem

Names = Callable[[], Iterable[tuple[str, str]]]


def _presets() -> Iterable[tuple[str, str]]:
    from ..catalog.model_catalog import load_models

    return [(name, m.hf_id or m.family) for name, m in load_models().items()]


def _instances() -> Iterable[tuple[str, str]]:
    from ..catalog.hardware import load_instances

    return [(name, f"{i.gpu} x{i.gpus_per_node}, {i.fabric.upper()}") for name, i in load_instances().items()]


def _engines() -> Iterable[tuple[str, str]]:
    from ..catalog.engines import load_engines

    return [(name, e.label) for name, e in load_engines().items()]


def _transports() -> Iterable[tuple[str, str]]:
    from ..catalog.transports import load_transports

    return [
        (name, f"{'host proxy' if t.host_proxied else 'GPU-initiated'}, {t.fabric}")
        for name, t in load_transports().items()
    ]


def _complete(names: Names, incomplete: str, lists: bool, paths: bool) -> list[CompletionItem]:
    head, _, last = incomplete.rpartition(",") if lists else ("", "", incomplete)
    if paths and ("/" in last or last.startswith((".", "~"))):
        return [CompletionItem(incomplete, type="file")]
    prefix = f"{head}," if head else ""
    return [CompletionItem(prefix + n, help=h) for n, h in names() if n.startswith(last.lower())]


def completer(names: Names, lists: bool = False, paths: bool = False) -> Callable[..., list[CompletionItem]]:
    """A click `shell_complete` callback over one catalog's names."""

    def complete(ctx: Any, param: Any, incomplete: str) -> list[CompletionItem]:
        return _complete(names, incomplete, lists, paths)

    return complete


# Option name -> its completer, for single values (evaluate, report, ...) and lists (sweep).
SINGLE = {
    "model": completer(_presets, paths=True),
    "instance": completer(_instances),
    "engine": completer(_engines),
    "transport": completer(_transports),
}
LISTS = {
    "model": completer(_presets, lists=True, paths=True),
    "instance": completer(_instances, lists=True),
    "engine": completer(_engines, lists=True),
    "transport": completer(_transports, lists=True),
}
