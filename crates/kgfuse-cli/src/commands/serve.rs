//! `kgfuse mcp` (tools for agents on stdin/stdout) and `kgfuse serve` (HTTP:
//! SPARQL protocol, JSON API, web console).

use super::serve_file::ServeFile;
use super::{Ctx, language_model};
use crate::cli::{McpArgs, ServeArgs};
use anyhow::{Context, Result, bail};
use kgfuse::Engine;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

pub(crate) async fn mcp(args: McpArgs, ctx: &Ctx) -> Result<ExitCode> {
    let engine = ctx.open().await?.with_model(language_model(args.offline)?);
    kgfuse_mcp::serve_stdio(engine).await?;
    Ok(ExitCode::SUCCESS)
}

/// Runs the HTTP server until Ctrl-C or SIGTERM.
pub(crate) async fn http(args: ServeArgs, ctx: &Ctx) -> Result<ExitCode> {
    let update_token = if args.allow_updates && args.tokens.is_none() {
        let token = std::env::var(kgfuse_http::TOKEN_ENV)
            .ok()
            .filter(|t| !t.trim().is_empty());
        let Some(token) = token else {
            bail!(
                "--allow-updates needs --tokens FILE with write tokens, or a bearer token in {} \
                 (16 or more characters)",
                kgfuse_http::TOKEN_ENV
            );
        };
        Some(token)
    } else {
        None
    };
    let audit = match args.audit.as_deref() {
        Some("-") => kgfuse_http::AuditTarget::Stderr,
        Some(path) => kgfuse_http::AuditTarget::File(path.into()),
        None if args.tokens.is_some() => kgfuse_http::AuditTarget::Stderr,
        None => kgfuse_http::AuditTarget::Off,
    };
    let tls = match (args.tls_cert, args.tls_key) {
        (Some(cert), Some(key)) => Some(kgfuse_http::TlsFiles { cert, key }),
        _ => None,
    };
    let model = language_model(args.offline)?;
    let mut stores = Vec::new();
    if let Some(path) = &args.config {
        for (name, settings) in ServeFile::read(path)?.stores {
            let engine = open_store(&name, settings.data(), ctx)
                .await?
                .with_model(settings.model(&model)?);
            let mut store = kgfuse_http::ServedStore::new(name, engine);
            store.limits = settings.limits();
            stores.push(store);
        }
    } else if args.stores.is_empty() {
        let engine = ctx.open().await?.with_model(Arc::clone(&model));
        stores.push(kgfuse_http::ServedStore::new("default", engine));
    }
    for (name, dir) in &args.stores {
        let engine = open_store(name, dir, ctx)
            .await?
            .with_model(Arc::clone(&model));
        stores.push(kgfuse_http::ServedStore::new(name.clone(), engine));
    }
    let several = args.config.is_some() || !args.stores.is_empty();
    let names: Vec<String> = stores.iter().map(|s| s.name.clone()).collect();
    let config = kgfuse_http::ServerConfig {
        bind: args.bind,
        max_body_bytes: usize::try_from(args.max_body_mib.saturating_mul(1024 * 1024))
            .unwrap_or(usize::MAX),
        query_timeout: Duration::from_secs(args.query_timeout),
        request_timeout: Duration::from_secs(args.request_timeout),
        max_rows: args.max_rows,
        max_concurrent: args.max_concurrent,
        allow_updates: args.allow_updates,
        update_token,
        tokens: args.tokens,
        public: args.public,
        audit,
        tls,
        cors_origins: args.cors_origins,
        datasets: args.datasets,
    };
    let server = kgfuse_http::Server::bind(stores, config).await?;
    let addr = server.local_addr()?;
    let scheme = if server.is_tls() { "https" } else { "http" };
    // The address on stdout (scripts and tests read it: the port may be chosen);
    // everything else goes to stderr.
    println!("listening on {scheme}://{addr}");
    std::io::stdout().flush()?;
    if !several {
        eprintln!(
            "kgfuse serve: console {scheme}://{addr}/ , SPARQL {scheme}://{addr}/sparql ; Ctrl-C stops"
        );
    } else {
        for name in &names {
            eprintln!(
                "kgfuse serve: store {name}: {scheme}://{addr}/s/{name}/ (console), /s/{name}/sparql"
            );
        }
        eprintln!("kgfuse serve: Ctrl-C stops");
    }
    server.run(shutdown_signal()).await?;
    eprintln!("kgfuse serve: stopped");
    Ok(ExitCode::SUCCESS)
}

/// Opens one of the stores to serve, naming it in any error.
async fn open_store(name: &str, dir: &std::path::Path, ctx: &Ctx) -> Result<Engine> {
    Engine::open_with_progress(dir, &ctx.progress)
        .await
        .with_context(|| format!("store {name} ({})", dir.display()))
}

/// Completes on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let interrupt = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!("cannot listen for Ctrl-C: {e}");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(e) => {
                tracing::warn!("cannot listen for SIGTERM: {e}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}
