//! `kgfuse sparql`: a query (or, with `--update`, an update) with bound
//! variables, printed as a table or a SPARQL results format.

use super::Ctx;
use crate::cli::{OutputFormat, SparqlArgs};
use crate::render;
use anyhow::{Context, Result, bail};
use kgfuse::model::{Literal, NamedNode, Term, Triple};
use kgfuse::{QueryOptions, QueryOutcome, ResultsFormat};
use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

pub(crate) async fn run(args: SparqlArgs, ctx: &Ctx) -> Result<ExitCode> {
    let engine = ctx.open().await?;
    let (text, origin) = read_query(args.query, args.file.as_deref())?;
    if args.update {
        if !args.bindings.is_empty() {
            bail!("--bind applies to queries, not updates");
        }
        let report = engine
            .update(&text, &ctx.progress)
            .await
            .with_context(|| origin.clone())?;
        println!("update done; {report}");
        return Ok(ExitCode::SUCCESS);
    }
    let mut options = engine.query_options();
    if let Some(secs) = args.timeout {
        options.timeout = (secs > 0).then(|| Duration::from_secs(secs));
    }
    options.union_default_graph &= !args.no_union;
    if let Some(path) = &args.file {
        // Relative IRIs in a query file name files beside it, as in
        // `FROM <data.ttl>` (the query's own BASE still wins).
        options.base_iri = Some(kgfuse::file_graph_iri(path)?.into_string());
    }
    let bindings = args
        .bindings
        .iter()
        .map(|b| parse_binding(b, &options.prefixes))
        .collect::<Result<Vec<_>>>()?;
    let outcome = engine
        .sparql_bound(&text, &bindings, &options)
        .with_context(|| origin.clone())?;
    write_outcome(
        &outcome,
        args.format,
        &options,
        &mut std::io::stdout().lock(),
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Reads query text from the argument, a file or stdin; returns it with a label
/// naming where it came from (for error messages).
fn read_query(query: Option<String>, file: Option<&Path>) -> Result<(String, String)> {
    match (query, file) {
        (Some(_), Some(_)) => bail!("give a query or --file, not both"),
        (Some(q), None) if q != "-" => Ok((q, "query".into())),
        (None, Some(path)) => Ok((
            std::fs::read_to_string(path).with_context(|| path.display().to_string())?,
            path.display().to_string(),
        )),
        _ => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text)?;
            Ok((text, "stdin".into()))
        }
    }
}

/// Parses `name=value` where value is `<IRI>`, `prefix:local`, `"text"` or a number.
pub(crate) fn parse_binding(
    binding: &str,
    prefixes: &[(String, String)],
) -> Result<(String, Term)> {
    let Some((name, value)) = binding.split_once('=') else {
        bail!("binding '{binding}' is not VAR=VALUE");
    };
    let name = name.trim().trim_start_matches(['?', '$']).to_owned();
    let term = parse_term(value, prefixes).with_context(|| format!("binding '{binding}'"))?;
    Ok((name, term))
}

/// Parses `<IRI>`, `prefix:local` (a prefix the store knows), `"text"` or an integer.
pub(crate) fn parse_term(value: &str, prefixes: &[(String, String)]) -> Result<Term> {
    let value = value.trim();
    let term: Term = if let Some(iri) = value.strip_prefix('<').and_then(|v| v.strip_suffix('>')) {
        NamedNode::new(iri)
            .with_context(|| format!("<{iri}>"))?
            .into()
    } else if let Some(text) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        Literal::new_simple_literal(text).into()
    } else if let Ok(n) = value.parse::<i64>() {
        Literal::from(n).into()
    } else if let Some((prefix, local)) = value.split_once(':') {
        let Some((_, ns)) = prefixes.iter().find(|(p, _)| p == prefix) else {
            bail!("unknown prefix '{prefix}:' in '{value}'");
        };
        NamedNode::new(format!("{ns}{local}"))
            .with_context(|| value.to_owned())?
            .into()
    } else {
        bail!("cannot read '{value}' as <IRI>, prefix:name, \"text\" or a number");
    };
    Ok(term)
}

/// Parses the three terms of `kgfuse why` (`a` is `rdf:type`, as in Turtle).
pub(crate) fn parse_triple(parts: &[String; 3], prefixes: &[(String, String)]) -> Result<Triple> {
    let subject = match parse_term(&parts[0], prefixes)? {
        Term::NamedNode(n) => n,
        other => bail!("the subject must be an IRI, not {other}"),
    };
    let predicate = if parts[1] == "a" {
        kgfuse::model::vocab::rdf::TYPE.into_owned()
    } else {
        match parse_term(&parts[1], prefixes)? {
            Term::NamedNode(n) => n,
            other => bail!("the predicate must be an IRI, not {other}"),
        }
    };
    let object = parse_term(&parts[2], prefixes)?;
    Ok(Triple::new(subject, predicate, object))
}

/// Writes a result in the chosen format.
pub(crate) fn write_outcome(
    outcome: &QueryOutcome,
    format: OutputFormat,
    options: &QueryOptions,
    out: &mut dyn Write,
) -> Result<()> {
    let results_format = match format {
        OutputFormat::Table => {
            out.write_all(render::outcome(outcome, &options.prefixes, 60).as_bytes())?;
            return Ok(());
        }
        OutputFormat::Json => ResultsFormat::Json,
        OutputFormat::Csv => ResultsFormat::Csv,
        OutputFormat::Tsv => ResultsFormat::Tsv,
        OutputFormat::Xml => ResultsFormat::Xml,
        OutputFormat::Turtle => ResultsFormat::Turtle,
        OutputFormat::Ntriples => ResultsFormat::NTriples,
    };
    outcome.write(results_format, &mut *out)?;
    if matches!(format, OutputFormat::Json | OutputFormat::Xml) {
        writeln!(out)?;
    }
    Ok(())
}
