//! Values a question quotes: runs of its words that are literal values in the
//! store ("English", "Ben Jones", "dog"), where the data keeps a thing's
//! attribute as text rather than as a node with a name. Linking finds nodes by
//! their names; a value shared by many rows ("English" as the language of a
//! dozen channels) is not a name but a condition on the rows: `?x language
//! "English"`. All candidate runs are looked up in one query, each by the
//! object index (`VALUES ?o { ... } ?s ?p ?o`), so the cost does not grow with
//! the store.

use crate::RetrieveError;
use crate::cues::{Cues, WordIndex};
use crate::plan::Value;
use kgfuse_core::text::is_matching_stop_word;
use kgfuse_graph::model::{Literal, Term};
use kgfuse_lexicon::linking::{Linked, WHOLE_NAME};
use kgfuse_lexicon::sparql::{cell_text, run, values};
use kgfuse_store::Store;

/// Longest run of words tried as a value.
const MAX_WORDS: usize = 6;
/// Most runs looked up for one question.
const MAX_RUNS: usize = 80;

/// A run of the question's words that is a literal value in the store.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueMention {
    /// The words, in order.
    pub words: Vec<WordIndex>,
    /// The literals found for them (as written, or in another case).
    pub literals: Vec<Value>,
}

/// The runs of the question's words that the store holds as literal values,
/// longest first where runs overlap, in question order. Runs that start or end
/// with a stop word, numbers (the cues compare those) and the words of a name,
/// class or property that linking matched whole are not tried.
pub fn quoted_values(
    store: &Store,
    cues: &Cues,
    linked: &Linked,
) -> Result<Vec<ValueMention>, RetrieveError> {
    let runs = runs(cues, linked);
    if runs.is_empty() {
        return Ok(Vec::new());
    }
    let forms: Vec<Term> = runs
        .iter()
        .flat_map(|(_, forms)| {
            forms
                .iter()
                .map(|f| Term::from(Literal::new_simple_literal(f)))
        })
        .collect();
    let found = run(
        store,
        format!(
            "SELECT DISTINCT ?o WHERE {{ {} ?s ?p ?o }}",
            values("o", &forms)
        ),
    )?;
    let held: Vec<String> = found
        .rows
        .iter()
        .filter_map(|row| cell_text(row.first()))
        .collect();
    let mut matched: Vec<ValueMention> = runs
        .into_iter()
        .filter_map(|(words, forms)| {
            let literals: Vec<Value> = forms
                .iter()
                .filter(|f| held.contains(f))
                .map(|f| Value::text(f))
                .collect();
            (!literals.is_empty()).then_some(ValueMention { words, literals })
        })
        .collect();
    // Longest first; a run inside a longer match is dropped.
    matched.sort_by(|a, b| {
        b.words
            .len()
            .cmp(&a.words.len())
            .then(a.words.cmp(&b.words))
    });
    let mut kept: Vec<ValueMention> = Vec::new();
    for mention in matched {
        if kept
            .iter()
            .all(|k| !k.words.iter().any(|w| mention.words.contains(w)))
        {
            kept.push(mention);
        }
    }
    kept.sort_by(|a, b| a.words.cmp(&b.words));
    Ok(either_of(cues, kept))
}

/// Values joined by "or" ("by Ben Jones or Ada Park") are one condition that
/// either satisfies.
fn either_of(cues: &Cues, mentions: Vec<ValueMention>) -> Vec<ValueMention> {
    let mut merged: Vec<ValueMention> = Vec::new();
    for mention in mentions {
        let joined = merged.last().is_some_and(|last| {
            let (Some(&end), Some(&start)) = (last.words.last(), mention.words.first()) else {
                return false;
            };
            start == end + 2 && cues.words.get(end + 1).is_some_and(|w| w == "or")
        });
        match merged.last_mut() {
            Some(last) if joined => {
                last.words.extend(mention.words);
                last.literals.extend(mention.literals);
            }
            _ => merged.push(mention),
        }
    }
    merged
}

