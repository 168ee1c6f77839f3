"""kb: a local-first knowledge base that diagnoses failed LLM fine-tuning runs."""

__version__ = "0.1.0"
