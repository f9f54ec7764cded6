//! Reading a function node into a [`FunctionInfo`]: everything an agent needs to
//! call it. The node's IRI is bound as a term, never pasted into query text.

use crate::RetrieveError;
use crate::sources::cell_text;
use crate::sparql;
use kgfuse_core::context::FunctionInfo;
use kgfuse_core::vocab::kgfuse;
use kgfuse_graph::model::{NamedNode, Term};
use kgfuse_graph::{QueryOutcome, parse_query};
use kgfuse_store::Store;
use std::collections::BTreeMap;

/// Runs `query` with `?node` bound to `iri` and returns its rows.
pub(crate) fn rows_for(
    store: &Store,
    query: &str,
    iri: &NamedNode,
) -> Result<Vec<Vec<Option<Term>>>, RetrieveError> {
    let options = store.query_options();
    let parsed = parse_query(query, &options)?;
    let bindings = [("node".to_owned(), Term::NamedNode(iri.clone()))];
    match store.graph().query_algebra(parsed, &bindings, &options)? {
        QueryOutcome::Solutions { rows, .. } => Ok(rows),
        _ => Ok(Vec::new()),
    }
}

/// The description of one function node; `score` is left at 0 for the caller.
pub(crate) fn function_info(store: &Store, iri: &str) -> Result<FunctionInfo, RetrieveError> {
    let node = NamedNode::new(iri).map_err(|e| RetrieveError::Invalid(format!("<{iri}>: {e}")))?;
    let mut info = FunctionInfo {
        iri: iri.to_owned(),
        ..FunctionInfo::default()
    };
    let main = format!(
        "SELECT ?name ?signature ?returns ?module ?package ?code ?node WHERE {{ \
           OPTIONAL {{ ?node <{name}> ?name }} OPTIONAL {{ ?node <{signature}> ?signature }} \
           OPTIONAL {{ ?node <{returns}> ?returns }} OPTIONAL {{ ?node <{code}> ?code }} \
           OPTIONAL {{ ?node <{in_module}> ?m . ?m <{qualified}> ?module }} \
           OPTIONAL {{ ?node <{in_package}> ?p . ?p <{qualified}> ?package }} }} LIMIT 1",
        name = kgfuse::NAME,
        signature = kgfuse::SIGNATURE,
        returns = kgfuse::RETURNS,
        code = kgfuse::CODE,
        in_module = kgfuse::IN_MODULE,
        in_package = kgfuse::IN_PACKAGE,
        qualified = kgfuse::QUALIFIED_NAME,
    );
    if let Some(row) = rows_for(store, &main, &node)?.first() {
        info.name = cell_text(row.first()).unwrap_or_default();
        info.signature = cell_text(row.get(1));
        info.returns = cell_text(row.get(2));
        info.module = cell_text(row.get(3));
        info.package = cell_text(row.get(4));
        info.code = cell_text(row.get(5));
    }
    let params = format!(
        "SELECT ?name ?type ?default ?node WHERE {{ ?node <{has}> ?p . ?p <{name}> ?name . \
           OPTIONAL {{ ?p <{position}> ?pos }} OPTIONAL {{ ?p <{ptype}> ?type }} \
           OPTIONAL {{ ?p <{default}> ?default }} }} ORDER BY ?pos",
        has = kgfuse::HAS_PARAMETER,
        name = kgfuse::NAME,
        position = kgfuse::POSITION,
        ptype = kgfuse::PARAMETER_TYPE,
        default = kgfuse::DEFAULT_VALUE,
    );
    for row in rows_for(store, &params, &node)? {
        let mut param = cell_text(row.first()).unwrap_or_default();
        if let Some(t) = cell_text(row.get(1)) {
            param.push_str(&format!(": {t}"));
        }
        if let Some(d) = cell_text(row.get(2)) {
            param.push_str(&format!(" = {d}"));
        }
        info.params.push(param);
    }
    let links = format!(
        "SELECT ?callee ?sibling ?knowledge ?node WHERE {{ \
           {{ ?node <{calls}> ?callee }} UNION \
           {{ ?owner <{has_function}> ?node . ?owner <{has_function}> ?sibling FILTER(?sibling != ?node) }} UNION \
           {{ ?node <{knowledge}> ?knowledge }} }}",
        calls = kgfuse::CALLS,
        has_function = kgfuse::HAS_FUNCTION,
        knowledge = kgfuse::KNOWLEDGE,
    );
    for row in rows_for(store, &links, &node)? {
        if let Some(callee) = cell_text(row.first()) {
            info.depends_on.push(callee);
        }
        if let Some(sibling) = cell_text(row.get(1)) {
            info.siblings.push(sibling);
        }
        if let Some(knowledge) = cell_text(row.get(2)) {
            info.knowledge.push(knowledge);
        }
    }
    for list in [
        &mut info.depends_on,
        &mut info.siblings,
        &mut info.knowledge,
    ] {
        list.sort();
        list.dedup();
    }
    Ok(info)
}

/// The functions and methods of every package, sorted (`domain` keeps it until the
/// next write; the case base reads it once per build).
pub(crate) fn functions_by_package(
    store: &Store,
) -> Result<BTreeMap<String, Vec<String>>, RetrieveError> {
    let solutions = sparql::run(
        store,
        format!(
            "SELECT ?function ?package WHERE {{ VALUES ?kind {{ <{f}> <{m}> }} \
               ?function a ?kind ; <{in_package}> ?package }}",
            f = kgfuse::FUNCTION,
            m = kgfuse::METHOD,
            in_package = kgfuse::IN_PACKAGE,
        ),
    )?;
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for row in &solutions.rows {
        if let (Some(function), Some(package)) = (cell_text(row.first()), cell_text(row.get(1))) {
            out.entry(package).or_default().push(function);
        }
    }
    for functions in out.values_mut() {
        functions.sort();
        functions.dedup();
    }
    Ok(out)
}
