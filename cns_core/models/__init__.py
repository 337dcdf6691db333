"""Model backends: sentence embeddings and natural-language inference (NLI).

``get_embedder()`` and ``get_nli_backend()`` return process-wide instances built
from ``config/models.yaml`` (with environment overrides); nothing is loaded
until first use and nothing is ever downloaded.
"""

from cns_core.models.embeddings import EmbeddingBackend, MiniLMEmbedder, get_embedder
from cns_core.models.errors import ModelUnavailableError
from cns_core.models.nli import NLI_LABELS, NLIBackend, TransformersNLI, get_nli_backend

__all__ = [
    "EmbeddingBackend",
    "MiniLMEmbedder",
    "get_embedder",
    "ModelUnavailableError",
    "NLI_LABELS",
    "NLIBackend",
    "TransformersNLI",
    "get_nli_backend",
]
