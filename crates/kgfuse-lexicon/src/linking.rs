//! Entity linking as people write: the question's words to the store's nodes,
//! classes and properties, through the [lexicon](crate::lexicon).
//!
//! 1. **Candidates.** Every name a question term touches is scored by coverage
//!    both ways: how much of the name the question says (idf-weighted; "Keller"
//!    covers half of "Anna Keller") times how much of the touched question words
//!    the name explains ("GraduateCourse0" is explained fully by the course of that
//!    name, only in part by "Course0"). Inflections, identifier parts, titles and
//!    stem prefixes are the analyser's business.
//! 2. **Mentions.** Candidates are grouped by the question words they cover; the
//!    best-scoring group claims its words, a candidate over words already claimed
//!    by a better one is dropped.
//! 3. **Ties.** A mention with several equally good candidates (the same course name
//!    in fifteen departments, two people called Anna) asks the rest of the question:
//!    the other question terms found in a candidate's IRI, in the names of its
//!    neighbours in the graph, or a linked class it belongs to. The best few stay; a
//!    mention that still names too many nodes is a class word, not an entity.
//! 4. **Classes and properties** are linked the same way, a class also by its head
//!    noun ("students" -> graduate student, undergraduate student) and, with a
//!    semantic embedder, by a word of like meaning ([`crate::meaning`]).

use crate::RetrieveError;
use crate::lexicon::analyze::{Term, analyze, analyze_question, words};
use crate::lexicon::{Lexicon, NameMatch, Role};
use crate::sparql::cell_text;
use crate::sparql::{run_all, values};
use kgfuse_core::context::{Dropped, TraceStage};
use kgfuse_core::iri::local_name;
use kgfuse_graph::EdgeIndex;
use kgfuse_graph::model::{NamedNode, Term as RdfTerm};
use kgfuse_store::Store;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// A name match below this score is not a candidate.
const MIN_SCORE: f32 = 0.45;
/// The score of a class linked by its head noun only.
const HEAD_SCORE: f32 = 0.4;
/// A name covered at least this much is said whole (a candidate's
/// `name_coverage`).
pub const WHOLE_NAME: f32 = 0.999;
/// Candidates within this share of a mention's best stay beside it.
const TIE_SHARE: f32 = 0.95;
/// Most candidates a mention keeps.
const MAX_KEPT: usize = 3;
/// A mention whose best candidates are more than this, after the tie-break, names a
/// kind of thing rather than one; it is dropped.
const MAX_TIED: usize = 12;
/// Most candidates a mention examines for the tie-break.
const MAX_EXAMINED: usize = 64;
/// How much the rest of the question can lift a candidate: a name match of 0.5
/// that the context explains fully (0.75) stays below a full name match (1.0).
const CONTEXT_WEIGHT: f32 = 0.5;
/// Neighbours read for the tie-break, in all.
const MAX_NEIGHBOURS: usize = 5_000;

/// A node a mention may mean.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The node.
    pub iri: String,
    /// Its name as stored.
    pub name: String,
    /// Name-match score times the context bonus.
    pub score: f32,
    /// Share of its name the question covers.
    pub name_coverage: f32,
    /// Local names of its types.
    pub kinds: Vec<String>,
    /// The question words it was linked from.
    pub words: Vec<usize>,
    /// For a class: linked by its head noun only ("courses" for graduate course).
    pub by_head: bool,
    /// For a class: whether the question asks for things of it ("which vendors",
    /// "what countries"): its words follow a question word with only stop words
    /// between.
    pub asked: bool,
}

/// Question words that name something, with what they may name.
#[derive(Debug, Clone)]
pub struct Mention {
    /// Word indices in the question.
    pub words: Vec<usize>,
    /// The best candidates, best first.
    pub candidates: Vec<Candidate>,
    /// How many candidates tied before the tie-break.
    pub tied: usize,
    /// Whether the mention only told another mention's candidates apart ("of
    /// Department0" in "GraduateCourse0 of Department0"): it is context, not a
    /// thing the question asks about.
    pub qualifier: bool,
    /// The question's other terms its best candidate accounts for (its IRI or
    /// neighbours' names hold them), when a tie was broken.
    pub accounts_for: HashSet<String>,
}

