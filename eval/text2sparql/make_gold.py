#!/usr/bin/env python3
"""Computes the true result sets of the text-to-SPARQL development sets with rdflib.

    PY=~/.cache/kgfuse/text2sparql-venv/bin/python     # eval/text2sparql/install_client.sh
    $PY eval/text2sparql/make_gold.py                  # both sets: writes SET/gold.json, SET/shapes.tsv
    $PY eval/text2sparql/make_gold.py --check          # recompute and compare with the committed files
    $PY eval/text2sparql/make_gold.py --entailment     # also run every gold query over an RDFS closure

Sets: `lubm1` (LUBM-1 from --lubm, default ../shared/data/lubm/lubm1.tar.gz beside the
checkout) and `payments` (payments/payments.ttl).

Each SET/questions.yaml is in the TEXT2SPARQL questions-file format. gold.json is what
`text2sparql query SET/questions.yaml -e ENDPOINT` writes as the true result set: for
each question and language a key `PREFIX:ID-LANG` whose value maps every value of
every binding of the gold query's result to 1 (an ASK maps "true" to 1 or 0), and an
`order_required` list of the questions with the feature RESULT_ORDER_MATTERS. The
transformation is the client's own (text2sparql_client.utils.evaluation_metrics
.DBpediaDict2PytrecDict), applied to rdflib's SPARQL JSON results; the engine is
rdflib, independent of kgfuse. rdflib_endpoint.py serves the same results over HTTP,
and self_check.sh shows that `text2sparql query` against it writes exactly gold.json.

xsd:decimal results are written in canonical form (no trailing zeros, "4" not "4.0"),
the form Oxigraph prints; rdflib keeps the scale of the operands ("0.40"). A decimal
with more than 12 fractional digits is refused: it comes from an inexact division
(AVG), whose digits differ between engines.

--entailment adds the RDFS consequences (rdfs2, rdfs3, rdfs5, rdfs7, rdfs9, rdfs11) of a
schema to the data and runs every gold query again; the results must not change. The
schema of payments is its own vocabulary; for lubm1 it is the class and property
hierarchy of univ-bench below (the ontology file is not bundled with the data), so the
check there covers subclasses, subproperties and the domains and ranges listed.

Checks on every run: ids unique, an English question and a gold query per question, a
`# shape:` comment per question naming a known shape, a non-empty result (or an ASK),
at most 200 rows.
"""

import argparse
import decimal
import json
import pathlib
import re
import sys
import tarfile

import rdflib
import yaml
from rdflib import RDF, RDFS, XSD

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
SETS = ("lubm1", "payments")
SHAPES = (
    "lookup", "count", "superlative", "topn", "aggregate", "group", "comparison",
    "negation", "ask", "multicolumn",
)
LANGUAGES = ["en"]  # the client's default for `text2sparql query` and `evaluate`
MAX_ROWS = 200
MAX_DECIMAL_PLACES = 12

# The univ-bench class and property hierarchy (LUBM), as far as RDFS expresses it.
UNIV_BENCH_SCHEMA = """
@prefix ub: <http://swat.cse.lehigh.edu/onto/univ-bench.owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ub:Employee rdfs:subClassOf ub:Person .
ub:Faculty rdfs:subClassOf ub:Employee .
ub:Professor rdfs:subClassOf ub:Faculty .
ub:FullProfessor rdfs:subClassOf ub:Professor .
ub:AssociateProfessor rdfs:subClassOf ub:Professor .
ub:AssistantProfessor rdfs:subClassOf ub:Professor .
ub:Lecturer rdfs:subClassOf ub:Faculty .
ub:Student rdfs:subClassOf ub:Person .
ub:UndergraduateStudent rdfs:subClassOf ub:Student .
ub:GraduateStudent rdfs:subClassOf ub:Person .
ub:ResearchAssistant rdfs:subClassOf ub:Person .
ub:TeachingAssistant rdfs:subClassOf ub:Person .
ub:Department rdfs:subClassOf ub:Organization .
ub:University rdfs:subClassOf ub:Organization .
ub:ResearchGroup rdfs:subClassOf ub:Organization .
ub:Course rdfs:subClassOf ub:Work .
ub:GraduateCourse rdfs:subClassOf ub:Course .
ub:Publication rdfs:subClassOf ub:Work .
ub:headOf rdfs:subPropertyOf ub:worksFor .
ub:worksFor rdfs:subPropertyOf ub:memberOf .
ub:doctoralDegreeFrom rdfs:subPropertyOf ub:degreeFrom .
ub:mastersDegreeFrom rdfs:subPropertyOf ub:degreeFrom .
ub:undergraduateDegreeFrom rdfs:subPropertyOf ub:degreeFrom .
ub:advisor rdfs:domain ub:Person ; rdfs:range ub:Professor .
ub:degreeFrom rdfs:domain ub:Person ; rdfs:range ub:University .
ub:memberOf rdfs:domain ub:Person ; rdfs:range ub:Organization .
ub:publicationAuthor rdfs:domain ub:Publication ; rdfs:range ub:Person .
ub:subOrganizationOf rdfs:domain ub:Organization ; rdfs:range ub:Organization .
ub:teacherOf rdfs:domain ub:Faculty ; rdfs:range ub:Course .
ub:teachingAssistantOf rdfs:domain ub:TeachingAssistant ; rdfs:range ub:Course .
ub:emailAddress rdfs:domain ub:Person .
ub:telephone rdfs:domain ub:Person .
"""


