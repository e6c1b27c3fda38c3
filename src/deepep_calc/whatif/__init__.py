"""Questions about many scenarios: sweeps, the planner, sensitivity."""
