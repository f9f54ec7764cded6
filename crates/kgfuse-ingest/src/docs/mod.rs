//! Markdown and plain-text documents into chunk triples.
//!
//! [`extract_docs`] reads one file or walks a directory and returns one
//! [`ExtractedSource`] per document file, bound for the file's own named graph:
//!
//! - a `kgfuse:Document` `{base_iri}{source_id}` with `rdfs:label` and `dcterms:title`,
//!   `skos:altLabel` per alias, `kgfuse:sourceFile` (the path below the ingested root),
//!   the optional `kgfuse:authority` (`xsd:decimal`), `kgfuse:effectiveDate` and
//!   `kgfuse:validUntil` (`xsd:date`), and `kgfuse:hasChunk` to each of its chunks;
//! - one `kgfuse:Chunk` `{base_iri}{source_id}/chunk/{section-slug}/{n}` per bounded
//!   piece of a section, with `rdfs:label`, `kgfuse:chunkId`, `kgfuse:section`,
//!   `kgfuse:text` (the section's Markdown, heading excluded, code blocks kept),
//!   `kgfuse:startLine`/`kgfuse:endLine` in the file, `dcterms:isPartOf` its document
//!   and `kgfuse:mentions` the entities whose labels occur in its text.
//!
//! **Files**: `.md`, `.markdown`, `.mdown`, `.mkd` (Markdown) and `.txt`, `.text`,
//! `.rst` (plain text), found in path order; symbolic links are followed (a loop is a
//! [`Problem`]), a file reached twice is read once, and hidden entries and
//! `node_modules` are not walked.
//!
//! **Metadata** comes from a leading front-matter block (`---` lines around simple
//! `key: value` lines) and from a sidecar file `<file name>.meta.toml` next to the
//! document, whose keys win. Keys: `title`, `authority` (0..1), `effective_date` (or
//! `effective`, `date`; `YYYY-MM-DD`), `valid_until`, `source_id` (or `id`) and
//! `aliases`. Invalid values are reported as [`Problem`]s and ignored; unknown keys are
//! ignored silently.
//!
//! **Source id**: `source_id` from the metadata, else the file stem slugified
//! (`Employee Handbook.md` -> `employee-handbook`). When several files would share a
//! derived id, each uses its path below the root instead (`guides/setup.md` ->
//! `guides-setup`).
//!
//! **Sections**: Markdown is split at ATX (`#` .. `######`) and setext headings, never
//! inside fenced code blocks. A section's path is its heading titles from the top,
//! joined with `" > "`. A document whose first heading is its only level-1 heading uses
//! that heading as its title, not as a section. Plain text (`.txt`, `.text`, `.rst`)
//! has one section with an empty path. Sections longer than
//! [`DocsOptions::max_chunk_chars`] are split at paragraph boundaries, then sentence
//! (or, in code blocks, line) boundaries, then whitespace, then characters; chunks
//! never exceed the limit and never split a UTF-8 character.
//!
//! **Chunk id** `source_id::section-slug::n`: the section slug is the slugified heading
//! path joined with `/` (`working-arrangements/remote-work`), or `body` for text
//! outside any heading; `n` counts from 1 within the section. It depends only on the
//! section's own heading path and text, so editing other sections keeps it. A second
//! section with the same heading path gets the slug suffix `-2` (then `-3`, ...).
//!
//! **Mentions**: one Aho-Corasick automaton over all entity labels (lowercased,
//! whitespace collapsed, labels under three characters skipped) finds labels in each
//! chunk; a match counts only at word boundaries (no letter, digit or `_` on either
//! side), overlapping matches keep the leftmost-longest, and every entity sharing the
//! matched label is linked once per chunk.
//!
//! Bad files never stop a run: binary, non-UTF-8 and oversized files are skipped with a
//! [`Problem`]. Extraction is pure; nothing is written.

mod chunk;
mod mentions;
mod metadata;

use crate::emit::{Triples, iri, iri_segment, term};
use crate::{ExtractedSource, IngestError, Problem, file_graph_iri};
use chunk::{Section, chunk_ranges, markdown_sections, section_slug, slugify, unique_slug};
use kgfuse_core::progress::Progress;
use kgfuse_core::vocab::{kg, w3c};
use mentions::MentionFinder;
use metadata::{Metadata, parse_front_matter, read_sidecar, split_front_matter};
use oxrdf::vocab::xsd;
use oxrdf::{Literal, NamedNode, NamedNodeRef, Triple};
use rayon::prelude::*;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Default upper bound of a chunk's text, in characters.
pub const DEFAULT_MAX_CHUNK_CHARS: usize = 1500;
/// Default size limit of a document file (4 MiB).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Default namespace of document and chunk IRIs.
pub const DEFAULT_BASE_IRI: &str = "https://w3id.org/kgfuse/docs/";

/// A NUL byte within this many leading bytes marks a file as binary.
const BINARY_SNIFF_BYTES: usize = 8192;

/// How documents are read and named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocsOptions {
    /// Upper bound of a chunk's text, in characters (default 1500); at least 1.
    pub max_chunk_chars: usize,
    /// Files larger than this many bytes are skipped with a [`Problem`] (default 4 MiB).
    pub max_file_bytes: u64,
    /// Namespace of document and chunk IRIs (default `https://w3id.org/kgfuse/docs/`).
    pub base_iri: String,
}

impl Default for DocsOptions {
    fn default() -> Self {
        Self {
            max_chunk_chars: DEFAULT_MAX_CHUNK_CHARS,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            base_iri: DEFAULT_BASE_IRI.to_owned(),
        }
    }
}

/// An entity documents may mention: its IRI and one label or alias to look for.
///
/// Pass one `EntityLabel` per label; several entities may share a label, and a chunk
/// containing it then mentions all of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityLabel {
    /// IRI of the entity.
    pub iri: String,
    /// A label or alias of the entity, matched case-insensitively at word boundaries.
    pub label: String,
}

