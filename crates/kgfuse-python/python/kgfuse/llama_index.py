"""A LlamaIndex retriever over a kgfuse store (``pip install "kgfuse[llama-index]"``).

>>> from kgfuse.llama_index import KgfuseRetriever
>>> retriever = KgfuseRetriever(kgfuse.Store("kgfuse-data"))
>>> nodes = retriever.retrieve("Which vendors are based in Oslo?")

Each ``NodeWithScore`` holds one item of the fused context (see
:func:`kgfuse.context_documents`) as a ``TextNode`` whose metadata carries
``iri``, ``kind``, ``score``, ``sources`` and ``facts``; its score is kgfuse's
where the strategy gives one. The lists (``sources``, ``facts``, ...) are kept
out of the text LlamaIndex shows a model or embeds.
"""

from __future__ import annotations

from typing import Any, Optional

try:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as missing:  # pragma: no cover - depends on the environment
    raise ImportError(
        "kgfuse.llama_index needs llama-index-core: pip install 'kgfuse[llama-index]'"
    ) from missing

from kgfuse import Store
from kgfuse.documents import context_documents


class KgfuseRetriever(BaseRetriever):
    """Nodes for a question from one kgfuse retrieval."""

    def __init__(
        self,
        store: Store,
        strategy: Optional[str] = None,
        top_k: Optional[int] = None,
        **kwargs: Any,
    ) -> None:
        """``strategy`` and ``top_k`` as for :meth:`kgfuse.Store.retrieve`; other
        keyword arguments go to LlamaIndex's ``BaseRetriever``."""
        self._store = store
        self._strategy = strategy
        self._top_k = top_k
        super().__init__(**kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        context = self._store.retrieve(
            query_bundle.query_str, strategy=self._strategy, top_k=self._top_k
        )
        nodes = []
        for index, item in enumerate(context_documents(context)):
            metadata = item.metadata()
            listed = [key for key, value in metadata.items() if isinstance(value, (list, dict))]
            node = TextNode(
                id_=f"{item.kind}:{item.iri or index}",
                text=item.text,
                metadata=metadata,
                excluded_llm_metadata_keys=listed,
                excluded_embed_metadata_keys=listed,
            )
            nodes.append(NodeWithScore(node=node, score=item.score))
        return nodes
