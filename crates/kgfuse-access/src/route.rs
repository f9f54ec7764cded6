//! How a request path names a store: `/s/NAME/rest`, the rest being the
//! endpoint within it. Raw paths: percent-encoding is not decoded, so `/s/a%2fb/`
//! names the store `a%2fb`, which is no store name.

/// Where a request path points: a named store's endpoint, or a path of the
/// server itself (the single store's endpoints, `/health`, the console).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreRoute<'a> {
    /// `/s/NAME` followed by `rest` (empty, or starting with `/`).
    Named {
        /// The store's name as written (checked by [`is_store_name`] later).
        name: &'a str,
        /// The endpoint path within the store.
        rest: &'a str,
    },
    /// Any other path.
    Root(&'a str),
}

/// Splits a raw request path (percent-encoding untouched) into a store and the
/// endpoint path within it.
pub fn store_route(path: &str) -> StoreRoute<'_> {
    let Some(after) = path.strip_prefix("/s/") else {
        return StoreRoute::Root(path);
    };
    match after.find('/') {
        Some(slash) => StoreRoute::Named {
            name: &after[..slash],
            rest: &after[slash..],
        },
        None => StoreRoute::Named {
            name: after,
            rest: "",
        },
    }
}

/// A store name: 1 to 64 ASCII letters, digits, `_` or `-`.
pub fn is_store_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_into_store_and_endpoint() {
        assert_eq!(
            store_route("/s/docs/sparql"),
            StoreRoute::Named {
                name: "docs",
                rest: "/sparql"
            }
        );
        assert_eq!(
            store_route("/s/docs"),
            StoreRoute::Named {
                name: "docs",
                rest: ""
            }
        );
        assert_eq!(
            store_route("/s/docs/../code/sparql"),
            StoreRoute::Named {
                name: "docs",
                rest: "/../code/sparql"
            }
        );
        assert_eq!(store_route("/sparql"), StoreRoute::Root("/sparql"));
        assert_eq!(
            store_route("//s/docs/sparql"),
            StoreRoute::Root("//s/docs/sparql")
        );
        assert_eq!(store_route("/s"), StoreRoute::Root("/s"));
        assert!(is_store_name("team-a_2"));
        assert!(!is_store_name(""));
        assert!(!is_store_name("do%63s"));
        assert!(!is_store_name(".."));
        assert!(!is_store_name(&"x".repeat(65)));
    }
}