/// What a question links to.
#[derive(Debug, Clone, Default)]
pub struct Linked {
    /// Entity mentions in question order.
    pub mentions: Vec<Mention>,
    /// Classes the question names, best first.
    pub classes: Vec<Candidate>,
    /// Properties the question names, best first.
    pub properties: Vec<Candidate>,
    /// Mentions given up, with why.
    pub dropped: Vec<Dropped>,
}

impl Linked {
    /// Every kept entity candidate, mention by mention.
    pub fn entities(&self) -> impl Iterator<Item = &Candidate> {
        self.mentions.iter().flat_map(|m| &m.candidates)
    }

    /// As a trace stage.
    pub fn trace(&self) -> TraceStage {
        let mut kept = Vec::new();
        for mention in &self.mentions {
            let names: Vec<String> = mention
                .candidates
                .iter()
                .map(|c| format!("{} \"{}\" ({:.2})", c.iri, c.name, c.score))
                .collect();
            let tie = if mention.tied > mention.candidates.len() {
                format!(", best of {} tied", mention.tied)
            } else {
                String::new()
            };
            kept.push(format!(
                "entity at words {:?}{tie}: {}",
                mention.words,
                names.join(" | ")
            ));
        }
        for class in &self.classes {
            kept.push(format!("class {} ({:.2})", class.iri, class.score));
        }
        for property in &self.properties {
            kept.push(format!("property {} ({:.2})", property.iri, property.score));
        }
        TraceStage {
            stage: "linking".into(),
            kept,
            dropped: self.dropped.clone(),
        }
    }
}

fn candidate(m: &NameMatch, score: f32) -> Candidate {
    let entry = &m.entry;
    Candidate {
        iri: entry.iri.clone(),
        name: entry.name.clone(),
        score,
        name_coverage: m.name_coverage,
        kinds: entry.kinds.clone(),
        words: m.words.clone(),
        by_head: false,
        asked: false,
    }
}

/// Words that open a question about things of some class.
const QUESTION_WORDS: &[&str] = &["which", "what", "who", "list", "name", "many", "show"];

/// Whether the match's first word follows a question word with only stop words
/// (or nothing) between.
fn is_asked(question: &str, terms: &[Term], m: &NameMatch) -> bool {
    m.words
        .first()
        .is_some_and(|&first| is_asked_at(question, terms, first))
}

/// Whether word `first` follows a question word with only stop words between.
fn is_asked_at(question: &str, terms: &[Term], first: usize) -> bool {
    let lowered: Vec<String> = words(question).map(str::to_lowercase).collect();
    let Some(opener) = lowered
        .iter()
        .take(first)
        .rposition(|w| QUESTION_WORDS.contains(&w.as_str()))
    else {
        return false;
    };
    !terms.iter().any(|t| t.word > opener && t.word < first)
}

/// Links the question.
pub fn link(store: &Store, question: &str) -> Result<Linked, RetrieveError> {
    let lexicon = Lexicon::of(store)?;
    let terms = analyze_question(question);
    let mut linked = Linked {
        classes: classes(&lexicon, question, &terms)?,
        properties: properties(&lexicon, &terms)?,
        ..Linked::default()
    };
    let mut groups = mention_groups(&lexicon, &terms)?;
    let neighbours = neighbour_terms(store, &lexicon, &groups)?;
    let mut evidence = Vec::with_capacity(groups.len());
    for (group, near) in groups.iter_mut().zip(&neighbours) {
        evidence.push(break_ties(&lexicon, &terms, group, near, &linked.classes));
    }
    for (group, accounts_for) in groups.into_iter().zip(evidence) {
        let best_name = group.iter().map(|c| c.1).fold(0.0, f32::max);
        let tied = group
            .iter()
            .filter(|c| c.1 >= best_name * TIE_SHARE)
            .count();
        let words = group.first().map(|c| c.0.words.clone()).unwrap_or_default();
        // A name said whole beats names said in part, whatever the rest of the
        // question says for them: "Crossfit_Hanna" is the merchant of that name,
        // not its twelve "Crossfit_Hanna, January 2023" figures, however common
        // "January" and "2023" are.
        let whole = group.iter().any(|c| c.0.parts_coverage >= WHOLE_NAME);
        let pool = || {
            group
                .iter()
                .filter(move |c| !whole || c.0.parts_coverage >= WHOLE_NAME)
        };
        let top = pool().map(|c| c.2).fold(0.0, f32::max);
        let best: Vec<&(NameMatch, f32, f32)> = pool().filter(|c| c.2 >= top * TIE_SHARE).collect();
        if best.len() > MAX_TIED {
            linked.dropped.push(Dropped {
                iri: format!("words {words:?}"),
                why: format!(
                    "{} nodes match as well as each other: a kind of thing, not one",
                    best.len()
                ),
            });
            continue;
        }
        linked.mentions.push(Mention {
            words,
            candidates: best
                .iter()
                .take(MAX_KEPT)
                .map(|c| candidate(&c.0, c.2))
                .collect(),
            tied,
            qualifier: false,
            accounts_for,
        });
    }
    settle_words(&mut linked, question);
    let by_meaning = crate::meaning::classes_by_meaning(store, &lexicon, question, &linked, |w| {
        is_asked_at(question, &terms, w)
    })?;
    if !by_meaning.is_empty() {
        linked.classes.extend(by_meaning);
        linked.classes.sort_by(best_first);
    }
    mark_qualifiers(&mut linked, &terms);
    linked.mentions.sort_by(|a, b| a.words.cmp(&b.words));
    Ok(linked)
}

