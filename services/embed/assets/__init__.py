"""Data shipped with the embed service (MiniLM's `tokenizer.json`); a package so it ships."""
