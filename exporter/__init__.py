"""Spec -> files: exact MJCF, assets, zip, mjb."""
