"""A fused context as a list of documents: what both retrievers return.

One document per answer set, retrieved text, API function, worked example and
evidence path, then one per remaining subject of the structured facts, in the
order kgfuse ranked them. Facts about a document's node travel in its
``facts``; the rest become documents of their own (kind ``entity``), so every
fact of the context reaches the caller exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class ContextDocument:
    """One item of a fused context, ready for a framework's document type."""

    text: str
    """What a model reads."""
    kind: str
    """``answer``, ``text``, ``function``, ``case``, ``path`` or ``entity``."""
    iri: Optional[str]
    """The node it is about (None for an answer set or a path)."""
    score: Optional[float]
    """The strategy's relevance score, where it gives one (higher is better)."""
    sources: list[dict[str, Any]] = field(default_factory=list)
    """Where the text comes from: ``{"id", "title", "section", "chunk_id"}``."""
    facts: list[dict[str, str]] = field(default_factory=list)
    """Triples about ``iri``: ``{"subject", "predicate", "object", "graph"}``."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Kind-specific fields (a function's package, an answer set's query, ...)."""

    def metadata(self) -> dict[str, Any]:
        """The fields besides ``text``, as one flat dict."""
        return {
            "iri": self.iri,
            "kind": self.kind,
            "score": self.score,
            "sources": self.sources,
            "facts": self.facts,
            **self.extra,
        }


def context_documents(context: dict[str, Any]) -> list[ContextDocument]:
    """The documents of a fused context (a dict from :meth:`kgfuse.Store.retrieve`)."""
    facts_by_node: dict[str, list[dict[str, str]]] = {}
    for fact in context.get("structured_facts", []):
        facts_by_node.setdefault(fact["subject"], []).append(fact)

    documents: list[ContextDocument] = []
    if context.get("answers"):
        documents.append(_answer(context["answers"]))
    covered = {f["iri"] for f in context.get("functions", [])}
    covered |= {c["iri"] for c in context.get("cases", [])}
    for hit in context.get("unstructured", []):
        if hit["iri"] not in covered:
            documents.append(_text(hit, facts_by_node))
            covered.add(hit["iri"])
    documents += [_function(f, facts_by_node) for f in context.get("functions", [])]
    documents += [_case(c, facts_by_node) for c in context.get("cases", [])]
    documents += [_path(p) for p in context.get("paths", [])]
    for subject, facts in facts_by_node.items():
        if subject not in covered:
            documents.append(_entity(subject, facts))
    return documents


def _answer(answers: dict[str, Any]) -> ContextDocument:
    if answers.get("boolean") is not None:
        text = "yes" if answers["boolean"] else "no"
    else:
        columns = answers.get("columns", [])
        lines = [" | ".join(columns)]
        for row in answers.get("rows", []):
            lines.append(" | ".join("" if cell is None else str(cell) for cell in row))
        text = "\n".join(lines)
    extra = {
        "query": answers.get("query"),
        "columns": answers.get("columns", []),
        "rows": answers.get("rows", []),
        "answered_by": answers.get("source"),
        "truncated": answers.get("truncated", False),
    }
    return ContextDocument(text=text, kind="answer", iri=None, score=None, extra=extra)


def _text(hit: dict[str, Any], facts: dict[str, list]) -> ContextDocument:
    return ContextDocument(
        text=hit["text"],
        kind="text",
        iri=hit["iri"],
        score=hit.get("score"),
        sources=[hit["source"]] if hit.get("source") else [],
        facts=facts.get(hit["iri"], []),
    )


def _function(function: dict[str, Any], facts: dict[str, list]) -> ContextDocument:
    lines = [function.get("signature") or function["name"]]
    if function.get("summary"):
        lines.append(function["summary"])
    if function.get("params"):
        lines.append("parameters: " + ", ".join(function["params"]))
    if function.get("returns"):
        lines.append("returns: " + function["returns"])
    lines += function.get("knowledge", [])
    if function.get("code"):
        lines.append(function["code"])
    extra = {
        key: function.get(key)
        for key in ("name", "package", "module", "signature", "depends_on")
    }
    return ContextDocument(
        text="\n".join(lines),
        kind="function",
        iri=function["iri"],
        score=function.get("score"),
        facts=facts.get(function["iri"], []),
        extra=extra,
    )


def _case(case: dict[str, Any], facts: dict[str, list]) -> ContextDocument:
    text = case["title"] + ("\n" + case["code"] if case.get("code") else "")
    return ContextDocument(
        text=text,
        kind="case",
        iri=case["iri"],
        score=None,
        facts=facts.get(case["iri"], []),
        extra={"exercises": case.get("exercises", [])},
    )


def _path(path: list[str]) -> ContextDocument:
    return ContextDocument(
        text=" -> ".join(path), kind="path", iri=None, score=None, extra={"path": path}
    )


def _entity(subject: str, facts: list[dict[str, str]]) -> ContextDocument:
    text = "\n".join(f"{f['subject']} {f['predicate']} {f['object']}" for f in facts)
    graphs = sorted({f["graph"] for f in facts})
    return ContextDocument(
        text=text,
        kind="entity",
        iri=subject,
        score=None,
        sources=[{"id": g, "title": None, "section": None, "chunk_id": None} for g in graphs],
        facts=facts,
    )
