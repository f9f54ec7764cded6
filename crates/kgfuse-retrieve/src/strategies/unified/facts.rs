//! Stage 5: one fact ranking under a bounded budget — relevance, the order of
//! the sources of facts, code-related facts kept to the returned code, and what
//! the budget cut, in the trace.

use super::*;

/// Stage 3's verdict: how many generated queries passed the vocabulary check,
/// and which were rejected.
pub(super) fn ontology_check_stage(rejected: &[Rejected], context: &mut FusedContext) {
    context.trace.push(TraceStage {
        stage: "ontology check".into(),
        kept: vec![format!(
            "{} generated queries use only known predicates and classes",
            context.sparql.len()
        )],
        dropped: rejected.iter().map(Rejected::dropped).collect(),
    });
}

/// A candidate fact and why it ranks where it does.
pub(super) type RankedFact = (Fact, String);

/// For a question that asks for code, the facts between returned functions,
/// and the rest: each function already carries its name, module, signature,
/// summary and dependencies (its literals, repeated as facts, would only cost
/// tokens), and facts about the classes, modules and tags the question's words
/// linked to would only add nodes. Entity paths are not built for such a
/// question either.
pub(super) fn about_returned_code(
    facts: Vec<RankedFact>,
    context: &FusedContext,
) -> (Vec<RankedFact>, Vec<RankedFact>) {
    let returned: BTreeSet<&str> = context.functions.iter().map(|f| f.iri.as_str()).collect();
    facts.into_iter().partition(|(fact, _)| {
        returned.contains(fact.subject.as_str()) && returned.contains(fact.object.as_str())
    })
}

/// Most facts kept for a question of this kind.
pub(super) fn fact_budget(dispatch: Dispatch, top_k: usize) -> usize {
    match dispatch {
        Dispatch::Semantic => top_k * 2,
        _ => top_k * 6,
    }
}

/// What makes a fact relevant to this question.
pub(super) struct Relevance<'a> {
    pub(super) properties: BTreeSet<&'a str>,
    pub(super) classes: BTreeSet<&'a str>,
    pub(super) mentioned: BTreeSet<&'a str>,
    pub(super) entities: BTreeSet<String>,
    pub(super) lexicon: Arc<Lexicon>,
}

impl<'a> Relevance<'a> {
    pub(super) fn new(
        store: &Store,
        linked: &'a Linked,
        entities: &[NamedNode],
    ) -> Result<Self, RetrieveError> {
        Ok(Self {
            properties: linked.properties.iter().map(|p| p.iri.as_str()).collect(),
            classes: linked.classes.iter().map(|c| local_name(&c.iri)).collect(),
            mentioned: linked.entities().map(|c| c.iri.as_str()).collect(),
            entities: entities.iter().map(|e| e.as_str().to_owned()).collect(),
            lexicon: Lexicon::of(store)?,
        })
    }

    /// Higher is more relevant: a linked property, a value of a linked class, a
    /// relation between entities, a fact about a mentioned entity; schema
    /// bookkeeping about classes (ranges, definitions, pictures) lowest.
    pub(super) fn score(&self, fact: &Fact) -> i32 {
        let mut score = 0;
        if self.properties.contains(fact.predicate.as_str()) {
            score += 3;
        }
        let of_class = |iri: &str| {
            self.lexicon
                .entry_of(iri)
                .is_some_and(|e| e.kinds.iter().any(|k| self.classes.contains(k.as_str())))
        };
        let (s, o) = (fact.subject.as_str(), fact.object.as_str());
        if (self.entities.contains(s) && of_class(o)) || (self.entities.contains(o) && of_class(s))
        {
            score += 2;
        }
        if self.entities.contains(s) && self.entities.contains(o) {
            score += 2;
        }
        if self.mentioned.contains(s) || self.mentioned.contains(o) {
            score += 1;
        }
        if BOOKKEEPING.contains(&fact.predicate.as_str()) {
            score -= 2;
        }
        if is_schema_bookkeeping(&fact.predicate) {
            score -= 4;
        }
        score
    }
}

/// Predicates that describe a vocabulary or decorate a node rather than state a
/// domain fact: RDFS/OWL axioms other than labels and comments, pictures and icons.
pub(super) fn is_schema_bookkeeping(predicate: &str) -> bool {
    let axiom = (predicate.starts_with(kgfuse_core::vocab::RDFS)
        || predicate.starts_with(kgfuse_core::vocab::OWL))
        && predicate != w3c::RDFS_LABEL
        && predicate != w3c::RDFS_COMMENT;
    let local = local_name(predicate).to_ascii_lowercase();
    let decoration = ["depiction", "icon", "image", "logo", "thumbnail"]
        .iter()
        .any(|d| local.contains(d));
    axiom || decoration
}

