"""The kgfuse Python package as a user meets it: a store on the repository's
fixtures, SPARQL, retrieval through both frameworks' retrievers, errors as
exceptions, and one store shared by threads. Run by tests/python.rs (`make
test`) in a venv with the pinned frameworks; KGFUSE_REPO is the repository."""

import os
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path

import pytest

import kgfuse

REPO = Path(os.environ.get("KGFUSE_REPO", Path(__file__).resolve().parents[3]))
ORG = REPO / "fixtures/org/org.ttl"
DATA = "https://example.org/corp/data/"
VOCAB = "https://example.org/corp/vocab#"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A hash-embedder store holding the org and policy fixtures."""
    directory = tmp_path_factory.mktemp("store")
    store = kgfuse.Store(directory, embedder="hash", offline=True)
    summary = store.load([ORG, REPO / "fixtures/policy/policy.ttl"])
    assert [f["action"] for f in summary["files"]] == ["inserted", "inserted"]
    assert summary["quads"] > 0 and summary["vectors"]["added"] > 0
    return store


def test_loading_an_unchanged_file_again_writes_nothing(store):
    again = store.load(str(ORG))
    assert again["files"][0]["action"] == "unchanged"
    assert again["quads"] == 0


def test_sparql_gives_rows_as_dicts_with_typed_values(store):
    rows = store.sparql(
        f"SELECT ?v (COUNT(?p) AS ?n) WHERE {{ ?v a <{VOCAB}Vendor> ; <{VOCAB}sells> ?p }} "
        "GROUP BY ?v ORDER BY ?v"
    )
    assert rows and all(set(row) == {"v", "n"} for row in rows)
    assert rows[0]["v"].startswith(DATA)
    assert all(isinstance(row["n"], int) and row["n"] >= 1 for row in rows)
    assert store.sparql(f"ASK {{ ?v <{VOCAB}basedIn> <{DATA}oslo> }}") is True
    values = store.sparql('SELECT ?x WHERE { VALUES ?x { 1.5 true 1e3 "x"@en "7"^^<urn:t> } }')
    typed = [(type(row["x"]), row["x"]) for row in values]
    assert typed == [(Decimal, Decimal("1.5")), (bool, True), (float, 1000.0), (str, "x"), (str, "7")]
    triples = store.sparql(f"CONSTRUCT {{ <{DATA}oslo> ?p ?o }} WHERE {{ <{DATA}oslo> ?p ?o }}")
    assert (f"{DATA}oslo", f"{VOCAB}inCountry", f"{DATA}norway") in triples


def test_retrieve_gives_the_fused_context_with_its_answer_set(store):
    context = store.retrieve("Which vendors sell pumps?", strategy="unified")
    assert context["strategy"] == "unified"
    answers = context["answers"]
    assert answers["columns"] == ["x"]
    assert sorted(row[0] for row in answers["rows"]) == [
        f"{DATA}fjord-pumpeverk",
        f"{DATA}vistula-cast",
    ]
    assert "sells" in answers["query"]


def test_the_langchain_retriever_returns_documents_with_iri_kind_score_sources_facts(store):
    from langchain_core.documents import Document

    from kgfuse.langchain import KgfuseRetriever

    retriever = KgfuseRetriever(store=store, strategy="unified", top_k=5)
    documents = retriever.invoke("Which vendors sell pumps?")
    assert documents and all(isinstance(d, Document) for d in documents)
    for document in documents:
        assert {"iri", "kind", "score", "sources", "facts"} <= set(document.metadata)
        assert document.page_content
    answer = documents[0]
    assert answer.metadata["kind"] == "answer"
    assert f"{DATA}fjord-pumpeverk" in answer.page_content
    assert answer.metadata["query"]
    texts = [d for d in documents if d.metadata["kind"] == "text"]
    assert texts, [d.metadata["kind"] for d in documents]
    assert all(isinstance(d.metadata["score"], float) for d in texts)
    assert any(s["id"] == ORG.resolve().as_uri() for d in texts for s in d.metadata["sources"])
    facts = [f for d in documents for f in d.metadata["facts"]]
    assert any(f["predicate"] == f"{VOCAB}sells" and f["object"] == f"{DATA}pumps" for f in facts)
    for document in documents:
        for fact in document.metadata["facts"]:
            assert document.metadata["iri"] == fact["subject"]


def test_the_llama_index_retriever_returns_scored_nodes(store):
    from llama_index.core.schema import MetadataMode, NodeWithScore

    from kgfuse.llama_index import KgfuseRetriever

    retriever = KgfuseRetriever(store, strategy="unified", top_k=5)
    nodes = retriever.retrieve("Which vendors sell pumps?")
    assert nodes and all(isinstance(n, NodeWithScore) for n in nodes)
    assert nodes[0].node.metadata["kind"] == "answer"
    assert f"{DATA}vistula-cast" in nodes[0].node.get_content()
    scored = [n for n in nodes if n.node.metadata["kind"] == "text"]
    assert scored and all(n.score == n.node.metadata["score"] for n in scored)
    assert len({n.node.node_id for n in nodes}) == len(nodes)
    # What a model reads names the kind but not the lists of facts and sources.
    shown = nodes[0].node.get_content(metadata_mode=MetadataMode.LLM)
    assert "kind: answer" in shown and "facts" not in shown


def test_a_yes_or_no_question_becomes_an_answer_document(store):
    documents = kgfuse.context_documents(store.retrieve("Is there a vendor in Oslo?"))
    assert documents[0].kind == "answer" and documents[0].text == "yes"


def test_ask_answers_with_citations_or_says_the_context_is_insufficient(store):
    answer = store.ask("Which vendors sell pumps?")
    assert answer["status"] in {"answered", "insufficient_context"}
    assert answer["retrieval_attempts"] >= 1


@pytest.fixture(scope="module")
def code_store(tmp_path_factory):
    """A store holding the payment-fees library's code and its README."""
    store = kgfuse.Store(tmp_path_factory.mktemp("code"), embedder="hash", offline=True)
    fees = REPO / "fixtures/payment-fees"
    report = store.ingest_code(fees / "payment_fees", package="payment_fees")
    assert report["files"] >= 5 and report["written"] == report["files"]
    assert store.ingest_docs(fees)["chunks"] > 0
    return store


