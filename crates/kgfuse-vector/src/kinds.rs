//! Which rows a search considers, by their `kind` column (the short name of a
//! node's most specific type: `Function`, `Case`, `owl:Class`, ...).

/// A filter over the `kind` column: the one thing searches filter on. Typed, so
/// the same filter runs as a LanceDB predicate and over the resident copy of a
/// small table, and no caller writes SQL.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum KindFilter<'a> {
    /// Every row.
    #[default]
    Any,
    /// Rows whose kind is one of these.
    OneOf(&'a [&'a str]),
    /// Rows whose kind starts with none of these prefixes (`"owl:"` leaves out
    /// every OWL term).
    NoPrefix(&'a [&'a str]),
}

impl KindFilter<'_> {
    /// Whether a row of this kind passes.
    pub fn admits(&self, kind: &str) -> bool {
        match self {
            Self::Any => true,
            Self::OneOf(kinds) => kinds.contains(&kind),
            Self::NoPrefix(prefixes) => !prefixes.iter().any(|p| kind.starts_with(p)),
        }
    }

    /// The same filter as a LanceDB (DataFusion SQL) predicate; `None` for
    /// [`KindFilter::Any`]. Every value is quoted as a string literal.
    pub(crate) fn sql(&self) -> Option<String> {
        match self {
            Self::Any => None,
            Self::OneOf(kinds) => Some(format!(
                "kind IN ({})",
                kinds
                    .iter()
                    .map(|k| quote(k))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            Self::NoPrefix(prefixes) => Some(
                prefixes
                    .iter()
                    .map(|p| format!("kind NOT LIKE {}", quote(&format!("{}%", escape_like(p)))))
                    .collect::<Vec<_>>()
                    .join(" AND "),
            ),
        }
    }

    /// The same filter as a predicate LanceDB's bitmap index on `kind` serves,
    /// given every kind the table holds: [`KindFilter::NoPrefix`] as
    /// `kind NOT IN (...)` over the held kinds it leaves out (no predicate when
    /// it leaves out none), where `NOT LIKE` made LanceDB test every row.
    pub(crate) fn indexed_sql(&self, held: &[String]) -> Option<String> {
        match self {
            Self::NoPrefix(_) => {
                let left_out: Vec<String> = held
                    .iter()
                    .filter(|kind| !self.admits(kind))
                    .map(|kind| quote(kind))
                    .collect();
                (!left_out.is_empty()).then(|| format!("kind NOT IN ({})", left_out.join(", ")))
            }
            _ => self.sql(),
        }
    }
}

/// An SQL string literal.
pub(crate) fn quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// `LIKE`'s wildcards taken literally (DataFusion's default escape is `\`).
fn escape_like(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_admit_what_their_sql_selects() {
        let any = KindFilter::Any;
        assert!(any.admits("Function"));
        assert_eq!(any.sql(), None);

        let one_of = KindFilter::OneOf(&["Function", "O'Brien"]);
        assert!(one_of.admits("Function") && !one_of.admits("Method"));
        assert_eq!(
            one_of.sql().as_deref(),
            Some("kind IN ('Function', 'O''Brien')")
        );

        let no_prefix = KindFilter::NoPrefix(&["owl:", "rdf:", "a_%"]);
        assert!(!no_prefix.admits("owl:Class") && !no_prefix.admits("rdf:Property"));
        assert!(no_prefix.admits("rdfs:Class") && no_prefix.admits("Function"));
        assert!(no_prefix.admits("ab") && !no_prefix.admits("a_%x"));
        assert_eq!(
            no_prefix.sql().as_deref(),
            Some("kind NOT LIKE 'owl:%' AND kind NOT LIKE 'rdf:%' AND kind NOT LIKE 'a\\_\\%%'")
        );
        let held: Vec<String> = [
            "Function",
            "owl:Class",
            "rdf:Property",
            "rdfs:Class",
            "O'wl:x",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            no_prefix.indexed_sql(&held).as_deref(),
            Some("kind NOT IN ('owl:Class', 'rdf:Property')")
        );
        assert_eq!(
            no_prefix.indexed_sql(&held[..1]),
            None,
            "nothing to leave out"
        );
        assert_eq!(one_of.indexed_sql(&held), one_of.sql());
        assert_eq!(any.indexed_sql(&held), None);
    }
}
