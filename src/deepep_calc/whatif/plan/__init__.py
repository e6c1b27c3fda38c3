"""The planner: search configurations for the cheapest that meets the targets."""
