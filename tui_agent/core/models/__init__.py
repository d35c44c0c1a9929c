"""What the server has and what each model can do: the context window a model really runs with
(read from Ollama, LM Studio, vLLM, llama.cpp or OpenRouter), its capabilities, and how a request
is fitted to that window."""
