"""Read AIPerf summary exports into typed runs, and pair a dense and a DeepEP run into an A/B.

Why this package exists: the calculator is calibrated to measured serving cells, and a user who
benchmarks their own cluster with AIPerf should be able to hand over those exports and get the
same kind of numbers back, each traceable to the file and the benchmark it came from. Every
number read here is a `Q` tagged `measured` whose source names the file and the benchmark id;
anything computed from them (the per-token tax, the ratios) comes out `derived` through `Q`
arithmetic, so a fitted constant can never pose as an observation.

AIPerf has changed its export over releases, so the reader accepts each generation we know, one
module each behind `reader`: the flat JSON layout (`flat`: schema 1.0-1.5, workload in
`input_config.phases` or the legacy `input_config.loadgen`), the older JSON layout with metric
blocks under `"records"` (`records`), and the CSV export keyed by display names (`csv_export`).
A file that is not an export is an error (one line, naming the file and the problem); a run that
is an export but should not be trusted blindly (cancelled, failed requests, not streaming, short
outputs, unknown schema) imports with warnings (`build`), because the user may still want to
look at it, but must be told.

Imports run one way: files, metrics, names -> run, workload -> build, flat / records /
csv_export -> reader. The pairing of two runs into an A/B reads no file, so it is the fit's
(`fit/pairs.py`), re-exported here for the reader's callers. This module only re-exports what
callers use (the underscore names are the ones `tests/io/aiperf/test_metrics.py` uses).
"""

from deepep_calc.base.quantity import MIN_POSITIVE
from deepep_calc.fit.pairs import OSL_TOLERANCE, ABPair, check_pair, derive_pair, group_by_concurrency
from deepep_calc.io.aiperf.metrics import MAX_METRIC
from deepep_calc.io.aiperf.metrics import Blocks as _Blocks
from deepep_calc.io.aiperf.metrics import csv_cell as _csv_cell
from deepep_calc.io.aiperf.metrics import csv_tag as _csv_tag
from deepep_calc.io.aiperf.metrics import number as _number
from deepep_calc.io.aiperf.names import NameHints, normalise_model, parse_export_name
from deepep_calc.io.aiperf.reader import EXPORT_CSV, EXPORT_JSON, load_aiperf
from deepep_calc.io.aiperf.run import AIPerfRun
from deepep_calc.io.textfile import MAX_FILE_BYTES, read_text_file, stat_path

__all__ = [
    "EXPORT_CSV",
    "EXPORT_JSON",
    "MAX_FILE_BYTES",
    "MAX_METRIC",
    "MIN_POSITIVE",
    "OSL_TOLERANCE",
    "ABPair",
    "AIPerfRun",
    "NameHints",
    "_Blocks",
    "_csv_cell",
    "_csv_tag",
    "_number",
    "check_pair",
    "derive_pair",
    "group_by_concurrency",
    "load_aiperf",
    "normalise_model",
    "parse_export_name",
    "read_text_file",
    "stat_path",
]
