"""The planner: search configurations for the cheapest that meets the targets."""

# The `--measured-only` rule as the command help, the docs and the web page state it (applied in
# `evidence.py`). It lives here because every CLI start shows it in the plan command's help: the
# package costs nothing to import, its modules do.
MEASURED_ONLY = (
    "keep only configurations anchored by measured references: a DeepEP arm needs a measured "
    "kernel reference of its transport on that instance (NVLink on one node), every arm needs a "
    "measured serving run of its engine in that graph mode, and tensor parallel (never measured "
    "in serving) is left out"
)
