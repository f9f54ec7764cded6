//! Who may use a server (kgfuse-access): a request path, a token file and an
//! `Authorization` header, split at the first two NUL bytes.
//!
//! Checked besides "no panic": a path names a store only as `/s/NAME/rest` and
//! gives back exactly its parts; a bearer token is a non-empty run without
//! whitespace taken from the header; a parsed file's tokens verify only
//! themselves, and `allows` never grants more than the entry's scope and stores.
#![no_main]

use kgfuse_access::route::{StoreRoute, is_store_name, store_route};
use kgfuse_access::tokens::{Scope, TokenFile, bearer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\0');
    let (path, file, header) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );

    match store_route(path) {
        StoreRoute::Named { name, rest } => {
            assert_eq!(format!("/s/{name}{rest}"), path);
            assert!(!name.contains('/'));
            assert!(rest.is_empty() || rest.starts_with('/'));
            if is_store_name(name) {
                assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'));
            }
        }
        StoreRoute::Root(rest) => {
            assert_eq!(rest, path);
            assert!(!path.starts_with("/s/"));
        }
    }

    let presented = bearer(header);
    if let Some(token) = presented {
        assert!(!token.is_empty() && !token.contains(char::is_whitespace));
        assert!(header.contains(token));
    }

    if let Ok(file) = TokenFile::parse(file) {
        let store = match store_route(path) {
            StoreRoute::Named { name, .. } => name,
            StoreRoute::Root(_) => "default",
        };
        for entry in file.entries() {
            for scope in [Scope::Read, Scope::Write, Scope::Admin] {
                if entry.allows(store, scope) {
                    assert!(entry.scope >= scope);
                    assert!(entry.stores.iter().any(|s| s == "*" || s == store));
                }
            }
        }
        if let Some(token) = presented
            && let Some(entry) = file.verify(token)
        {
            assert_eq!(hex_digest(token), entry.sha256);
        }
    }
});

fn hex_digest(token: &str) -> String {
    kgfuse_access::tokens::digest(token)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
