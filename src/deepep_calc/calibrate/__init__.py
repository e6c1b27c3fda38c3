"""Calibration from the user's own runs: their AIPerf A/B and DeepEP kernel log, parsed by io/,
fitted into the engine and transport constants a profile records."""
