//! Stages 3c and 4: the graph reads that depend only on the entities — the
//! template facts of each entity (two rounds), the walks for paths between
//! entities — sent together round by round, and the path evidence they give.

use super::*;

/// Facts read per entity and direction.
pub(super) const FACTS_PER_ENTITY: usize = 25;

/// Most facts per entity and direction sorted to choose those
/// [`FACTS_PER_ENTITY`] from.
pub(super) const FACTS_SORTED: usize = 250;

/// Predicates whose values are prose or code: the unstructured side's business.
pub(super) const LONG_TEXT: &[&str] = &[
    kg::TEXT,
    kg::CODE,
    kg::KNOWLEDGE,
    w3c::RDFS_COMMENT,
    w3c::SKOS_DEFINITION,
    w3c::DCTERMS_DESCRIPTION,
];

/// Predicates that organise the store rather than state domain facts.
pub(super) const BOOKKEEPING: &[&str] = &[
    w3c::RDF_TYPE,
    w3c::RDFS_LABEL,
    w3c::SKOS_ALT_LABEL,
    w3c::SKOS_PREF_LABEL,
    w3c::DCTERMS_IS_PART_OF,
    kg::MENTIONS,
    kg::CHUNK_ID,
    kg::SECTION,
    kg::HAS_CHUNK,
    kg::START_LINE,
    kg::END_LINE,
];

/// Longest path searched between two linked entities.
pub(super) const MAX_PAIR_HOPS: usize = 3;

/// Most nodes a path walk reaches from one entity.
pub(super) const PAIR_WALK_NODES: usize = 400;

/// Most entities a second round adds.
pub(super) const SECOND_ROUND_ENTITIES: usize = 3;

/// Nodes that domain facts of the first round link to at least two different
/// entities (a shared component, a common cause), most linked first.
pub(super) fn second_round_entities(facts: &[Fact], entities: &[String]) -> Vec<NamedNode> {
    let mut links: std::collections::BTreeMap<&str, BTreeSet<&str>> =
        std::collections::BTreeMap::new();
    for fact in facts {
        if BOOKKEEPING.contains(&fact.predicate.as_str()) {
            continue;
        }
        for (node, other) in [(&fact.object, &fact.subject), (&fact.subject, &fact.object)] {
            if !entities.contains(node) && entities.contains(other) {
                links
                    .entry(node.as_str())
                    .or_default()
                    .insert(other.as_str());
            }
        }
    }
    let mut ranked: Vec<(&str, usize)> = links
        .into_iter()
        .filter(|(_, linked)| linked.len() >= 2)
        .map(|(node, linked)| (node, linked.len()))
        .collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    ranked
        .into_iter()
        .filter_map(|(node, _)| NamedNode::new(node).ok())
        .take(SECOND_ROUND_ENTITIES)
        .collect()
}

/// The facts on one side of each of `nodes` (what it states when `outgoing`, what
/// states it otherwise, less its instances), with their graphs, as one SELECT of
/// a sub-select per node. Each takes at most [`FACTS_SORTED`] facts, leaving out
/// prose and code; [`first_facts_of_each`] then keeps the first
/// [`FACTS_PER_ENTITY`] of each node in the order of the predicate's, the other
/// end's and the graph's text: a hub cannot crowd out the other nodes, and every
/// engine keeps the same facts of a node with up to [`FACTS_SORTED`] on that side
/// (sorting all of a hub's thousands would cost more than the rest of the
/// retrieval). The sort is kgfuse's, not the engine's: Oxigraph reads a term's
/// text from disk at every comparison, which made sorting 250 facts cost about
/// seven times as much as reading them. The nodes enter as validated IRIs.
pub(super) fn facts_query(nodes: &[NamedNode], outgoing: bool) -> String {
    let triple = if outgoing {
        "GRAPH ?g { ?e ?p ?x }"
    } else {
        "GRAPH ?g { ?x ?p ?e }"
    };
    let mut left_out: Vec<String> = LONG_TEXT.iter().map(|p| format!("<{p}>")).collect();
    if !outgoing {
        left_out.push(format!("<{}>", w3c::RDF_TYPE));
    }
    let per_node: Vec<String> = nodes
        .iter()
        .map(|node| {
            format!(
                "{{ SELECT ?e ?p ?x ?g WHERE {{ {} {triple} FILTER(?p NOT IN ({})) }} \
                 LIMIT {FACTS_SORTED} }}",
                values("e", &[Term::from(node.clone())]),
                left_out.join(", "),
            )
        })
        .collect();
    format!(
        "SELECT ?e ?p ?x ?g WHERE {{ {} }}",
        per_node.join(" UNION ")
    )
}

