"""The product's words, each defined once: arms, verdict codes and their symbols, yes / no.

Every layer spells these the same way, so they live at the bottom. The orders matter: a sweep
stores a verdict as its index in `VERDICT_CODES` (int8 columns) and an arm as its index in
`ARMS`; `VERDICTS_SHOWN` is the order the faces list the verdicts in (cards, legends).
"""

from __future__ import annotations

from typing import Literal, get_args

# The ways to lay one MoE model out: DeepEP all-to-all, allgather (dense EP), tensor
# parallelism, single-node replicas. (An AIPerf export's "dense" / "deepep" leg is not an arm:
# see `io/discover.py`.)
Arm = Literal["deepep", "allgather", "tp", "replica"]
ARMS: tuple[Arm, ...] = get_args(Arm)

# A replica is one copy of the model per node; inside its node it runs one of three layouts,
# named `replica` (attention DP + EP over NCCL's allgather), `replica:deepep` (attention DP +
# EP over DeepEP's NVLink kernels) and `replica:tp` (tensor parallel over the node).
REPLICA_LAYOUTS = ("replica", "replica:deepep", "replica:tp")
_EXCHANGE = {"replica": "allgather", "replica:deepep": "deepep", "replica:tp": "tp"}


def exchange_of(arm: str) -> str:
    """The exchange an arm (or a replica's layout) runs: deepep, allgather or tp."""
    return _EXCHANGE.get(arm, arm)


# The three answers.
VerdictCode = Literal["dense", "deepep", "capacity"]
VERDICT_CODES: tuple[VerdictCode, ...] = get_args(VerdictCode)
VERDICTS_SHOWN: tuple[VerdictCode, ...] = ("dense", "capacity", "deepep")
SYMBOLS: dict[VerdictCode, str] = {"dense": "■", "capacity": "◆", "deepep": "▲"}

# What a yes / no field accepts, on the command line, in a sweep list and in the web form.
TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")


def bool_word(flag: bool) -> str:
    """A yes / no as the tool writes it back (an error line quoting a value): true or false."""
    return TRUE_WORDS[0] if flag else FALSE_WORDS[0]


def flag_of(field: str) -> str:
    """The command-line flag of a scenario field, as error lines name it: `max_qps` -> `--max-qps`."""
    return f"--{field.replace('_', '-')}"
