//! `kgfuse console`: an interactive SPARQL console.
//!
//! A query may span lines; it runs when a line ends with `;` or when a blank line
//! follows it. Lines starting with `.` are console commands (see `.help`). Queries
//! may use every prefix of the store and every prefix declared by an earlier query
//! of the session. Updates (INSERT, DELETE, LOAD, CLEAR...) keep vectors in step.
//! Errors are printed and the session goes on. On a terminal, input is edited with
//! rustyline and history is kept in `<data>/console_history`; when stdin is piped,
//! lines are read as they come and no prompt is shown.

use crate::cli::OutputFormat;
use crate::commands::{parse_binding, write_outcome};
use crate::progress::TerminalProgress;
use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use kgfuse::{Engine, QueryOptions};
use regex::Regex;
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::sync::LazyLock;
use std::time::Duration;

const HELP: &str = "\
Type a SPARQL query or update; it runs at a line ending with ';' or at a blank line.
Commands:
  .help                      this text
  .prefixes                  prefixes usable without declaring them
  .format [table|json|csv|tsv|xml|turtle|ntriples]   show or set the output format
  .timeout [SECS]            show or set the query timeout (0 = none)
  .load FILE...              load RDF files (vectors kept in step)
  .run FILE [VAR=VALUE ...]  run a query file, e.g. .run queries/describe.rq entity=<IRI>
  .stats                     size of the store
  .quit                      leave (Ctrl-D works too)";

static PREFIX_DECL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)PREFIX\s+([A-Za-z][\w.-]*)?:\s*<([^>\s]*)>").expect("valid regex")
});
static UPDATE_START: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?is)^\s*(?:(?:#[^\n]*\n|PREFIX\s+[\w.-]*:\s*<[^>]*>|BASE\s*<[^>]*>)\s*)*(INSERT|DELETE|LOAD|CLEAR|DROP|CREATE|ADD|MOVE|COPY|WITH)\b",
    )
    .expect("valid regex")
});

/// Mutable state of a console session.
struct Session {
    options: QueryOptions,
    format: OutputFormat,
}

/// Where lines come from.
enum Input {
    Terminal(Box<DefaultEditor>, std::path::PathBuf),
    Piped(std::io::StdinLock<'static>),
}

impl Input {
    fn read(&mut self, prompt: &str) -> Result<Option<String>> {
        match self {
            Input::Terminal(editor, _) => match editor.readline(prompt) {
                Ok(line) => {
                    if !line.trim().is_empty() {
                        let _ = editor.add_history_entry(line.as_str());
                    }
                    Ok(Some(line))
                }
                Err(ReadlineError::Interrupted) => Ok(Some(String::new())),
                Err(ReadlineError::Eof) => Ok(None),
                Err(e) => Err(e.into()),
            },
            Input::Piped(stdin) => {
                let mut line = String::new();
                if stdin.read_line(&mut line)? == 0 {
                    return Ok(None);
                }
                Ok(Some(line.trim_end_matches(['\n', '\r']).to_owned()))
            }
        }
    }

