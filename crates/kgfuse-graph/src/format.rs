use crate::GraphError;
use oxigraph::io::{JsonLdProfileSet, RdfFormat};
use std::path::Path;

/// Guesses an RDF format from a file extension:
/// `.ttl` `.nt` `.nq` `.trig` `.rdf` `.owl` `.xml` `.jsonld` `.json` `.n3`.
pub fn format_from_path(path: &Path) -> Result<RdfFormat, GraphError> {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let format = match extension.as_str() {
        "owl" => Some(RdfFormat::RdfXml),
        other => RdfFormat::from_extension(other),
    };
    format.ok_or_else(|| {
        GraphError::UnknownFormat(format!(
            "{}: cannot guess the RDF format from the extension (name one: turtle, ntriples, nquads, trig, rdfxml, jsonld)",
            path.display()
        ))
    })
}

/// Parses a format name as given to `--format`.
pub fn format_from_name(name: &str) -> Result<RdfFormat, GraphError> {
    Ok(match name.to_ascii_lowercase().as_str() {
        "turtle" | "ttl" => RdfFormat::Turtle,
        "ntriples" | "n-triples" | "nt" => RdfFormat::NTriples,
        "nquads" | "n-quads" | "nq" => RdfFormat::NQuads,
        "trig" => RdfFormat::TriG,
        "rdfxml" | "rdf/xml" | "rdf" | "xml" | "owl" => RdfFormat::RdfXml,
        "jsonld" | "json-ld" => RdfFormat::JsonLd {
            profile: JsonLdProfileSet::empty(),
        },
        "n3" => RdfFormat::N3,
        other => {
            return Err(GraphError::UnknownFormat(format!(
                "unknown RDF format '{other}'; expected turtle, ntriples, nquads, trig, rdfxml or jsonld"
            )));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guesses_formats() {
        assert_eq!(
            format_from_path(Path::new("a/b.ttl")).ok(),
            Some(RdfFormat::Turtle)
        );
        assert_eq!(
            format_from_path(Path::new("u.OWL")).ok(),
            Some(RdfFormat::RdfXml)
        );
        assert_eq!(
            format_from_path(Path::new("d.nq")).ok(),
            Some(RdfFormat::NQuads)
        );
        assert!(format_from_path(Path::new("notes.md")).is_err());
        assert_eq!(format_from_name("TriG").ok(), Some(RdfFormat::TriG));
        assert!(format_from_name("yaml").is_err());
    }
}
