//! # An agent that writes code against a domain API, with kgfuse as its memory
//!
//! This program plays the part of a coding agent (DomAgent style) working in the
//! payment-fees domain: a small Python package that computes card-payment fees from
//! fee rules, plus solved questions and tests that use it (`fixtures/payment-fees`).
//!
//! What it shows, in order:
//!
//! 1. **Setting up the memory.** `Engine::builder` creates a fresh data directory in
//!    a temporary folder with the model-free `hash` embedder (no download needed) and
//!    sets the engine's default options. `Engine::ingest_code` parses the package with
//!    tree-sitter into packages, modules, functions with ordered parameters and return
//!    types, call edges, cases (the `examples/` and `tests/` files) and the domain
//!    knowledge of `knowledge.toml`: the same as
//!    `kgfuse ingest code fixtures/payment-fees --knowledge fixtures/payment-fees/knowledge.toml`.
//!    `Engine::build_case_base` then picks the worked examples that best cover the
//!    API (`kgfuse index cases`).
//! 2. **The agent's first tool call, `search_domain_kg`** (top-down): which API
//!    functions fit the task? kgfuse chooses packages, ranks their functions, and a
//!    refinement gate drops the ones that are off-topic; the trace says why.
//! 3. **The second tool call, `search_case_base`** (bottom-up): which worked
//!    examples look like the task?
//! 4. **The prompt.** The agent assembles what a language model needs to write the
//!    code: the task, the functions with their signatures, modules, callees and
//!    domain rules, and one or two worked examples. It is printed to stdout.
//! 5. **The model.** With `KGFUSE_LLM_BASE_URL` and `KGFUSE_LLM_MODEL` set (any
//!    OpenAI-compatible server, e.g. Ollama), the prompt is sent and the reply
//!    printed; otherwise the program stops at the prompt.
//!
//! The same two tools are what the MCP server (`kgfuse mcp`) offers an external agent.
//!
//! Run it from the workspace root (paths are relative to it):
//!
//! ```sh
//! cargo run --example agent_loop
//! cargo run --example agent_loop -- "Write a function that finds the most expensive MCC"
//! ```
#![allow(clippy::print_stdout)]

use kgfuse::{
    CaseBaseOptions, CaseInfo, DomainOptions, Engine, EngineInit, FunctionInfo, IngestCodeOptions,
    LanguageModel, NoProgress, OpenAiChat, OpenAiChatConfig, RetrieveOptions,
};
use std::path::Path;
use std::sync::Arc;

/// The task the agent was given, unless one is passed on the command line.
const DEFAULT_TASK: &str =
    "Write a function that finds the cheapest card scheme for a 50 EUR credit transaction";

/// How many API functions and worked examples go into the prompt.
const TOP_FUNCTIONS: usize = 5;
const TOP_CASES: usize = 2;

/// Worked examples longer than this many lines are cut in the prompt.
const MAX_CASE_LINES: usize = 30;

const FIXTURE: &str = "fixtures/payment-fees";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let task = std::env::args()
        .nth(1)
        .unwrap_or_else(|| DEFAULT_TASK.to_owned());
    let fixture = Path::new(FIXTURE);
    if !fixture.is_dir() {
        return Err(format!(
            "{FIXTURE} not found: run this example from the workspace root (cargo run --example agent_loop)"
        )
        .into());
    }

    // ------------------------------------------------------------------
    // 1. The agent's memory: a fresh store holding the payment-fees code.
    // ------------------------------------------------------------------
    println!("== 1. Memory: ingesting {FIXTURE} into a new store\n");
    let tmp = tempfile::tempdir()?;
    // A real model, if the environment names one; the offline rule-based one otherwise.
    let model: Option<Arc<dyn LanguageModel>> = match OpenAiChatConfig::from_env() {
        Some(config) => Some(Arc::new(OpenAiChat::new(config)?)),
        None => None,
    };
    let mut builder = Engine::builder(tmp.path().join("data"))
        // The directory is empty, so the store is created with this embedder.
        // `EngineInit::minilm(None)` gives real sentence embeddings after `make models`.
        .embedder(EngineInit::hash(256))
        // The defaults `retrieve_default` uses; `search_domain_kg` takes its package
        // and gate thresholds from them too. This agent writes against one library
        // at a time, so only the best-matching package is searched.
        .retrieve_options(RetrieveOptions {
            domain: DomainOptions {
                max_packages: 1,
                ..DomainOptions::default()
            },
            ..RetrieveOptions::default()
        });
    if let Some(model) = model {
        builder = builder.model(model);
    }
    let engine = builder.build().await?;
    println!("language model: {}", engine.model().name());

    let options = IngestCodeOptions {
        knowledge_file: Some(fixture.join("knowledge.toml")),
        ..IngestCodeOptions::default()
    };
    let report = engine.ingest_code(fixture, &options, &NoProgress).await?;
    if let Some(code) = &report.code {
        println!(
            "ingested {} files: {} functions, {} cases, {} resolved calls, {} triples",
            report.files, code.functions, code.cases, report.calls, report.triples
        );
    }
    let cases = engine
        .build_case_base(CaseBaseOptions::default(), &NoProgress)
        .await?;
    println!(
        "case base: {} of {} cases selected to cover {} packages and {} clusters",
        cases.selected, cases.cases, cases.packages, cases.clusters
    );

    // ------------------------------------------------------------------
    // 2. Tool call one: which API functions does the task need?
    // ------------------------------------------------------------------
    println!("\n== 2. Agent -> search_domain_kg({task:?}, top_t = {TOP_FUNCTIONS})\n");
    let context = engine.search_domain_kg(&task, TOP_FUNCTIONS).await?;
    for function in &context.functions {
        println!("  {:.3}  {}", function.score, qualified_name(function));
    }
    // The trace says what each stage kept and dropped: here, what the gate refused.
    for stage in context.trace.iter().filter(|s| s.stage == "gate") {
        for dropped in stage.dropped.iter().take(3) {
            println!("  gate dropped {}: {}", short(&dropped.iri), dropped.why);
        }
    }
    if context.functions.is_empty() {
        return Err("search_domain_kg found no function for the task".into());
    }

    // ------------------------------------------------------------------
    // 3. Tool call two: worked examples of similar tasks.
    // ------------------------------------------------------------------
    println!("\n== 3. Agent -> search_case_base({task:?}, k = {TOP_CASES})\n");
    let examples = engine.search_case_base(&task, TOP_CASES).await?;
    for case in &examples {
        let exercised: Vec<&str> = case.exercises.iter().map(|iri| short(iri)).collect();
        println!("  {}  (exercises {})", case.title, exercised.join(", "));
    }

    // ------------------------------------------------------------------
    // 4. The prompt the language model gets.
    // ------------------------------------------------------------------
    let prompt = build_prompt(&task, &context.functions, &examples);
    println!("\n== 4. Prompt\n");
    println!("{prompt}");

    // ------------------------------------------------------------------
    // 5. The model writes the code (when one is configured).
    // ------------------------------------------------------------------
    println!("== 5. Model\n");
    if engine.model().is_offline() {
        println!(
            "offline: set KGFUSE_LLM_BASE_URL and KGFUSE_LLM_MODEL to send this prompt to a model"
        );
    } else {
        // `complete` blocks on HTTP, so it runs off the async workers.
        let model = engine.clone();
        let reply =
            tokio::task::spawn_blocking(move || model.model().complete(SYSTEM, &prompt)).await??;
        println!("{reply}");
    }
    Ok(())
}

