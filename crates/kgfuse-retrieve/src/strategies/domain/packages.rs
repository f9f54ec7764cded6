//! Every package as DomAgent's classifier sees it (name, description, centroid,
//! the description's vector), kept on disk in `<store>/domain/packages`
//! ([`crate::kept`]). A store of 10,000 packages spent a fresh process 0.9 s
//! reading them from the graph (each centroid a 3 KB literal) and 0.4 s reading
//! their vector rows (1,000,000 functions, release, warm page cache; 54 s with
//! a cold one); the file is read in milliseconds. After writes, the packages
//! among the nodes they changed are read again: a package's name, description,
//! centroid and type are triples of which it is the subject, and its vector row
//! is written with its text.

use crate::RetrieveError;
use crate::functions::iri_terms;
use crate::kept::{
    self, FileError, Found, KeptFile, Origin, Reader, put_count, put_floats, put_text,
};
use crate::strategies::domain::case_base::decode_vector;
use kgfuse_core::iri::local_name;
use kgfuse_core::vocab::{kg, w3c};
use kgfuse_lexicon::sparql::{self, cell_text};
use kgfuse_store::{Store, StoreError, WholeStore};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Packages bound per query when reading changed ones.
const PACKAGES_PER_QUERY: usize = 1_000;

/// A package as the classifier sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct PackageInfo {
    /// Its label, else its IRI's local name.
    pub(super) name: String,
    /// Its `rdfs:comment`, if any.
    pub(super) description: Option<String>,
    /// Written by the case base; absent before `kgfuse index cases`.
    pub(super) centroid: Option<Vec<f32>>,
    /// The vector row of its text, when it has one.
    pub(super) vector: Option<Vec<f32>>,
}

/// Every package by IRI, as the store keeps them between writes.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Packages(pub(super) BTreeMap<String, PackageInfo>);

impl WholeStore for Packages {}

