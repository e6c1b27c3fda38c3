"""`compute(resolved) -> Result`: every arm of a scenario, the one model behind every face.

The public `evaluate()` (`api.py`) resolves the question, calls `compute` and
attaches the verdict; the flip search, sweeps and the planner call `compute` directly.
The constants come from the fitted table (`fit/build.py`: fitted once, never here). A
what-if on assumed constants is a table fitted under other values (`fit.build.built_in_table(
assumptions)`): the question is evaluated under the table's assumptions (`Resolved.assume`).
"""

from __future__ import annotations

from ..fit.profile import profile_of
from ..fit.table import Table
from ..question.scenario import Resolved
from .arms import arms_for, model_arm, replica_arm
from .bands import banded
from .result import Result, both_covered, comparison, table_for


def compute(r: Resolved, reuse: Result | None = None, table: Table | None = None) -> Result:
    """All arms and the comparison, without the verdict (used by the flip search too).

    `reuse`: a result for the same scenario but another value of a knob only DeepEP reads (the
    transport, EP_NUM_COMMS, EP_EFA_MAX_QPS); its non-DeepEP arms do not read it and are taken
    as they are. `table`: constants other than
    the built-in fit (the cross-validation evaluates each fold's own; a sensitivity case, one
    fitted under other assumed constants, which then hold for the whole evaluation).
    """
    profile_of(r)  # a profile the scenario names was read with it (io/inputs.py)
    table = table if table is not None else table_for(r)
    r = r.assume(table.assumptions)
    memo = reuse.memo if reuse is not None else {}
    arms = {
        name: reuse.arms[name]
        if reuse is not None and name != "deepep"
        else (replica_arm(r, table, memo) if name == "replica" else model_arm(r, name, table, memo))
        for name in arms_for(r)
    }
    ratio, ratio_pu, tax, measured = comparison(arms["deepep"], arms[r.scenario.alternative])
    if not measured:  # a ratio of two observations is not modelled: no band
        both = both_covered(arms["deepep"].evidence, arms[r.scenario.alternative].evidence)
        ratio = banded(ratio, table, "ratio", covered=both)
        ratio_pu = banded(ratio_pu, table, "ratio", covered=both)
    return Result(r.scenario, r, arms, r.scenario.alternative, ratio, ratio_pu, tax, memo=memo, table=table)
