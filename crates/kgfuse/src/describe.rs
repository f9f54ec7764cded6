//! `Engine::describe_entity`: one node of the graph, found by IRI or by label, with
//! its types, labels, comment and the triples around it.
//!
//! Labels are matched as literal terms bound into the queries (SPARQL substitution),
//! never pasted into query text, so a label can hold any character.

use crate::model::{Literal, NamedNode, Term};
use crate::{Engine, Error, QueryOptions, QueryOutcome};
use kgfuse_core::ontology::INFERRED_GRAPH;
use kgfuse_core::vocab::{RDF, XSD, kg, w3c};
use serde::{Deserialize, Serialize};

/// Most outgoing and most incoming triples in a description.
pub const MAX_DESCRIBED_TRIPLES: usize = 50;
/// Most candidates listed for an ambiguous label.
pub const MAX_CANDIDATES: usize = 20;
/// Longest accepted IRI or label, in characters.
const MAX_INPUT_CHARS: usize = 2000;

/// Predicates a label is matched against, in the order they are tried.
const LABEL_PREDICATES: [&str; 5] = [
    w3c::RDFS_LABEL,
    w3c::SKOS_PREF_LABEL,
    w3c::SKOS_ALT_LABEL,
    kg::NAME,
    kg::QUALIFIED_NAME,
];

/// Predicates read as the entity's labels.
const SHOWN_LABELS: [&str; 4] = [
    w3c::RDFS_LABEL,
    w3c::SKOS_PREF_LABEL,
    w3c::SKOS_ALT_LABEL,
    kg::NAME,
];

/// Predicates read as the entity's comment, best first.
const COMMENTS: [&str; 3] = [
    w3c::RDFS_COMMENT,
    w3c::SKOS_DEFINITION,
    w3c::DCTERMS_DESCRIPTION,
];

/// The variables and rows of a SELECT result.
type Rows = (Vec<String>, Vec<Vec<Option<Term>>>);

/// Whether the input named one entity, several, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum EntityStatus {
    /// One entity; the description fields are filled.
    Resolved,
    /// The label names several entities; see `candidates`.
    Ambiguous,
    /// No IRI in the store and no label matches.
    #[default]
    NotFound,
}

/// How the input was matched to the entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntityMatch {
    /// An IRI, `<...>` or bare `http(s)://...`.
    Iri,
    /// A prefixed name with a prefix the store knows (`kgfuse:Case`).
    PrefixedName,
    /// Exactly an `rdfs:label`, `skos:prefLabel`, `skos:altLabel`, `kgfuse:name` or
    /// `kgfuse:qualifiedName` (whatever its language tag).
    Label,
    /// One of those labels, ignoring case.
    LabelIgnoringCase,
}

/// What kind of RDF term a value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TermKind {
    /// An IRI.
    Iri,
    /// A blank node (`_:id`).
    Blank,
    /// A literal (its lexical value).
    Literal,
}

/// A triple whose subject is the described entity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutgoingTriple {
    /// Predicate IRI.
    pub predicate: String,
    /// Object: IRI, `_:id`, or the literal's lexical value.
    pub object: String,
    /// What the object is.
    pub object_kind: TermKind,
    /// Datatype IRI of a literal other than a plain string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datatype: Option<String>,
    /// Language tag of a literal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Named graph holding the triple (`null`: the default graph).
    pub graph: Option<String>,
}

/// A triple whose object is the described entity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncomingTriple {
    /// Subject: IRI or `_:id`.
    pub subject: String,
    /// Predicate IRI.
    pub predicate: String,
    /// Named graph holding the triple (`null`: the default graph).
    pub graph: Option<String>,
}

/// One of several entities an ambiguous label names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntityCandidate {
    /// The entity's IRI.
    pub iri: String,
    /// Its labels.
    pub labels: Vec<String>,
    /// Its types (class IRIs).
    pub types: Vec<String>,
}

