"""The PyMC side: model adapter, :func:`sample_ais` and the SMC mutation kernel."""
