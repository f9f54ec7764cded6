//! Source code into the API hierarchy, call graph, cases, knowledge and I/O tags.
//!
//! [`extract_code`] walks a tree, parses every Python and Rust file in parallel with
//! tree-sitter, and indexes all definitions. [`CodeExtraction::emit`] then turns a
//! range of files into triples, resolving calls against that index; the caller
//! writes them in batches, so a large tree never sits in memory as triples at once.
//!
//! Identical-node merging (SGKR, Algorithm 1) falls out of the naming: every node's
//! IRI is derived from its qualified name, so a function seen from several files,
//! re-exported under other names or reached from several call sites is one node, and
//! every edge to it lands on that node.

pub mod knowledge;
pub mod model;
mod python;
pub mod resolve;
mod rust;
pub mod tags;
mod walk;

use crate::emit::{Triples, iri, iri_segment};
use crate::{ExtractedSource, IngestError, Problem};
use kgfuse_core::progress::Progress;
use kgfuse_core::vocab::{kg, w3c};
use knowledge::Knowledge;
use model::{FileContext, FileRole, FunctionDef, Language, ParsedFile};
use oxrdf::NamedNode;
use rayon::prelude::*;
use resolve::{KnownSymbol, SymbolIndex, Target};
use std::collections::{BTreeSet, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Namespace of ingested code nodes; the language follows (`python/`, `rust/`).
pub const CODE_BASE: &str = "https://w3id.org/kgfuse/code/";

/// Files parsed per progress step.
const PARSE_CHUNK: usize = 64;

/// How to ingest a tree.
#[derive(Debug, Clone)]
pub struct CodeOptions {
    /// Languages to ingest (both by default).
    pub languages: Vec<Language>,
    /// Package name for Python files outside any package, crate name for Rust files
    /// outside any crate (or overriding `Cargo.toml`).
    pub package: Option<String>,
    /// Files above this size are skipped with a note.
    pub max_file_bytes: u64,
    /// Optional knowledge file (TOML or Turtle), see [`knowledge`].
    pub knowledge_file: Option<PathBuf>,
    /// Definitions already in the store, so calls into them resolve.
    pub known_symbols: Vec<KnownSymbol>,
}

impl Default for CodeOptions {
    fn default() -> Self {
        Self {
            languages: vec![Language::Python, Language::Rust],
            package: None,
            max_file_bytes: 2 * 1024 * 1024,
            knowledge_file: None,
            known_symbols: Vec::new(),
        }
    }
}

/// Counts over a parsed tree.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CodeStats {
    /// Files parsed.
    pub files: usize,
    /// Modules (files and inline modules).
    pub modules: usize,
    /// Classes, structs, enums, traits.
    pub classes: usize,
    /// Functions and methods (tests excluded).
    pub functions: usize,
    /// Test functions, doc examples and example files.
    pub cases: usize,
    /// Files skipped or only partly understood.
    pub problems: usize,
}

/// A parsed and indexed tree, ready to be emitted as triples.
#[derive(Debug)]
pub struct CodeExtraction {
    root: PathBuf,
    files: Vec<ParsedFile>,
    indexes: HashMap<Language, SymbolIndex>,
    knowledge: Knowledge,
    /// For each package, the file that writes the package node.
    package_writers: HashMap<(Language, String), usize>,
    /// Every source file the walk selected, skipped ones included.
    pub selected: Vec<PathBuf>,
    /// Files skipped or only partly understood.
    pub problems: Vec<Problem>,
    /// Counts.
    pub stats: CodeStats,
}