def fail(message):
    sys.exit(f"make_gold.py: {message}")


# ---- data


def load_lubm(archive):
    """LUBM-1 as eval/lubm/make_set.py loads it: every .owl file of the archive."""
    graph = rdflib.Graph()
    with tarfile.open(archive) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if member.isfile() and member.name.endswith(".owl"):
                data = tar.extractfile(member).read()
                graph.parse(data=data, format="xml", publicID="file:///" + member.name)
    return graph


def load_graph(name, lubm_archive=None):
    if name == "lubm1":
        archive = pathlib.Path(lubm_archive or REPO.parent / "shared" / "data" / "lubm" / "lubm1.tar.gz")
        if not archive.exists():
            fail(f"{archive} not found (give --lubm PATH)")
        return load_lubm(archive)
    if name == "payments":
        graph = rdflib.Graph()
        graph.parse(HERE / "payments" / "payments.ttl", format="turtle")
        return graph
    fail(f"unknown set {name!r} (one of {', '.join(SETS)})")


def schema_of(name, graph):
    if name == "lubm1":
        schema = rdflib.Graph()
        schema.parse(data=UNIV_BENCH_SCHEMA, format="turtle")
        return schema
    return graph  # the payments vocabulary is in the same file


def rdfs_closure(graph, schema):
    """A copy of graph with the RDFS consequences of schema's subClassOf,
    subPropertyOf, domain and range statements."""

    def transitive(pred):
        up = {}
        for s, _, o in schema.triples((None, pred, None)):
            up.setdefault(s, set()).add(o)
        changed = True
        while changed:
            changed = False
            for s in list(up):
                more = set().union(*(up.get(o, set()) for o in up[s])) - up[s]
                if more:
                    up[s] |= more
                    changed = True
        return up

    super_props = transitive(RDFS.subPropertyOf)
    super_classes = transitive(RDFS.subClassOf)
    domains, ranges = {}, {}
    for s, _, o in schema.triples((None, RDFS.domain, None)):
        domains.setdefault(s, set()).add(o)
    for s, _, o in schema.triples((None, RDFS.range, None)):
        ranges.setdefault(s, set()).add(o)

    out = rdflib.Graph()
    for triple in graph:
        out.add(triple)
    for s, p, o in list(out):  # rdfs7
        for q in super_props.get(p, ()):
            out.add((s, q, o))
    for s, p, o in list(out):  # rdfs2, rdfs3
        for c in domains.get(p, ()):
            out.add((s, RDF.type, c))
        if not isinstance(o, rdflib.Literal):
            for c in ranges.get(p, ()):
                out.add((o, RDF.type, c))
    for s, _, c in list(out.triples((None, RDF.type, None))):  # rdfs9
        for d in super_classes.get(c, ()):
            out.add((s, RDF.type, d))
    return out


# ---- results


def canonical_decimal(text):
    number = decimal.Decimal(text)
    if not number.is_finite():
        return text
    out = format(number.normalize(), "f")
    if "." in out:
        out = out.rstrip("0").rstrip(".")
    return "0" if out in ("-0", "") else out


def run_query(graph, sparql):
    """The query's result as a SPARQL 1.1 JSON results document (a dict), with
    xsd:decimal and xsd:integer values in canonical form."""
    result = graph.query(sparql)
    doc = json.loads(result.serialize(format="json"))
    for row in doc.get("results", {}).get("bindings", []):
        for term in row.values():
            datatype = term.get("datatype")
            if datatype == str(XSD.decimal):
                term["value"] = canonical_decimal(term["value"])
            elif datatype == str(XSD.integer):
                term["value"] = str(int(term["value"]))
    return doc


def transform(qname, doc):
    """The client's own result-set transformation (DBpediaDict2PytrecDict)."""
    try:
        from text2sparql_client.utils.evaluation_metrics import DBpediaDict2PytrecDict
    except ImportError:
        fail("text2sparql_client is not importable: run eval/text2sparql/install_client.sh "
             "and use its venv's python")
    return DBpediaDict2PytrecDict(qname).tranform(doc)


# ---- question files