/// What [`Engine::describe_entity`] found. The field names are a contract shared by
/// the MCP `describe_entity` tool and the HTTP API.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntityDescription {
    /// The IRI or label as given.
    pub query: String,
    /// `resolved`, `ambiguous` or `not_found`.
    pub status: EntityStatus,
    /// How the input was matched (`null` unless resolved).
    pub matched_by: Option<EntityMatch>,
    /// The entity's IRI (`null` unless resolved).
    pub iri: Option<String>,
    /// Its types (class IRIs).
    pub types: Vec<String>,
    /// Its labels (`rdfs:label`, `skos:prefLabel`, `skos:altLabel`, `kgfuse:name`).
    pub labels: Vec<String>,
    /// Its `rdfs:comment` (else `skos:definition`, else `dcterms:description`).
    pub comment: Option<String>,
    /// Up to [`MAX_DESCRIBED_TRIPLES`] triples with the entity as subject.
    pub outgoing: Vec<OutgoingTriple>,
    /// Whether there were more outgoing triples than listed.
    pub outgoing_truncated: bool,
    /// Up to [`MAX_DESCRIBED_TRIPLES`] triples with the entity as object.
    pub incoming: Vec<IncomingTriple>,
    /// Whether there were more incoming triples than listed.
    pub incoming_truncated: bool,
    /// The entities an ambiguous label names (at most [`MAX_CANDIDATES`]), for the
    /// caller to pick from; empty otherwise.
    pub candidates: Vec<EntityCandidate>,
}

impl Engine {
    /// Describes one entity, given its IRI (`<...>`, a bare `http(s)://` IRI or a
    /// prefixed name such as `kgfuse:Case`) or a label (an exact `rdfs:label`,
    /// `skos:prefLabel`, `skos:altLabel`, `kgfuse:name` or `kgfuse:qualifiedName`,
    /// else the same ignoring case): its types, labels, comment, and up to
    /// [`MAX_DESCRIBED_TRIPLES`] outgoing and incoming triples.
    ///
    /// A label naming several entities gives [`EntityStatus::Ambiguous`] with the
    /// candidates, never an arbitrary pick; nothing matching gives
    /// [`EntityStatus::NotFound`]. Errors are reserved for unusable input (blank, an
    /// invalid IRI) and store failures.
    pub fn describe_entity(&self, iri_or_label: &str) -> Result<EntityDescription, Error> {
        let input = iri_or_label.trim();
        if input.is_empty() {
            return Err(Error::Invalid(
                "describe_entity needs an IRI or a label, not a blank string".into(),
            ));
        }
        if input.chars().count() > MAX_INPUT_CHARS {
            return Err(Error::Invalid(format!(
                "an IRI or label is at most {MAX_INPUT_CHARS} characters"
            )));
        }
        let options = self.query_options();
        let mut description = EntityDescription {
            query: iri_or_label.to_owned(),
            ..EntityDescription::default()
        };
        if let Some(iri) = explicit_iri(input)? {
            if self.mentions(&iri, &options)? {
                self.fill(&mut description, iri, EntityMatch::Iri, &options)?;
            }
            return Ok(description);
        }
        if let Some(iri) = prefixed_name(input, &options)
            && self.mentions(&iri, &options)?
        {
            self.fill(&mut description, iri, EntityMatch::PrefixedName, &options)?;
            return Ok(description);
        }
        let (matched_by, found) = self.by_label(input, &options)?;
        match found.as_slice() {
            [] => {}
            [only] => {
                let iri = only.clone();
                self.fill(&mut description, iri, matched_by, &options)?;
                return Ok(description);
            }
            many => {
                description.status = EntityStatus::Ambiguous;
                for iri in many.iter().take(MAX_CANDIDATES) {
                    description.candidates.push(EntityCandidate {
                        iri: iri.as_str().to_owned(),
                        labels: self.labels(iri, &options)?,
                        types: self.types(iri, &options)?,
                    });
                }
                return Ok(description);
            }
        }
        Ok(description)
    }