/// The rows of a [`facts_query`] as `[entity, predicate, other end, graph]`, the
/// first [`FACTS_PER_ENTITY`] of each entity in the text order of predicate,
/// other end and graph; entities keep the order of their first row. Prose and
/// code too long for a fact are left out before the cut.
pub(super) fn first_facts_of_each(solutions: &Solutions) -> Vec<[String; 4]> {
    let at = |name: &str| solutions.column(name);
    let (Some(e), Some(p), Some(x), Some(g)) = (at("e"), at("p"), at("x"), at("g")) else {
        return Vec::new();
    };
    let mut first_row: HashMap<String, usize> = HashMap::new();
    let mut rows: Vec<(usize, [String; 4])> = Vec::new();
    for row in &solutions.rows {
        let [Some(entity), Some(predicate), Some(other), Some(graph)] =
            [e, p, x, g].map(|i| cell_text(row.get(i)))
        else {
            continue;
        };
        // Prose and code belong to the unstructured side (the query leaves out
        // their predicates); facts are relations and short values.
        if other.len() > 400 {
            continue;
        }
        let next = first_row.len();
        let order = *first_row.entry(entity.clone()).or_insert(next);
        rows.push((order, [entity, predicate, other, graph]));
    }
    rows.sort_unstable();
    rows.chunk_by(|a, b| a.0 == b.0)
        .flat_map(|of_one| of_one.iter().take(FACTS_PER_ENTITY))
        .map(|(_, row)| row.clone())
        .collect()
}

/// Stage 3c, the templates, as [`Rounds`]: the facts about each entity (both
/// directions, with the graph each lives in), then a second round about the
/// nodes the first round ties to two of them.
pub(super) struct TemplateRounds<'a> {
    pub(super) store: &'a Store,
    pub(super) entities: Vec<String>,
    pub(super) round: u8,
    /// The current round's queries that passed the check: text, and whether it
    /// reads the outgoing side.
    pub(super) sent: Vec<(String, bool)>,
    pub(super) facts: Vec<Fact>,
    /// The second round's entities.
    pub(super) fresh: Vec<NamedNode>,
    pub(super) sparql: Vec<String>,
    pub(super) rejected: Vec<Rejected>,
}

impl<'a> TemplateRounds<'a> {
    pub(super) fn new(store: &'a Store, entities: &[NamedNode]) -> Self {
        Self {
            store,
            entities: entities.iter().map(|e| e.as_str().to_owned()).collect(),
            round: 0,
            sent: Vec::new(),
            facts: Vec::new(),
            fresh: Vec::new(),
            sparql: Vec::new(),
            rejected: Vec::new(),
        }
    }

    /// The facts both rounds found; their queries, rejections and the second
    /// round's entities go to the context.
    pub(super) fn finish(
        self,
        context: &mut FusedContext,
        rejected: &mut Vec<Rejected>,
    ) -> Vec<Fact> {
        context.sparql.extend(self.sparql);
        rejected.extend(self.rejected);
        if !self.fresh.is_empty() {
            context.trace.push(TraceStage {
                stage: "second round".into(),
                kept: self
                    .fresh
                    .iter()
                    .map(|n| format!("entity {}", n.as_str()))
                    .collect(),
                dropped: Vec::new(),
            });
        }
        self.facts
    }

    /// The outgoing and incoming facts of `nodes`, checked against the store's
    /// vocabulary like every generated query.
    pub(super) fn ask(&mut self, nodes: &[NamedNode]) -> Result<Vec<spargebra::Query>, GraphError> {
        let outgoing = facts_query(nodes, true);
        let incoming = facts_query(nodes, false);
        let options = self.store.query_options();
        let mut queries = Vec::new();
        for (text, outgoing) in [(outgoing, true), (incoming, false)] {
            let parsed = parse_query(&text, &options)?;
            let unknown = self
                .store
                .graph()
                .unknown_terms(&kgfuse_graph::query_vocabulary(&parsed))?;
            if unknown.is_empty() {
                self.sent.push((text, outgoing));
                queries.push(parsed);
            } else {
                self.rejected.push(Rejected { text, unknown });
            }
        }
        Ok(queries)
    }

    /// The facts in the answers to the last round's queries.
    pub(super) fn read(
        &mut self,
        answers: Vec<Result<QueryOutcome, GraphError>>,
    ) -> Result<Vec<Fact>, GraphError> {
        let mut facts = Vec::new();
        for ((text, outgoing), answer) in std::mem::take(&mut self.sent).into_iter().zip(answers) {
            let solutions = Solutions::of(text, answer?);
            for [entity, predicate, other, graph] in first_facts_of_each(&solutions) {
                let (subject, object) = if outgoing {
                    (entity, other)
                } else {
                    (other, entity)
                };
                let fact = Fact {
                    subject,
                    predicate,
                    object,
                    graph,
                };
                if !facts.iter().any(|f: &Fact| {
                    f.subject == fact.subject
                        && f.predicate == fact.predicate
                        && f.object == fact.object
                }) {
                    facts.push(fact);
                }
            }
            self.sparql.push(solutions.text);
        }
        Ok(facts)
    }
}