def read_set(name):
    path = HERE / name / "questions.yaml"
    text = path.read_text()
    data = yaml.safe_load(text)
    try:
        from text2sparql_client.models.questions_file import QuestionsFile
    except ImportError:
        fail("text2sparql_client is not importable: run eval/text2sparql/install_client.sh "
             "and use its venv's python")
    QuestionsFile.model_validate(data)  # what `text2sparql ask` checks
    questions = data["questions"]
    prefix = data["dataset"]["prefix"]
    if not data["dataset"].get("id") or not prefix:
        fail(f"{path}: dataset needs an id and a prefix")
    ids = [q.get("id") for q in questions]
    if any(not isinstance(i, int) for i in ids) or len(set(ids)) != len(ids):
        fail(f"{path}: question ids must be unique integers")
    shapes = {}
    pending = None
    for line in text.splitlines():
        m = re.match(r"\s*# shape: (\w+)\s*$", line)
        if m:
            pending = m.group(1)
            continue
        m = re.match(r"\s*- id: (\d+)\s*$", line)
        if m:
            if pending is None:
                fail(f"{path}: question {m.group(1)} has no '# shape:' comment before it")
            if pending not in SHAPES:
                fail(f"{path}: question {m.group(1)}: unknown shape {pending!r}")
            shapes[int(m.group(1))] = pending
            pending = None
    for q in questions:
        if q["id"] not in shapes:
            fail(f"{path}: question {q['id']} has no shape")
        if not q.get("question", {}).get("en"):
            fail(f"{path}: question {q['id']} has no English text")
        if not q.get("query", {}).get("sparql"):
            fail(f"{path}: question {q['id']} has no gold query")
    return data, shapes


def order_matters(question):
    return "RESULT_ORDER_MATTERS" in (question.get("features") or [])


def gold_for(name, graph, entailed=None):
    """(true result set, shapes.tsv text, report lines)."""
    data, shapes = read_set(name)
    prefix = data["dataset"]["prefix"]
    truth, order_required, report = {}, [], []
    for question in data["questions"]:
        sparql = question["query"]["sparql"]
        doc = run_query(graph, sparql)
        qid = question["id"]
        where = f"{name} question {qid}"
        if "boolean" in doc:
            if shapes[qid] != "ask":
                fail(f"{where}: an ASK query but shape {shapes[qid]}")
            summary = f"ASK {str(doc['boolean']).lower()}"
        else:
            rows = doc["results"]["bindings"]
            if not rows:
                fail(f"{where}: the gold query has no rows")
            if len(rows) > MAX_ROWS:
                fail(f"{where}: {len(rows)} rows, more than {MAX_ROWS}")
            for row in rows:
                for term in row.values():
                    if term.get("datatype") == str(XSD.decimal) and "." in term["value"]:
                        places = len(term["value"].split(".")[1])
                        if places > MAX_DECIMAL_PLACES:
                            fail(f"{where}: decimal {term['value']} is not exact")
            summary = f"{len(rows)} rows x {len(doc['head']['vars'])} columns"
        if entailed is not None:
            again = run_query(entailed, sparql)
            if transform("x", again) != transform("x", doc):
                fail(f"{where}: the result differs under RDFS entailment")
        for lang in LANGUAGES:
            qname = f"{prefix}:{qid}-{lang}"
            part = transform(qname, doc)
            truth.update({k: dict(sorted(v.items())) for k, v in part.items()})
            if order_matters(question):
                order_required.append(qname)
        report.append(f"{qid}\t{shapes[qid]}\t{summary}\t{question['question']['en']}")
    if order_required:
        truth["order_required"] = order_required
    tsv = "id\tshape\n" + "".join(f"{qid}\t{shapes[qid]}\n" for qid in sorted(shapes))
    return truth, tsv, report


def dump(obj):
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="*", default=list(SETS), help="lubm1, payments (default both)")
    parser.add_argument("--lubm", help="the LUBM-1 archive (default ../shared/data/lubm/lubm1.tar.gz)")
    parser.add_argument("--check", action="store_true", help="compare with the committed files, write nothing")
    parser.add_argument("--entailment", action="store_true", help="also check the results under RDFS entailment")
    parser.add_argument("--verbose", "-v", action="store_true", help="print one line per question")
    args = parser.parse_args()

    stale = []
    for name in args.sets:
        if name not in SETS:
            fail(f"unknown set {name!r} (one of {', '.join(SETS)})")
        graph = load_graph(name, args.lubm)
        entailed = rdfs_closure(graph, schema_of(name, graph)) if args.entailment else None
        truth, tsv, report = gold_for(name, graph, entailed)
        if args.verbose:
            print("\n".join(report))
        outputs = {HERE / name / "gold.json": dump(truth), HERE / name / "shapes.tsv": tsv}
        for path, text in outputs.items():
            if args.check:
                if not path.exists() or path.read_text() != text:
                    stale.append(str(path.relative_to(REPO)))
            else:
                path.write_text(text)
        counts = {}
        for line in tsv.splitlines()[1:]:
            shape = line.split("\t")[1]
            counts[shape] = counts.get(shape, 0) + 1
        asks = [r.split("\t")[2] for r in report if r.split("\t")[1] == "ask"]
        note = " (entailment: same results)" if args.entailment else ""
        print(f"{name}: {len(report)} questions; "
              + ", ".join(f"{s} {counts[s]}" for s in SHAPES if s in counts)
              + f"; ASK answers: {', '.join(a.split()[1] for a in asks)}{note}")
    if stale:
        fail("out of date: " + ", ".join(stale) + " (run make_gold.py)")


if __name__ == "__main__":
    main()