    /// Fills the description of a resolved entity.
    fn fill(
        &self,
        description: &mut EntityDescription,
        iri: NamedNode,
        matched_by: EntityMatch,
        options: &QueryOptions,
    ) -> Result<(), Error> {
        description.status = EntityStatus::Resolved;
        description.matched_by = Some(matched_by);
        description.types = self.types(&iri, options)?;
        description.labels = self.labels(&iri, options)?;
        description.comment = self.comment(&iri, options)?;
        (description.outgoing, description.outgoing_truncated) = self.outgoing(&iri, options)?;
        (description.incoming, description.incoming_truncated) = self.incoming(&iri, options)?;
        description.iri = Some(iri.into_string());
        Ok(())
    }

    /// Runs a SELECT with `?entity` bound and returns its rows.
    fn entity_rows(
        &self,
        query: &str,
        entity: &NamedNode,
        options: &QueryOptions,
    ) -> Result<Rows, Error> {
        select(self.sparql_bound(
            query,
            &[("entity".to_owned(), entity.clone().into())],
            options,
        )?)
    }

    /// Whether any triple mentions `iri` (as subject, predicate or object).
    fn mentions(&self, iri: &NamedNode, options: &QueryOptions) -> Result<bool, Error> {
        let (_, rows) = self.entity_rows(
            "SELECT ?entity WHERE { { ?entity ?p ?o } UNION { ?s ?entity ?o } UNION { ?s ?p ?entity } } LIMIT 1",
            iri,
            options,
        )?;
        Ok(!rows.is_empty())
    }

    /// IRIs with `label` as a label, sorted: those whose label is exactly `label`
    /// (whatever its language tag or datatype) when there are any, else those whose
    /// label equals it ignoring case. One scan of the label literals (a language
    /// tag cannot be looked up without knowing it).
    fn by_label(
        &self,
        label: &str,
        options: &QueryOptions,
    ) -> Result<(EntityMatch, Vec<NamedNode>), Error> {
        let query = format!(
            "SELECT DISTINCT ?entity ?text ?needle WHERE {{ VALUES ?p {{ {} }} \
             ?entity ?p ?text . FILTER(isIRI(?entity) && isLiteral(?text) \
             && LCASE(STR(?text)) = ?needle) }} ORDER BY ?entity ?text LIMIT 1000",
            iri_list(&LABEL_PREDICATES)
        );
        let (variables, rows) = select(self.sparql_bound(
            &query,
            &[(
                "needle".to_owned(),
                Literal::new_simple_literal(label.to_lowercase()).into(),
            )],
            options,
        )?)?;
        let (e, t) = (column(&variables, "entity")?, column(&variables, "text")?);
        let mut exact = Vec::new();
        let mut folded = Vec::new();
        for row in rows {
            let Some(Some(Term::NamedNode(entity))) = row.get(e).cloned() else {
                continue;
            };
            if text(&row, t).as_deref() == Some(label) && !exact.contains(&entity) {
                exact.push(entity.clone());
            }
            if !folded.contains(&entity) {
                folded.push(entity);
            }
        }
        Ok(if exact.is_empty() {
            (EntityMatch::LabelIgnoringCase, folded)
        } else {
            (EntityMatch::Label, exact)
        })
    }

    /// The entity's asserted types, sorted (at most [`MAX_DESCRIBED_TRIPLES`]): the
    /// classes it was given, not those RDFS entailment adds above them (those are
    /// among its outgoing triples, in the derived graph).
    fn types(&self, iri: &NamedNode, options: &QueryOptions) -> Result<Vec<String>, Error> {
        let (variables, rows) = self.entity_rows(
            &format!(
                "SELECT DISTINCT ?type ?entity WHERE {{ \
                 {{ GRAPH ?g {{ ?entity <{RDF}type> ?type }} FILTER(?g != <{INFERRED_GRAPH}>) }} \
                 UNION {{ ?entity <{RDF}type> ?type }} }} \
                 ORDER BY ?type LIMIT {MAX_DESCRIBED_TRIPLES}"
            ),
            iri,
            &graph_by_graph(options),
        )?;
        let at = column(&variables, "type")?;
        Ok(rows.iter().filter_map(|r| text(r, at)).collect())
    }

