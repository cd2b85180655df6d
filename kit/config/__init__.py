"""Configuration: pydantic models and TOML loading for roster, sites, images and benchmark.

Imports nothing of kit except kit.errors.
"""