/// The runs of words to look up, each with the forms it is tried in: as
/// written, lower case, and each word capitalised.
fn runs(cues: &Cues, linked: &Linked) -> Vec<(Vec<WordIndex>, Vec<String>)> {
    let said_whole = |w: WordIndex| {
        linked.mentions.iter().any(|m| {
            m.words.contains(&w) && m.candidates.iter().any(|c| c.name_coverage >= WHOLE_NAME)
        }) || linked
            .classes
            .iter()
            .chain(&linked.properties)
            .any(|c| c.name_coverage >= WHOLE_NAME && c.words.contains(&w))
    };
    let is_number = |w: &str| w.chars().all(|c| c.is_ascii_digit() || c == '.');
    let stop = |w: &str| is_matching_stop_word(w) || is_number(w);
    let n = cues.written.len();
    let mut runs = Vec::new();
    for start in 0..n {
        for end in start + 1..=(start + MAX_WORDS).min(n) {
            let lower = &cues.words[start..end];
            if stop(&lower[0]) || stop(&lower[end - start - 1]) {
                continue;
            }
            if (start..end).all(said_whole) {
                continue;
            }
            let written = cues.written[start..end].join(" ");
            let capitalised = cues.written[start..end]
                .iter()
                .map(|w| capitalise(w))
                .collect::<Vec<_>>()
                .join(" ");
            let mut forms = vec![written, lower.join(" "), capitalised];
            forms.sort();
            forms.dedup();
            runs.push(((start..end).collect(), forms));
            if runs.len() == MAX_RUNS {
                return runs;
            }
        }
    }
    runs
}

fn capitalise(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgfuse_lexicon::linking::link;
    use kgfuse_lexicon::testing::with_turtle;

    const SHOWS: &str = r#"
        @prefix ex: <http://ex.org/> .
        @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
        ex:Channel rdfs:label "channel" .
        ex:c1 a ex:Channel ; ex:language "English" ; ex:owner "Ben Jones" ; rdfs:label "Rock TV" .
        ex:c2 a ex:Channel ; ex:language "English" ; ex:owner "Ada Park" ; rdfs:label "Sky Radio" .
        ex:c3 a ex:Channel ; ex:language "Italian" ; ex:owner "Ada Park" ; rdfs:label "Rai Uno" .
    "#;

    #[tokio::test]
    async fn a_run_of_words_the_data_holds_as_a_value_is_found_and_others_are_not() {
        let (_dir, store) = with_turtle(SHOWS).await;
        let question = "How many channels owned by Ben Jones use the english language?";
        let cues = Cues::of(question);
        let linked = link(&store, question).expect("linked");
        let found = quoted_values(&store, &cues, &linked).expect("values");
        let said: Vec<String> = found
            .iter()
            .map(|m| {
                m.words
                    .iter()
                    .map(|&w| cues.written[w].as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        // "Ben Jones" whole (not "Jones" alone); "english" in the data's case.
        assert_eq!(said, ["Ben Jones", "english"], "{found:?}");
        assert_eq!(found[1].literals, [Value::text("English")]);

        // Values joined by "or" are one condition either satisfies.
        let question = "Which channels are owned by Ben Jones or Ada Park?";
        let cues = Cues::of(question);
        let linked = link(&store, question).expect("linked");
        let found = quoted_values(&store, &cues, &linked).expect("values");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0].literals,
            [Value::text("Ben Jones"), Value::text("Ada Park")]
        );

        // A name said whole is a node's, not a value: "Rock TV" is c1's label.
        let question = "Which language does Rock TV use?";
        let cues = Cues::of(question);
        let linked = link(&store, question).expect("linked");
        assert!(
            quoted_values(&store, &cues, &linked)
                .expect("values")
                .is_empty()
        );
    }
}