    /// The entity's labels, distinct, in predicate order.
    fn labels(&self, iri: &NamedNode, options: &QueryOptions) -> Result<Vec<String>, Error> {
        let (variables, rows) = self.entity_rows(
            &format!(
                "SELECT DISTINCT ?p ?label ?entity WHERE {{ VALUES ?p {{ {} }} ?entity ?p ?label . \
                 FILTER(isLiteral(?label)) }} ORDER BY ?label LIMIT {}",
                iri_list(&SHOWN_LABELS),
                MAX_DESCRIBED_TRIPLES
            ),
            iri,
            options,
        )?;
        let (p, l) = (column(&variables, "p")?, column(&variables, "label")?);
        let mut labels = Vec::new();
        for predicate in SHOWN_LABELS {
            for row in &rows {
                if text(row, p).as_deref() == Some(predicate)
                    && let Some(label) = text(row, l)
                    && !labels.contains(&label)
                {
                    labels.push(label);
                }
            }
        }
        Ok(labels)
    }

    /// The entity's comment: `rdfs:comment`, else `skos:definition`, else
    /// `dcterms:description`.
    fn comment(&self, iri: &NamedNode, options: &QueryOptions) -> Result<Option<String>, Error> {
        let (variables, rows) = self.entity_rows(
            &format!(
                "SELECT DISTINCT ?p ?comment ?entity WHERE {{ VALUES ?p {{ {} }} \
                 ?entity ?p ?comment . FILTER(isLiteral(?comment)) }} ORDER BY ?comment LIMIT 100",
                iri_list(&COMMENTS)
            ),
            iri,
            options,
        )?;
        let (p, c) = (column(&variables, "p")?, column(&variables, "comment")?);
        Ok(COMMENTS.iter().find_map(|predicate| {
            rows.iter()
                .find(|row| text(row, p).as_deref() == Some(*predicate))
                .and_then(|row| text(row, c))
        }))
    }

    /// Triples with the entity as subject, from named graphs and the default graph.
    fn outgoing(
        &self,
        iri: &NamedNode,
        options: &QueryOptions,
    ) -> Result<(Vec<OutgoingTriple>, bool), Error> {
        let limit = MAX_DESCRIBED_TRIPLES + 1;
        let (variables, rows) = self.entity_rows(
            &format!(
                "SELECT DISTINCT ?predicate ?object ?graph ?entity WHERE {{ \
                 {{ GRAPH ?graph {{ ?entity ?predicate ?object }} }} UNION {{ ?entity ?predicate ?object }} }} \
                 ORDER BY ?predicate ?object ?graph LIMIT {limit}"
            ),
            iri,
            &graph_by_graph(options),
        )?;
        let (p, o, g) = (
            column(&variables, "predicate")?,
            column(&variables, "object")?,
            column(&variables, "graph")?,
        );
        let mut triples: Vec<OutgoingTriple> = rows
            .iter()
            .filter_map(|row| {
                let predicate = text(row, p)?;
                let object = row.get(o).cloned().flatten()?;
                let (object, object_kind, datatype, language) = match object {
                    Term::NamedNode(n) => (n.into_string(), TermKind::Iri, None, None),
                    Term::BlankNode(b) => {
                        (format!("_:{}", b.as_str()), TermKind::Blank, None, None)
                    }
                    Term::Literal(l) => {
                        let language = l.language().map(str::to_owned);
                        let datatype = l.datatype().as_str();
                        let datatype = (language.is_none()
                            && datatype.strip_prefix(XSD) != Some("string"))
                        .then(|| datatype.to_owned());
                        (l.value().to_owned(), TermKind::Literal, datatype, language)
                    }
                    #[allow(unreachable_patterns)]
                    _ => return None,
                };
                Some(OutgoingTriple {
                    predicate,
                    object,
                    object_kind,
                    datatype,
                    language,
                    graph: text(row, g),
                })
            })
            .collect();
        let more = triples.len() > MAX_DESCRIBED_TRIPLES;
        triples.truncate(MAX_DESCRIBED_TRIPLES);
        Ok((triples, more))
    }

