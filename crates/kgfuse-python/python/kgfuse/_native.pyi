"""Type stubs of kgfuse's native module (``kgfuse._native``, re-exported by ``kgfuse``)."""

import os
from typing import Any, Optional, Sequence, Union

__version__: str

Path = Union[str, os.PathLike[str]]
#: A SPARQL result cell: an IRI (str), a blank node ("_:id"), or a literal's value
#: (int, float, decimal.Decimal, bool for XSD numbers and booleans; str otherwise).
Value = Any

class Store:
    """A kgfuse data directory, opened for use. Thread-safe: share one store
    between threads; each call releases the GIL while kgfuse works.

    Raises :class:`kgfuse.StoreError` when ``path`` holds no store and
    ``embedder`` is not given (or ``create`` is False)."""

    def __init__(
        self,
        path: Path,
        *,
        embedder: Optional[str] = None,
        dimension: int = 384,
        create: Optional[bool] = None,
        offline: bool = False,
    ) -> None:
        """Open the store in ``path``.

        ``embedder`` (``"hash"``, ``"minilm"``, ``"distilled"``): create the store
        with it when ``path`` holds none, and check it against the stored one
        otherwise; ``dimension`` is the hash embedder's. ``create``: True creates a
        missing store (with MiniLM when no embedder is given), False never does.
        The language model of the judgement steps is the one ``KGFUSE_LLM_BASE_URL``
        and ``KGFUSE_LLM_MODEL`` configure, else the offline rule-based one;
        ``offline=True`` always takes the latter."""

    @property
    def path(self) -> str:
        """The data directory."""

    def load(
        self,
        paths: Union[Path, Sequence[Path]],
        *,
        graph: Optional[str] = None,
        format: Optional[str] = None,
    ) -> dict[str, Any]:
        """Load RDF files in one atomic call. Without ``graph`` each file goes to its
        own named graph (``file:///abs/path``), and loading it again is skipped when
        unchanged or replaces its graph when changed. ``format``: turtle, ntriples,
        nquads, trig, rdfxml or jsonld (guessed from the extension otherwise).

        Returns ``{"files": [{"path", "graph", "action", "quads"}], "quads",
        "vectors": {"added", "updated", "deleted", "unchanged"}}``; ``action`` is
        ``inserted``, ``replaced``, ``unchanged`` or ``carried``.
        Raises :class:`kgfuse.RdfSyntaxError` (nothing is written) or
        :class:`kgfuse.FileError`."""

    def ingest_code(
        self,
        path: Path,
        *,
        package: Optional[str] = None,
        languages: Optional[Sequence[str]] = None,
        knowledge: Optional[Path] = None,
    ) -> dict[str, Any]:
        """Ingest the Python and/or Rust sources under ``path`` (``languages``:
        ``"python"``, ``"rust"``; both by default) into the API hierarchy, call graph
        and cases; ``knowledge``: a TOML or Turtle file of domain rules. Returns the
        report of ``kgfuse ingest code --format json``."""

    def ingest_docs(self, path: Path) -> dict[str, Any]:
        """Ingest the Markdown and text files under ``path`` as chunks linked to the
        entities they mention. Returns the report of ``kgfuse ingest docs``."""

    def sparql(self, query: str) -> Union[list[dict[str, Value]], bool, list[tuple[Value, Value, Value]]]:
        """Run a SPARQL query: SELECT gives one dict per row (None for an unbound
        variable), ASK a bool, CONSTRUCT and DESCRIBE ``(subject, predicate, object)``
        tuples. Raises :class:`kgfuse.SparqlSyntaxError` for a malformed query and
        :class:`kgfuse.QueryTimeoutError` past the store's time limit."""

    def update(self, update: str) -> dict[str, Any]:
        """Run a SPARQL Update, keeping the vectors in step. Returns the vector
        rows changed: ``{"added", "updated", "deleted", "unchanged"}``."""

    def retrieve(
        self, question: str, *, strategy: Optional[str] = None, top_k: Optional[int] = None
    ) -> dict[str, Any]:
        """The fused context for a question, as ``kgfuse retrieve --format json``
        gives it: ``query``, ``strategy``, ``dispatch``, ``answers`` (the answer set:
        ``query``, ``columns``, ``rows``, ``boolean``, or None), ``unstructured``,
        ``structured_facts``, ``functions``, ``cases``, ``paths``, ``sparql``,
        ``trace``. ``strategy``: auto, unified, hybrid, bm25, flat, domain, paths or
        neighborhood (default auto). :func:`kgfuse.context_documents` turns it into
        documents."""

    def ask(
        self, question: str, *, strategy: Optional[str] = None, top_k: Optional[int] = None
    ) -> dict[str, Any]:
        """Answer with citations, or say the context is insufficient (the grounded
        answer loop); ``status`` is ``answered``, ``insufficient_context`` or
        ``failure``. Never raises for a question it cannot answer."""

    def check(self) -> dict[str, Any]:
        """Verify that graph and vectors agree (``kgfuse check --format json``)."""

    def stats(self) -> dict[str, Any]:
        """Sizes of the store (``kgfuse stats --format json``), with each loaded
        file graph's fingerprint: ``fingerprints``, a list of ``{"graph", "path",
        "fingerprint"}`` (``rdfc-1.0:sha256:<hex>``, the RDFC-1.0 canonical hash of
        its triples, or ``bytes:sha256:<hex>`` past the canonicalisation limits)."""