/// What [`extract_docs`] found.
#[derive(Debug, Clone, Default)]
pub struct DocsExtraction {
    /// One source per document file, in path order.
    pub sources: Vec<ExtractedSource>,
    /// Files skipped or only partly understood (bad metadata, unreadable, ...).
    pub problems: Vec<Problem>,
    /// Number of documents extracted (equals `sources.len()`).
    pub documents: usize,
    /// Number of chunks over all documents.
    pub chunks: usize,
    /// Number of `kgfuse:mentions` edges over all chunks.
    pub mentions: usize,
}

/// Extracts the Markdown and plain-text documents at `path` (a file, or a directory
/// walked recursively) into document and chunk triples; see the [module
/// documentation](self) for the shape.
///
/// Fails when `path` cannot be read, when a single file is not Markdown or text, when
/// a directory holds no such file, or when `options` are unusable. Single bad files
/// become [`Problem`]s instead.
pub fn extract_docs(
    path: &Path,
    entities: &[EntityLabel],
    options: &DocsOptions,
    progress: &dyn Progress,
) -> Result<DocsExtraction, IngestError> {
    if options.max_chunk_chars == 0 {
        return Err(IngestError::Invalid(
            "the chunk size limit must be at least 1 character".to_owned(),
        ));
    }
    NamedNode::new(options.base_iri.as_str()).map_err(|e| {
        IngestError::Invalid(format!(
            "base IRI {:?} is not a valid IRI: {e}",
            options.base_iri
        ))
    })?;
    let finder = MentionFinder::new(entities)?;
    let mut problems = Vec::new();
    let candidates = find_documents(path, &mut problems)?;

    progress.start("Reading documents", Some(candidates.len() as u64));
    let outcomes: Vec<FileOutcome> = candidates
        .into_par_iter()
        .map(|candidate| {
            let outcome = read_document(candidate, options, &finder);
            progress.advance(1);
            outcome
        })
        .collect();
    progress.finish();

    let mut documents = Vec::new();
    for outcome in outcomes {
        problems.extend(outcome.problems);
        documents.extend(outcome.document);
    }
    let ids = assign_source_ids(&documents, &mut problems);

    let mut extraction = DocsExtraction {
        problems,
        ..DocsExtraction::default()
    };
    for (document, source_id) in documents.into_iter().zip(ids) {
        let (source, chunks, mentions) = emit_document(document, &source_id, options, &finder);
        extraction.sources.push(source);
        extraction.chunks += chunks;
        extraction.mentions += mentions;
    }
    extraction.documents = extraction.sources.len();
    Ok(extraction)
}

// ---------------------------------------------------------------------------------
// Finding files
// ---------------------------------------------------------------------------------

/// How a file's text is split into sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// Headings and fenced code blocks.
    Markdown,
    /// Paragraphs only.
    Text,
}

/// The format a file extension stands for, or `None` when it is not a document.
fn format_of(path: &Path) -> Option<Format> {
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    match extension.as_str() {
        "md" | "markdown" | "mdown" | "mkd" => Some(Format::Markdown),
        "txt" | "text" | "rst" => Some(Format::Text),
        _ => None,
    }
}

/// A document file found under the ingested path.
#[derive(Debug)]
struct Candidate {
    /// The path as found (for messages).
    path: PathBuf,
    /// The canonical path.
    canonical: PathBuf,
    /// The file's named graph.
    graph: NamedNode,
    /// The path below the ingested root with `/` separators (the file name for a
    /// single file).
    relative: String,
    format: Format,
}

/// The document files at `root`, in path order; unreadable entries and link loops
/// become problems.
fn find_documents(root: &Path, problems: &mut Vec<Problem>) -> Result<Vec<Candidate>, IngestError> {
    let metadata = std::fs::metadata(root).map_err(|source| IngestError::Io {
        path: root.display().to_string(),
        source,
    })?;
    if !metadata.is_dir() {
        return single_document(root).map(|candidate| vec![candidate]);
    }
    let mut candidates = Vec::new();
    let mut seen = HashSet::new();
    let walk = walkdir::WalkDir::new(root)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|entry| entry.depth() == 0 || !is_skipped_entry(entry));
    for entry in walk {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                problems.push(Problem::from_walk(root, &error));
                continue;
            }
        };
        if !entry.file_type().is_file() {
            continue;
        }
        let Some(format) = format_of(entry.path()) else {
            continue;
        };
        let canonical = match std::fs::canonicalize(entry.path()) {
            Ok(canonical) => canonical,
            Err(error) => {
                problems.push(problem(entry.path(), None, format!("skipped: {error}")));
                continue;
            }
        };
        if !seen.insert(canonical.clone()) {
            continue; // the same file reached again through a symbolic link
        }
        let relative = entry
            .path()
            .strip_prefix(root)
            .unwrap_or(entry.path())
            .components()
            .map(|part| part.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        candidates.push(Candidate {
            path: entry.path().to_path_buf(),
            graph: file_graph_iri(&canonical),
            canonical,
            relative,
            format,
        });
    }
    if candidates.is_empty() && problems.is_empty() {
        return Err(IngestError::Invalid(format!(
            "{} contains no Markdown or text files (.md, .markdown, .txt, .text, .rst)",
            root.display()
        )));
    }
    Ok(candidates)
}

/// A single file given as the root: a document of a known format, or an error.
fn single_document(root: &Path) -> Result<Candidate, IngestError> {
    let Some(format) = format_of(root) else {
        return Err(IngestError::Invalid(format!(
            "{}: not a Markdown or text file (expected .md, .markdown, .txt, .text or .rst)",
            root.display()
        )));
    };
    let canonical = std::fs::canonicalize(root).map_err(|source| IngestError::Io {
        path: root.display().to_string(),
        source,
    })?;
    Ok(Candidate {
        path: root.to_path_buf(),
        graph: file_graph_iri(&canonical),
        canonical,
        relative: root
            .file_name()
            .map_or_else(String::new, |name| name.to_string_lossy().into_owned()),
        format,
    })
}

/// Hidden files and directories and `node_modules` are not walked.
fn is_skipped_entry(entry: &walkdir::DirEntry) -> bool {
    entry
        .file_name()
        .to_str()
        .is_some_and(|name| name.starts_with('.') || name == "node_modules")
}

