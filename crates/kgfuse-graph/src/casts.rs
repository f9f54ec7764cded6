//! XSD's derived integer casts (`xsd:int(?x)`, `xsd:unsignedByte(?x)`, …) as
//! custom functions of every query kgfuse evaluates.
//!
//! SPARQL 1.1 requires only the constructor functions of the primitive types
//! (`xsd:integer`, `xsd:decimal`, …), which is all Oxigraph implements; queries
//! written for Virtuoso or Tentris also cast to the derived integer types, and
//! were refused as calls to an unknown function. Each cast follows XPath F&O's
//! casting to derived types: the argument is cast as to `xsd:integer`, then
//! checked against the type's value range. A value that cannot be cast or is out
//! of range gives no result (an unbound variable, a FILTER that fails), never a
//! panic.
//!
//! The value space is that of Oxigraph's `xsd:integer` (a 64-bit integer), so
//! `xsd:unsignedLong` and the unbounded types reach 2^63 - 1, as `xsd:integer`
//! itself does here.

use oxigraph::model::vocab::xsd;
use oxigraph::model::{Literal, NamedNodeRef, Term};
use oxigraph::sparql::SparqlEvaluator;
use oxsdatatypes::{Boolean, Decimal, Double, Float, Integer};
use std::str::FromStr;

/// A derived integer type: its IRI and its value range (both ends included).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DerivedInteger {
    /// The datatype IRI, also the name of its cast function.
    pub(crate) iri: NamedNodeRef<'static>,
    /// The least value of the type.
    pub(crate) min: i64,
    /// The greatest value of the type (capped at `i64::MAX`).
    pub(crate) max: i64,
}

/// The derived integer types kgfuse casts to.
pub(crate) const DERIVED_INTEGERS: [DerivedInteger; 12] = [
    derived(xsd::LONG, i64::MIN, i64::MAX),
    derived(xsd::INT, i32::MIN as i64, i32::MAX as i64),
    derived(xsd::SHORT, i16::MIN as i64, i16::MAX as i64),
    derived(xsd::BYTE, i8::MIN as i64, i8::MAX as i64),
    derived(xsd::NON_NEGATIVE_INTEGER, 0, i64::MAX),
    derived(xsd::POSITIVE_INTEGER, 1, i64::MAX),
    derived(xsd::NON_POSITIVE_INTEGER, i64::MIN, 0),
    derived(xsd::NEGATIVE_INTEGER, i64::MIN, -1),
    derived(xsd::UNSIGNED_LONG, 0, i64::MAX),
    derived(xsd::UNSIGNED_INT, 0, u32::MAX as i64),
    derived(xsd::UNSIGNED_SHORT, 0, u16::MAX as i64),
    derived(xsd::UNSIGNED_BYTE, 0, u8::MAX as i64),
];

const fn derived(iri: NamedNodeRef<'static>, min: i64, max: i64) -> DerivedInteger {
    DerivedInteger { iri, min, max }
}

/// `evaluator` with the derived integer casts registered as custom functions.
pub(crate) fn with_derived_casts(evaluator: SparqlEvaluator) -> SparqlEvaluator {
    DERIVED_INTEGERS
        .into_iter()
        .fold(evaluator, |evaluator, target| {
            evaluator.with_custom_function(target.iri.into_owned(), move |args| cast(args, target))
        })
}

/// The cast of a one-argument call to `target`: a literal of that datatype in its
/// canonical form, or `None` when the argument does not cast or is out of range.
pub(crate) fn cast(args: &[Term], target: DerivedInteger) -> Option<Term> {
    let [Term::Literal(argument)] = args else {
        return None;
    };
    let value = i64::from(as_integer(argument)?);
    (target.min..=target.max)
        .contains(&value)
        .then(|| Literal::new_typed_literal(value.to_string(), target.iri).into())
}

/// A literal cast as to `xsd:integer` (XPath F&O 19.1): numbers truncated toward
/// zero (NaN and the infinities do not cast), booleans to 1 or 0, strings and
/// integer-typed literals through their lexical form, whitespace collapsed.
fn as_integer(literal: &Literal) -> Option<Integer> {
    if literal.language().is_some() {
        return None;
    }
    let lexical = collapse(literal.value());
    let datatype = literal.datatype();
    if datatype == xsd::STRING
        || datatype == xsd::INTEGER
        || DERIVED_INTEGERS.iter().any(|t| t.iri == datatype)
    {
        Integer::from_str(lexical).ok()
    } else if datatype == xsd::DECIMAL {
        Integer::try_from(Decimal::from_str(lexical).ok()?).ok()
    } else if datatype == xsd::DOUBLE {
        Integer::try_from(Double::from_str(lexical).ok()?).ok()
    } else if datatype == xsd::FLOAT {
        Integer::try_from(Float::from_str(lexical).ok()?).ok()
    } else if datatype == xsd::BOOLEAN {
        Some(Boolean::from_str(lexical).ok()?.into())
    } else {
        None
    }
}