/// Words name a class, a property or an entity, not two of them:
///
/// - an entity mention on exactly the words of a fully named class, matched only
///   in part ("assistant professors" and the entity "AssistantProfessor0"), is the
///   class;
/// - an entity named whole by ordinary words that also name a class or a property
///   fully ("films" and an item titled "Films", "direct" and a tag "direct") is the
///   class or the property, unless the question writes the words as a name
///   (capitalised inside the sentence, or quoted): "who directed Films?";
/// - a class inside the words of a kept entity mention ("FullProfessor" inside
///   "FullProfessor2") is the entity's.
fn settle_words(linked: &mut Linked, question: &str) {
    let schema_words: Vec<Vec<usize>> = linked
        .classes
        .iter()
        .chain(&linked.properties)
        .filter(|c| c.score >= 0.99)
        .map(|c| c.words.clone())
        .collect();
    let class_words: Vec<Vec<usize>> = linked
        .classes
        .iter()
        .filter(|c| c.score >= 0.99)
        .map(|c| c.words.clone())
        .collect();
    let mut dropped = Vec::new();
    for mention in std::mem::take(&mut linked.mentions) {
        let partial = mention
            .candidates
            .first()
            .is_none_or(|c| c.name_coverage < WHOLE_NAME);
        if partial && class_words.contains(&mention.words) {
            dropped.push((
                mention,
                "these words name a class; the nodes match them only in part",
            ));
        } else if schema_words.contains(&mention.words)
            && !written_as_name(question, &mention.words)
        {
            dropped.push((
                mention,
                "ordinary words that name a class or a property; not written as a name",
            ));
        } else {
            linked.mentions.push(mention);
        }
    }
    for (mention, why) in dropped {
        linked.dropped.push(Dropped {
            iri: format!("words {:?}", mention.words),
            why: why.into(),
        });
    }
    let entity_words: BTreeSet<usize> = linked
        .mentions
        .iter()
        .flat_map(|m| m.words.iter().copied())
        .collect();
    linked
        .classes
        .retain(|c| !c.words.iter().all(|w| entity_words.contains(w)));
}

/// Whether the question writes the words at `indices` as a name: quoted, or
/// each capitalised where it is not the question's first word.
fn written_as_name(question: &str, indices: &[usize]) -> bool {
    let (Some(&first), Some(&last)) = (indices.iter().min(), indices.iter().max()) else {
        return false;
    };
    // Each word is a slice of the question: its byte offset is the difference of
    // the two pointers.
    let spans: Vec<(usize, &str)> = words(question)
        .map(|w| (w.as_ptr() as usize - question.as_ptr() as usize, w))
        .collect();
    let (Some(&(start, _)), Some(&(end_at, end_word))) = (spans.get(first), spans.get(last)) else {
        return false;
    };
    let end = end_at + end_word.len();
    let quoted = |before: Option<char>, after: Option<char>| {
        let quote = |c: Option<char>| c.is_some_and(|c| "\"'“”‘’«»`".contains(c));
        quote(before) && quote(after)
    };
    if quoted(
        question[..start].chars().next_back(),
        question[end..].chars().next(),
    ) {
        return true;
    }
    first > 0
        && indices.iter().all(|&i| {
            spans
                .get(i)
                .and_then(|(_, w)| w.chars().next())
                .is_some_and(char::is_uppercase)
        })
}

