"""Loading models: the decoder backbones (built-in, Hugging Face folders, GGUF), tiny random ones for tests, the small sentence encoder."""
