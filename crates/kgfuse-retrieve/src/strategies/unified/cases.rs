//! Stage 7, for a question that asks for code: worked examples (DomAgent's
//! cases) that show the returned functions in use. Two channels are fused
//! ([`crate::fusion`]), as the node ranking fuses its own:
//!
//! - `similar`: the cases nearest the question (vector search over cases);
//! - `exercises`: the cases that exercise the returned functions, weighted by
//!   the fused scores of the functions each exercises, the shorter first on a
//!   tie (a short case shows the call with less around it).
//!
//! A case both channels find (an example of a similar task that calls a
//! returned function) comes first. At most `DomainOptions::max_cases` are
//! kept, none of `options.exclude`. Unlike the
//! `domain` strategy, every case is eligible, not only the case base's: the case
//! base is chosen for coverage of the whole library, the question picks here.

use super::*;
use crate::fusion::{Channel, fuse};
use crate::strategies::domain::case_base::{case_infos, exercising};

/// The kind of case rows in the vector table.
const CASE_KIND: [&str; 1] = ["Case"];

/// Nearest cases the `similar` channel considers.
const SIMILAR_DEPTH: usize = 20;

/// Stage 7: the worked examples of the returned functions, into `context.cases`.
pub(super) async fn cases_stage(
    store: &Store,
    question: &Question,
    options: &RetrieveOptions,
    context: &mut FusedContext,
) -> Result<(), RetrieveError> {
    let mut stage = TraceStage {
        stage: "cases".into(),
        ..TraceStage::default()
    };
    let max_cases = options.domain.max_cases;
    if context.functions.is_empty() || max_cases == 0 {
        let why = if max_cases == 0 {
            "the case limit is 0"
        } else {
            "no returned function to show in use"
        };
        stage.kept.push(why.into());
        context.trace.push(stage);
        return Ok(());
    }
    let similar: Vec<String> = store
        .search(question, SIMILAR_DEPTH, KindFilter::OneOf(&CASE_KIND))
        .await?
        .into_iter()
        .map(|hit| hit.iri)
        .collect();
    let exercising = exercising_cases(store, &context.functions)?;
    let mut lists = [
        Channel::new("similar", similar),
        Channel::new("exercises", exercising),
    ];
    for channel in &mut lists {
        channel.ranked.retain(|iri| !options.exclude.contains(iri));
    }
    let mut kept = Vec::new();
    for (rank, item) in fuse(&lists).into_iter().enumerate() {
        if rank >= max_cases {
            stage.dropped.push(Dropped {
                why: format!("{} beyond the case limit {max_cases}", item.describe()),
                iri: item.iri,
            });
            continue;
        }
        stage.kept.push(format!("{} {}", item.iri, item.describe()));
        kept.push(item.iri);
    }
    context.cases = case_infos(store, &kept)?;
    context.trace.push(stage);
    Ok(())
}

/// The cases that exercise any of `functions`, the most exercised weight first
/// (the sum of the scores of the functions each exercises), then the shorter.
fn exercising_cases(
    store: &Store,
    functions: &[kgfuse_core::context::FunctionInfo],
) -> Result<Vec<String>, RetrieveError> {
    let scored: Vec<(&str, f32)> = functions
        .iter()
        .map(|f| (f.iri.as_str(), f.score))
        .collect();
    let mut ranked = exercising(store, &scored)?;
    ranked.sort_by(|a, b| {
        b.weight
            .total_cmp(&a.weight)
            .then(a.length.cmp(&b.length))
            .then_with(|| a.iri.cmp(&b.iri))
    });
    Ok(ranked.into_iter().map(|case| case.iri).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgfuse_core::context::FunctionInfo;

    const CASES: &str = "@prefix ex: <urn:ex:> .\n\
        @prefix kg: <https://w3id.org/kgfuse/ontology#> .\n\
        @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\
        ex:mean a kg:Function ; kg:name \"mean\" .\n\
        ex:median a kg:Function ; kg:name \"median\" .\n\
        ex:average a kg:Case ; rdfs:label \"average of a list of numbers\" ;\n\
          kg:code \"mean(numbers)\" ; kg:exercises ex:mean .\n\
        ex:middle a kg:Case ; rdfs:label \"middle value of a list of numbers\" ;\n\
          kg:code \"median(numbers)\" ; kg:exercises ex:median .\n\
        ex:held a kg:Case ; rdfs:label \"average of a list of numbers, held out\" ;\n\
          kg:code \"mean(xs)\" ; kg:exercises ex:mean .\n";

    fn returned(iri: &str, score: f32) -> FunctionInfo {
        FunctionInfo {
            iri: iri.into(),
            score,
            ..FunctionInfo::default()
        }
    }

    /// The case that is both near the question and exercises the best returned
    /// function comes first; a held-out case is never considered.
    #[tokio::test]
    async fn the_case_near_the_question_that_shows_the_best_function_comes_first() {
        let (_dir, store) = kgfuse_lexicon::testing::with_turtle(CASES).await;
        let held_out = BTreeSet::from(["urn:ex:held".to_owned()]);
        let options = RetrieveOptions {
            exclude: held_out.clone(),
            ..RetrieveOptions::default()
        };
        let question = Question::new("the average of a list of numbers").holding_out(&held_out);
        let mut context = FusedContext {
            functions: vec![
                returned("urn:ex:mean", 0.03),
                returned("urn:ex:median", 0.01),
            ],
            ..FusedContext::default()
        };
        cases_stage(&store, &question, &options, &mut context)
            .await
            .expect("cases");
        let shown: Vec<&str> = context.cases.iter().map(|c| c.iri.as_str()).collect();
        assert_eq!(
            shown,
            ["urn:ex:average", "urn:ex:middle"],
            "{:?}",
            context.trace
        );
        assert_eq!(context.cases[0].code.as_deref(), Some("mean(numbers)"));
        let stage = context.trace.last().expect("cases stage");
        assert!(stage.kept[0].contains("similar #1") && stage.kept[0].contains("exercises #1"));
    }

    /// Nothing returned, nothing to show in use.
    #[tokio::test]
    async fn no_returned_function_no_case() {
        let (_dir, store) = kgfuse_lexicon::testing::with_turtle(CASES).await;
        let mut context = FusedContext::default();
        cases_stage(
            &store,
            &Question::new("average"),
            &RetrieveOptions::default(),
            &mut context,
        )
        .await
        .expect("cases");
        assert!(context.cases.is_empty());
    }
}