/// A directory entry that could not be visited.
fn problem(path: &Path, line: Option<usize>, message: impl Into<String>) -> Problem {
    Problem {
        path: path.to_path_buf(),
        line,
        message: message.into(),
    }
}

// ---------------------------------------------------------------------------------
// Reading one file
// ---------------------------------------------------------------------------------

/// A document read and chunked, waiting for its source id.
#[derive(Debug)]
struct ParsedDocument {
    candidate: Candidate,
    content_hash: String,
    metadata: Metadata,
    /// Front-matter title, else the first level-1 heading, else the file stem.
    title: String,
    /// The file stem slugified: the default source id.
    stem_slug: String,
    /// The path below the root slugified: the source id when stems collide.
    path_slug: String,
    chunks: Vec<DraftChunk>,
}

/// A chunk before it has an IRI.
#[derive(Debug)]
struct DraftChunk {
    /// Heading path joined with `" > "`, empty outside headings.
    section: String,
    /// Section slug, unique within the document.
    slug: String,
    /// 1-based number within the section.
    number: usize,
    /// 1-based lines of the chunk text in the file.
    lines: (usize, usize),
    /// How many chunks the section has.
    of: usize,
    text: String,
    /// Indexes into [`MentionFinder::entities`].
    mentions: BTreeSet<usize>,
}

/// One file's result: the document unless it was skipped, and its problems.
#[derive(Debug)]
struct FileOutcome {
    document: Option<ParsedDocument>,
    problems: Vec<Problem>,
}

/// Reads, decodes, and chunks one document file.
fn read_document(
    candidate: Candidate,
    options: &DocsOptions,
    finder: &MentionFinder,
) -> FileOutcome {
    let mut problems = Vec::new();
    let decoded = read_bounded(&candidate.path, options.max_file_bytes).and_then(|bytes| {
        decode(&bytes).map(|text| (kgfuse_core::content_hash_bytes(&bytes), text))
    });
    let (content_hash, text) = match decoded {
        Ok(decoded) => decoded,
        Err(message) => {
            return FileOutcome {
                document: None,
                problems: vec![problem(&candidate.path, None, message)],
            };
        }
    };

    let mut metadata = Metadata::default();
    let body_start = match split_front_matter(&text) {
        Some((lines, body_start)) => {
            parse_front_matter(&lines, &candidate.path, &mut metadata, &mut problems);
            body_start
        }
        None => 0,
    };
    let body = &text[body_start..];
    let lines = LineIndex::new(&text);
    read_sidecar(&candidate.path, &mut metadata, &mut problems);

    let (sections, first_heading) = match candidate.format {
        Format::Markdown => markdown_sections(body),
        Format::Text => (
            vec![Section {
                path: Vec::new(),
                body: 0..body.len(),
            }],
            None,
        ),
    };
    let markdown = candidate.format == Format::Markdown;
    let mut used_slugs = HashSet::new();
    let mut chunks = Vec::new();
    for section in sections {
        let ranges = chunk_ranges(body, section.body, markdown, options.max_chunk_chars);
        if ranges.is_empty() {
            continue;
        }
        let slug = unique_slug(section_slug(&section.path), &mut used_slugs);
        let joined = section.path.join(" > ");
        let of = ranges.len();
        for (index, range) in ranges.into_iter().enumerate() {
            let text = body[range.clone()].trim_end().to_owned();
            let start = body_start + range.start;
            let mentions = finder.find(&text);
            chunks.push(DraftChunk {
                section: joined.clone(),
                slug: slug.clone(),
                number: index + 1,
                lines: (lines.line(start), lines.line(start + text.len())),
                of,
                text,
                mentions,
            });
        }
    }

    let stem = candidate
        .path
        .file_stem()
        .map_or_else(String::new, |stem| stem.to_string_lossy().into_owned());
    let title = metadata
        .title
        .clone()
        .or(first_heading)
        .unwrap_or_else(|| stem.clone());
    let stem_slug = non_empty_slug(&stem);
    let path_slug = non_empty_slug(
        candidate
            .relative
            .rsplit_once('.')
            .map_or(candidate.relative.as_str(), |(without, _)| without),
    );
    FileOutcome {
        document: Some(ParsedDocument {
            candidate,
            content_hash,
            metadata,
            title,
            stem_slug,
            path_slug,
            chunks,
        }),
        problems,
    }
}

/// The file's bytes, unless it is larger than `limit`.
fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    let too_large = |size: u64| {
        format!(
            "skipped: {} is above the {} file-size limit",
            format_size(size),
            format_size(limit)
        )
    };
    let file = File::open(path).map_err(|e| format!("skipped: {e}"))?;
    let size = file.metadata().map_err(|e| format!("skipped: {e}"))?.len();
    if size > limit {
        return Err(too_large(size));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| format!("skipped: {e}"))?;
    let read = bytes.len() as u64;
    if read > limit {
        return Err(too_large(read)); // the file grew while we read it
    }
    Ok(bytes)
}

