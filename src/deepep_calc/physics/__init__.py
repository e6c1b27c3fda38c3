"""The physical model: parameters, memory, HBM / compute time, communication, step time.

Its records are frozen dataclasses compared by identity (`eq=False`): their fields hold
quantities whose values may be arrays, which `==` cannot answer with one bool, and the
generated `__eq__` / `__hash__` of a dozen classes cost every CLI start ~5 ms for nothing.
"""
