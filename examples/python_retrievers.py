"""kgfuse from Python, as an agent builder plugs it in.

A store in a temporary directory with the model-free hash embedder; the org
fixture (a small corporate graph) loaded as RDF and the payment-fees package
ingested as code; then one question through LangChain's retriever interface and
one through LlamaIndex's, each printing the documents it got: their kind, the
node they are about, kgfuse's score and their first line. Run from the
repository root, after installing the wheel and the two frameworks (see
crates/kgfuse-python/README.md):

    python examples/python_retrievers.py
"""

import tempfile

import kgfuse
from kgfuse.langchain import KgfuseRetriever as LangChainRetriever
from kgfuse.llama_index import KgfuseRetriever as LlamaIndexRetriever


def first_line(text: str) -> str:
    return text.splitlines()[0][:70] if text else ""


with tempfile.TemporaryDirectory() as directory:
    # 1. A store: `embedder` creates it when the directory holds none. `offline`
    #    keeps the judgement steps on the rule-based model even when KGFUSE_LLM_*
    #    names a server.
    store = kgfuse.Store(directory, embedder="hash", offline=True)

    # 2. RDF files go to one named graph each; code becomes the API graph
    #    (packages, modules, functions with parameters, call edges, cases).
    loaded = store.load(["fixtures/org/org.ttl"])
    print(f"loaded {loaded['quads']} quads")
    ingested = store.ingest_code("fixtures/payment-fees/payment_fees", package="payment_fees")
    print(f"ingested {ingested['files']} files, {ingested['triples']} triples")

    # 3. LangChain: a question the graph answers. The first document is the
    #    answer set of the query kgfuse planned (kind "answer", its SPARQL in the
    #    metadata); then what the answer rests on.
    question = "Which vendors sell pumps?"
    print(f"\nLangChain: {question}")
    documents = LangChainRetriever(store=store, top_k=5).invoke(question)
    answer = documents[0]
    print(f"  answer rows ({answer.metadata['answered_by']}):")
    for row in answer.metadata["rows"]:
        print(f"    {row[0]}")
    for document in documents[1:6]:
        meta = document.metadata
        score = "" if meta["score"] is None else f"{meta['score']:.3f}"
        print(f"  {meta['kind']:<6} {score:>6}  {first_line(document.page_content)}")
    print(f"  ... {len(documents)} documents in all")

    # 4. LlamaIndex: a coding task. `domain` ranks the API functions (DomAgent);
    #    each node's text starts with the function's signature.
    task = "compute the fee of a transaction from a fee rule"
    print(f"\nLlamaIndex: {task}")
    for node in LlamaIndexRetriever(store, strategy="domain", top_k=3).retrieve(task):
        if node.node.metadata["kind"] == "function":
            print(f"  {node.score:.3f}  {first_line(node.node.get_content())}")

    # 5. SPARQL straight away: rows are dicts, numbers are numbers.
    rows = store.sparql(
        "SELECT (COUNT(*) AS ?n) WHERE { ?v a <https://example.org/corp/vocab#Vendor> }"
    )
    print(f"\nvendors in the graph: {rows[0]['n']}")
