"""The attempt loop: one run of asking, reading, validating and re-asking, sync and async."""
