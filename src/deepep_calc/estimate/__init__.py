"""The estimate: each arm's figures from the physics and the fitted constants."""
