"""Loaders and runners (Polygraphy's polygraphy.backend)."""
