//! `kgfuse token`: the bearer tokens of a shared server (`kgfuse serve --tokens
//! FILE`). Works on the token file alone; no data directory is opened.

use super::print_json;
use crate::cli::{TokenAddArgs, TokenArgs, TokenCommand, TokenListArgs, TokenRevokeArgs};
use anyhow::{Context, Result, bail};
use kgfuse_http::tokens::{TokenEntry, TokenError, TokenFile};
use std::path::Path;
use std::process::ExitCode;

pub(crate) fn run(args: TokenArgs) -> Result<ExitCode> {
    let Some(path) = args.tokens.filter(|p| !p.as_os_str().is_empty()) else {
        bail!("no token file: pass --tokens FILE or set KGFUSE_TOKENS");
    };
    match args.command {
        TokenCommand::Add(args) => add(args, &path),
        TokenCommand::List(args) => list(args, &path),
        TokenCommand::Revoke(args) => revoke(args, &path),
    }
}

/// Adds a token, creating the file (and its directory) when missing; the token
/// alone goes to stdout, so `$(kgfuse token add ...)` captures it.
fn add(args: TokenAddArgs, path: &Path) -> Result<ExitCode> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the directory {}", dir.display()))?;
    }
    let mut file = TokenFile::read_or_empty(path)?;
    let stores = if args.stores.is_empty() {
        vec!["*".to_owned()]
    } else {
        args.stores
    };
    let token = file.add(&args.id, args.scope.scope(), stores)?;
    file.write(path)?;
    let entry = file
        .entries()
        .iter()
        .find(|e| e.id == args.id)
        .context("the new token is missing from the file")?;
    println!("{token}");
    eprintln!(
        "token {} ({}, {}) added to {}; it is shown once, keep it secret",
        entry.id,
        entry.scope,
        stores_text(entry),
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The tokens as a table (or JSON): never their digests.
fn list(args: TokenListArgs, path: &Path) -> Result<ExitCode> {
    let file = existing(path)?;
    if args.output.is_json() {
        let entries: Vec<serde_json::Value> = file
            .entries()
            .iter()
            .map(|e| {
                serde_json::json!({
                    "id": e.id,
                    "scope": e.scope,
                    "stores": e.stores,
                    "created": e.created,
                })
            })
            .collect();
        print_json(&entries)?;
        return Ok(ExitCode::SUCCESS);
    }
    if file.is_empty() {
        eprintln!("no tokens in {}", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    let headers = ["id", "scope", "stores", "created"].map(str::to_owned);
    let rows: Vec<Vec<String>> = file
        .entries()
        .iter()
        .map(|e| {
            vec![
                e.id.clone(),
                e.scope.to_string(),
                stores_text(e),
                e.created.clone(),
            ]
        })
        .collect();
    print!("{}", crate::render::table(&headers, &rows, 80));
    Ok(ExitCode::SUCCESS)
}

/// Removes a token from the file; a server reading the file notices the change.
fn revoke(args: TokenRevokeArgs, path: &Path) -> Result<ExitCode> {
    let mut file = existing(path)?;
    let entry = file.revoke(&args.id)?;
    file.write(path)?;
    eprintln!(
        "token {} ({}, {}) revoked in {}; a server using the file refuses it at its next request",
        entry.id,
        entry.scope,
        stores_text(&entry),
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The token file at `path`, which must exist.
fn existing(path: &Path) -> Result<TokenFile> {
    match TokenFile::read(path) {
        Err(e @ TokenError::Missing { .. }) => {
            bail!("{e} (`kgfuse token add ID --scope read|write|admin` creates it)")
        }
        other => Ok(other?),
    }
}

/// A token's stores for people: `all stores`, or the names.
fn stores_text(entry: &TokenEntry) -> String {
    if entry.stores.iter().any(|s| s == "*") {
        "all stores".to_owned()
    } else {
        entry.stores.join(", ")
    }
}
