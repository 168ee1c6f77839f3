"""Read a pasted training log: metrics, anomalies, tracebacks, config and environment (no model)."""
