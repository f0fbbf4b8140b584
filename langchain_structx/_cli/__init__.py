"""The parts of the `structx` command."""
