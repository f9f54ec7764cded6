"""kgfuse in-process: a knowledge graph (Oxigraph) and its vectors (LanceDB) for
LLM agents, retrieved by kgfuse's strategies.

>>> import kgfuse
>>> store = kgfuse.Store("kgfuse-data", embedder="hash")   # creates it if missing
>>> store.load(["ontology.ttl", "data.ttl"])
>>> context = store.retrieve("Which functions compute fees?")
>>> rows = store.sparql("SELECT ?s WHERE { ?s a ?c } LIMIT 3")

Retrievers for LangChain and LlamaIndex are in :mod:`kgfuse.langchain` and
:mod:`kgfuse.llama_index` (install the ``langchain`` or ``llama-index`` extra).
"""

from kgfuse import errors
from kgfuse._native import Store, __version__
from kgfuse.documents import ContextDocument, context_documents
from kgfuse.errors import *  # noqa: F403 - the exception classes, listed in errors.__all__

__all__ = ["Store", "__version__", "ContextDocument", "context_documents", "errors"]
__all__ += errors.__all__
