"""Mutation testing of `impl/` with the engines as the kill command (`make mutate`)."""