/// Marks the mentions whose every term another kept mention's best candidate
/// accounts for: they told that mention's candidates apart.
/// A mention qualified by another is not itself a qualifier, so two mentions never
/// qualify each other away.
fn mark_qualifiers(linked: &mut Linked, terms: &[Term]) {
    for i in 0..linked.mentions.len() {
        let own: Vec<&str> = terms
            .iter()
            .filter(|t| !t.whole && linked.mentions[i].words.contains(&t.word))
            .map(|t| t.text.as_str())
            .collect();
        let qualifies = !own.is_empty()
            && linked.mentions.iter().enumerate().any(|(j, other)| {
                j != i && !other.qualifier && own.iter().all(|t| other.accounts_for.contains(*t))
            });
        linked.mentions[i].qualifier = qualifies;
    }
}

/// One mention's entity candidates: (match, name score, score after the
/// tie-break), best first.
type MentionGroup = Vec<(NameMatch, f32, f32)>;

/// Entity candidates grouped into mentions ([`MentionGroup`]).
fn mention_groups(lexicon: &Lexicon, terms: &[Term]) -> Result<Vec<MentionGroup>, RetrieveError> {
    let mut matches: Vec<NameMatch> = lexicon
        .name_matches(terms, Role::Entity)?
        .into_iter()
        .filter(|m| m.score() >= MIN_SCORE)
        .collect();
    matches.sort_by(|a, b| {
        b.score()
            .total_cmp(&a.score())
            .then_with(|| b.words.len().cmp(&a.words.len()))
            .then_with(|| a.entry.iri.cmp(&b.entry.iri))
    });
    let mut groups: Vec<Vec<(NameMatch, f32, f32)>> = Vec::new();
    let mut claimed: BTreeSet<usize> = BTreeSet::new();
    for m in matches {
        let score = m.score();
        if let Some(group) = groups.iter_mut().find(|g| g[0].0.words == m.words) {
            if group.len() < MAX_EXAMINED {
                group.push((m, score, score));
            }
            continue;
        }
        if m.words.iter().any(|w| claimed.contains(w)) {
            continue;
        }
        claimed.extend(&m.words);
        groups.push(vec![(m, score, score)]);
    }
    Ok(groups)
}

/// Orders a mention's candidates by their name score times a context bonus: the
/// share of the question's other terms that the candidate's IRI, its neighbours'
/// names or a linked class it belongs to account for. Returns the other terms the
/// best candidate accounts for (empty when there was no tie to break).
fn break_ties(
    lexicon: &Lexicon,
    terms: &[Term],
    group: &mut [(NameMatch, f32, f32)],
    neighbours: &BTreeMap<String, HashSet<String>>,
    classes: &[Candidate],
) -> HashSet<String> {
    let best_name = group.iter().map(|c| c.1).fold(0.0, f32::max);
    let tied = group
        .iter()
        .filter(|c| c.1 >= best_name * TIE_SHARE)
        .count();
    if group.len() < 2 {
        return HashSet::new();
    }
    let Some(context) = QuestionContext::new(lexicon, terms, &group[0].0.words, classes) else {
        return HashSet::new();
    };
    let accounted: Vec<HashSet<String>> = group
        .iter_mut()
        .map(|candidate| context.rescore(candidate, neighbours))
        .collect();
    let mut order: Vec<usize> = (0..group.len()).collect();
    order.sort_by(|&a, &b| {
        group[b]
            .2
            .total_cmp(&group[a].2)
            .then_with(|| group[a].0.entry.iri.cmp(&group[b].0.entry.iri))
    });
    // Only a real tie (several nodes named as well) makes the terms that broke it
    // context rather than a thing asked about.
    let best_accounted = order
        .first()
        .filter(|_| tied >= 2)
        .map(|&i| accounted[i].clone())
        .unwrap_or_default();
    let sorted: Vec<(NameMatch, f32, f32)> = order.iter().map(|&i| group[i].clone()).collect();
    group.clone_from_slice(&sorted);
    best_accounted
}