/// The lexical form without XML whitespace around it (XSD's `collapse` facet,
/// which every numeric and boolean type has; inner whitespace stays and fails).
fn collapse(lexical: &str) -> &str {
    lexical.trim_matches([' ', '\t', '\n', '\r'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(iri: NamedNodeRef<'_>) -> DerivedInteger {
        DERIVED_INTEGERS
            .into_iter()
            .find(|t| t.iri == iri)
            .expect("a derived type")
    }

    /// The cast of `argument` to `to`, as "lexical" (the datatype checked).
    fn cast_to(to: NamedNodeRef<'_>, argument: Literal) -> Option<String> {
        match cast(&[argument.into()], target(to))? {
            Term::Literal(literal) => {
                assert_eq!(literal.datatype(), to, "{literal}");
                Some(literal.value().to_owned())
            }
            other => panic!("not a literal: {other}"),
        }
    }

    fn string(lexical: &str) -> Literal {
        Literal::new_simple_literal(lexical)
    }

    fn typed(lexical: &str, datatype: NamedNodeRef<'_>) -> Literal {
        Literal::new_typed_literal(lexical, datatype)
    }

    #[test]
    fn each_type_takes_its_bounds_and_refuses_one_past_them() {
        // (type, an in-range value, least, greatest, below the least, above the greatest)
        let table = [
            (
                xsd::LONG,
                "42",
                "-9223372036854775808",
                "9223372036854775807",
                Some("-9223372036854775809"),
                Some("9223372036854775808"),
            ),
            (
                xsd::INT,
                "-42",
                "-2147483648",
                "2147483647",
                Some("-2147483649"),
                Some("2147483648"),
            ),
            (
                xsd::SHORT,
                "1000",
                "-32768",
                "32767",
                Some("-32769"),
                Some("32768"),
            ),
            (xsd::BYTE, "-7", "-128", "127", Some("-129"), Some("128")),
            (
                xsd::NON_NEGATIVE_INTEGER,
                "12",
                "0",
                "9223372036854775807",
                Some("-1"),
                None,
            ),
            (
                xsd::POSITIVE_INTEGER,
                "12",
                "1",
                "9223372036854775807",
                Some("0"),
                None,
            ),
            (
                xsd::NON_POSITIVE_INTEGER,
                "-12",
                "-9223372036854775808",
                "0",
                None,
                Some("1"),
            ),
            (
                xsd::NEGATIVE_INTEGER,
                "-12",
                "-9223372036854775808",
                "-1",
                None,
                Some("0"),
            ),
            (
                xsd::UNSIGNED_LONG,
                "12",
                "0",
                "9223372036854775807",
                Some("-1"),
                None,
            ),
            (
                xsd::UNSIGNED_INT,
                "70000",
                "0",
                "4294967295",
                Some("-1"),
                Some("4294967296"),
            ),
            (
                xsd::UNSIGNED_SHORT,
                "300",
                "0",
                "65535",
                Some("-1"),
                Some("65536"),
            ),
            (
                xsd::UNSIGNED_BYTE,
                "200",
                "0",
                "255",
                Some("-1"),
                Some("256"),
            ),
        ];
        for (to, inside, least, greatest, below, above) in table {
            for value in [inside, least, greatest] {
                assert_eq!(
                    cast_to(to, typed(value, xsd::INTEGER)).as_deref(),
                    Some(value),
                    "{to}({value})"
                );
                assert_eq!(
                    cast_to(to, string(value)).as_deref(),
                    Some(value),
                    "{to}(\"{value}\")"
                );
            }
            for value in [below, above].into_iter().flatten() {
                assert_eq!(cast_to(to, string(value)), None, "{to}(\"{value}\")");
                assert_eq!(
                    cast_to(to, typed(value, xsd::DECIMAL)),
                    None,
                    "{to}({value} as a decimal)"
                );
            }
        }
        // Oxigraph's xsd:integer is 64 bits: past it nothing casts, as with xsd:integer.
        assert_eq!(
            cast_to(xsd::UNSIGNED_LONG, string("18446744073709551615")),
            None
        );
    }

    #[test]
    fn strings_are_trimmed_and_parsed_as_integers() {
        assert_eq!(cast_to(xsd::INT, string(" \t12\n ")).as_deref(), Some("12"));
        assert_eq!(cast_to(xsd::INT, string("007")).as_deref(), Some("7"));
        assert_eq!(cast_to(xsd::INT, string("+5")).as_deref(), Some("5"));
        assert_eq!(cast_to(xsd::INT, string("-0")).as_deref(), Some("0"));
        for not_an_integer in ["x", "", " ", "3.9", "1e3", "1 2", "0x10", "++1", "12abc"] {
            assert_eq!(
                cast_to(xsd::INT, string(not_an_integer)),
                None,
                "{not_an_integer:?}"
            );
        }
        // A language-tagged string is not a string to cast (XPath: xs:string only).
        let tagged = Literal::new_language_tagged_literal("12", "en").expect("tag");
        assert_eq!(cast_to(xsd::INT, tagged), None);
    }

    #[test]
    fn numbers_are_truncated_toward_zero() {
        assert_eq!(
            cast_to(xsd::INT, typed("3.9", xsd::DECIMAL)).as_deref(),
            Some("3")
        );
        assert_eq!(
            cast_to(xsd::INT, typed("-3.9", xsd::DECIMAL)).as_deref(),
            Some("-3")
        );
        assert_eq!(
            cast_to(xsd::BYTE, typed(" 127.99 ", xsd::DECIMAL)).as_deref(),
            Some("127")
        );
        assert_eq!(
            cast_to(xsd::NEGATIVE_INTEGER, typed("-0.5", xsd::DECIMAL)),
            None,
            "-0.5 truncates to 0, which is not negative"
        );
        assert_eq!(
            cast_to(xsd::SHORT, typed("-2.5E2", xsd::DOUBLE)).as_deref(),
            Some("-250")
        );
        assert_eq!(
            cast_to(xsd::UNSIGNED_BYTE, typed("255.5", xsd::FLOAT)).as_deref(),
            Some("255")
        );
        for special in ["NaN", "INF", "-INF"] {
            assert_eq!(cast_to(xsd::LONG, typed(special, xsd::DOUBLE)), None);
            assert_eq!(cast_to(xsd::LONG, typed(special, xsd::FLOAT)), None);
        }
        assert_eq!(cast_to(xsd::LONG, typed("1e30", xsd::DOUBLE)), None);
        assert_eq!(cast_to(xsd::INT, typed("abc", xsd::DECIMAL)), None);
    }

    #[test]
    fn derived_and_boolean_literals_cast() {
        assert_eq!(
            cast_to(xsd::INT, typed("007", xsd::INT)).as_deref(),
            Some("7")
        );
        assert_eq!(
            cast_to(xsd::UNSIGNED_BYTE, typed("200", xsd::SHORT)).as_deref(),
            Some("200")
        );
        assert_eq!(cast_to(xsd::BYTE, typed("200", xsd::SHORT)), None);
        for (lexical, value) in [("true", "1"), ("false", "0"), ("1", "1"), ("0", "0")] {
            assert_eq!(
                cast_to(xsd::UNSIGNED_BYTE, typed(lexical, xsd::BOOLEAN)).as_deref(),
                Some(value),
                "{lexical}"
            );
        }
        assert_eq!(cast_to(xsd::POSITIVE_INTEGER, Literal::from(false)), None);
        assert_eq!(cast_to(xsd::INT, typed("yes", xsd::BOOLEAN)), None);
    }

    #[test]
    fn what_is_not_a_castable_literal_gives_nothing() {
        let to = target(xsd::INT);
        let iri = oxigraph::model::NamedNode::new("urn:x").expect("iri");
        assert_eq!(cast(&[iri.into()], to), None);
        assert_eq!(
            cast(&[oxigraph::model::BlankNode::default().into()], to),
            None
        );
        assert_eq!(
            cast(&[typed("2024-01-01T00:00:00Z", xsd::DATE_TIME).into()], to),
            None
        );
        assert_eq!(cast(&[], to), None, "no argument");
        let two = [Literal::from(1).into(), Literal::from(2).into()];
        assert_eq!(cast(&two, to), None, "two arguments");
    }
}