    fn save_history(&mut self) {
        if let Input::Terminal(editor, path) = self {
            let _ = editor.save_history(path);
        }
    }
}

/// Runs the console until `.quit` or end of input.
pub async fn run(engine: &Engine, data: &Path) -> Result<()> {
    let mut session = Session {
        options: engine.query_options(),
        format: OutputFormat::Table,
    };
    let mut input = if std::io::stdin().is_terminal() {
        let mut editor = DefaultEditor::new()?;
        let history = data.join("console_history");
        let _ = editor.load_history(&history);
        eprintln!(
            "kgfuse console on {} — .help for commands, Ctrl-D to leave",
            data.display()
        );
        Input::Terminal(Box::new(editor), history)
    } else {
        Input::Piped(std::io::stdin().lock())
    };
    let mut buffer = String::new();
    loop {
        let prompt = if buffer.is_empty() {
            "kgfuse> "
        } else {
            "   ...> "
        };
        let Some(line) = input.read(prompt)? else {
            break;
        };
        let trimmed = line.trim();
        if buffer.is_empty() {
            if trimmed.is_empty() {
                continue;
            }
            if trimmed.starts_with('.') {
                match command(engine, &mut session, trimmed).await {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(e) => eprintln!("error: {e:#}"),
                }
                continue;
            }
        }
        if trimmed.is_empty() {
            execute(engine, &mut session, &std::mem::take(&mut buffer)).await;
        } else if let Some(head) = trimmed.strip_suffix(';') {
            buffer.push_str(head);
            execute(engine, &mut session, &std::mem::take(&mut buffer)).await;
        } else {
            buffer.push_str(&line);
            buffer.push('\n');
        }
    }
    if !buffer.trim().is_empty() {
        execute(engine, &mut session, &buffer).await;
    }
    input.save_history();
    Ok(())
}

/// Runs one query or update, printing results or the error.
async fn execute(engine: &Engine, session: &mut Session, text: &str) {
    if let Err(e) = try_execute(engine, session, text, &[]).await {
        eprintln!("error: {e:#}");
    }
}

async fn try_execute(
    engine: &Engine,
    session: &mut Session,
    text: &str,
    bindings: &[(String, kgfuse::model::Term)],
) -> Result<()> {
    if UPDATE_START.is_match(text) {
        if !bindings.is_empty() {
            bail!("bindings apply to queries, not updates");
        }
        let report = engine.update(text, &TerminalProgress::new()).await?;
        println!("update done; {report}");
    } else {
        let outcome = engine.sparql_bound(text, bindings, &session.options)?;
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        write_outcome(&outcome, session.format, &session.options, &mut out)?;
        out.flush()?;
    }
    remember_prefixes(&mut session.options, text);
    Ok(())
}

/// Adds the PREFIX declarations of a successful query to the session.
fn remember_prefixes(options: &mut QueryOptions, text: &str) {
    for capture in PREFIX_DECL.captures_iter(text) {
        let prefix = capture.get(1).map_or("", |m| m.as_str()).to_owned();
        let iri = capture[2].to_owned();
        options.prefixes.retain(|(p, _)| *p != prefix);
        options.prefixes.push((prefix, iri));
    }
}

/// Handles a dot-command; returns false to leave the console.
async fn command(engine: &Engine, session: &mut Session, line: &str) -> Result<bool> {
    let mut words = line.split_whitespace();
    let name = words.next().unwrap_or_default();
    let args: Vec<&str> = words.collect();
    match name {
        ".help" => println!("{HELP}"),
        ".quit" | ".exit" => return Ok(false),
        ".prefixes" => {
            for (prefix, iri) in &session.options.prefixes {
                println!("PREFIX {prefix}: <{iri}>");
            }
        }
        ".format" => match args.first() {
            None => println!(
                "{}",
                session
                    .format
                    .to_possible_value()
                    .map_or("?".into(), |v| v.get_name().to_owned())
            ),
            Some(f) => {
                session.format = OutputFormat::from_str(f, true)
                    .map_err(|_| anyhow::anyhow!("unknown format '{f}'"))?;
            }
        },
        ".timeout" => match args.first() {
            None => match session.options.timeout {
                Some(t) => println!("{}s", t.as_secs()),
                None => println!("none"),
            },
            Some(secs) => {
                let secs: u64 = secs.parse().context("timeout in whole seconds")?;
                session.options.timeout = (secs > 0).then(|| Duration::from_secs(secs));
            }
        },
        ".load" => {
            if args.is_empty() {
                bail!(".load needs at least one file");
            }
            let summary = engine.load(&args, None, &TerminalProgress::new()).await?;
            println!("{} quads written; {}", summary.quads, summary.vectors);
        }
        ".run" => {
            let Some(file) = args.first() else {
                bail!(".run needs a query file");
            };
            let text = std::fs::read_to_string(file).with_context(|| (*file).to_owned())?;
            let bindings = args[1..]
                .iter()
                .map(|b| parse_binding(b, &session.options.prefixes))
                .collect::<Result<Vec<_>>>()?;
            try_execute(engine, session, &text, &bindings)
                .await
                .with_context(|| (*file).to_owned())?;
        }
        ".stats" => {
            let stats = engine.stats().await?;
            println!(
                "{} triples in {} graphs, {} vector rows ({} embedder)",
                stats.triples, stats.graphs, stats.vector_rows, stats.embedder
            );
        }
        other => bail!("unknown command {other}; .help lists them"),
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_updates_behind_prefixes_and_comments() {
        assert!(
            UPDATE_START.is_match("PREFIX ex: <http://e/>\n# add\nINSERT DATA { ex:a ex:b ex:c }")
        );
        assert!(UPDATE_START.is_match("  delete where { ?s ?p ?o }"));
        assert!(!UPDATE_START.is_match("SELECT ?insert WHERE { ?s ?p ?o }"));
        assert!(!UPDATE_START.is_match("PREFIX ex: <http://e/> ASK { ex:a ?p ?o }"));
    }

    #[test]
    fn remembers_declared_prefixes() {
        let mut options = QueryOptions::default();
        remember_prefixes(
            &mut options,
            "PREFIX ub: <http://u/#>\nPREFIX : <http://d/> SELECT * {}",
        );
        assert!(
            options
                .prefixes
                .contains(&("ub".into(), "http://u/#".into()))
        );
        assert!(
            options
                .prefixes
                .contains(&(String::new(), "http://d/".into()))
        );
    }
}
