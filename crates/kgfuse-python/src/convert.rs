//! kgfuse's results as plain Python values.
//!
//! Serializable results (the fused context, an answer, reports, stats) go
//! through their JSON form, so Python sees the field names of the CLI's
//! `--format json`. RDF terms become the Python value they stand for: an IRI
//! its string, a blank node `_:id`, a literal its value (`int`, `float`,
//! `decimal.Decimal`, `bool` for the XSD numeric and boolean types, the lexical
//! form for every other).

use kgfuse::model::vocab::xsd;
use kgfuse::model::{Literal, NamedNodeRef, Term};
use kgfuse::{LoadSummary, QueryOutcome};
use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use serde_json::Value;

/// A serializable result as dicts, lists and scalars.
pub(crate) fn serialized<'py, T: serde::Serialize>(
    py: Python<'py>,
    value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_value(value).map_err(|e| {
        pyo3::exceptions::PyRuntimeError::new_err(format!("cannot serialize a result: {e}"))
    })?;
    json_value(py, &json)
}

/// A JSON value as the Python value `json.loads` would give.
fn json_value<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    match value {
        Value::Null => Ok(py.None().into_bound(py)),
        Value::Bool(b) => b.into_bound_py_any(py),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_bound_py_any(py),
            (None, Some(u)) => u.into_bound_py_any(py),
            _ => n.as_f64().unwrap_or(f64::NAN).into_bound_py_any(py),
        },
        Value::String(s) => s.into_bound_py_any(py),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(json_value(py, item)?)?;
            }
            Ok(list.into_any())
        }
        Value::Object(fields) => {
            let dict = PyDict::new(py);
            for (key, item) in fields {
                dict.set_item(key, json_value(py, item)?)?;
            }
            Ok(dict.into_any())
        }
    }
}

/// A load's summary: `{"files": [{"path", "graph", "action", "quads"}], "quads",
/// "vectors": {...}}`.
pub(crate) fn load_summary<'py>(
    py: Python<'py>,
    summary: &LoadSummary,
) -> PyResult<Bound<'py, PyAny>> {
    let files = PyList::empty(py);
    for file in &summary.files {
        let entry = PyDict::new(py);
        entry.set_item("path", file.path.display().to_string())?;
        entry.set_item("graph", &file.graph)?;
        entry.set_item("action", file.action.as_str())?;
        entry.set_item("quads", file.quads)?;
        files.append(entry)?;
    }
    let dict = PyDict::new(py);
    dict.set_item("files", files)?;
    dict.set_item("quads", summary.quads)?;
    dict.set_item("vectors", serialized(py, &summary.vectors)?)?;
    Ok(dict.into_any())
}

/// A query's result: rows as dicts (None for an unbound variable), a bool for
/// ASK, `(subject, predicate, object)` tuples for CONSTRUCT and DESCRIBE.
pub(crate) fn query_outcome<'py>(
    py: Python<'py>,
    outcome: &QueryOutcome,
) -> PyResult<Bound<'py, PyAny>> {
    match outcome {
        QueryOutcome::Solutions { variables, rows } => {
            let list = PyList::empty(py);
            for row in rows {
                let dict = PyDict::new(py);
                for (variable, cell) in variables.iter().zip(row) {
                    let value = match cell {
                        Some(term) => term_value(py, term)?,
                        None => py.None().into_bound(py),
                    };
                    dict.set_item(variable, value)?;
                }
                list.append(dict)?;
            }
            Ok(list.into_any())
        }
        QueryOutcome::Boolean(answer) => answer.into_bound_py_any(py),
        QueryOutcome::Graph(triples) => {
            let list = PyList::empty(py);
            for triple in triples {
                let parts = [
                    term_value(py, &Term::from(triple.subject.clone()))?,
                    term_value(py, &Term::from(triple.predicate.clone()))?,
                    term_value(py, &triple.object)?,
                ];
                list.append(PyTuple::new(py, parts)?)?;
            }
            Ok(list.into_any())
        }
    }
}

/// The Python value an RDF term stands for.
fn term_value<'py>(py: Python<'py>, term: &Term) -> PyResult<Bound<'py, PyAny>> {
    match term {
        Term::NamedNode(node) => node.as_str().into_bound_py_any(py),
        Term::BlankNode(node) => node.to_string().into_bound_py_any(py),
        Term::Literal(literal) => literal_value(py, literal),
    }
}

/// XSD integer types, whose values become Python ints.
const XSD_INTEGERS: [NamedNodeRef<'static>; 13] = [
    xsd::INTEGER,
    xsd::INT,
    xsd::LONG,
    xsd::SHORT,
    xsd::BYTE,
    xsd::NON_NEGATIVE_INTEGER,
    xsd::POSITIVE_INTEGER,
    xsd::NON_POSITIVE_INTEGER,
    xsd::NEGATIVE_INTEGER,
    xsd::UNSIGNED_LONG,
    xsd::UNSIGNED_INT,
    xsd::UNSIGNED_SHORT,
    xsd::UNSIGNED_BYTE,
];

/// A literal's value: numbers and booleans typed, everything else its lexical
/// form (also a number whose lexical form is not valid for its type).
fn literal_value<'py>(py: Python<'py>, literal: &Literal) -> PyResult<Bound<'py, PyAny>> {
    let text = literal.value();
    let datatype = literal.datatype();
    let typed = if XSD_INTEGERS.contains(&datatype) {
        python_call(py, "builtins", "int", text)
    } else if datatype == xsd::DECIMAL {
        python_call(py, "decimal", "Decimal", text)
    } else if datatype == xsd::DOUBLE || datatype == xsd::FLOAT {
        text.trim()
            .parse::<f64>()
            .ok()
            .map(|f| f.into_bound_py_any(py))
    } else if datatype == xsd::BOOLEAN {
        match text.trim() {
            "true" | "1" => Some(true.into_bound_py_any(py)),
            "false" | "0" => Some(false.into_bound_py_any(py)),
            _ => None,
        }
    } else {
        None
    };
    typed.unwrap_or_else(|| text.into_bound_py_any(py))
}

/// `module.function(text)`, or None when Python refuses the text.
fn python_call<'py>(
    py: Python<'py>,
    module: &str,
    function: &str,
    text: &str,
) -> Option<PyResult<Bound<'py, PyAny>>> {
    let made = py
        .import(module)
        .and_then(|m| m.getattr(function))
        .and_then(|f| f.call1((text.trim(),)));
    made.ok().map(Ok)
}
