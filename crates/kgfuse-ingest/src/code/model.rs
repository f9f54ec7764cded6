//! The language-neutral model every code extractor fills in.
//!
//! A language module (`python`, `rust`) turns one file into a [`ParsedFile`]: its
//! definitions and its *raw* calls, written as they appear in the source. Calls are
//! resolved later ([`super::resolve`]) against an index of every definition in the
//! run (and in the store), because a call's target usually lives in another file.
//!
//! Qualified names use the language's own separator: `json.encoder.JSONEncoder.encode`
//! for Python, `serde_json::de::from_str` for Rust. Paths are kept as segment lists
//! until they are resolved.

use crate::Problem;
use std::path::PathBuf;

/// Source language of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Language {
    /// Python 3 (`.py`, `.pyi`).
    Python,
    /// Rust (`.rs`).
    Rust,
}

impl Language {
    /// Separator between segments of a qualified name.
    pub fn separator(self) -> &'static str {
        match self {
            Self::Python => ".",
            Self::Rust => "::",
        }
    }

    /// Short name used in IRIs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Python => "python",
            Self::Rust => "rust",
        }
    }

    /// Joins segments into a qualified name.
    pub fn join<S: AsRef<str>>(self, segments: &[S]) -> String {
        segments
            .iter()
            .map(AsRef::as_ref)
            .collect::<Vec<_>>()
            .join(self.separator())
    }
}

/// What a file is for; decides whether its test functions become cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileRole {
    /// Library code.
    Library,
    /// Test code (`test_*.py`, `tests/`, Rust `tests/*.rs`): test functions are cases.
    Test,
    /// Example programs (`examples/`): each file is one case.
    Example,
}

/// Where a file sits, decided by the directory walker before parsing.
#[derive(Debug, Clone)]
pub struct FileContext {
    /// Canonical path.
    pub path: PathBuf,
    /// Language.
    pub language: Language,
    /// Top-level package (Python) or crate name (Rust, `-` replaced by `_`).
    pub package: String,
    /// Qualified module path of the file, package first (`["json", "encoder"]`,
    /// `["serde_json", "de"]`). A Python `__init__.py` or a Rust `lib.rs`/`mod.rs` is
    /// its directory's module.
    pub module: Vec<String>,
    /// Role of the file.
    pub role: FileRole,
}

/// One parsed source file.
#[derive(Debug, Clone)]
pub struct ParsedFile {
    /// Where the file sits.
    pub context: FileContext,
    /// SHA-256 of the file bytes.
    pub content_hash: String,
    /// Module docstring / inner doc comment (`//!`).
    pub module_doc: Option<String>,
    /// Modules declared inside the file (Rust inline `mod x { .. }`), qualified.
    pub inline_modules: Vec<Vec<String>>,
    /// Names the module binds by importing.
    pub imports: Vec<Import>,
    /// Classes, structs, enums, traits.
    pub classes: Vec<ClassDef>,
    /// Functions and methods, test functions included.
    pub functions: Vec<FunctionDef>,
    /// Code examples found in doc comments / docstrings.
    pub examples: Vec<DocExample>,
    /// Syntax errors and other things that were skipped inside the file.
    pub problems: Vec<Problem>,
}

impl ParsedFile {
    /// A file with nothing extracted yet.
    pub fn empty(context: FileContext, content_hash: String) -> Self {
        Self {
            context,
            content_hash,
            module_doc: None,
            inline_modules: Vec::new(),
            imports: Vec::new(),
            classes: Vec::new(),
            functions: Vec::new(),
            examples: Vec::new(),
            problems: Vec::new(),
        }
    }
}

/// `alias` is bound in `scope` to the qualified path `target`.
///
/// `import os.path as p` -> alias `p`, target `["os", "path"]`;
/// `from .encoder import JSONEncoder` in `json/__init__.py` -> alias `JSONEncoder`,
/// target `["json", "encoder", "JSONEncoder"]`; `use crate::de::from_str;` in crate
/// `serde_json` -> alias `from_str`, target `["serde_json", "de", "from_str"]`.
/// A glob import (`from x import *`, `use x::*`) has alias `*` and the module as target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    /// Qualified module (or Rust inline module / function body owner) where the
    /// name is visible.
    pub scope: Vec<String>,
    /// The local name.
    pub alias: String,
    /// Absolute qualified path it stands for.
    pub target: Vec<String>,
}

