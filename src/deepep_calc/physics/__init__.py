"""The physical model: parameters, memory, HBM / compute time, communication, step time."""
