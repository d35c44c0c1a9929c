"""The headless core: vault, store, profiles, LLM client, context builder, loop, tools.

Nothing under this package may import Textual.
"""
