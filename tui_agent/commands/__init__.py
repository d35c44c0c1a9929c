"""Headless entry points of the console script (no Textual here either)."""
