"""How right the model is: the references it is judged against, in and out of sample.

`validate.py` is the accuracy report (every published reference, leave-one-out and
leave-a-group-out), `disagg_refs.py` the disaggregated deployments it was never fitted to, and
`ship_fit.py` the text of the shipped fit and its bands. Nothing here draws, prints or writes:
the tables are `report/`'s, and `tools/regenerate.py` writes the shipped files.
"""