/// Reads a file if it is reasonable source text; otherwise says why not.
fn read_source(path: &Path, max_bytes: u64) -> Result<(String, String), String> {
    let size = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if size > max_bytes {
        return Err(format!(
            "skipped: {:.1} MiB is above the {:.1} MiB file-size limit",
            size as f64 / 1_048_576.0,
            max_bytes as f64 / 1_048_576.0
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return Err("skipped: binary file (NUL byte)".into());
    }
    let hash = kgfuse_core::content_hash_bytes(&bytes);
    match String::from_utf8(bytes) {
        Ok(text) => Ok((text, hash)),
        Err(e) => Err(format!(
            "skipped: not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )),
    }
}

fn parse_file(context: FileContext, max_bytes: u64) -> Result<ParsedFile, Problem> {
    let (text, hash) = read_source(&context.path, max_bytes).map_err(|message| Problem {
        path: context.path.clone(),
        line: None,
        message,
    })?;
    Ok(match context.language {
        Language::Python => python::parse(context, &text, hash),
        Language::Rust => rust::parse(context, &text, hash),
    })
}

/// Walks `path`, parses its source files and indexes their definitions.
pub fn extract_code(
    path: &Path,
    options: &CodeOptions,
    progress: &dyn Progress,
) -> Result<CodeExtraction, IngestError> {
    let walked = walk::walk(path, &options.languages, options.package.as_deref())?;
    let root = std::fs::canonicalize(path).map_err(|source| IngestError::Io {
        path: path.display().to_string(),
        source,
    })?;
    if walked.files.is_empty() {
        return Err(IngestError::Invalid(format!(
            "{}: no {} source files found",
            path.display(),
            options
                .languages
                .iter()
                .map(|l| l.name())
                .collect::<Vec<_>>()
                .join(" or ")
        )));
    }
    let knowledge = match &options.knowledge_file {
        Some(file) => knowledge::read(file)?,
        None => Knowledge::default(),
    };
    let selected: Vec<PathBuf> = walked.files.iter().map(|f| f.path.clone()).collect();
    let mut problems = walked.problems;
    let files = parse_files(&walked.files, options, progress, &mut problems);
    let mut indexes = HashMap::new();
    for language in &options.languages {
        indexes.insert(
            *language,
            SymbolIndex::build(*language, &files, &options.known_symbols),
        );
    }
    unknown_knowledge(&files, &knowledge, options, &mut problems);
    let package_writers = package_writers(&files);
    let stats = code_stats(&files, problems.len());
    Ok(CodeExtraction {
        root,
        files,
        indexes,
        knowledge,
        package_writers,
        selected,
        problems,
        stats,
    })
}

/// Parses the files in parallel, [`PARSE_CHUNK`] at a time; unparsable files
/// and problems inside parsed ones go to `problems`.
fn parse_files(
    contexts: &[FileContext],
    options: &CodeOptions,
    progress: &dyn Progress,
    problems: &mut Vec<Problem>,
) -> Vec<ParsedFile> {
    let mut files = Vec::with_capacity(contexts.len());
    progress.start("parsing", Some(contexts.len() as u64));
    for chunk in contexts.chunks(PARSE_CHUNK) {
        let parsed: Vec<Result<ParsedFile, Problem>> = chunk
            .par_iter()
            .map(|context| parse_file(context.clone(), options.max_file_bytes))
            .collect();
        for result in parsed {
            match result {
                Ok(file) => {
                    problems.extend(file.problems.iter().cloned());
                    files.push(file);
                }
                Err(problem) => problems.push(problem),
            }
        }
        progress.advance(chunk.len() as u64);
    }
    progress.finish();
    files
}

/// A problem for each function the knowledge file describes that the tree does
/// not define.
fn unknown_knowledge(
    files: &[ParsedFile],
    knowledge: &Knowledge,
    options: &CodeOptions,
    problems: &mut Vec<Problem>,
) {
    let defined: BTreeSet<String> = files
        .iter()
        .flat_map(|f| {
            f.functions
                .iter()
                .map(|d| d.qualified.join(f.context.language.separator()))
        })
        .collect();
    for name in knowledge.functions.keys() {
        if !defined.contains(name) {
            problems.push(Problem {
                path: options.knowledge_file.clone().unwrap_or_default(),
                line: None,
                message: format!("knowledge for `{name}`, which is not a function of this tree"),
            });
        }
    }
}

/// For each (language, package), the file that writes the package's node: the
/// one with the shortest module path (the first of those).
fn package_writers(files: &[ParsedFile]) -> HashMap<(Language, String), usize> {
    let mut writers = HashMap::new();
    for (i, file) in files.iter().enumerate() {
        let key = (file.context.language, file.context.package.clone());
        let better = match writers.get(&key) {
            None => true,
            Some(&j) => {
                let current: &ParsedFile = &files[j];
                file.context.module.len() < current.context.module.len()
            }
        };
        if better {
            writers.insert(key, i);
        }
    }
    writers
}

/// What an extraction found, counted.
fn code_stats(files: &[ParsedFile], problems: usize) -> CodeStats {
    CodeStats {
        files: files.len(),
        modules: files.iter().map(|f| 1 + f.inline_modules.len()).sum(),
        classes: files.iter().map(|f| f.classes.len()).sum(),
        functions: files
            .iter()
            .map(|f| f.functions.iter().filter(|d| !d.is_test).count())
            .sum(),
        cases: files
            .iter()
            .map(|f| {
                f.functions.iter().filter(|d| d.is_test).count()
                    + f.examples.len()
                    + usize::from(f.context.role == FileRole::Example)
            })
            .sum(),
        problems,
    }
}

impl CodeExtraction {
    /// The canonical path that was ingested.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Number of parsed files (each becomes one [`ExtractedSource`]).
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// True when no file was parsed.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The triples of the files in `range`, computed in parallel.
    pub fn emit(&self, range: Range<usize>) -> Vec<ExtractedSource> {
        let end = range.end.min(self.files.len());
        let start = range.start.min(end);
        (start..end)
            .into_par_iter()
            .map(|i| self.emit_file(i))
            .collect()
    }

    fn emit_file(&self, index: usize) -> ExtractedSource {
        let file = &self.files[index];
        let language = file.context.language;
        let mut emitter = Emitter {
            file,
            base: format!("{CODE_BASE}{}/", language.name()),
            index: &self.indexes[&language],
            knowledge: &self.knowledge,
            out: Triples::default(),
        };
        let writes_package = self
            .package_writers
            .get(&(language, file.context.package.clone()))
            == Some(&index);
        emitter.file(writes_package);
        ExtractedSource {
            path: file.context.path.clone(),
            graph: crate::file_graph_iri(&file.context.path),
            content_hash: file.content_hash.clone(),
            extractor: match language {
                Language::Python => "code/python",
                Language::Rust => "code/rust",
            },
            triples: emitter.out.triples,
        }
    }
}

/// Writes the triples of one parsed file.
struct Emitter<'a> {
    file: &'a ParsedFile,
    base: String,
    index: &'a SymbolIndex,
    knowledge: &'a Knowledge,
    out: Triples,
}

impl Emitter<'_> {
    fn sep(&self) -> &'static str {
        self.file.context.language.separator()
    }

    fn node(&self, kind: &str, qualified: &str) -> NamedNode {
        iri(&format!("{}{kind}/", self.base), qualified)
    }

    fn package_node(&self) -> NamedNode {
        self.node("pkg", &self.file.context.package)
    }

    fn module_node(&self, module: &[String]) -> NamedNode {
        self.node("mod", &module.join(self.sep()))
    }

    fn function_node(&self, qualified: &str) -> NamedNode {
        self.node("fn", qualified)
    }

    /// Aliases the knowledge file gives for a tag (matched in normal form).
    fn aliases_of<'t>(&'t self, tag: &'t str) -> impl Iterator<Item = &'t String> + 't {
        self.knowledge
            .tag_aliases
            .iter()
            .filter(move |(name, _)| declared_tag(name) == tag)
            .flat_map(|(_, aliases)| aliases)
    }

    fn tag_node(tag: &str) -> NamedNode {
        iri(&format!("{CODE_BASE}tag/"), &tag.replace(' ', "-"))
    }

    fn lines(&mut self, subject: &NamedNode, lines: (usize, usize)) {
        self.out.integer(
            subject,
            kg::START_LINE,
            i64::try_from(lines.0).unwrap_or(i64::MAX),
        );
        self.out.integer(
            subject,
            kg::END_LINE,
            i64::try_from(lines.1).unwrap_or(i64::MAX),
        );
    }

    fn file(&mut self, writes_package: bool) {
        let file = self.file;
        let sep = self.sep();
        let package = self.package_node();
        if writes_package {
            self.out.typed(&package, kg::PACKAGE);
            let name = file.context.package.clone();
            self.out.named(&package, &name, &name);
            self.out.text(&package, kg::QUALIFIED_NAME, &name);
            if file.context.module.len() == 1
                && let Some(doc) = &file.module_doc
            {
                self.out.text(&package, w3c::RDFS_COMMENT, doc);
            }
        }
        let mut modules = vec![file.context.module.clone()];
        modules.extend(file.inline_modules.iter().cloned());
        for (i, module) in modules.iter().enumerate() {
            let node = self.module_node(module);
            let qualified = module.join(sep);
            self.out.typed(&node, kg::MODULE);
            self.out
                .named(&node, &qualified, module.last().map_or("", String::as_str));
            self.out.text(&node, kg::QUALIFIED_NAME, &qualified);
            self.out.link(&node, kg::IN_PACKAGE, &package);
            self.out.link(&package, kg::HAS_MODULE, &node);
            if i == 0
                && let Some(doc) = &file.module_doc
            {
                self.out.text(&node, w3c::RDFS_COMMENT, doc);
            }
            if module.len() > 1 {
                let parent = self.module_node(&module[..module.len() - 1]);
                self.out.link(&node, kg::CONTAINED_IN, &parent);
            }
        }
        for class in &file.classes {
            self.class(class);
        }
        for function in &file.functions {
            if function.is_test {
                self.test_case(function);
            } else {
                self.function(function);
            }
        }
        for example in &file.examples {
            self.doc_example(example);
        }
        if file.context.role == FileRole::Example {
            self.example_file();
        }
    }

    /// The module that holds a definition: the longest module prefix of its name.
    fn home_module(&self, qualified: &[String]) -> NamedNode {
        self.module_node(self.home_path(qualified))
    }

    /// The module path that holds a definition: the longest module prefix of its
    /// name (a Rust inline module, or the file's module).
    fn home_path(&self, qualified: &[String]) -> &[String] {
        let file = self.file;
        file.inline_modules
            .iter()
            .filter(|m| qualified.starts_with(m))
            .max_by_key(|m| m.len())
            .unwrap_or(&file.context.module)
    }

    fn class(&mut self, class: &model::ClassDef) {
        let qualified = class.qualified.join(self.sep());
        let node = self.node("class", &qualified);
        let name = class.qualified.last().cloned().unwrap_or_default();
        self.out.typed(&node, kg::CLASS);
        self.out.named(&node, &name, &name);
        self.out.text(&node, kg::QUALIFIED_NAME, &qualified);
        if let Some(doc) = &class.doc {
            self.out.text(&node, w3c::RDFS_COMMENT, doc);
        }
        if let Some(header) = class.code.lines().find(|l| {
            let t = l.trim_start();
            !t.starts_with('@') && !t.starts_with("#[") && !t.starts_with("///")
        }) {
            self.out.text(&node, kg::SIGNATURE, header.trim());
        }
        let package = self.package_node();
        let module = self.home_module(&class.qualified);
        self.out.link(&node, kg::IN_PACKAGE, &package);
        self.out.link(&node, kg::IN_MODULE, &module);
        self.out.link(&module, kg::HAS_CLASS, &node);
        self.lines(&node, class.lines);
        let scope = class.qualified[..class.qualified.len().saturating_sub(1)].to_vec();
        for base in &class.bases {
            if let Some((target, resolve::SymbolKind::Class)) =
                self.index.resolve_path(&scope, base)
            {
                let target = self.node("class", &target);
                self.out.link(&node, kg::EXTENDS, &target);
            }
        }
    }

    /// Resolves calls made inside the definition named `home`; its module decides
    /// what the names in it mean.
    fn targets(
        &self,
        calls: &[model::RawCall],
        home: &[String],
        owner: Option<&[String]>,
        caller: Option<&str>,
    ) -> Vec<Target> {
        resolve::resolve_all(
            self.index,
            calls,
            self.home_path(home),
            owner,
            &self.file.context.package,
            caller,
        )
    }

    fn function(&mut self, function: &FunctionDef) {
        let sep = self.sep();
        let qualified = function.qualified.join(sep);
        let node = self.function_node(&qualified);
        let name = function.qualified.last().cloned().unwrap_or_default();
        let class = if function.owner.is_some() {
            kg::METHOD
        } else {
            kg::FUNCTION
        };
        self.out.typed(&node, class);
        self.out.named(&node, &name, &name);
        self.out.text(&node, kg::QUALIFIED_NAME, &qualified);
        self.out.text(&node, kg::SIGNATURE, &function.signature);
        if let Some(doc) = &function.doc {
            self.out.text(&node, w3c::RDFS_COMMENT, doc);
        }
        if let Some(returns) = &function.returns {
            self.out.text(&node, kg::RETURNS, returns);
        }
        self.out.text(&node, kg::CODE, &function.code);
        self.lines(&node, function.lines);
        let package = self.package_node();
        let module = self.home_module(&function.qualified);
        self.out.link(&node, kg::IN_PACKAGE, &package);
        self.out.link(&node, kg::IN_MODULE, &module);
        match &function.owner {
            Some(owner) => {
                let owner = self.node("class", &owner.join(sep));
                self.out.link(&owner, kg::HAS_FUNCTION, &node);
            }
            None => self.out.link(&module, kg::HAS_FUNCTION, &node),
        }

        let mut inputs: Vec<String> = Vec::new();
        for param in &function.params {
            let param_node = iri(&format!("{}/param/", node.as_str()), &param.name);
            self.out.typed(&param_node, kg::PARAMETER);
            self.out.text(&param_node, kg::NAME, &param.name);
            if let Some(annotation) = &param.annotation {
                self.out.text(&param_node, kg::PARAMETER_TYPE, annotation);
                inputs.extend(tags::from_type(annotation));
            }
            if let Some(default) = &param.default {
                self.out.text(&param_node, kg::DEFAULT_VALUE, default);
            }
            self.out.integer(
                &param_node,
                kg::POSITION,
                i64::try_from(param.position).unwrap_or(i64::MAX),
            );
            self.out.link(&node, kg::HAS_PARAMETER, &param_node);
            inputs.extend(tags::normalise(&param.name));
        }
        let mut outputs: Vec<String> = Vec::new();
        if let Some(returns) = &function.returns {
            outputs.extend(tags::from_type(returns));
        }
        outputs.extend(tags::from_function_name(&name));
        if let Some(known) = self.knowledge.functions.get(&qualified) {
            let unit = self.node("ku", &qualified);
            self.out.typed(&unit, kg::KNOWLEDGE_UNIT);
            self.out.text(
                &unit,
                w3c::RDFS_LABEL,
                &format!("knowledge about {qualified}"),
            );
            for text in &known.knowledge {
                self.out.text(&unit, kg::KNOWLEDGE, text);
                self.out.text(&node, kg::KNOWLEDGE, text);
            }
            self.out.link(&node, kg::HAS_KNOWLEDGE, &unit);
            inputs.extend(known.inputs.iter().map(|t| declared_tag(t)));
            outputs.extend(known.outputs.iter().map(|t| declared_tag(t)));
        }
        for (tags, predicate, class) in [
            (inputs, kg::CONSUMES, kg::INPUT_TAG),
            (outputs, kg::PRODUCES, kg::OUTPUT_TAG),
        ] {
            let unique: BTreeSet<String> = tags.into_iter().filter(|t| !t.is_empty()).collect();
            for tag in unique {
                let tag_node = Self::tag_node(&tag);
                self.out.typed(&tag_node, class);
                self.out.text(&tag_node, w3c::RDFS_LABEL, &tag);
                let aliases: Vec<String> = self.aliases_of(&tag).cloned().collect();
                for alias in &aliases {
                    self.out.text(&tag_node, w3c::SKOS_ALT_LABEL, alias);
                }
                self.out.link(&node, predicate, &tag_node);
            }
        }

        let targets = self.targets(
            &function.calls,
            &function.qualified,
            function.owner.as_deref(),
            Some(&qualified),
        );
        for target in targets {
            let (predicate, callee) = match &target {
                Target::Resolved(q) => (kg::CALLS, q),
                Target::ByName(q) => (kg::CALLS_BY_NAME, q),
            };
            let callee = self.function_node(callee);
            self.out.link(&node, predicate, &callee);
        }
    }

    fn case_links(&mut self, case: &NamedNode, targets: Vec<Target>) {
        for target in targets {
            let (predicate, callee) = match &target {
                Target::Resolved(q) => (kg::EXERCISES, q),
                Target::ByName(q) => (kg::EXERCISES_BY_NAME, q),
            };
            let callee = self.function_node(callee);
            self.out.link(case, predicate, &callee);
        }
        let module = self.module_node(&self.file.context.module);
        self.out.link(case, kg::IN_MODULE, &module);
    }

    fn test_case(&mut self, function: &FunctionDef) {
        let qualified = function.qualified.join(self.sep());
        let node = self.node("case", &qualified);
        self.out.typed(&node, kg::CASE);
        let title = function
            .doc
            .as_deref()
            .and_then(|d| d.lines().next())
            .map(str::to_owned)
            .unwrap_or_else(|| humanise(function.qualified.last().map_or("", String::as_str)));
        self.out.text(&node, w3c::RDFS_LABEL, &title);
        self.out.text(&node, kg::QUALIFIED_NAME, &qualified);
        if let Some(doc) = &function.doc {
            self.out.text(&node, w3c::RDFS_COMMENT, doc);
        }
        self.out.text(&node, kg::CODE, &function.code);
        self.lines(&node, function.lines);
        let targets = self.targets(
            &function.calls,
            &function.qualified,
            function.owner.as_deref(),
            None,
        );
        self.case_links(&node, targets);
    }

    fn doc_example(&mut self, example: &model::DocExample) {
        let documented = example.documented.join(self.sep());
        let node = iri(
            &format!("{}case/{}/example/", self.base, iri_segment(&documented)),
            &example.line.to_string(),
        );
        self.out.typed(&node, kg::CASE);
        self.out.text(
            &node,
            w3c::RDFS_LABEL,
            &format!("Example from the documentation of {documented}"),
        );
        self.out.text(&node, kg::CODE, &example.code);
        self.out.integer(
            &node,
            kg::START_LINE,
            i64::try_from(example.line).unwrap_or(i64::MAX),
        );
        let targets = self.targets(&example.calls, &example.documented, None, None);
        self.case_links(&node, targets);
    }

    /// A file under `examples/` is one case: its docstring is the question, its
    /// code the worked solution.
    fn example_file(&mut self) {
        let file = self.file;
        let qualified = file.context.module.join(self.sep());
        let node = self.node("case", &qualified);
        self.out.typed(&node, kg::CASE);
        let title = file
            .module_doc
            .as_deref()
            .and_then(|d| d.lines().next())
            .map(str::to_owned)
            .unwrap_or_else(|| humanise(file.context.module.last().map_or("", String::as_str)));
        self.out.text(&node, w3c::RDFS_LABEL, &title);
        self.out.text(&node, kg::QUALIFIED_NAME, &qualified);
        if let Some(doc) = &file.module_doc {
            self.out.text(&node, w3c::RDFS_COMMENT, doc);
        }
        if let Ok(code) = std::fs::read_to_string(&file.context.path) {
            self.out.text(&node, kg::CODE, &code);
        }
        let mut targets: Vec<Target> = Vec::new();
        for function in &file.functions {
            for target in self.targets(
                &function.calls,
                &function.qualified,
                function.owner.as_deref(),
                None,
            ) {
                // Calls between the example's own helpers are not API usage.
                let own = match &target {
                    Target::Resolved(q) | Target::ByName(q) => {
                        q.starts_with(&format!("{qualified}{}", self.sep()))
                    }
                };
                if !own && !targets.contains(&target) {
                    targets.push(target);
                }
            }
        }
        self.case_links(&node, targets);
    }
}

/// A tag named in a knowledge file, in the same normal form as derived tags
/// (`fee rules` -> `fee rule`); kept as written (lowercased) when it is generic.
fn declared_tag(tag: &str) -> String {
    tags::normalise(tag).unwrap_or_else(|| tag.trim().to_lowercase())
}

/// `test_dump_sorted_keys` -> `dump sorted keys`.
fn humanise(name: &str) -> String {
    name.trim_start_matches("test_")
        .replace('_', " ")
        .trim()
        .to_owned()
}

/// Splits an ingested code IRI into language, node kind (`fn`, `class`, `mod`, ...)
/// and the (IRI-encoded) qualified name.
pub fn split_code_iri(iri: &str) -> Option<(Language, &str, &str)> {
    let rest = iri.strip_prefix(CODE_BASE)?;
    let (language, rest) = rest.split_once('/')?;
    let language = match language {
        "python" => Language::Python,
        "rust" => Language::Rust,
        _ => return None,
    };
    let (kind, qualified) = rest.split_once('/')?;
    Some((language, kind, qualified))
}
