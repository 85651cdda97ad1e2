"""Text: strict reading, tokenizers, text to token ids, counting: the one pipeline from texts to statistics
(:mod:`harness.text.pipeline`). No tables, no tracking, no Hydra."""
