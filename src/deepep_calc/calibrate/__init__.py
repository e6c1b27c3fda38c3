"""Calibration from the user's own runs: readers for AIPerf exports and DeepEP kernel logs."""