/// What the rest of a question offers to break a mention's tie: its other terms
/// (with their idf), the terms it joined into identifiers, and the classes it
/// names elsewhere.
struct QuestionContext<'t> {
    others: BTreeMap<&'t str, f32>,
    /// Words joined into identifiers ("department 0" -> department0) count when
    /// found, but do not dilute the share when not.
    joined: BTreeMap<&'t str, f32>,
    total: f32,
    /// Classes named elsewhere in the question ("the department Sales"), not by
    /// the mention's own words ("FullProfessor2" also matches the class
    /// FullProfessor).
    class_kinds: HashSet<&'t str>,
}

impl<'t> QuestionContext<'t> {
    /// `None` when the question has no other term.
    fn new(
        lexicon: &Lexicon,
        terms: &'t [Term],
        words: &[usize],
        classes: &'t [Candidate],
    ) -> Option<Self> {
        let others: BTreeMap<&str, f32> = terms
            .iter()
            .filter(|t| t.span == 1 && !words.contains(&t.word))
            .map(|t| (t.text.as_str(), lexicon.name_idf(&t.text)))
            .collect();
        if others.is_empty() {
            return None;
        }
        let joined = terms
            .iter()
            .filter(|t| t.span > 1 && !(t.word..t.word + t.span).any(|w| words.contains(&w)))
            .map(|t| (t.text.as_str(), lexicon.name_idf(&t.text)))
            .collect();
        let class_kinds = classes
            .iter()
            .filter(|c| !c.words.iter().any(|w| words.contains(w)))
            .map(|c| local_name(&c.iri))
            .collect();
        Some(Self {
            total: others.values().sum(),
            others,
            joined,
            class_kinds,
        })
    }

    /// The share of the other terms (by idf) that `found` accounts for.
    fn share(&self, found: &HashSet<&str>) -> f32 {
        let found_idf: f32 = self
            .others
            .iter()
            .chain(&self.joined)
            .filter(|(t, _)| found.contains(*t))
            .map(|(_, idf)| idf)
            .sum();
        (found_idf / self.total).min(1.0)
    }

    /// Sets a candidate's score to its name score times the context bonus;
    /// returns the other terms it accounts for.
    fn rescore(
        &self,
        (m, name_score, score): &mut (NameMatch, f32, f32),
        neighbours: &BTreeMap<String, HashSet<String>>,
    ) -> HashSet<String> {
        let entry = &m.entry;
        let iri_terms: Vec<String> = analyze(&entry.iri).into_iter().map(|t| t.text).collect();
        let mut found: HashSet<&str> = iri_terms.iter().map(String::as_str).collect();
        if let Some(near) = neighbours.get(entry.iri.as_str()) {
            found.extend(near.iter().map(String::as_str));
        }
        let mut bonus = self.share(&found);
        if entry
            .kinds
            .iter()
            .any(|k| self.class_kinds.contains(k.as_str()))
        {
            bonus = bonus.max(0.5);
        }
        *score = *name_score * (1.0 + CONTEXT_WEIGHT * bonus);
        self.others
            .keys()
            .filter(|t| found.contains(*t))
            .map(|t| (*t).to_owned())
            .collect()
    }
}

/// The name terms of each candidate's neighbours, by group, by candidate IRI.
type NeighbourTerms = Vec<BTreeMap<String, HashSet<String>>>;

/// For each group with a tie to break (two candidates or more), for each
/// candidate, the name terms of its neighbours (both directions, one hop, at most
/// [`MAX_NEIGHBOURS`] a group): read from the graph's edge index when there is
/// one (lookups, where the query costs 1-3 ms a group whose candidates have
/// many neighbours), else one query per group, all sent together.
fn neighbour_terms(
    store: &Store,
    lexicon: &Lexicon,
    groups: &[Vec<(NameMatch, f32, f32)>],
) -> Result<NeighbourTerms, RetrieveError> {
    match store.edge_index()? {
        Some(index) => neighbour_terms_in(&index, lexicon, groups),
        None => neighbour_terms_queried(store, lexicon, groups),
    }
}

/// Whether a group has a tie to break.
fn is_tied(group: &[(NameMatch, f32, f32)]) -> bool {
    group.len() >= 2
}

/// Adds the name terms of `neighbour` to those of `candidate`.
fn add_neighbour(
    lexicon: &Lexicon,
    terms: &mut BTreeMap<String, HashSet<String>>,
    candidate: &str,
    neighbour: &str,
) -> Result<(), RetrieveError> {
    if let Some(entry) = lexicon.find(neighbour)? {
        let near = match terms.get_mut(candidate) {
            Some(near) => near,
            None => terms.entry(candidate.to_owned()).or_default(),
        };
        near.extend(entry.name_terms());
    }
    Ok(())
}