def test_ingested_functions_come_back_as_function_documents(code_store):
    from kgfuse.langchain import KgfuseRetriever

    retriever = KgfuseRetriever(store=code_store, strategy="domain", top_k=5)
    documents = retriever.invoke("compute the fee of a transaction from a fee rule")
    functions = [d for d in documents if d.metadata["kind"] == "function"]
    assert functions, [d.metadata["kind"] for d in documents]
    names = {d.metadata["name"] for d in functions}
    assert "compute_fee" in names, names
    first = next(d for d in functions if d.metadata["name"] == "compute_fee")
    assert first.metadata["package"] == "payment_fees"
    assert first.page_content.startswith("def compute_fee(")


def test_a_malformed_query_raises_the_documented_exception(store):
    with pytest.raises(kgfuse.SparqlSyntaxError) as raised:
        store.sparql("SELECT ?s WHERE { ?s ?p ")
    assert isinstance(raised.value, ValueError)
    assert isinstance(raised.value, kgfuse.KgfuseError)
    assert str(raised.value).startswith("SPARQL syntax error")


def test_other_errors_are_exceptions_of_their_kind(store, tmp_path):
    before = store.stats()["triples"]
    with pytest.raises(kgfuse.RdfSyntaxError, match=r"unterminated-literal\.ttl:6:48"):
        store.load(REPO / "fixtures/malformed/unterminated-literal.ttl")
    assert store.stats()["triples"] == before, "a failed load writes nothing"
    with pytest.raises(kgfuse.InvalidInputError, match="strategy"):
        store.retrieve("anything", strategy="no-such-strategy")
    with pytest.raises(kgfuse.StoreError):
        kgfuse.Store(tmp_path / "empty", create=False)
    with pytest.raises(kgfuse.FileError):
        store.load(tmp_path / "missing.ttl")


def test_stats_and_check_describe_the_store(store):
    stats = store.stats()
    assert stats["triples"] > 0 and stats["vector_rows"] > 0
    assert stats["embedder"].startswith("hash")
    # Each loaded file's graph records its canonical (RDFC-1.0) fingerprint.
    by_graph = {f["graph"]: f["fingerprint"] for f in stats["fingerprints"]}
    assert by_graph[ORG.resolve().as_uri()].startswith("rdfc-1.0:sha256:")
    check = store.check()
    assert check["nodes"] == check["rows"] > 0
    assert not (check["missing_rows"] or check["orphan_rows"] or check["stale_rows"])


def test_two_threads_query_one_store(store):
    question = "Which vendors sell pumps?"
    expected = store.retrieve(question, strategy="unified")["answers"]["rows"]
    barrier = threading.Barrier(2)
    results, failures = [], []

    def worker():
        try:
            barrier.wait()
            for _ in range(3):
                results.append(store.retrieve(question, strategy="unified")["answers"]["rows"])
                results.append(store.sparql(f"ASK {{ ?v <{VOCAB}basedIn> <{DATA}oslo> }}"))
        except Exception as error:  # noqa: BLE001 - reported below
            failures.append(error)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    assert results.count(expected) == 6 and results.count(True) == 6


def test_the_gil_is_released_while_kgfuse_works(store):
    # A query that keeps kgfuse busy for seconds: every pair of triples of the store.
    slow = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f }"
    window = {}

    def query():
        window["start"] = time.monotonic()
        window["rows"] = store.sparql(slow)
        window["end"] = time.monotonic()

    thread = threading.Thread(target=query)
    ticks = []
    thread.start()
    while thread.is_alive():
        ticks.append(time.monotonic())
    thread.join()
    assert window["rows"][0]["n"] > 0
    # A thread holding the GIL hands it over only between bytecodes, every switch
    # interval: the edges of the query's run are left out of the count.
    margin = 20 * sys.getswitchinterval()
    start, end = window["start"] + margin, window["end"] - margin
    assert end - start > margin, "the query ran too briefly to tell"
    inside = [t for t in ticks if start < t < end]
    # Holding the GIL, the query would leave this thread no tick inside its run.
    assert len(inside) > 1000, (len(inside), window["end"] - window["start"])


def test_the_type_stubs_describe_every_method_of_the_store():
    import ast

    stub = Path(kgfuse.__file__).with_name("_native.pyi")
    tree = ast.parse(stub.read_text())
    (store_class,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Store"]
    stubbed = {n.name for n in store_class.body if isinstance(n, ast.FunctionDef)}
    public = {name for name in dir(kgfuse.Store) if not name.startswith("_")}
    assert public <= stubbed, public - stubbed
    assert (Path(kgfuse.__file__).with_name("py.typed")).exists()


def test_the_narrated_example_runs_and_prints_what_it_says():
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("KGFUSE_LLM_")}
    example = REPO / "examples/python_retrievers.py"
    run = subprocess.run(
        [sys.executable, str(example)], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert f"    {DATA}fjord-pumpeverk\n    {DATA}vistula-cast\n" in out, out
    assert "  def compute_fee(" in out, out
    assert "vendors in the graph: 4" in out, out