/// A class, struct, enum, union or trait.
#[derive(Debug, Clone)]
pub struct ClassDef {
    /// Qualified name as segments (`["json", "encoder", "JSONEncoder"]`).
    pub qualified: Vec<String>,
    /// `class`, `struct`, `enum`, `union` or `trait`.
    pub kind: &'static str,
    /// Base classes / implemented traits, as written (segments, unresolved).
    pub bases: Vec<Vec<String>>,
    /// Docstring or doc comment.
    pub doc: Option<String>,
    /// Source text of the definition (header and body).
    pub code: String,
    /// 1-based first and last line.
    pub lines: (usize, usize),
    /// Visible outside its module (Python: no leading underscore; Rust: `pub`).
    pub public: bool,
}

/// A function or method.
#[derive(Debug, Clone)]
pub struct FunctionDef {
    /// Qualified name as segments; a method's includes its class
    /// (`["json", "encoder", "JSONEncoder", "encode"]`).
    pub qualified: Vec<String>,
    /// The class / type a method belongs to (qualified), `None` for free functions.
    pub owner: Option<Vec<String>>,
    /// The definition header as written, normalised to one line
    /// (`def dumps(obj, *, skipkeys=False, ...)`, `pub fn from_str<'a, T>(s: &'a str) -> Result<T>`).
    pub signature: String,
    /// Parameters in order, receivers (`self`, `&self`, `cls`) excluded.
    pub params: Vec<Param>,
    /// Return type as written.
    pub returns: Option<String>,
    /// Docstring or doc comment, without comment markers.
    pub doc: Option<String>,
    /// Source text of the whole definition.
    pub code: String,
    /// 1-based first and last line.
    pub lines: (usize, usize),
    /// Calls in the body, unresolved.
    pub calls: Vec<RawCall>,
    /// A test (`test_*` in a test file, `#[test]`, `unittest.TestCase` method): a case.
    pub is_test: bool,
    /// Visible outside its module.
    pub public: bool,
}

/// A parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// Name (`*args` and `**kw` keep their stars).
    pub name: String,
    /// Type annotation as written.
    pub annotation: Option<String>,
    /// Default value as written.
    pub default: Option<String>,
    /// 0-based position among the parameters (receiver excluded).
    pub position: usize,
}

/// A call as written in the source, before resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawCall {
    /// `f(..)`, `mod.f(..)`, `Type::f(..)`, `crate::m::f(..)`, `Class(..)` — a path
    /// whose first segment is looked up in local imports and module scope.
    /// Rust `crate`, `self`, `super` prefixes are already made absolute.
    Path(Vec<String>),
    /// `self.f(..)`, `cls.f(..)`, `Self::f(..)`: a method of the enclosing class.
    SelfMethod(String),
    /// `super().f(..)`: a method of a base class.
    SuperMethod(String),
    /// `x.f(..)` where the extractor inferred `x`'s type (parameter annotation,
    /// `x = Type(..)`, `let x: Type`, `let x = Type::new(..)`), written as a path.
    TypedMethod {
        /// Receiver type as written (resolved like a [`RawCall::Path`]).
        receiver: Vec<String>,
        /// Method name.
        name: String,
    },
    /// `x.f(..)` with an unknown receiver: only a by-name match is possible.
    Method(String),
}

/// A code example from a docstring (doctest) or doc comment (fenced block).
#[derive(Debug, Clone)]
pub struct DocExample {
    /// Qualified name of the documented item (module, class or function).
    pub documented: Vec<String>,
    /// Example code (doctest prompts removed).
    pub code: String,
    /// Calls in the example, unresolved (resolved in the documented item's module).
    pub calls: Vec<RawCall>,
    /// 1-based line of the example's start.
    pub line: usize,
}