impl std::ops::Deref for Packages {
    type Target = BTreeMap<String, PackageInfo>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// The store's packages and how this process came by them: the file as it is
/// when in step with the store, else brought in step (and written back).
pub(super) async fn kept(store: &Store) -> Result<(Packages, Origin), RetrieveError> {
    let started = std::time::Instant::now();
    let path = file(store);
    let (found, version) = kept::look::<Packages>(store, &path)?;
    let (packages, origin) = match found {
        Found::InStep(packages) => (packages, Origin::Read),
        Found::Behind(packages, nodes) => (update(store, packages, &nodes).await?, Origin::Updated),
        Found::Nothing => (read(store, None).await?, Origin::Built),
    };
    if origin != Origin::Read {
        kept::keep(&path, version, &packages);
    }
    tracing::info!(
        ?origin,
        packages = packages.len(),
        elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "domain: the packages"
    );
    Ok((packages, origin))
}

/// The file's path in the store's directory.
fn file(store: &Store) -> PathBuf {
    kept::path(store, "domain", "packages")
}

/// `packages` with those among `nodes` read again (and those no longer
/// packages gone).
async fn update(
    store: &Store,
    mut packages: Packages,
    nodes: &BTreeSet<String>,
) -> Result<Packages, RetrieveError> {
    let nodes: Vec<&String> = nodes.iter().collect();
    for chunk in nodes.chunks(PACKAGES_PER_QUERY) {
        for node in chunk {
            packages.0.remove(node.as_str());
        }
        packages.0.extend(read(store, Some(chunk)).await?.0);
    }
    Ok(packages)
}

/// The packages of the whole store, or those among `among`, with their vectors.
async fn read(store: &Store, among: Option<&[&String]>) -> Result<Packages, RetrieveError> {
    let bound = match among {
        Some(iris) => sparql::values("package", &iri_terms(iris)?),
        None => String::new(),
    };
    let solutions = sparql::run_whole_store(
        store,
        format!(
            "SELECT ?package ?name ?comment ?centroid WHERE {{ {bound} ?package a <{package}> . \
               OPTIONAL {{ ?package <{label}> ?name }} OPTIONAL {{ ?package <{comment}> ?comment }} \
               OPTIONAL {{ ?package <{centroid}> ?centroid }} }}",
            package = kg::PACKAGE,
            label = w3c::RDFS_LABEL,
            comment = w3c::RDFS_COMMENT,
            centroid = kg::CENTROID,
        ),
    )?;
    let mut out: BTreeMap<String, PackageInfo> = BTreeMap::new();
    for row in &solutions.rows {
        let Some(iri) = cell_text(row.first()) else {
            continue;
        };
        let entry = out.entry(iri.clone()).or_insert_with(|| PackageInfo {
            name: local_name(&iri).to_owned(),
            ..PackageInfo::default()
        });
        if let Some(name) = cell_text(row.get(1)) {
            entry.name = name;
        }
        if entry.description.is_none() {
            entry.description = cell_text(row.get(2));
        }
        if entry.centroid.is_none() {
            entry.centroid = cell_text(row.get(3)).and_then(|c| decode_vector(&c));
        }
    }
    let iris: Vec<String> = out.keys().cloned().collect();
    let vectors = store
        .vectors()
        .vectors_of(&iris)
        .await
        .map_err(StoreError::from)?;
    for (iri, vector) in vectors {
        if let Some(package) = out.get_mut(&iri) {
            package.vector = Some(vector);
        }
    }
    Ok(Packages(out))
}

/// Whether the file, when it says it is in step with the store, holds what
/// the store gives (`kgfuse check`): `None` when absent or behind, else the
/// IRIs of the packages that differ (missing, extra or changed).
pub async fn check(store: &Store) -> Result<Option<Vec<String>>, RetrieveError> {
    let Some(kept) = kept::in_step::<Packages>(store, &file(store))? else {
        return Ok(None);
    };
    let whole = read(store, None).await?;
    let iris: BTreeSet<&String> = kept.keys().chain(whole.keys()).collect();
    Ok(Some(
        iris.into_iter()
            .filter(|iri| kept.get(*iri) != whole.get(*iri))
            .cloned()
            .collect(),
    ))
}

/// Writes the file anew from the whole store (`kgfuse check --repair`);
/// returns how many packages it holds.
pub async fn repair(store: &Store) -> Result<usize, RetrieveError> {
    let packages = read(store, None).await?;
    kept::rewrite(store, &file(store), &packages)?;
    Ok(packages.len())
}

impl KeptFile for Packages {
    const WHAT: &'static str = "the packages";
    const MAGIC: &'static [u8] = b"kgfuse domain packages\n";
    const FORMAT: u32 = 1;

    /// The count, then each package: IRI, name, description (empty for
    /// none), centroid and vector (no numbers for none).
    fn encode(&self, out: &mut Vec<u8>) {
        put_count(out, self.len());
        for (iri, package) in self.iter() {
            put_text(out, iri);
            put_text(out, &package.name);
            put_text(out, package.description.as_deref().unwrap_or_default());
            put_floats(out, package.centroid.as_deref().unwrap_or_default());
            put_floats(out, package.vector.as_deref().unwrap_or_default());
        }
    }