/// [`neighbour_terms`] read from the edge index: what the query reads, in the
/// candidates' order where a group has more than [`MAX_NEIGHBOURS`] (where the
/// query takes the ones its engine reads first).
fn neighbour_terms_in(
    index: &EdgeIndex,
    lexicon: &Lexicon,
    groups: &[Vec<(NameMatch, f32, f32)>],
) -> Result<NeighbourTerms, RetrieveError> {
    let mut out: NeighbourTerms = vec![BTreeMap::new(); groups.len()];
    for (group, terms) in groups.iter().zip(&mut out) {
        if !is_tied(group) {
            continue;
        }
        let candidates = group.iter().map(|(m, _, _)| m.entry.iri.as_str());
        let rows = candidates
            .flat_map(|c| index.neighbours(c).map(move |x| (c, x)))
            .take(MAX_NEIGHBOURS);
        for (candidate, neighbour) in rows {
            add_neighbour(lexicon, terms, candidate, neighbour)?;
        }
    }
    Ok(out)
}

/// [`neighbour_terms`] read by one query per group, all sent together.
fn neighbour_terms_queried(
    store: &Store,
    lexicon: &Lexicon,
    groups: &[Vec<(NameMatch, f32, f32)>],
) -> Result<NeighbourTerms, RetrieveError> {
    let mut asked = Vec::new();
    let mut texts = Vec::new();
    for (i, group) in groups.iter().enumerate().filter(|(_, g)| is_tied(g)) {
        let nodes: Vec<RdfTerm> = group
            .iter()
            .filter_map(|(m, _, _)| NamedNode::new(m.entry.iri.as_str()).ok())
            .map(RdfTerm::from)
            .collect();
        asked.push(i);
        texts.push(format!(
            "SELECT ?c ?x WHERE {{ {} {{ ?c ?p ?x }} UNION {{ ?x ?p ?c }} FILTER(isIRI(?x)) }} LIMIT {MAX_NEIGHBOURS}",
            values("c", &nodes)
        ));
    }
    let mut out: NeighbourTerms = vec![BTreeMap::new(); groups.len()];
    for (i, solutions) in asked.into_iter().zip(run_all(store, texts)?) {
        let (Some(c_at), Some(x_at)) = (solutions.column("c"), solutions.column("x")) else {
            continue;
        };
        for row in &solutions.rows {
            if let (Some(c), Some(x)) = (cell_text(row.get(c_at)), cell_text(row.get(x_at))) {
                add_neighbour(lexicon, &mut out[i], &c, &x)?;
            }
        }
    }
    Ok(out)
}

/// Classes the question names: fully, or by their head noun when no class is
/// named fully by the same words.
fn classes(
    lexicon: &Lexicon,
    question: &str,
    terms: &[Term],
) -> Result<Vec<Candidate>, RetrieveError> {
    let matches = lexicon.name_matches(terms, Role::Class)?;
    let exact: Vec<&NameMatch> = matches.iter().filter(|m| m.score() >= MIN_SCORE).collect();
    let mut out: Vec<Candidate> = Vec::new();
    let with = |m: &NameMatch| Candidate {
        asked: is_asked(question, terms, m),
        ..candidate(m, m.score())
    };
    out.extend(exact.iter().map(|m| with(m)));
    // By head noun: a one-part word such as "courses" also means "graduate
    // course" (a kind of course), unless a class named by more of the words
    // claims it ("graduate students" is not "undergraduate student").
    for m in &matches {
        let [word] = m.head_words[..] else {
            continue;
        };
        let one_part = terms.iter().filter(|t| !t.whole && t.word == word).count() == 1;
        let claimed = exact
            .iter()
            .any(|e| e.words != [word] && e.words.contains(&word));
        let already = exact.iter().any(|e| e.entry.iri == m.entry.iri);
        if one_part && !claimed && !already {
            let head = NameMatch {
                words: vec![word],
                ..m.clone()
            };
            out.push(Candidate {
                by_head: true,
                ..candidate(&head, HEAD_SCORE)
            });
            let asked = is_asked(question, terms, &head);
            if let Some(last) = out.last_mut() {
                last.asked = asked;
            }
        }
    }
    out.sort_by(best_first);
    Ok(out)
}