    /// Triples with the entity as object, from named graphs and the default graph.
    fn incoming(
        &self,
        iri: &NamedNode,
        options: &QueryOptions,
    ) -> Result<(Vec<IncomingTriple>, bool), Error> {
        let limit = MAX_DESCRIBED_TRIPLES + 1;
        let (variables, rows) = self.entity_rows(
            &format!(
                "SELECT DISTINCT ?subject ?predicate ?graph ?entity WHERE {{ \
                 {{ GRAPH ?graph {{ ?subject ?predicate ?entity }} }} UNION {{ ?subject ?predicate ?entity }} }} \
                 ORDER BY ?predicate ?subject ?graph LIMIT {limit}"
            ),
            iri,
            &graph_by_graph(options),
        )?;
        let (s, p, g) = (
            column(&variables, "subject")?,
            column(&variables, "predicate")?,
            column(&variables, "graph")?,
        );
        let mut triples: Vec<IncomingTriple> = rows
            .iter()
            .filter_map(|row| {
                Some(IncomingTriple {
                    subject: text(row, s)?,
                    predicate: text(row, p)?,
                    graph: text(row, g),
                })
            })
            .collect();
        let more = triples.len() > MAX_DESCRIBED_TRIPLES;
        triples.truncate(MAX_DESCRIBED_TRIPLES);
        Ok((triples, more))
    }
}

/// `<iri>` or a bare `http(s)://` IRI; `None` when the input is neither.
fn explicit_iri(input: &str) -> Result<Option<NamedNode>, Error> {
    let candidate = if let Some(inner) = input.strip_prefix('<').and_then(|i| i.strip_suffix('>')) {
        inner
    } else if (input.starts_with("http://") || input.starts_with("https://"))
        && !input.contains(char::is_whitespace)
    {
        input
    } else {
        return Ok(None);
    };
    NamedNode::new(candidate)
        .map(Some)
        .map_err(|e| Error::Invalid(format!("<{candidate}> is not a valid IRI: {e}")))
}

/// `prefix:local` with a prefix of the store's query options, as a full IRI.
fn prefixed_name(input: &str, options: &QueryOptions) -> Option<NamedNode> {
    if input.contains(char::is_whitespace) {
        return None;
    }
    let (prefix, local) = input.split_once(':')?;
    let (_, namespace) = options.prefixes.iter().find(|(p, _)| p == prefix)?;
    NamedNode::new(format!("{namespace}{local}")).ok()
}

/// The options with the union default graph off, so `GRAPH ?g` and the plain default
/// graph do not both see a named graph's triples.
fn graph_by_graph(options: &QueryOptions) -> QueryOptions {
    QueryOptions {
        union_default_graph: false,
        ..options.clone()
    }
}

/// `<a> <b> ...` for a VALUES clause.
fn iri_list(iris: &[&str]) -> String {
    iris.iter()
        .map(|iri| format!("<{iri}>"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The variables and rows of a SELECT result.
fn select(outcome: QueryOutcome) -> Result<Rows, Error> {
    match outcome {
        QueryOutcome::Solutions { variables, rows } => Ok((variables, rows)),
        _ => Err(Error::Invalid(
            "describe_entity: expected SELECT results".into(),
        )),
    }
}

/// Position of a projected variable.
fn column(variables: &[String], name: &str) -> Result<usize, Error> {
    variables
        .iter()
        .position(|v| v == name)
        .ok_or_else(|| Error::Invalid(format!("describe_entity: no ?{name} in the results")))
}

/// A cell as text: IRI, `_:id`, or a literal's value.
fn text(row: &[Option<Term>], at: usize) -> Option<String> {
    match row.get(at)?.as_ref()? {
        Term::NamedNode(n) => Some(n.as_str().to_owned()),
        Term::BlankNode(b) => Some(format!("_:{}", b.as_str())),
        Term::Literal(l) => Some(l.value().to_owned()),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}
