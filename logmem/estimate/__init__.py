"""Expected sizes from a Hugging Face config.json, and their cross-check with the log."""
