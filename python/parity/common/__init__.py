"""TensorMetadata (Polygraphy's polygraphy.common.TensorMetadata)."""
from parity.common.struct import BoundedShape, MetadataTuple, TensorMetadata, _metadata_entries  # noqa: F401
