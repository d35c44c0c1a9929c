"""Tools are the LLM's hands: one module per tool, all behind the registry."""
