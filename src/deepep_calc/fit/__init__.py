"""The fit stage: kernel references and serving observations -> the constants table.

Physics never fits and the fit never formats: `build.fit_table(rows, obs)` turns references
into a `table.Table`, the physics takes that table, and `shipped.py` keeps the built-in result
on disk so no process pays for the fit at start-up.
"""
