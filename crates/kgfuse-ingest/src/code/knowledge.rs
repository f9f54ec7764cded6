//! External domain knowledge attached to functions (SGKR inserts documentation into
//! function nodes the same way).
//!
//! TOML form:
//! ```toml
//! [[function]]
//! name = "payment_fees.fees.compute_fee"   # qualified name
//! knowledge = "fee = fixed_amount + rate * transaction_value / 10000"
//! inputs = ["fee rule", "transaction value"]  # optional input tags
//! outputs = ["fee"]                           # optional output tags
//!
//! [[tag]]
//! name = "transaction value"                  # a tag name, folded like the others
//! aliases = ["transaction", "amount"]         # other words for it in questions
//! ```
//! Turtle form: any subject with `kgfuse:qualifiedName "..."` plus `kgfuse:knowledge`,
//! and tag names as literals of `kgfuse:consumes` / `kgfuse:produces`.

use crate::IngestError;
use kgfuse_core::vocab::kg;
use oxrdf::Term;
use std::collections::BTreeMap;
use std::path::Path;

/// Knowledge about one function.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub struct FunctionKnowledge {
    /// Qualified name of the function.
    pub name: String,
    /// Domain rules and documentation.
    #[serde(default)]
    pub knowledge: Vec<String>,
    /// Semantic input tags.
    #[serde(default)]
    pub inputs: Vec<String>,
    /// Semantic output tags.
    #[serde(default)]
    pub outputs: Vec<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlFile {
    #[serde(default)]
    function: Vec<TomlEntry>,
    #[serde(default)]
    tag: Vec<TomlTag>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlTag {
    name: String,
    #[serde(default)]
    aliases: Vec<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlEntry {
    name: String,
    #[serde(default)]
    knowledge: Option<String>,
    #[serde(default)]
    inputs: Vec<String>,
    #[serde(default)]
    outputs: Vec<String>,
}

/// Knowledge by qualified function name.
pub type KnowledgeMap = BTreeMap<String, FunctionKnowledge>;

/// Everything a knowledge file says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Knowledge {
    /// Knowledge by qualified function name.
    pub functions: KnowledgeMap,
    /// Other names of semantic tags, by tag name as written in the file
    /// (`transaction value` -> `transaction`, `amount`); written as `skos:altLabel`
    /// so question words that are not the tag's label still find it.
    pub tag_aliases: BTreeMap<String, Vec<String>>,
}

/// Reads a knowledge file (`.toml`, or `.ttl` Turtle).
pub fn read(path: &Path) -> Result<Knowledge, IngestError> {
    let text = std::fs::read_to_string(path).map_err(|source| IngestError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let mut knowledge = Knowledge::default();
    let map = &mut knowledge.functions;
    match path.extension().and_then(|e| e.to_str()) {
        Some("toml") => {
            let file: TomlFile = toml::from_str(&text).map_err(|e| {
                let line = e
                    .span()
                    .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
                IngestError::Invalid(match line {
                    Some(line) => format!("{}:{line}: {}", path.display(), e.message()),
                    None => format!("{}: {}", path.display(), e.message()),
                })
            })?;
            for tag in file.tag {
                knowledge
                    .tag_aliases
                    .entry(tag.name)
                    .or_default()
                    .extend(tag.aliases);
            }
            for entry in file.function {
                merge(
                    map,
                    FunctionKnowledge {
                        name: entry.name,
                        knowledge: entry.knowledge.into_iter().collect(),
                        inputs: entry.inputs,
                        outputs: entry.outputs,
                    },
                );
            }
        }
        Some("ttl") => read_turtle(path, &text, map)?,
        _ => {
            return Err(IngestError::Invalid(format!(
                "{}: a knowledge file must be .toml or .ttl",
                path.display()
            )));
        }
    }
    Ok(knowledge)
}

fn read_turtle(path: &Path, text: &str, map: &mut KnowledgeMap) -> Result<(), IngestError> {
    let mut by_subject: BTreeMap<String, FunctionKnowledge> = BTreeMap::new();
    for triple in oxttl::TurtleParser::new().for_slice(text.as_bytes()) {
        let triple = triple.map_err(|e| {
            let line = e.location().start.line + 1;
            IngestError::Invalid(format!("{}:{line}: {}", path.display(), e.message()))
        })?;
        let Term::Literal(literal) = &triple.object else {
            continue;
        };
        let value = literal.value().to_owned();
        let entry = by_subject.entry(triple.subject.to_string()).or_default();
        match triple.predicate.as_str() {
            p if p == kg::QUALIFIED_NAME => entry.name = value,
            p if p == kg::KNOWLEDGE => entry.knowledge.push(value),
            p if p == kg::CONSUMES => entry.inputs.push(value),
            p if p == kg::PRODUCES => entry.outputs.push(value),
            _ => {}
        }
    }
    for (subject, entry) in by_subject {
        if entry.name.is_empty() {
            if !entry.knowledge.is_empty() {
                return Err(IngestError::Invalid(format!(
                    "{}: {subject} has kgfuse:knowledge but no kgfuse:qualifiedName naming its function",
                    path.display()
                )));
            }
            continue;
        }
        merge(map, entry);
    }
    Ok(())
}

/// Adds an entry, appending to what earlier entries said about the same function.
fn merge(map: &mut KnowledgeMap, entry: FunctionKnowledge) {
    let slot = map
        .entry(entry.name.clone())
        .or_insert_with(|| FunctionKnowledge {
            name: entry.name.clone(),
            ..FunctionKnowledge::default()
        });
    slot.knowledge.extend(entry.knowledge);
    slot.inputs.extend(entry.inputs);
    slot.outputs.extend(entry.outputs);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_toml_and_turtle() {
        let dir = tempfile::tempdir().expect("tempdir");
        let toml_path = dir.path().join("k.toml");
        std::fs::write(
            &toml_path,
            "[[function]]\nname = \"p.m.f\"\nknowledge = \"rule one\"\ninputs = [\"merchant\"]\n",
        )
        .expect("write");
        let map = read(&toml_path).expect("toml").functions;
        assert_eq!(map["p.m.f"].knowledge, ["rule one"]);
        assert_eq!(map["p.m.f"].inputs, ["merchant"]);

        std::fs::write(
            &toml_path,
            "[[tag]]\nname = \"transaction value\"\naliases = [\"amount\", \"euros\"]\n",
        )
        .expect("write");
        let aliases = read(&toml_path).expect("toml").tag_aliases;
        assert_eq!(aliases["transaction value"], ["amount", "euros"]);

        let ttl_path = dir.path().join("k.ttl");
        std::fs::write(
            &ttl_path,
            "@prefix kgfuse: <https://w3id.org/kgfuse/ontology#> .\n[] kgfuse:qualifiedName \"p.m.g\" ; kgfuse:knowledge \"rule two\" ; kgfuse:produces \"fee\" .\n",
        )
        .expect("write");
        let map = read(&ttl_path).expect("ttl").functions;
        assert_eq!(map["p.m.g"].knowledge, ["rule two"]);
        assert_eq!(map["p.m.g"].outputs, ["fee"]);

        std::fs::write(
            &toml_path,
            "[[function]]\nname = \"p\"\nknowlege = \"typo\"\n",
        )
        .expect("write");
        let err = read(&toml_path).expect_err("unknown key").to_string();
        assert!(err.contains("k.toml:3"), "{err}");
    }
}
