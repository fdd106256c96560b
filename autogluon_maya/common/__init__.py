"""Preprocessing and training utilities shared by the package's models."""
