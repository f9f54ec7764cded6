//! `kgfuse init`: a new data directory, or one attached to a shared store.

use super::Ctx;
use crate::cli::{EmbedderKind, EntailmentKind, GraphAuthKind, InitArgs};
use anyhow::{Result, bail};
use kgfuse::{Engine, EngineInit};
use std::collections::BTreeMap;
use std::process::ExitCode;

pub(crate) async fn run(args: InitArgs, ctx: &Ctx) -> Result<ExitCode> {
    let attach = args.attach;
    let init = engine_init(args)?;
    let engine = if attach {
        Engine::attach(&ctx.data, init).await?
    } else {
        Engine::init(&ctx.data, init).await?
    };
    let config = engine.store().config();
    let mut place = match &config.graph {
        Some(remote) => format!(", graph on {}", remote.query),
        None => String::new(),
    };
    if let Some(vectors) = &config.vectors {
        place.push_str(&format!(", vectors on {}", vectors.uri));
    }
    println!(
        "{} {} (embedder {}, {} dimensions, entailment {:?}{place})",
        if attach { "attached" } else { "initialised" },
        ctx.data.display(),
        config.embedder.kind,
        config.embedder.dimension,
        config.reasoning.entailment
    );
    Ok(ExitCode::SUCCESS)
}

/// The store's settings from the flags: embedder, entailment, and where the
/// graph and the vectors live.
fn engine_init(args: InitArgs) -> Result<EngineInit> {
    let init = match args.embedder {
        EmbedderKind::Hash => EngineInit::hash(args.dimension),
        EmbedderKind::Minilm => EngineInit::minilm(args.model_dir.as_deref()),
        EmbedderKind::Static => EngineInit::distilled(args.model_dir.as_deref()),
        EmbedderKind::Openai => {
            EngineInit::openai(args.base_url.as_deref(), args.model.as_deref())?
        }
    };
    let init = init.entailment(match args.entailment {
        EntailmentKind::Rdfs => kgfuse::Entailment::Rdfs,
        EntailmentKind::None => kgfuse::Entailment::None,
    });
    let init = match args.graph {
        Some(query) => init.remote_graph(kgfuse::RemoteGraphConfig {
            query,
            update: args.graph_update,
            store: args.graph_store,
            auth: match args.graph_auth {
                GraphAuthKind::None => kgfuse::RemoteAuth::None,
                GraphAuthKind::Basic => kgfuse::RemoteAuth::Basic,
                GraphAuthKind::Bearer => kgfuse::RemoteAuth::Bearer,
            },
        }),
        None => init,
    };
    Ok(match args.vectors {
        Some(uri) => {
            let mut storage = BTreeMap::new();
            for option in args.vectors_option {
                let Some((key, value)) = option.split_once('=') else {
                    bail!("--vectors-option {option}: expected KEY=VALUE");
                };
                storage.insert(key.trim().to_owned(), value.trim().to_owned());
            }
            init.remote_vectors(kgfuse::RemoteVectorsConfig { uri, storage })
        }
        None => init,
    })
}
