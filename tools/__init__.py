"""Developer tools run from a checkout (not installed): `python -m tools.<name>`."""
