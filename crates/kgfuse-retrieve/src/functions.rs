//! Reading function nodes into [`FunctionInfo`]s: everything an agent needs to
//! call them. The nodes' IRIs are `VALUES` terms, never pasted into query text.

use crate::RetrieveError;
use kgfuse_core::context::FunctionInfo;
use kgfuse_core::text::first_paragraph;
use kgfuse_core::vocab::{kg, w3c};
use kgfuse_graph::model::{NamedNode, Term};
use kgfuse_lexicon::sparql;
use kgfuse_lexicon::sparql::cell_text;
use kgfuse_store::Store;
use std::collections::{BTreeMap, HashMap, HashSet};

/// These IRIs as query terms; an IRI that does not parse is an error naming it.
pub(crate) fn iri_terms<S: AsRef<str>>(iris: &[S]) -> Result<Vec<Term>, RetrieveError> {
    iris.iter()
        .map(|iri| {
            let iri = iri.as_ref();
            NamedNode::new(iri)
                .map(Term::from)
                .map_err(|e| RetrieveError::Invalid(format!("<{iri}>: {e}")))
        })
        .collect()
}

/// The nodes among `iris` that are their library's internals rather than its
/// public API: [`kgfuse_core::code::is_internal`] on their qualified names (a
/// private name, or a definition in test code). A node without a qualified name
/// is not internal.
pub(crate) fn internal_nodes(
    store: &Store,
    iris: &[&str],
) -> Result<HashSet<String>, RetrieveError> {
    if iris.is_empty() {
        return Ok(HashSet::new());
    }
    let text = format!(
        "SELECT ?node ?qualified WHERE {{ {values} ?node <{qualified}> ?qualified }}",
        values = sparql::values("node", &iri_terms(iris)?),
        qualified = kg::QUALIFIED_NAME,
    );
    let solutions = sparql::run(store, text)?;
    Ok(solutions
        .rows
        .iter()
        .filter_map(|row| Some((cell_text(row.first())?, cell_text(row.get(1))?)))
        .filter(|(_, qualified)| kgfuse_core::code::is_internal(qualified))
        .map(|(node, _)| node)
        .collect())
}

/// The descriptions of function nodes, in order, `score` left at 0 for the
/// caller. Three queries (names and places, parameters, links) with every node
/// as a `VALUES` term, sent together: one round trip to a remote graph however
/// many functions there are. Where a node has several names or signatures, the
/// least row is taken, so every backend gives the same one.
pub(crate) fn functions_info(
    store: &Store,
    iris: &[&str],
) -> Result<Vec<FunctionInfo>, RetrieveError> {
    let nodes = iri_terms(iris)?;
    let mut infos: Vec<FunctionInfo> = iris
        .iter()
        .map(|iri| FunctionInfo {
            iri: (*iri).to_owned(),
            ..FunctionInfo::default()
        })
        .collect();
    if nodes.is_empty() {
        return Ok(infos);
    }
    let at: HashMap<String, usize> = iris
        .iter()
        .enumerate()
        .map(|(i, iri)| ((*iri).to_owned(), i))
        .collect();
    let values = sparql::values("node", &nodes);
    let main = format!(
        "SELECT ?node ?name ?signature ?returns ?module ?package ?code ?doc WHERE {{ {values} \
           OPTIONAL {{ ?node <{name}> ?name }} OPTIONAL {{ ?node <{signature}> ?signature }} \
           OPTIONAL {{ ?node <{comment}> ?doc }} \
           OPTIONAL {{ ?node <{returns}> ?returns }} OPTIONAL {{ ?node <{code}> ?code }} \
           OPTIONAL {{ ?node <{in_module}> ?m . ?m <{qualified}> ?module }} \
           OPTIONAL {{ ?node <{in_package}> ?p . ?p <{qualified}> ?package }} }}",
        name = kg::NAME,
        signature = kg::SIGNATURE,
        returns = kg::RETURNS,
        code = kg::CODE,
        in_module = kg::IN_MODULE,
        in_package = kg::IN_PACKAGE,
        qualified = kg::QUALIFIED_NAME,
        comment = w3c::RDFS_COMMENT,
    );
    let params = format!(
        "SELECT ?node ?name ?type ?default WHERE {{ {values} ?node <{has}> ?p . ?p <{name}> ?name . \
           OPTIONAL {{ ?p <{position}> ?pos }} OPTIONAL {{ ?p <{ptype}> ?type }} \
           OPTIONAL {{ ?p <{default}> ?default }} }} ORDER BY ?node ?pos",
        has = kg::HAS_PARAMETER,
        name = kg::NAME,
        position = kg::POSITION,
        ptype = kg::PARAMETER_TYPE,
        default = kg::DEFAULT_VALUE,
    );
    let links = format!(
        "SELECT ?node ?callee ?sibling ?knowledge WHERE {{ {values} \
           {{ ?node <{calls}> ?callee }} UNION \
           {{ ?owner <{has_function}> ?node . ?owner <{has_function}> ?sibling FILTER(?sibling != ?node) }} UNION \
           {{ ?node <{knowledge}> ?knowledge }} }}",
        calls = kg::CALLS,
        has_function = kg::HAS_FUNCTION,
        knowledge = kg::KNOWLEDGE,
    );
    let [main, params, links]: [sparql::Solutions; 3] =
        sparql::run_all(store, vec![main, params, links])?
            .try_into()
            .map_err(|_| RetrieveError::Invalid("three queries, three outcomes".into()))?;
    // Each row as its cells' text by column name, with the index of its node.
    let rows =
        |solutions: &sparql::Solutions, columns: &[&str]| -> Vec<(usize, Vec<Option<String>>)> {
            let node = solutions.column("node");
            let columns: Vec<Option<usize>> = columns.iter().map(|c| solutions.column(c)).collect();
            solutions
                .rows
                .iter()
                .filter_map(|row| {
                    let i = *at.get(&cell_text(row.get(node?))?)?;
                    let cells = columns
                        .iter()
                        .map(|c| c.and_then(|c| cell_text(row.get(c))))
                        .collect();
                    Some((i, cells))
                })
                .collect()
        };
    let mut best: BTreeMap<usize, Vec<Option<String>>> = BTreeMap::new();
    let main_columns = [
        "name",
        "signature",
        "returns",
        "module",
        "package",
        "code",
        "doc",
    ];
    for (i, cells) in rows(&main, &main_columns) {
        let slot = best.entry(i).or_insert_with(|| cells.clone());
        if cells < *slot {
            *slot = cells;
        }
    }
    for (i, mut cells) in best {
        let info = &mut infos[i];
        let mut take = |k: usize| cells.get_mut(k).and_then(Option::take);
        info.name = take(0).unwrap_or_default();
        info.signature = take(1);
        info.returns = take(2);
        info.module = take(3);
        info.package = take(4);
        info.code = take(5);
        info.summary = take(6)
            .map(|doc| first_paragraph(&doc, FunctionInfo::SUMMARY_CHARS))
            .filter(|summary| !summary.is_empty());
    }
    for (i, cells) in rows(&params, &["name", "type", "default"]) {
        let mut param = cells[0].clone().unwrap_or_default();
        if let Some(t) = &cells[1] {
            param.push_str(&format!(": {t}"));
        }
        if let Some(d) = &cells[2] {
            param.push_str(&format!(" = {d}"));
        }
        infos[i].params.push(param);
    }
    for (i, cells) in rows(&links, &["callee", "sibling", "knowledge"]) {
        let info = &mut infos[i];
        let [callee, sibling, knowledge] = [&cells[0], &cells[1], &cells[2]];
        info.depends_on.extend(callee.clone());
        info.siblings.extend(sibling.clone());
        info.knowledge.extend(knowledge.clone());
    }
    for info in &mut infos {
        for list in [
            &mut info.depends_on,
            &mut info.siblings,
            &mut info.knowledge,
        ] {
            list.sort();
            list.dedup();
        }
    }
    Ok(infos)
}

