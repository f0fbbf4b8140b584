"""Triage example: sort an incoming message and answer it by kind."""