/// The text of a file: UTF-8 without byte-order mark, with `\n` line ends.
fn decode(bytes: &[u8]) -> Result<String, String> {
    if let Some(offset) = bytes.iter().take(BINARY_SNIFF_BYTES).position(|&b| b == 0) {
        return Err(format!(
            "skipped: binary file (NUL byte at offset {offset})"
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        format!(
            "skipped: not UTF-8 text (invalid byte at offset {})",
            e.valid_up_to()
        )
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    Ok(text.replace("\r\n", "\n"))
}

/// A byte count for people: `512 bytes`, `3.5 KiB`, `12.3 MiB`, `4 MiB`.
fn format_size(bytes: u64) -> String {
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = "KiB";
    for next in ["MiB", "GiB", "TiB"] {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    let text = format!("{value:.1}");
    let text = text.strip_suffix(".0").unwrap_or(&text);
    format!("{text} {unit}")
}

/// Finds the line of a byte offset in a text.
struct LineIndex {
    /// Byte offsets of the text's `\n`s.
    newlines: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let newlines = text
            .bytes()
            .enumerate()
            .filter(|&(_, b)| b == b'\n')
            .map(|(i, _)| i)
            .collect();
        Self { newlines }
    }

    /// The 1-based line of byte `offset`: one more than the `\n`s before it.
    fn line(&self, offset: usize) -> usize {
        self.newlines.partition_point(|&newline| newline < offset) + 1
    }
}

// ---------------------------------------------------------------------------------
// Source ids and triples
// ---------------------------------------------------------------------------------

/// [`slugify`], or `document` when nothing is left.
fn non_empty_slug(text: &str) -> String {
    let slug = slugify(text);
    if slug.is_empty() {
        "document".to_owned()
    } else {
        slug
    }
}

/// One source id per document, in order: the metadata `source_id` if no earlier file
/// claimed it, else the stem slug if unique, else the path slug (numbered if needed).
fn assign_source_ids(documents: &[ParsedDocument], problems: &mut Vec<Problem>) -> Vec<String> {
    let mut ids: Vec<Option<String>> = vec![None; documents.len()];
    let mut owners: HashMap<String, usize> = HashMap::new();
    for (index, document) in documents.iter().enumerate() {
        let Some(id) = &document.metadata.source_id else {
            continue;
        };
        if let Some(&owner) = owners.get(id) {
            let other = documents
                .get(owner)
                .map_or_else(String::new, |d| d.candidate.path.display().to_string());
            problems.push(problem(
                &document.candidate.path,
                None,
                format!("source_id {id:?} is already used by {other}; using an id derived from the file name"),
            ));
        } else {
            owners.insert(id.clone(), index);
            ids[index] = Some(id.clone());
        }
    }
    let mut stem_counts: HashMap<&str, usize> = HashMap::new();
    for (document, id) in documents.iter().zip(&ids) {
        if id.is_none() {
            *stem_counts.entry(document.stem_slug.as_str()).or_default() += 1;
        }
    }
    for (index, document) in documents.iter().enumerate() {
        if ids[index].is_some() {
            continue;
        }
        let stem_unique = stem_counts.get(document.stem_slug.as_str()) == Some(&1)
            && !owners.contains_key(&document.stem_slug);
        let base = if stem_unique {
            &document.stem_slug
        } else {
            &document.path_slug
        };
        let mut id = base.clone();
        let mut number = 1;
        while owners.contains_key(&id) {
            number += 1;
            id = format!("{base}-{number}");
        }
        owners.insert(id.clone(), index);
        ids[index] = Some(id);
    }
    ids.into_iter().map(Option::unwrap_or_default).collect()
}

fn line_number(line: usize) -> i64 {
    i64::try_from(line).unwrap_or(i64::MAX)
}

/// `subject predicate "value"^^datatype`.
fn typed_literal(
    triples: &mut Triples,
    subject: &NamedNode,
    predicate: &str,
    value: &str,
    datatype: NamedNodeRef<'_>,
) {
    triples.triples.push(Triple::new(
        subject.clone(),
        term(predicate),
        Literal::new_typed_literal(value, datatype),
    ));
}

/// The triples of one document: returns the source, its chunk count and its mention
/// count.
fn emit_document(
    document: ParsedDocument,
    source_id: &str,
    options: &DocsOptions,
    finder: &MentionFinder,
) -> (ExtractedSource, usize, usize) {
    let base = options.base_iri.as_str();
    let doc = iri(base, source_id);
    let meta = &document.metadata;
    let mut t = Triples::default();
    t.typed(&doc, kg::DOCUMENT);
    t.text(&doc, w3c::RDFS_LABEL, &document.title);
    t.text(&doc, w3c::DCTERMS_TITLE, &document.title);
    for alias in &meta.aliases {
        t.text(&doc, w3c::SKOS_ALT_LABEL, alias);
    }
    t.text(&doc, kg::SOURCE_FILE_PATH, &document.candidate.relative);
    if let Some(authority) = meta.authority {
        typed_literal(
            &mut t,
            &doc,
            kg::AUTHORITY,
            &authority.to_string(),
            xsd::DECIMAL,
        );
    }
    if let Some(date) = &meta.effective_date {
        typed_literal(&mut t, &doc, kg::EFFECTIVE_DATE, date, xsd::DATE);
    }
    if let Some(date) = &meta.valid_until {
        typed_literal(&mut t, &doc, kg::VALID_UNTIL, date, xsd::DATE);
    }

    let mut mentions = 0;
    for chunk in &document.chunks {
        let node = NamedNode::new_unchecked(format!(
            "{base}{}/chunk/{}/{}",
            iri_segment(source_id),
            iri_segment(&chunk.slug),
            chunk.number
        ));
        let mut label = if chunk.section.is_empty() {
            document.title.clone()
        } else {
            format!("{} > {}", document.title, chunk.section)
        };
        if chunk.of > 1 {
            label.push_str(&format!(" ({})", chunk.number));
        }
        t.typed(&node, kg::CHUNK);
        t.text(&node, w3c::RDFS_LABEL, &label);
        t.text(
            &node,
            kg::CHUNK_ID,
            &format!("{source_id}::{}::{}", chunk.slug, chunk.number),
        );
        t.text(&node, kg::SECTION, &chunk.section);
        t.text(&node, kg::TEXT, &chunk.text);
        t.integer(&node, kg::START_LINE, line_number(chunk.lines.0));
        t.integer(&node, kg::END_LINE, line_number(chunk.lines.1));
        t.link(&node, w3c::DCTERMS_IS_PART_OF, &doc);
        t.link(&doc, kg::HAS_CHUNK, &node);
        for entity in chunk
            .mentions
            .iter()
            .filter_map(|&i| finder.entities.get(i))
        {
            if *entity != doc {
                t.link(&node, kg::MENTIONS, entity);
                mentions += 1;
            }
        }
    }
    let chunks = document.chunks.len();
    let source = ExtractedSource {
        path: document.candidate.canonical,
        graph: document.candidate.graph,
        content_hash: document.content_hash,
        extractor: "docs",
        triples: t.triples,
    };
    (source, chunks, mentions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgfuse_core::progress::NoProgress;
    use oxrdf::Term;
    use std::fs;

    const BASE: &str = "https://w3id.org/kgfuse/docs/";

    fn write(dir: &Path, name: &str, text: impl AsRef<[u8]>) -> PathBuf {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("mkdir");
        }
        fs::write(&path, text).expect("write");
        path
    }

    fn extract(path: &Path, entities: &[EntityLabel], options: &DocsOptions) -> DocsExtraction {
        extract_docs(path, entities, options, &NoProgress).expect("extract")
    }

    fn extract_default(path: &Path) -> DocsExtraction {
        extract(path, &[], &DocsOptions::default())
    }

    fn entity(iri: &str, label: &str) -> EntityLabel {
        EntityLabel {
            iri: iri.to_owned(),
            label: label.to_owned(),
        }
    }

    /// The lexical forms of the objects of `subject predicate ?o`.
    fn objects(source: &ExtractedSource, subject: &str, predicate: &str) -> Vec<String> {
        source
            .triples
            .iter()
            .filter(|t| {
                t.subject.to_string() == format!("<{subject}>") && t.predicate.as_str() == predicate
            })
            .map(|t| match &t.object {
                Term::NamedNode(node) => node.as_str().to_owned(),
                Term::Literal(literal) => literal.value().to_owned(),
                other => other.to_string(),
            })
            .collect()
    }

    /// The datatype of the single object of `subject predicate ?o`.
    fn datatype(source: &ExtractedSource, subject: &str, predicate: &str) -> String {
        source
            .triples
            .iter()
            .find(|t| {
                t.subject.to_string() == format!("<{subject}>") && t.predicate.as_str() == predicate
            })
            .and_then(|t| match &t.object {
                Term::Literal(literal) => Some(literal.datatype().as_str().to_owned()),
                _ => None,
            })
            .expect("typed literal")
    }

    /// Chunks of a source as (chunk IRI, chunk id, section, text), in triple order.
    fn chunks(source: &ExtractedSource) -> Vec<(String, String, String, String)> {
        source
            .triples
            .iter()
            .filter(|t| t.predicate.as_str() == kg::CHUNK_ID)
            .map(|t| {
                let iri = t.subject.to_string();
                let iri = iri.trim_start_matches('<').trim_end_matches('>').to_owned();
                let id = match &t.object {
                    Term::Literal(literal) => literal.value().to_owned(),
                    other => other.to_string(),
                };
                let section = objects(source, &iri, kg::SECTION).pop().unwrap_or_default();
                let text = objects(source, &iri, kg::TEXT).pop().unwrap_or_default();
                (iri, id, section, text)
            })
            .collect()
    }

    fn ids(source: &ExtractedSource) -> Vec<String> {
        chunks(source).into_iter().map(|(_, id, _, _)| id).collect()
    }

    const HANDBOOK: &str = "\
# Employee Handbook

Welcome to the handbook.

## Working arrangements

### Remote work

You may work remotely two days a week.

#### Eligibility

Everyone after probation.

### Equipment

Laptops for all.

## Time off

## Vacation

Twenty-eight days.
";

    #[test]
    fn headings_become_section_paths_and_chunk_ids() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(dir.path(), "Handbook 2025.md", HANDBOOK);
        let out = extract_default(&path);
        assert!(out.problems.is_empty(), "{:?}", out.problems);
        assert_eq!((out.documents, out.chunks, out.mentions), (1, 5, 0));
        let source = &out.sources[0];
        let doc = format!("{BASE}handbook-2025");
        assert_eq!(objects(source, &doc, w3c::RDF_TYPE), [kg::DOCUMENT]);
        assert_eq!(
            objects(source, &doc, w3c::DCTERMS_TITLE),
            ["Employee Handbook"]
        );
        assert_eq!(
            objects(source, &doc, w3c::RDFS_LABEL),
            ["Employee Handbook"]
        );
        assert_eq!(
            objects(source, &doc, kg::SOURCE_FILE_PATH),
            ["Handbook 2025.md"]
        );

        let found = chunks(source);
        let summary: Vec<(&str, &str, &str)> = found
            .iter()
            .map(|(_, id, section, text)| (id.as_str(), section.as_str(), text.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                ("handbook-2025::body::1", "", "Welcome to the handbook."),
                (
                    "handbook-2025::working-arrangements/remote-work::1",
                    "Working arrangements > Remote work",
                    "You may work remotely two days a week."
                ),
                (
                    "handbook-2025::working-arrangements/remote-work/eligibility::1",
                    "Working arrangements > Remote work > Eligibility",
                    "Everyone after probation."
                ),
                (
                    "handbook-2025::working-arrangements/equipment::1",
                    "Working arrangements > Equipment",
                    "Laptops for all."
                ),
                (
                    "handbook-2025::vacation::1",
                    "Vacation",
                    "Twenty-eight days."
                ),
            ]
        );
        // Chunk IRIs, types, labels and the links between document and chunk.
        let (remote, ..) = &found[1];
        assert_eq!(
            remote,
            &format!("{BASE}handbook-2025/chunk/working-arrangements%2Fremote-work/1")
        );
        assert_eq!(objects(source, remote, w3c::RDF_TYPE), [kg::CHUNK]);
        assert_eq!(
            objects(source, remote, w3c::RDFS_LABEL),
            ["Employee Handbook > Working arrangements > Remote work"]
        );
        assert_eq!(
            objects(source, remote, w3c::DCTERMS_IS_PART_OF),
            [doc.as_str()]
        );
        assert_eq!(objects(source, remote, kg::START_LINE), ["9"]);
        assert_eq!(objects(source, remote, kg::END_LINE), ["9"]);
        assert_eq!(objects(source, &found[0].0, kg::START_LINE), ["3"]);
        let mut has_chunk = objects(source, &doc, kg::HAS_CHUNK);
        has_chunk.sort();
        let mut all: Vec<String> = found.iter().map(|(iri, ..)| iri.clone()).collect();
        all.sort();
        assert_eq!(has_chunk, all);

        // The extraction output itself.
        assert_eq!(source.extractor, "docs");
        assert_eq!(source.path, fs::canonicalize(&path).expect("canonical"));
        assert!(source.graph.as_str().starts_with("file:///"));
        assert!(source.graph.as_str().ends_with("/Handbook%202025.md"));
        let bytes = fs::read(&path).expect("read");
        assert_eq!(source.content_hash, kgfuse_core::content_hash_bytes(&bytes));
    }

    #[test]
    fn several_level_one_headings_are_sections_and_setext_headings_count() {
        let text = "Intro\n\nPart one\n========\n\nOne.\n\nDetails\n-------\n\nMore.\n\n# Part two\n\nTwo.\n\nNot a heading\nbecause two lines\n---\n";
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(dir.path(), "parts.md", text);
        let out = extract_default(&path);
        let source = &out.sources[0];
        let sections: Vec<String> = chunks(source).into_iter().map(|(_, _, s, _)| s).collect();
        assert_eq!(sections, ["", "Part one", "Part one > Details", "Part two"]);
        let doc = format!("{BASE}parts");
        assert_eq!(objects(source, &doc, w3c::DCTERMS_TITLE), ["Part one"]);
        let last = chunks(source).pop().expect("chunk").3;
        assert_eq!(last, "Two.\n\nNot a heading\nbecause two lines\n---");
    }

    #[test]
    fn hash_lines_in_code_fences_are_not_headings() {
        let text = "## Setup\n\nRun this:\n\n```sh\n# install the tool\npip install kgfuse\n\n# not a heading either\n```\n\n~~~\n## still code\n~~~\n\n    # indented code\n\n## Usage\n\nDone.\n";
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(dir.path(), "guide.md", text);
        let source = &extract_default(&path).sources[0];
        let found = chunks(source);
        assert_eq!(ids(source), ["guide::setup::1", "guide::usage::1"]);
        let setup = &found[0].3;
        assert!(setup.starts_with("Run this:"), "{setup}");
        assert!(setup.contains(
            "```sh\n# install the tool\npip install kgfuse\n\n# not a heading either\n```"
        ));
        assert!(setup.contains("## still code"));
        assert!(setup.ends_with("    # indented code"));
        // No title heading: the file stem titles the document.
        assert_eq!(
            objects(source, &format!("{BASE}guide"), w3c::DCTERMS_TITLE),
            ["guide"]
        );
    }

    #[test]
    fn long_sections_split_at_paragraphs_under_the_limit() {
        let paragraphs: Vec<String> = (1..=9)
            .map(|i| {
                format!(
                    "Paragraph {i} talks about policy number {i} in some detail, {}.",
                    "more words".repeat(3)
                )
            })
            .collect();
        let text = format!("# Long\n\n## Rules\n\n{}\n", paragraphs.join("\n\n"));
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(dir.path(), "long.md", &text);
        let options = DocsOptions {
            max_chunk_chars: 250,
            ..DocsOptions::default()
        };
        let out = extract(&path, &[], &options);
        let found = chunks(&out.sources[0]);
        assert!(found.len() >= 3, "{found:?}");
        for (index, (iri, id, section, text)) in found.iter().enumerate() {
            assert_eq!(id, &format!("long::rules::{}", index + 1));
            assert!(iri.ends_with(&format!("/long/chunk/rules/{}", index + 1)));
            assert_eq!(section, "Rules");
            assert!(
                text.chars().count() <= 250,
                "{} chars",
                text.chars().count()
            );
            // Whole paragraphs only.
            for piece in text.split("\n\n") {
                assert!(paragraphs.contains(&piece.to_owned()), "{piece:?}");
            }
        }
        let rejoined: Vec<String> = found.iter().map(|(.., text)| text.clone()).collect();
        assert_eq!(rejoined.join("\n\n"), paragraphs.join("\n\n"));
        let label = objects(&out.sources[0], &found[1].0, w3c::RDFS_LABEL);
        assert_eq!(label, ["Long > Rules (2)"]);
    }

    #[test]
    fn chunk_ids_stay_when_another_section_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(dir.path(), "handbook.md", HANDBOOK);
        let before = chunks(&extract_default(&path).sources[0]);
        let edited = HANDBOOK
            .replace(
                "Laptops for all.",
                "Laptops for all.\n\nAnd a monitor, on request.",
            )
            .replace(
                "## Time off\n",
                "## Time off\n\nNew intro.\n\n### Sick leave\n\nTell your manager.\n",
            );
        write(dir.path(), "handbook.md", edited);
        let after = chunks(&extract_default(&path).sources[0]);
        for unchanged in [0, 1, 2, 4] {
            assert!(
                after.contains(&before[unchanged]),
                "{:?} lost",
                before[unchanged]
            );
        }
        assert!(!after.contains(&before[3]));
        assert_eq!(after.len(), before.len() + 2);
        // Re-extracting an unchanged file gives identical triples.
        let again = extract_default(&path);
        let twice = extract_default(&path);
        assert_eq!(
            again.sources[0].extraction_hash(),
            twice.sources[0].extraction_hash()
        );
    }

    #[test]
    fn front_matter_sets_metadata_and_reports_bad_values() {
        let text = "---\ntitle: \"Remote work policy\"\nauthority: 0.9\neffective_date: 2025-01-01\nvalid-until: '2026-02-30'\nid: remote-2025\naliases: [remote policy, \"WFH policy\"]\nlayout: page\ntags:\n  - hr\nthis line is wrong\n---\n# Heading title\n\nBody text.\n";
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(dir.path(), "remote.md", text);
        let out = extract_default(&path);
        let source = &out.sources[0];
        let doc = format!("{BASE}remote-2025");
        assert_eq!(
            objects(source, &doc, w3c::DCTERMS_TITLE),
            ["Remote work policy"]
        );
        assert_eq!(objects(source, &doc, kg::AUTHORITY), ["0.9"]);
        assert_eq!(datatype(source, &doc, kg::AUTHORITY), xsd::DECIMAL.as_str());
        assert_eq!(objects(source, &doc, kg::EFFECTIVE_DATE), ["2025-01-01"]);
        assert_eq!(
            datatype(source, &doc, kg::EFFECTIVE_DATE),
            xsd::DATE.as_str()
        );
        assert!(objects(source, &doc, kg::VALID_UNTIL).is_empty());
        assert_eq!(
            objects(source, &doc, w3c::SKOS_ALT_LABEL),
            ["remote policy", "WFH policy"]
        );
        assert_eq!(ids(source), ["remote-2025::body::1"]);
        assert_eq!(chunks(source)[0].3, "Body text.");
        let chunk = &chunks(source)[0].0;
        assert_eq!(objects(source, chunk, kg::START_LINE), ["15"]);
        let problems: Vec<(Option<usize>, &str)> = out
            .problems
            .iter()
            .map(|p| (p.line, p.message.as_str()))
            .collect();
        assert_eq!(
            problems,
            [
                (
                    Some(5),
                    "valid_until \"2026-02-30\" is not a date (expected YYYY-MM-DD); ignored"
                ),
                (Some(11), "front matter line is not `key: value`; ignored"),
            ]
        );
        assert!(out.problems[0].to_string().ends_with(
            "remote.md:5: valid_until \"2026-02-30\" is not a date (expected YYYY-MM-DD); ignored"
        ));
    }

    #[test]
    fn sidecar_metadata_applies_and_wins_over_front_matter() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(
            dir.path(),
            "blog.txt",
            "---\ntitle: From front matter\nauthority: 0.5\n---\nFirst paragraph.\n\nSecond paragraph.\n",
        );
        write(
            dir.path(),
            "blog.txt.meta.toml",
            "title = \"How we work remotely\"\nauthority = 0.3\neffective_date = 2020-06-15\nvalid_until = \"2021-12-31\"\nsource_id = \"blog-2020-remote\"\naliases = [\"2020 blog post\"]\ndate = true\n",
        );
        let out = extract_default(dir.path());
        assert_eq!(out.documents, 1, "the sidecar itself is not a document");
        let source = &out.sources[0];
        let doc = format!("{BASE}blog-2020-remote");
        assert_eq!(
            objects(source, &doc, w3c::DCTERMS_TITLE),
            ["How we work remotely"]
        );
        assert_eq!(objects(source, &doc, kg::AUTHORITY), ["0.3"]);
        assert_eq!(objects(source, &doc, kg::EFFECTIVE_DATE), ["2020-06-15"]);
        assert_eq!(objects(source, &doc, kg::VALID_UNTIL), ["2021-12-31"]);
        assert_eq!(
            objects(source, &doc, w3c::SKOS_ALT_LABEL),
            ["2020 blog post"]
        );
        // Plain text: one section without a heading path, both paragraphs in one chunk.
        let found = chunks(source);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].1, "blog-2020-remote::body::1");
        assert_eq!(found[0].2, "");
        assert_eq!(found[0].3, "First paragraph.\n\nSecond paragraph.");
        assert_eq!(out.problems.len(), 1, "{:?}", out.problems);
        assert_eq!(out.problems[0].line, Some(7));
        assert!(out.problems[0].path.ends_with("blog.txt.meta.toml"));
        assert_eq!(
            out.problems[0].message,
            "date expects text, not a boolean; ignored"
        );
        assert_eq!(path.file_name(), source.path.file_name());

        // Broken TOML is reported with its line and the sidecar ignored.
        write(
            dir.path(),
            "blog.txt.meta.toml",
            "title = \"x\"\nauthority = = 1\n",
        );
        let out = extract_default(&path);
        assert_eq!(out.problems.len(), 1);
        assert_eq!(out.problems[0].line, Some(2));
        assert!(
            out.problems[0].message.starts_with("not valid TOML"),
            "{}",
            out.problems[0]
        );
        let doc = format!("{BASE}blog");
        assert_eq!(
            objects(&out.sources[0], &doc, w3c::DCTERMS_TITLE),
            ["From front matter"]
        );
    }

    #[test]
    fn mentions_match_case_insensitively_at_word_boundaries() {
        let text = "# Fees\n\n## Merchant fees\n\nMERCHANT fees apply to every\nmerchant account. See merchants_table and merchants.\n\n## Other\n\nThe merchant_id column. Premerchant data.\n\n## Shared\n\nThe Acme Corp contract; ACME  corp again. Rémote Wörk too.\n\n## Short\n\nAn HR issue about id fields.\n";
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(dir.path(), "fees.md", text);
        let entities = [
            entity("urn:x:Merchant", "merchant"),
            entity("urn:x:MerchantAccount", "Merchant account"),
            entity("urn:x:Acme", "Acme Corp"),
            entity("urn:x:AcmeLegal", "acme corp"),
            entity("urn:x:Remote", "rémote wörk"),
            entity("urn:x:HR", "HR"),
            entity("urn:x:Fees", "Fees"),
            entity("not an iri", "contract"),
        ];
        let out = extract(&path, &entities, &DocsOptions::default());
        let source = &out.sources[0];
        let mentions = |slug: &str| {
            let mut found = objects(source, &format!("{BASE}fees/chunk/{slug}/1"), kg::MENTIONS);
            found.sort();
            found
        };
        // "MERCHANT fees" and the longer "merchant account" across a line break; not
        // "merchants_table" or "merchants"; each entity once.
        assert_eq!(
            mentions("merchant-fees"),
            ["urn:x:Fees", "urn:x:Merchant", "urn:x:MerchantAccount"]
        );
        assert!(
            mentions("other").is_empty(),
            "merchant_id / Premerchant must not match"
        );
        assert_eq!(
            mentions("shared"),
            ["urn:x:Acme", "urn:x:AcmeLegal", "urn:x:Remote"]
        );
        assert!(
            mentions("short").is_empty(),
            "labels under 3 characters are skipped"
        );
        assert_eq!(out.mentions, 6);
    }

    #[test]
    fn bad_files_become_problems_and_good_files_are_still_extracted() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(dir.path(), "good.md", "# Good\n\nFine text.\n");
        write(dir.path(), "binary.txt", b"abc\0def".as_slice());
        write(dir.path(), "latin1.txt", b"caf\xe9 au lait".as_slice());
        write(dir.path(), "huge.md", "x".repeat(3 * 1024 * 1024 / 2));
        write(dir.path(), "ignored.rs", "fn main() {}");
        let options = DocsOptions {
            max_file_bytes: 1024 * 1024,
            ..DocsOptions::default()
        };
        let out = extract(dir.path(), &[], &options);
        assert_eq!(out.documents, 1);
        assert!(out.sources[0].path.ends_with("good.md"));
        let mut problems: Vec<(String, String)> = out
            .problems
            .iter()
            .map(|p| {
                let name = p.path.file_name().map(|n| n.to_string_lossy().into_owned());
                (name.unwrap_or_default(), p.message.clone())
            })
            .collect();
        problems.sort();
        assert_eq!(
            problems,
            [
                (
                    "binary.txt".to_owned(),
                    "skipped: binary file (NUL byte at offset 3)".to_owned()
                ),
                (
                    "huge.md".to_owned(),
                    "skipped: 1.5 MiB is above the 1 MiB file-size limit".to_owned()
                ),
                (
                    "latin1.txt".to_owned(),
                    "skipped: not UTF-8 text (invalid byte at offset 3)".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn unusable_paths_are_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let empty = extract_docs(dir.path(), &[], &DocsOptions::default(), &NoProgress);
        assert!(
            matches!(&empty, Err(IngestError::Invalid(m)) if m.contains("contains no Markdown or text files")),
            "{empty:?}"
        );
        write(dir.path(), "sub/code.py", "x = 1");
        write(dir.path(), ".hidden/notes.md", "hidden");
        let only_code = extract_docs(dir.path(), &[], &DocsOptions::default(), &NoProgress);
        assert!(matches!(only_code, Err(IngestError::Invalid(_))));

        let code = dir.path().join("sub/code.py");
        let single = extract_docs(&code, &[], &DocsOptions::default(), &NoProgress);
        assert!(
            matches!(&single, Err(IngestError::Invalid(m)) if m.contains("not a Markdown or text file")),
            "{single:?}"
        );
        let missing = extract_docs(
            &dir.path().join("nope"),
            &[],
            &DocsOptions::default(),
            &NoProgress,
        );
        assert!(matches!(missing, Err(IngestError::Io { .. })));
        let zero = DocsOptions {
            max_chunk_chars: 0,
            ..DocsOptions::default()
        };
        let md = write(dir.path(), "a.md", "text");
        assert!(matches!(
            extract_docs(&md, &[], &zero, &NoProgress),
            Err(IngestError::Invalid(_))
        ));
    }

    #[test]
    fn colliding_stems_use_their_paths_and_duplicate_ids_are_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(dir.path(), "a/README.md", "Alpha.\n");
        write(dir.path(), "b/README.md", "Beta.\n");
        write(dir.path(), "c/one.md", "---\nid: shared\n---\nOne.\n");
        write(dir.path(), "c/two.md", "---\nid: shared\n---\nTwo.\n");
        write(dir.path(), "empty.md", "");
        let out = extract_default(dir.path());
        let documents: Vec<String> = out
            .sources
            .iter()
            .flat_map(|s| {
                s.triples
                    .iter()
                    .filter(|t| t.object == Term::NamedNode(term(kg::DOCUMENT)))
                    .map(|t| t.subject.to_string())
            })
            .collect();
        assert_eq!(
            documents,
            [
                format!("<{BASE}a-readme>"),
                format!("<{BASE}b-readme>"),
                format!("<{BASE}shared>"),
                format!("<{BASE}two>"),
                format!("<{BASE}empty>"),
            ]
        );
        assert_eq!(out.chunks, 4, "an empty file is a document without chunks");
        assert_eq!(out.problems.len(), 1);
        assert!(
            out.problems[0]
                .message
                .starts_with("source_id \"shared\" is already used by")
        );
    }

    #[cfg(unix)]
    #[test]
    fn symlink_loops_are_problems() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(dir.path(), "docs/page.md", "Page.\n");
        std::os::unix::fs::symlink(dir.path().join("docs"), dir.path().join("docs/loop"))
            .expect("symlink");
        std::os::unix::fs::symlink(
            dir.path().join("docs/page.md"),
            dir.path().join("docs/alias.md"),
        )
        .expect("symlink");
        let out = extract_default(&dir.path().join("docs"));
        assert_eq!(out.documents, 1, "the linked file is read once");
        assert_eq!(out.problems.len(), 1, "{:?}", out.problems);
        assert!(out.problems[0].message.contains("symbolic link loop"));
    }

    #[test]
    fn policy_fixture_readme_is_ingested() {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/policy");
        if !fixture.join("README.md").is_file() {
            return; // the fixture has no Markdown
        }
        let entities = [
            entity(
                "https://w3id.org/kgfuse/fixtures/policy/EmployeeHandbook2025",
                "Employee Handbook 2025",
            ),
            entity(
                "https://w3id.org/kgfuse/fixtures/policy/RemoteWorkPolicy2025",
                "RemoteWorkPolicy2025",
            ),
        ];
        let out = extract(&fixture, &entities, &DocsOptions::default());
        assert!(out.problems.is_empty(), "{:?}", out.problems);
        assert_eq!(
            out.documents, 1,
            "only README.md; policy.ttl and validate.py are skipped"
        );
        let source = &out.sources[0];
        let doc = format!("{BASE}readme");
        assert_eq!(
            objects(source, &doc, w3c::DCTERMS_TITLE),
            ["Policy fixture: enterprise knowledge retrieval (agentic RAG)"]
        );
        let found = chunks(source);
        assert!(!found.is_empty());
        let mut seen = HashSet::new();
        for (_, id, _, text) in &found {
            assert!(seen.insert(id.clone()), "duplicate chunk id {id}");
            assert!(id.starts_with("readme::"));
            assert!(text.chars().count() <= DEFAULT_MAX_CHUNK_CHARS);
        }
        assert!(
            found
                .iter()
                .any(|(_, _, section, _)| section == "What is in it")
        );
        assert!(out.mentions >= 2, "{}", out.mentions);
    }
}