/// Function -> package for the functions and methods among `functions` (other
/// nodes left out). One query with the functions as `VALUES`, so its work grows
/// with them, not with the store; a function in several packages is given the
/// greatest package IRI.
pub(crate) fn packages_of_functions(
    store: &Store,
    functions: &[String],
) -> Result<BTreeMap<String, String>, RetrieveError> {
    memberships(store, &[("function", functions)])
}

/// Function -> package for the functions and methods among `functions` that
/// are in one of `packages`, read as [`packages_of_functions`] reads.
pub(crate) fn functions_in_packages(
    store: &Store,
    functions: &[String],
    packages: &[String],
) -> Result<BTreeMap<String, String>, RetrieveError> {
    memberships(store, &[("function", functions), ("package", packages)])
}

/// Function -> package for every function and method of these packages, read
/// as [`packages_of_functions`] reads.
pub(crate) fn functions_of_packages(
    store: &Store,
    packages: &[String],
) -> Result<BTreeMap<String, String>, RetrieveError> {
    memberships(store, &[("package", packages)])
}

/// Function -> package with each bound variable (`function` or `package`) one
/// of its IRIs.
fn memberships(
    store: &Store,
    bounds: &[(&str, &[String])],
) -> Result<BTreeMap<String, String>, RetrieveError> {
    if bounds.iter().any(|(_, iris)| iris.is_empty()) {
        return Ok(BTreeMap::new());
    }
    let mut values = String::new();
    for (variable, iris) in bounds {
        values.push_str(&sparql::values(variable, &iri_terms(iris)?));
        values.push(' ');
    }
    let solutions = sparql::run(
        store,
        format!(
            "SELECT ?function ?package WHERE {{ {values}VALUES ?kind {{ <{f}> <{m}> }} \
               ?function <{in_package}> ?package ; a ?kind }}",
            f = kg::FUNCTION,
            m = kg::METHOD,
            in_package = kg::IN_PACKAGE,
        ),
    )?;
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for row in &solutions.rows {
        if let (Some(function), Some(package)) = (cell_text(row.first()), cell_text(row.get(1))) {
            let slot = out.entry(function).or_default();
            if package > *slot {
                *slot = package;
            }
        }
    }
    Ok(out)
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
            f = kg::FUNCTION,
            m = kg::METHOD,
            in_package = kg::IN_PACKAGE,
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
