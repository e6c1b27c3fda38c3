"""Hand-worked tests of the physics, one file per module of `deepep_calc.physics`."""