/// The standing instructions of the code-writing model.
const SYSTEM: &str = "You write Python 3.11 that uses the project's own API. Call only the \
functions listed in the prompt, with the parameters their signatures show, and follow the \
domain rules given with them. Reply with one Python code block and nothing else.";

/// Task, API functions, worked examples and instructions, in Markdown.
fn build_prompt(task: &str, functions: &[FunctionInfo], examples: &[CaseInfo]) -> String {
    let mut prompt = format!("# Task\n\n{task}\n\n# API you can call\n\n");
    for function in functions {
        prompt.push_str(&format!("## {}\n\n", qualified_name(function)));
        if let Some(signature) = &function.signature {
            prompt.push_str(&format!("```python\n{signature}\n```\n\n"));
        }
        if let Some(module) = &function.module {
            prompt.push_str(&format!("- import from `{module}`\n"));
        }
        if !function.depends_on.is_empty() {
            let callees: Vec<&str> = function.depends_on.iter().map(|iri| short(iri)).collect();
            prompt.push_str(&format!("- calls {}\n", callees.join(", ")));
        }
        for rule in &function.knowledge {
            prompt.push_str(&format!("- rule: {}\n", one_line(rule)));
        }
        prompt.push('\n');
    }
    if !examples.is_empty() {
        prompt.push_str("# Worked examples\n\n");
    }
    for case in examples {
        prompt.push_str(&format!("## {}\n\n", case.title));
        if let Some(code) = &case.code {
            let code = dedent_body(code);
            let lines: Vec<&str> = code.lines().collect();
            let shown = lines.len().min(MAX_CASE_LINES);
            prompt.push_str("```python\n");
            prompt.push_str(&lines[..shown].join("\n"));
            if shown < lines.len() {
                prompt.push_str(&format!("\n# ... {} more lines", lines.len() - shown));
            }
            prompt.push_str("\n```\n\n");
        }
    }
    prompt.push_str(
        "# Answer\n\nWrite `solve()` for the task above, using the API functions and \
         following the worked examples' style.\n",
    );
    prompt
}

/// A method's code starts at its `def` line, unindented, while its body keeps the
/// class's indentation: shift the body back so the snippet is valid Python.
fn dedent_body(code: &str) -> String {
    let mut lines = code.lines();
    let Some(first) = lines.next() else {
        return String::new();
    };
    let body: Vec<&str> = lines.collect();
    let indent = |line: &str| line.len() - line.trim_start().len();
    let least = body
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| indent(l))
        .min()
        .unwrap_or(0);
    let starts_def = first.starts_with("def ") || first.starts_with("async def ");
    if !starts_def || least <= 4 {
        return code.to_owned();
    }
    let shift = least - 4;
    let mut out = vec![first.to_owned()];
    out.extend(body.iter().map(|l| l.get(shift..).unwrap_or("").to_owned()));
    out.join("\n")
}

/// `module.function` when the module is known, else the short name.
fn qualified_name(function: &FunctionInfo) -> String {
    match &function.module {
        Some(module) => format!("{module}.{}", function.name),
        None => function.name.clone(),
    }
}

/// The last segment of a code IRI (`.../fn/payment_fees.fees.average_fee` ->
/// `payment_fees.fees.average_fee`).
fn short(iri: &str) -> &str {
    iri.rsplit('/').next().unwrap_or(iri)
}

/// Text on one line, whitespace collapsed.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
