"""Limits shared by the core and the UI, in a module that imports nothing (the UI reads them at
start-up without loading the turn loop)."""

MAX_MESSAGE_CHARS = 200_000  # one message typed or pasted; longer text goes in as a file