    fn decode(input: &mut Reader<'_>) -> Result<Self, FileError> {
        let present = |values: Vec<f32>| Some(values).filter(|v| !v.is_empty());
        let mut out = BTreeMap::new();
        for _ in 0..input.count()? {
            let iri = input.text()?.to_owned();
            let package = PackageInfo {
                name: input.text()?.to_owned(),
                description: Some(input.text()?.to_owned()).filter(|d| !d.is_empty()),
                centroid: present(input.floats()?),
                vector: present(input.floats()?),
            };
            out.insert(iri, package);
        }
        Ok(Self(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFIXES: &str = "@prefix kg: <https://w3id.org/kgfuse/ontology#> .\n\
                            @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\
                            @prefix ex: <http://example.org/> .\n";

    /// Two packages, one described, one function in each.
    const CODE: &str = "ex:ledger a kg:Package ; rdfs:label \"ledger\" ; \
          rdfs:comment \"Double-entry bookkeeping: accounts, journals and balances.\" .\n\
        ex:mailer a kg:Package .\n\
        ex:post a kg:Function ; kg:name \"post\" ; kg:inPackage ex:ledger .\n\
        ex:send a kg:Function ; kg:name \"send\" ; kg:inPackage ex:mailer .\n";

    async fn write_turtle(store: &Store, dir: &std::path::Path, name: &str, triples: &str) {
        let turtle = format!("{PREFIXES}{triples}");
        kgfuse_lexicon::testing::load_turtle(store, dir, name, &turtle).await;
    }

    /// Read from the whole store once, then from the file; after each write
    /// (a description changed, a package added, a file replaced so that a
    /// package goes) the packages brought in step from the changed nodes are
    /// those read from the whole store, vectors included.
    #[tokio::test]
    async fn brought_in_step_by_the_written_nodes_as_read_from_the_whole_store() {
        let (dir, store) = kgfuse_lexicon::testing::with_turtle(&format!("{PREFIXES}{CODE}")).await;
        let (first, origin) = kept(&store).await.expect("kept");
        assert_eq!(origin, Origin::Built);
        assert_eq!(first.len(), 2);
        assert!(
            first["http://example.org/ledger"].vector.is_some(),
            "described"
        );
        assert_eq!(first["http://example.org/mailer"].name, "mailer");
        assert_eq!(kept(&store).await.expect("kept"), (first, Origin::Read));
        let writes = [
            (
                "more.ttl",
                "ex:mailer rdfs:comment \"Sends invoices by e-mail.\" .\n\
                 ex:audit a kg:Package ; rdfs:label \"audit\" .",
            ),
            ("more.ttl", "ex:mailer rdfs:comment \"Sends reminders.\" ."),
        ];
        for (i, (name, triples)) in writes.into_iter().enumerate() {
            write_turtle(&store, dir.path(), name, triples).await;
            let (updated, origin) = kept(&store).await.expect("kept");
            assert_eq!(origin, Origin::Updated, "write {i}");
            assert_eq!(
                updated,
                read(&store, None).await.expect("whole"),
                "write {i}"
            );
        }
        let (last, _) = kept(&store).await.expect("kept");
        assert!(
            !last.contains_key("http://example.org/audit"),
            "its file was replaced"
        );
        assert_eq!(
            last["http://example.org/mailer"].description.as_deref(),
            Some("Sends reminders.")
        );
    }

    /// `check` names a package the file holds wrongly and is silent on a file
    /// in step; `repair` writes it anew.
    #[tokio::test]
    async fn check_names_a_package_that_disagrees_and_repair_mends_it() {
        let (_dir, store) =
            kgfuse_lexicon::testing::with_turtle(&format!("{PREFIXES}{CODE}")).await;
        assert_eq!(check(&store).await.expect("check"), None, "no file yet");
        let (whole, _) = kept(&store).await.expect("kept");
        assert_eq!(check(&store).await.expect("check"), Some(Vec::new()));
        let mut damaged = whole.clone();
        if let Some(ledger) = damaged.0.get_mut("http://example.org/ledger") {
            ledger.centroid = Some(vec![1.0, 0.0]);
        }
        let version = store.content_version().expect("version").expect("local");
        kept::write(&file(&store), version, &damaged).expect("write");
        assert_eq!(
            check(&store).await.expect("check"),
            Some(vec!["http://example.org/ledger".to_owned()])
        );
        assert_eq!(repair(&store).await.expect("repair"), 2);
        assert_eq!(check(&store).await.expect("check"), Some(Vec::new()));
    }
}
