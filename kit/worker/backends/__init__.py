"""Inference engines behind one small interface (base.Backend), one module each, loaded by name."""
