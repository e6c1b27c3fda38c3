"""Sweeps: a grid of scenarios through the vectorised model, and its writers."""
