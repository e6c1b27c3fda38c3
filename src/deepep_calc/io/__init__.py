"""Files in and out: every reader and writer of a user's or the tool's files lives here.

Readers: AIPerf summary exports (`aiperf/`, one module per schema generation), DeepEP kernel
logs (`kernel_log.py`, with the shipped sample in `samples/`), run folders (`discover.py`),
Hugging Face `config.json` files (`hf_config.py`), and a calibration profile (`profile.py`:
its text read into a checked profile, the fingerprints of its inputs). `inputs.py` resolves a
question with the files it names read (`resolve_files`). Writers: the profile's text
(`profile.py`) and the safe-write rules every output obeys (`safe_write.py`). The guards every
reader shares (size caps, FIFOs, symlinks, UTF-8, one-line errors) are `textfile.py`.

Where it sits: just under the faces and the Python API, which read through it and pass values
down; nothing below it opens a file (the package data the model derives from its catalogs is
written by `tools/regenerate.py`, from texts `accuracy/` makes).

Why a package of its own: what touches the disk is kept apart from what the numbers mean, so
one set of rules (bounded reads, atomic writes, one-line errors naming the file) holds for all
of it. The checks on what a file holds stay with its meaning: a profile's schema is the fit's,
a config.json's fields the catalog's (`catalog/hf/`, which reads no file). Each format is
independent of the others (an import-linter contract in pyproject.toml).
"""