impl Rounds for TemplateRounds<'_> {
    fn next_round(
        &mut self,
        _graph: &kgfuse_graph::Graph,
        answers: Vec<Result<QueryOutcome, GraphError>>,
    ) -> Result<Vec<spargebra::Query>, GraphError> {
        self.round += 1;
        match self.round {
            1 if self.entities.is_empty() => Ok(Vec::new()),
            1 => {
                let entities: Vec<NamedNode> = self
                    .entities
                    .iter()
                    .filter_map(|e| NamedNode::new(e.as_str()).ok())
                    .collect();
                self.ask(&entities)
            }
            2 => {
                self.facts = self.read(answers)?;
                self.fresh = second_round_entities(&self.facts, &self.entities);
                let fresh = self.fresh.clone();
                if fresh.is_empty() {
                    Ok(Vec::new())
                } else {
                    self.ask(&fresh)
                }
            }
            _ => {
                let more = self.read(answers)?;
                self.facts.extend(
                    more.into_iter()
                        .filter(|f| !BOOKKEEPING.contains(&f.predicate.as_str())),
                );
                Ok(Vec::new())
            }
        }
    }
}

/// What stages 3c, 4 and the walk of stage 6 read from the graph.
pub(super) struct GraphReads<'a> {
    pub(super) templates: TemplateRounds<'a>,
    /// The graph around every entity but the last (empty when no paths are
    /// wanted), in entity order.
    pub(super) path_walks: Vec<Neighbourhood>,
    pub(super) walked: Walked,
    /// The answer to the `domain` channel's gate query, when it has one.
    pub(super) ties: Option<Solutions>,
}

/// The walks of stages 4 and 6: from every entity in `path_from` (for paths),
/// and from the ranking's seeds; over the edge index when there is one.
pub(super) struct Walks<'e> {
    pub(super) path_from: &'e [NamedNode],
    pub(super) start: WalkStart,
    pub(super) index: Option<Arc<EdgeIndex>>,
}

/// Stages 3c (the templates), 4 (the graph around the entities, for paths) and
/// the walk of stage 6 (around its seeds) read the graph together, round by
/// round ([`kgfuse_graph::Graph::read_in_rounds`]): on a SPARQL server one
/// request per round for all of them (three rounds: the walks' hops), instead of
/// one per stage, round and hop. (Stage 3a's query graphs were read beside the
/// question's embedding.)
pub(super) fn graph_stage<'a>(
    store: &'a Store,
    entities: &[NamedNode],
    walks: Walks<'_>,
    mut ties: OneRead,
    options: &RetrieveOptions,
) -> Result<GraphReads<'a>, RetrieveError> {
    let Walks {
        path_from,
        start: walk_start,
        index,
    } = walks;
    let pair_walk = WalkLimits {
        hops: MAX_PAIR_HOPS,
        max_nodes: PAIR_WALK_NODES,
    };
    let mut starts: Vec<(NamedNode, WalkLimits)> = path_from
        .iter()
        .map(|entity| (entity.clone(), pair_walk))
        .collect();
    starts.extend(walk_starts(&walk_start.seeds, options.neighborhood));
    let mut templates = TemplateRounds::new(store, entities);
    let mut walks = WalkRounds::new(&starts)
        .with_index(index)
        .avoiding(&options.exclude);
    store.graph().read_in_rounds(
        &mut [&mut templates, &mut walks, &mut ties],
        &store.query_options(),
    )?;
    let mut path_walks = walks.into_neighbourhoods();
    let reached = path_walks.split_off(path_from.len());
    Ok(GraphReads {
        templates,
        path_walks,
        walked: Walked {
            start: walk_start,
            reached,
        },
        ties: ties.finish(),
    })
}

/// Stage 4, paths between pairs of entities, as evidence; their facts are
/// returned. `walks` holds the graph within `MAX_PAIR_HOPS` edges of every entity
/// but the last, in entity order; each is searched for every later entity. None
/// for a question that asks for code (`code` says why).
pub(super) fn path_stage(
    entities: &[NamedNode],
    walks: Vec<Neighbourhood>,
    code: Option<&str>,
    context: &mut FusedContext,
) -> Vec<Fact> {
    if let Some(why) = code {
        context.trace.push(TraceStage {
            stage: "paths".into(),
            kept: vec![format!("no entity paths: {why}")],
            dropped: Vec::new(),
        });
        return Vec::new();
    }
    let mut kept = Vec::new();
    let mut facts = Vec::new();
    for (i, (from, (_, edges))) in entities.iter().zip(walks).enumerate() {
        let mut adjacency = Adjacency::new();
        add_edges(&mut adjacency, edges);
        for to in entities.iter().skip(i + 1) {
            if let Some((path, path_facts)) =
                evidence(&adjacency, &[from.as_str().to_owned()], to.as_str())
            {
                kept.push(path.join(" -> "));
                facts.extend(path_facts);
                context.paths.push(path);
            }
        }
    }
    context.trace.push(TraceStage {
        stage: "paths".into(),
        kept,
        dropped: Vec::new(),
    });
    facts
}