/// All candidate facts in one order: rows both the constructed query and the
/// language model's query return first, then the rest of the better-supported of
/// the two (the higher mean relevance to the question's linked entities and
/// properties; the constructed query's on a tie), then the other's, then path
/// evidence and the template facts by relevance; no repeats.
/// The facts of stage 5, by where they come from.
pub(super) struct FactSources {
    /// Rows of the query graphs.
    pub(super) constructed: Vec<Fact>,
    /// Rows of a real model's query.
    pub(super) generated: Vec<Fact>,
    /// Path evidence between entities.
    pub(super) paths: Vec<Fact>,
    /// Template facts about each entity.
    pub(super) template: Vec<Fact>,
}

/// Stage 5: the facts ranked, those off the returned code set apart when the
/// question asks for code, and the budget for the dispatch applied.
pub(super) fn facts_stage(
    sources: FactSources,
    relevance: &Relevance<'_>,
    asks_for_code: bool,
    dispatch: Dispatch,
    top_k: usize,
    context: &mut FusedContext,
) {
    let mut facts = rank_facts(
        sources.constructed,
        sources.generated,
        sources.paths,
        sources.template,
        relevance,
    );
    let mut off_code = Vec::new();
    if asks_for_code {
        (facts, off_code) = about_returned_code(facts, context);
    }
    budget_stage(
        facts,
        off_code,
        fact_budget(dispatch, top_k),
        dispatch,
        context,
    );
}

pub(super) fn rank_facts(
    constructed: Vec<Fact>,
    generated: Vec<Fact>,
    paths: Vec<Fact>,
    template: Vec<Fact>,
    relevance: &Relevance<'_>,
) -> Vec<(Fact, String)> {
    let same = |a: &Fact, b: &Fact| {
        a.subject == b.subject && a.predicate == b.predicate && a.object == b.object
    };
    let agreed: Vec<Fact> = constructed
        .iter()
        .filter(|c| generated.iter().any(|g| same(c, g)))
        .cloned()
        .collect();
    let support = |facts: &[Fact]| -> f32 {
        if facts.is_empty() {
            return f32::MIN;
        }
        facts.iter().map(|f| relevance.score(f) as f32).sum::<f32>() / facts.len() as f32
    };
    let model_first = support(&generated) > support(&constructed);
    let (first, first_why, second, second_why) = if model_first {
        (
            generated,
            "row of the model's query",
            constructed,
            "row of the constructed query",
        )
    } else {
        (
            constructed,
            "row of the constructed query",
            generated,
            "row of the model's query",
        )
    };
    let mut rest: Vec<(Fact, i32, bool)> = paths
        .into_iter()
        .map(|f| (f, 1, true))
        .chain(template.into_iter().map(|f| (f, 0, false)))
        .map(|(f, bonus, path)| {
            let score = relevance.score(&f) + bonus;
            (f, score, path)
        })
        .collect();
    // Ties in the order of the facts themselves, not of the store's answer (an
    // embedded store and a SPARQL server list the same rows differently).
    rest.sort_by(|a, b| {
        b.1.cmp(&a.1).then_with(|| {
            (&a.0.subject, &a.0.predicate, &a.0.object).cmp(&(
                &b.0.subject,
                &b.0.predicate,
                &b.0.object,
            ))
        })
    });
    let mut out: Vec<(Fact, String)> = Vec::new();
    let mut push = |fact: Fact, why: String| {
        if let Some((known, _)) = out.iter_mut().find(|(f, _)| {
            f.subject == fact.subject && f.predicate == fact.predicate && f.object == fact.object
        }) {
            if known.graph.is_empty() {
                known.graph = fact.graph;
            }
        } else {
            out.push((fact, why));
        }
    };
    for fact in agreed {
        push(
            fact,
            "row of both the constructed and the model's query".into(),
        );
    }
    for fact in first {
        push(fact, first_why.into());
    }
    for fact in second {
        push(fact, second_why.into());
    }
    for (fact, score, path) in rest {
        let why = if path {
            format!("path evidence, relevance {score}")
        } else {
            format!("relevance {score}")
        };
        push(fact, why);
    }
    out
}

/// Stage 5, the facts that fit the budget, in rank order; the trace says what
/// the budget cut.
pub(super) fn budget_stage(
    facts: Vec<(Fact, String)>,
    off_code: Vec<(Fact, String)>,
    budget: usize,
    dispatch: Dispatch,
    context: &mut FusedContext,
) {
    let mut kept = vec![format!("fact budget {budget} for a {dispatch:?} question")];
    let mut dropped: Vec<Dropped> = off_code
        .into_iter()
        .map(|(fact, why)| Dropped {
            iri: fact.subject,
            why: format!("not between two returned functions of a code question ({why})"),
        })
        .collect();
    for (i, (fact, why)) in facts.into_iter().enumerate() {
        if i < budget {
            kept.push(format!(
                "{} {} {} ({why})",
                fact.subject, fact.predicate, fact.object
            ));
            context.structured_facts.push(fact);
        } else {
            dropped.push(Dropped {
                iri: fact.subject,
                why: format!("beyond the fact budget {budget} ({why})"),
            });
        }
    }
    context.trace.push(TraceStage {
        stage: "sparql".into(),
        kept,
        dropped,
    });
}
