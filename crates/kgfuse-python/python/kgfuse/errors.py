"""The exceptions kgfuse raises. Each message is the one the CLI prints after
``error:``. Every class derives from :class:`KgfuseError`; those that behave like
a built-in exception also derive from it (a malformed query is a ``ValueError``),
so ``except ValueError`` keeps working in code that does not know kgfuse.
"""


class KgfuseError(Exception):
    """Base class of every error kgfuse raises."""


class StoreError(KgfuseError):
    """The store failed: it is missing, locked, damaged, or a write did not happen."""


class InvalidInputError(KgfuseError, ValueError):
    """An argument kgfuse cannot use: an unknown strategy, an IRI that does not
    parse, an empty question."""


class SparqlSyntaxError(KgfuseError, ValueError):
    """A SPARQL query or update that does not parse."""


class RdfSyntaxError(KgfuseError, ValueError):
    """An RDF file that does not parse (the message names file, line and column),
    or whose format is unknown."""


class QueryTimeoutError(KgfuseError, TimeoutError):
    """A query ran past its time limit and was cancelled."""


class FileError(KgfuseError, OSError):
    """A file or directory kgfuse was given cannot be read."""


class ModelError(KgfuseError):
    """The language model configured by ``KGFUSE_LLM_*`` failed or could not be used."""


class IngestError(KgfuseError):
    """An ingest could not read or use its sources as a whole (single bad files are
    reported in the result, not raised)."""


__all__ = [
    "KgfuseError",
    "StoreError",
    "InvalidInputError",
    "SparqlSyntaxError",
    "RdfSyntaxError",
    "QueryTimeoutError",
    "FileError",
    "ModelError",
    "IngestError",
]