/// Higher score first; on a tie the candidate matched on more of the question's
/// words (the longest match: "doctoral degree from" names doctoralDegreeFrom
/// before degreeFrom), then by IRI.
fn best_first(a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| b.words.len().cmp(&a.words.len()))
        .then_with(|| a.iri.cmp(&b.iri))
}

/// Properties the question names.
fn properties(lexicon: &Lexicon, terms: &[Term]) -> Result<Vec<Candidate>, RetrieveError> {
    let mut out: Vec<Candidate> = lexicon
        .name_matches(terms, Role::Property)?
        .iter()
        .filter(|m| m.score() >= MIN_SCORE)
        .map(|m| candidate(m, m.score()))
        .collect();
    out.sort_by(best_first);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_name_said_whole_beats_many_names_said_in_part() {
        let mut turtle = String::from(
            "@prefix ex: <http://example.org/> .\n\
             @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\
             ex:hanna a ex:Merchant ; rdfs:label \"Crossfit_Hanna\" .\n",
        );
        for month in [
            "January",
            "February",
            "March",
            "April",
            "May",
            "June",
            "July",
            "August",
            "September",
            "October",
            "November",
            "December",
            "Spring",
        ] {
            turtle.push_str(&format!(
                "ex:hanna-{month} a ex:Figure ; rdfs:label \"Crossfit_Hanna, {month} 2023\" ; ex:of ex:hanna .\n"
            ));
        }
        let (_dir, store) = crate::testing::with_turtle(&turtle).await;
        let linked = link(&store, "Which acquirers does Crossfit_Hanna work with?").expect("link");
        let names: Vec<&str> = linked.entities().map(|c| c.iri.as_str()).collect();
        assert_eq!(names, ["http://example.org/hanna"], "{:?}", linked.trace());
    }

    /// Films, a tag and a person: an item titled with a class word, a tag
    /// named by a property's verb, and a title that is an ordinary word.
    const FILMS: &str = "@prefix ex: <http://example.org/> .\n\
        @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\
        ex:Film rdfs:label \"film\" .\n\
        ex:Tag rdfs:label \"tag\" .\n\
        ex:directedBy rdfs:label \"directed by\" ; rdfs:domain ex:Film .\n\
        ex:films a ex:Film ; rdfs:label \"Films\" ; ex:directedBy ex:anna .\n\
        ex:heat a ex:Film ; rdfs:label \"Heat\" ; ex:directedBy ex:anna .\n\
        ex:direct a ex:Tag ; rdfs:label \"direct\" .\n\
        ex:anna rdfs:label \"Anna Keller\" .\n";

    fn entity_iris(linked: &Linked) -> Vec<&str> {
        linked.entities().map(|c| c.iri.as_str()).collect()
    }

    #[tokio::test]
    async fn ordinary_words_naming_a_class_or_property_do_not_link_as_entities() {
        let (_dir, store) = crate::testing::with_turtle(FILMS).await;
        let linked = link(&store, "which films did Anna Keller direct?").expect("link");
        assert_eq!(
            entity_iris(&linked),
            ["http://example.org/anna"],
            "{:?}",
            linked.trace()
        );
        assert!(
            linked
                .classes
                .iter()
                .any(|c| c.iri == "http://example.org/Film"),
            "{:?}",
            linked.trace()
        );
        assert!(
            linked
                .properties
                .iter()
                .any(|c| c.iri == "http://example.org/directedBy"),
            "{:?}",
            linked.trace()
        );
    }

    #[tokio::test]
    async fn a_title_links_when_written_as_one() {
        let (_dir, store) = crate::testing::with_turtle(FILMS).await;
        // An ordinary word that names nothing in the schema is a title.
        let linked = link(&store, "who directed heat?").expect("link");
        assert_eq!(entity_iris(&linked), ["http://example.org/heat"]);
        // A class word capitalised inside the sentence, or quoted, is a name.
        for question in ["who directed Films?", "who directed \"films\"?"] {
            let linked = link(&store, question).expect("link");
            assert_eq!(
                entity_iris(&linked),
                ["http://example.org/films"],
                "{question}: {:?}",
                linked.trace()
            );
        }
    }

    #[test]
    fn names_are_written_capitalised_inside_the_sentence_or_quoted() {
        assert!(written_as_name("who directed the film Films?", &[4]));
        assert!(written_as_name("who directed 'films'?", &[2]));
        assert!(written_as_name("films by «Anna Keller»", &[2, 3]));
        assert!(!written_as_name("Films by Anna?", &[0]));
        assert!(!written_as_name("which films did Anna direct?", &[1]));
        assert!(!written_as_name("who met Anna keller?", &[2, 3]));
        assert!(!written_as_name("who?", &[3]));
    }

    /// The neighbour terms of the mentions of `question`, read by the query
    /// and from the edge index, which must agree.
    fn neighbour_terms_both_ways(
        store: &Store,
        question: &str,
    ) -> Vec<BTreeMap<String, Vec<String>>> {
        let lexicon = Lexicon::of(store).expect("lexicon");
        let groups = mention_groups(&lexicon, &analyze_question(question)).expect("groups");
        assert!(groups.iter().any(|g| is_tied(g)), "a tie to break");
        let queried = neighbour_terms_queried(store, &lexicon, &groups).expect("query");
        let index = store
            .graph()
            .edge_index(usize::MAX)
            .expect("index")
            .expect("embedded");
        assert_eq!(
            queried,
            neighbour_terms_in(&index, &lexicon, &groups).expect("index")
        );
        let sorted = |terms: &HashSet<String>| {
            let mut terms: Vec<String> = terms.iter().cloned().collect();
            terms.sort();
            terms
        };
        queried
            .iter()
            .map(|group| {
                group
                    .iter()
                    .map(|(c, terms)| (c.clone(), sorted(terms)))
                    .collect()
            })
            .collect()
    }

    #[tokio::test]
    async fn neighbour_terms_read_from_the_edge_index_are_those_the_query_reads() {
        // Two nodes named "frame" alike: one typed by a named class, the other
        // with a named node on each side of it.
        let (_dir, store) = crate::testing::with_turtle(
            "@prefix ex: <http://example.org/> .\n\
             @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\
             ex:Kind rdfs:label \"kind\" .\n\
             ex:first rdfs:label \"frame\" ; a ex:Kind .\n\
             ex:second rdfs:label \"frame\" ; ex:sentOn ex:bus .\n\
             ex:bus rdfs:label \"bus\" .\n\
             ex:gateway rdfs:label \"gateway\" ; ex:forwards ex:second .\n",
        )
        .await;
        let groups = neighbour_terms_both_ways(&store, "Which frame goes on the bus?");
        let terms = groups
            .into_iter()
            .find(|g| g.len() == 2)
            .expect("the frames");
        let of = |node: &str| terms[&format!("http://example.org/{node}")].clone();
        assert!(
            of("first").contains(&"kind".to_owned()),
            "{:?}",
            of("first")
        );
        for near in ["bus", "gateway"] {
            assert!(
                of("second").contains(&near.to_owned()),
                "{near}: {:?}",
                of("second")
            );
        }

        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let (_dir, store) =
            crate::testing::with_files(&[root.join("fixtures/can-sdk/can-sdk.ttl")]).await;
        let groups = neighbour_terms_both_ways(
            &store,
            "How do I decode a signal value from a raw CAN frame?",
        );
        let named: usize = groups.iter().map(BTreeMap::len).sum();
        assert!(named > 10, "{named} candidates with named neighbours");
    }

    fn candidate(iri: &str, score: f32, words: &[usize]) -> Candidate {
        Candidate {
            iri: iri.to_owned(),
            name: String::new(),
            score,
            name_coverage: 1.0,
            kinds: Vec::new(),
            words: words.to_vec(),
            by_head: false,
            asked: false,
        }
    }

    #[test]
    fn a_tie_goes_to_the_longest_match() {
        let mut linked = [
            candidate("urn:degreeFrom", 1.0, &[7, 8]),
            candidate("urn:doctoralDegreeFrom", 1.0, &[6, 7, 8]),
            candidate("urn:advisor", 1.2, &[2]),
            candidate("urn:aDegreeFrom", 1.0, &[7, 8]),
        ];
        linked.sort_by(best_first);
        let order: Vec<&str> = linked.iter().map(|c| c.iri.as_str()).collect();
        assert_eq!(
            order,
            [
                "urn:advisor",
                "urn:doctoralDegreeFrom",
                "urn:aDegreeFrom",
                "urn:degreeFrom"
            ]
        );
    }
}
