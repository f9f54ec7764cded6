//! Naming conventions of source code that both sides of the store read: code
//! ingest marks test files and private definitions by them, and retrieval ranks
//! a library's public API before its internals by the same rules.

/// Whether a module path segment or file stem marks test code: `test`, `tests`,
/// `testing`, `test_*` or `*_test`.
///
/// ```
/// use kgfuse_core::code::is_test_segment;
/// assert!(is_test_segment("tests") && is_test_segment("test_json"));
/// assert!(!is_test_segment("contest"));
/// ```
pub fn is_test_segment(segment: &str) -> bool {
    matches!(segment, "test" | "tests" | "testing")
        || segment.starts_with("test_")
        || segment.ends_with("_test")
}

/// Whether a definition's name makes it internal by Python's convention: a
/// leading underscore, dunder names (`__init__`) excepted.
///
/// ```
/// use kgfuse_core::code::is_private_name;
/// assert!(is_private_name("_helper") && !is_private_name("__init__"));
/// ```
pub fn is_private_name(name: &str) -> bool {
    name.starts_with('_') && !(name.starts_with("__") && name.ends_with("__"))
}

/// Whether a qualified name (`numpy.lib.function_base.percentile`,
/// `crate::module::function`) names an internal of its library rather than its
/// public API: its own name is private ([`is_private_name`]), or it is defined
/// in test code ([`is_test_segment`] on an enclosing segment). A private module
/// (`sklearn.cluster._kmeans.KMeans`) does not make its public definitions
/// internal: libraries re-export from such modules.
///
/// ```
/// use kgfuse_core::code::is_internal;
/// assert!(is_internal("pandas._config.config._get_single_key"));
/// assert!(is_internal("numpy.core.tests.test_scalarinherit.B"));
/// assert!(!is_internal("sklearn.cluster._kmeans.KMeans.__init__"));
/// ```
pub fn is_internal(qualified: &str) -> bool {
    let segments = segments(qualified);
    let Some((name, _)) = segments.split_last() else {
        return false;
    };
    is_private_name(name) || is_test_code(qualified)
}

/// Whether a qualified name is defined in test code: a segment enclosing it
/// marks test code ([`is_test_segment`]).
///
/// ```
/// use kgfuse_core::code::is_test_code;
/// assert!(is_test_code("toolz.tests.test_dicttoolz.CustomMapping.keys"));
/// assert!(!is_test_code("toolz.dicttoolz.valmap") && !is_test_code("tests"));
/// ```
pub fn is_test_code(qualified: &str) -> bool {
    let segments = segments(qualified);
    segments
        .split_last()
        .is_some_and(|(_, enclosing)| enclosing.iter().any(|s| is_test_segment(s)))
}

/// The segments of a Python (`a.b.c`) or Rust (`a::b::c`) qualified name.
fn segments(qualified: &str) -> Vec<&str> {
    qualified
        .split("::")
        .flat_map(|part| part.split('.'))
        .filter(|s| !s.is_empty())
        .collect()
}
