"""A LangChain retriever over a kgfuse store (``pip install "kgfuse[langchain]"``).

>>> from kgfuse.langchain import KgfuseRetriever
>>> retriever = KgfuseRetriever(store=kgfuse.Store("kgfuse-data"), strategy="auto")
>>> documents = retriever.invoke("Which vendors are based in Oslo?")

Each ``Document`` holds one item of the fused context (see
:func:`kgfuse.context_documents`); its metadata carries ``iri``, ``kind``,
``score``, ``sources`` and ``facts``.
"""

from __future__ import annotations

from typing import Any, Optional

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ImportError as missing:  # pragma: no cover - depends on the environment
    raise ImportError(
        "kgfuse.langchain needs langchain-core: pip install 'kgfuse[langchain]'"
    ) from missing
from pydantic import ConfigDict

from kgfuse import Store
from kgfuse.documents import context_documents


class KgfuseRetriever(BaseRetriever):
    """Documents for a question from one kgfuse retrieval."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Store
    """The store to retrieve from."""
    strategy: Optional[str] = None
    """A kgfuse strategy (``auto``, ``unified``, ``hybrid``, ``bm25``, ``flat``,
    ``domain``, ``paths``, ``neighborhood``); None takes the store's default."""
    top_k: Optional[int] = None
    """Most items per list of the context; None takes the store's default."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        context = self.store.retrieve(query, strategy=self.strategy, top_k=self.top_k)
        return [
            Document(page_content=item.text, metadata=item.metadata())
            for item in context_documents(context)
        ]
