"""The question: a scenario as the user asked it, and resolved against the catalogs."""
