//! Call resolution: from calls as written to the definitions they reach.
//!
//! The index holds every definition of the run plus the symbols already in the
//! store (so tests ingested after their library still link to it). A call is
//! *resolved* when imports, module scope, `self`/`Self`, base classes or an inferred
//! receiver type lead to exactly one definition. Otherwise it may still be matched
//! *by name* (SGKR's fallback): functions with the same short name, first inside the
//! caller's package (at most [`MAX_SAME_PACKAGE`]), else anywhere (at most
//! [`MAX_ANY_PACKAGE`]). By-name edges are written with a different predicate so
//! retrieval can weigh them lower.

use super::model::{Language, ParsedFile, RawCall};
use kgfuse_core::code::{is_test_code, is_test_segment};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Most by-name candidates accepted inside the caller's package.
const MAX_SAME_PACKAGE: usize = 5;
/// Most by-name candidates accepted across packages.
const MAX_ANY_PACKAGE: usize = 3;
/// Guard against import cycles while following re-exports.
const MAX_HOPS: usize = 12;

/// What a qualified name denotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SymbolKind {
    /// A package, crate or module.
    Module,
    /// A class, struct, enum, union or trait.
    Class,
    /// A function or method.
    Function,
}

/// A definition that is already in the store, from an earlier ingestion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownSymbol {
    /// Language of the definition.
    pub language: Language,
    /// Qualified name (`json.dumps`, `serde_json::de::from_str`).
    pub qualified: String,
    /// Kind of definition.
    pub kind: SymbolKind,
    /// For methods: the qualified name of the owning class.
    pub owner: Option<String>,
}

/// Where a call leads.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    /// Exactly this definition (qualified name).
    Resolved(String),
    /// A function with the call's short name; the link is a guess.
    ByName(String),
}

/// Every definition of a run, with what resolution needs.
#[derive(Debug, Default)]
pub struct SymbolIndex {
    separator: &'static str,
    kinds: HashMap<String, SymbolKind>,
    /// Class -> method name -> qualified method names.
    members: HashMap<String, BTreeMap<String, Vec<String>>>,
    /// Class -> (module it is defined in, bases as written).
    bases: HashMap<String, (Vec<String>, Vec<Vec<String>>)>,
    /// Scope -> alias -> target; `*` holds glob targets.
    imports: HashMap<String, HashMap<String, Vec<Vec<String>>>>,
    /// Short name -> qualified names of functions and methods.
    by_name: HashMap<String, Vec<String>>,
    /// Qualified function -> package.
    package_of: HashMap<String, String>,
    /// Qualified function -> (its module scope, its return type as a path), so
    /// `Table.load().select()` reaches `Table.select` when `load` returns `Table`.
    returns: HashMap<String, (Vec<String>, Vec<String>)>,
}

/// A return annotation that names one type (`FeeTable`, `"FeeTable"`, `Self`,
/// `Result<Self>` is not one): its path segments.
fn type_path(annotation: &str, separator: &str) -> Option<Vec<String>> {
    let trimmed = annotation.trim().trim_matches(['"', '\'']);
    let segments: Vec<String> = trimmed.split(separator).map(str::to_owned).collect();
    segments
        .iter()
        .all(|s| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .then_some(segments)
}

impl SymbolIndex {
    /// Indexes the parsed files of one language and the symbols known from the store.
    pub fn build(language: Language, files: &[ParsedFile], known: &[KnownSymbol]) -> Self {
        let mut index = Self {
            separator: language.separator(),
            ..Self::default()
        };
        let sep = index.separator;
        for symbol in known.iter().filter(|s| s.language == language) {
            index.kinds.insert(symbol.qualified.clone(), symbol.kind);
            if symbol.kind == SymbolKind::Function {
                let short = symbol
                    .qualified
                    .rsplit(sep)
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                index.add_function(&symbol.qualified, &short, symbol.owner.as_deref(), {
                    symbol.qualified.split(sep).next().unwrap_or_default()
                });
            }
        }
        for file in files.iter().filter(|f| f.context.language == language) {
            // Every prefix of a module path is a module (`json`, `json.encoder`).
            for end in 1..=file.context.module.len() {
                index
                    .kinds
                    .entry(file.context.module[..end].join(sep))
                    .or_insert(SymbolKind::Module);
            }
            for inline in &file.inline_modules {
                index.kinds.insert(inline.join(sep), SymbolKind::Module);
            }
            for import in &file.imports {
                index
                    .imports
                    .entry(import.scope.join(sep))
                    .or_default()
                    .entry(import.alias.clone())
                    .or_default()
                    .push(import.target.clone());
            }
            for class in &file.classes {
                let qualified = class.qualified.join(sep);
                index.kinds.insert(qualified.clone(), SymbolKind::Class);
                let scope = class.qualified[..class.qualified.len().saturating_sub(1)].to_vec();
                index.bases.insert(qualified, (scope, class.bases.clone()));
            }
            for function in &file.functions {
                let qualified = function.qualified.join(sep);
                index.kinds.insert(qualified.clone(), SymbolKind::Function);
                let short = function.qualified.last().cloned().unwrap_or_default();
                let owner = function.owner.as_ref().map(|o| o.join(sep));
                index.add_function(&qualified, &short, owner.as_deref(), &file.context.package);
                if let Some(path) = function.returns.as_deref().and_then(|r| type_path(r, sep)) {
                    // `Self` means the owner; other names resolve in the module.
                    let path = match (path.as_slice(), &function.owner) {
                        ([only], Some(owner)) if only == "Self" => owner.clone(),
                        _ => path,
                    };
                    index
                        .returns
                        .insert(qualified.clone(), (file.context.module.clone(), path));
                }
            }
        }
        for names in index.by_name.values_mut() {
            names.sort_unstable();
            names.dedup();
        }
        index
    }

    fn add_function(&mut self, qualified: &str, short: &str, owner: Option<&str>, package: &str) {
        self.by_name
            .entry(short.to_owned())
            .or_default()
            .push(qualified.to_owned());
        self.package_of
            .insert(qualified.to_owned(), package.to_owned());
        if let Some(owner) = owner {
            let methods = self
                .members
                .entry(owner.to_owned())
                .or_default()
                .entry(short.to_owned())
                .or_default();
            if !methods.iter().any(|m| m == qualified) {
                methods.push(qualified.to_owned());
            }
        }
    }

    /// The kind of a qualified name, if it is defined.
    pub fn kind(&self, qualified: &str) -> Option<SymbolKind> {
        self.kinds.get(qualified).copied()
    }

    /// Resolves one call made from `scope` (the caller's module), inside the method
    /// of `owner` when there is one.
    pub fn resolve(
        &self,
        call: &RawCall,
        scope: &[String],
        owner: Option<&[String]>,
        package: &str,
    ) -> Vec<Target> {
        let resolved = match call {
            RawCall::Path(path) => match self.resolve_path(scope, path) {
                Some((qualified, SymbolKind::Function)) => Some(qualified),
                Some((qualified, SymbolKind::Class)) => self.constructor(&qualified),
                Some((_, SymbolKind::Module)) => None,
                None => {
                    // An unknown head (an untyped local variable) calling a method:
                    // only a name match is possible. A head bound by an import or
                    // naming a definition points outside what we know: no guess.
                    let head_known = path.first().is_some_and(|head| {
                        self.lookup_alias(&self.join(scope), head).is_some()
                            || self.kind(&self.join_with(scope, head)).is_some()
                            || self.kind(head).is_some()
                    });
                    if path.len() >= 2 && !head_known {
                        return self.by_name(
                            path.last().map_or("", String::as_str),
                            package,
                            true,
                            scope,
                        );
                    }
                    return Vec::new();
                }
            },
            RawCall::SelfMethod(name) => match owner {
                Some(owner) => {
                    let found = self.member(&self.join(owner), name, 0);
                    if found.is_none() {
                        return self.by_name(name, package, false, scope);
                    }
                    found
                }
                // `self.f()` outside a class, or Rust `Self::f` in a trait default.
                None => return self.by_name(name, package, false, scope),
            },
            RawCall::SuperMethod(name) => owner.and_then(|owner| {
                let owner = self.join(owner);
                self.base_classes(&owner)
                    .iter()
                    .find_map(|base| self.member(base, name, 0))
            }),
            RawCall::TypedMethod { receiver, name } => match self.resolve_path(scope, receiver) {
                Some((class, SymbolKind::Class)) => self.member(&class, name, 0),
                Some((function, SymbolKind::Function)) => match self.returned_class(&function) {
                    Some(class) => self.member(&class, name, 0),
                    None => return self.by_name(name, package, true, scope),
                },
                _ => return self.by_name(name, package, true, scope),
            },
            RawCall::Method(name) => return self.by_name(name, package, true, scope),
        };
        resolved.map(Target::Resolved).into_iter().collect()
    }

    fn join(&self, segments: &[String]) -> String {
        segments.join(self.separator)
    }

    fn join_with(&self, scope: &[String], name: &str) -> String {
        if scope.is_empty() {
            name.to_owned()
        } else {
            format!("{}{}{name}", self.join(scope), self.separator)
        }
    }

    fn lookup_alias(&self, scope: &str, alias: &str) -> Option<&Vec<String>> {
        self.imports.get(scope)?.get(alias)?.first()
    }

    /// Resolves a path as written in `scope` to a defined qualified name.
    pub fn resolve_path(&self, scope: &[String], path: &[String]) -> Option<(String, SymbolKind)> {
        let (head, rest) = path.split_first()?;
        let scope_name = self.join(scope);
        let mut starts: Vec<Vec<String>> = Vec::new();
        if let Some(target) = self.lookup_alias(&scope_name, head) {
            starts.push(target.clone());
        }
        let local = self.join_with(scope, head);
        if self.kind(&local).is_some() {
            let mut start = scope.to_vec();
            start.push(head.clone());
            starts.push(start);
        }
        if let Some(globs) = self.imports.get(&scope_name).and_then(|m| m.get("*")) {
            for glob in globs {
                let mut start = glob.clone();
                start.push(head.clone());
                starts.push(start);
            }
        }
        // Absolute paths (`json.dumps` after `import json.decoder`, Rust crate paths).
        starts.push(vec![head.clone()]);
        for start in starts {
            let mut full = start;
            full.extend(rest.iter().cloned());
            if let Some(found) = self.canonical(&full, 0) {
                return Some(found);
            }
        }
        None
    }

    /// Follows re-exports (`json.JSONEncoder` -> `json.encoder.JSONEncoder`) and
    /// inherited members until the path names a definition.
    fn canonical(&self, path: &[String], hops: usize) -> Option<(String, SymbolKind)> {
        if hops > MAX_HOPS || path.is_empty() {
            return None;
        }
        let joined = self.join(path);
        if let Some(kind) = self.kind(&joined) {
            return Some((joined, kind));
        }
        // Longest defined prefix, then the next segment through it.
        for split in (1..path.len()).rev() {
            let prefix = self.join(&path[..split]);
            let Some(kind) = self.kind(&prefix) else {
                continue;
            };
            let next = &path[split];
            let rest = &path[split + 1..];
            match kind {
                SymbolKind::Module => {
                    if let Some(target) = self.lookup_alias(&prefix, next) {
                        let mut full = target.clone();
                        full.extend(rest.iter().cloned());
                        return self.canonical(&full, hops + 1);
                    }
                    if let Some(globs) = self.imports.get(&prefix).and_then(|m| m.get("*")) {
                        // Only a glob of a module we parsed can hold the name. A
                        // compiled one (`from ._ufuncs import *`) is a dead end:
                        // reading its path again as a chain of attributes loops
                        // back through the package's other globs, and the paths
                        // grow, so the search is exponential in MAX_HOPS.
                        for glob in globs.iter().filter(|glob| self.is_module(glob)) {
                            let mut full = glob.clone();
                            full.push(next.clone());
                            full.extend(rest.iter().cloned());
                            if let Some(found) = self.canonical(&full, hops + 1) {
                                return Some(found);
                            }
                        }
                    }
                }
                SymbolKind::Class if rest.is_empty() => {
                    return self
                        .member(&prefix, next, 0)
                        .map(|m| (m, SymbolKind::Function));
                }
                _ => {}
            }
            return None;
        }
        None
    }

    fn is_module(&self, path: &[String]) -> bool {
        self.kind(&self.join(path)) == Some(SymbolKind::Module)
    }

    /// A method of a class or of one of its bases (depth-first, in base order).
    fn member(&self, class: &str, name: &str, depth: usize) -> Option<String> {
        if depth > MAX_HOPS {
            return None;
        }
        if let Some(found) = self
            .members
            .get(class)
            .and_then(|m| m.get(name))
            .and_then(|candidates| candidates.first())
        {
            return Some(found.clone());
        }
        self.base_classes(class)
            .iter()
            .find_map(|base| self.member(base, name, depth + 1))
    }

    fn base_classes(&self, class: &str) -> Vec<String> {
        let Some((scope, bases)) = self.bases.get(class) else {
            return Vec::new();
        };
        bases
            .iter()
            .filter_map(|base| match self.resolve_path(scope, base) {
                Some((qualified, SymbolKind::Class)) if qualified != class => Some(qualified),
                _ => None,
            })
            .collect()
    }

    /// The class a function is annotated to return, when it is a defined class.
    fn returned_class(&self, function: &str) -> Option<String> {
        let (scope, path) = self.returns.get(function)?;
        match self.resolve_path(scope, path) {
            Some((class, SymbolKind::Class)) => Some(class),
            _ => None,
        }
    }

    /// Calling a class runs its constructor (`__init__`), when it defines one.
    fn constructor(&self, class: &str) -> Option<String> {
        self.member(class, "__init__", 0)
    }

    /// The functions named `name` a call from `scope` may reach when nothing
    /// resolves it: those of the caller's package (at most `MAX_SAME_PACKAGE`),
    /// else, when `any_package`, of any (at most `MAX_ANY_PACKAGE`). A call from
    /// library code never reaches into test code (a test's `CustomMapping.keys`
    /// is not what `d.keys()` in the library calls).
    fn by_name(
        &self,
        name: &str,
        package: &str,
        any_package: bool,
        scope: &[String],
    ) -> Vec<Target> {
        // `__init__`, `__str__`, ...: every class has one; a name says nothing.
        if name.starts_with("__") && name.ends_with("__") {
            return Vec::new();
        }
        let Some(candidates) = self.by_name.get(name) else {
            return Vec::new();
        };
        let from_test = scope.iter().any(|s| is_test_segment(s));
        let candidates: Vec<&String> = candidates
            .iter()
            .filter(|c| from_test || !is_test_code(c))
            .collect();
        let same: Vec<&String> = candidates
            .iter()
            .copied()
            .filter(|c| self.package_of.get(*c).is_some_and(|p| p == package))
            .collect();
        let chosen: Vec<&String> = if !same.is_empty() {
            if same.len() > MAX_SAME_PACKAGE {
                return Vec::new();
            }
            same
        } else if any_package && candidates.len() <= MAX_ANY_PACKAGE {
            candidates
        } else {
            return Vec::new();
        };
        chosen
            .into_iter()
            .map(|c| Target::ByName(c.clone()))
            .collect()
    }
}

/// Resolves every call of a function, keeping each target once (a resolved edge
/// wins over a by-name one to the same function).
pub fn resolve_all<'a>(
    index: &SymbolIndex,
    calls: impl IntoIterator<Item = &'a RawCall>,
    scope: &[String],
    owner: Option<&[String]>,
    package: &str,
    caller: Option<&str>,
) -> Vec<Target> {
    let mut resolved: Vec<String> = Vec::new();
    let mut by_name: Vec<String> = Vec::new();
    for call in calls {
        for target in index.resolve(call, scope, owner, package) {
            match target {
                Target::Resolved(q) if !resolved.contains(&q) => resolved.push(q),
                Target::ByName(q) if !by_name.contains(&q) => by_name.push(q),
                _ => {}
            }
        }
    }
    let resolved_set: HashSet<&String> = resolved.iter().collect();
    let mut out: Vec<Target> = Vec::new();
    for q in &resolved {
        if Some(q.as_str()) != caller {
            out.push(Target::Resolved(q.clone()));
        }
    }
    for q in by_name {
        if !resolved_set.contains(&q) && Some(q.as_str()) != caller {
            out.push(Target::ByName(q));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::model::{FileContext, FileRole};
    use std::path::PathBuf;

    fn python(path: &str, module: &[&str], source: &str) -> ParsedFile {
        crate::code::python::parse(
            FileContext {
                path: PathBuf::from(path),
                language: Language::Python,
                package: module[0].to_owned(),
                module: module.iter().map(|s| (*s).to_owned()).collect(),
                role: FileRole::Library,
            },
            source,
            String::new(),
        )
    }

    fn targets_of(index: &SymbolIndex, file: &ParsedFile, function: &str) -> Vec<Target> {
        let f = file
            .functions
            .iter()
            .find(|f| f.qualified.join(".") == function)
            .expect("function");
        resolve_all(
            index,
            &f.calls,
            &file.context.module,
            f.owner.as_deref(),
            &file.context.package,
            Some(function),
        )
    }

    #[test]
    fn resolves_through_reexports_module_variables_and_bases() {
        let init = python(
            "/l/json/__init__.py",
            &["json"],
            "from .encoder import JSONEncoder\nfrom . import encoder as enc\n\
             def dumps(obj):\n    return _default_encoder.encode(obj)\n\
             def other(obj):\n    enc.helper(obj)\n    unknown_thing.frobnicate()\n    return JSONEncoder().encode(obj)\n\
             _default_encoder = JSONEncoder()\n",
        );
        let encoder = python(
            "/l/json/encoder.py",
            &["json", "encoder"],
            "class Base:\n    def iterencode(self, o):\n        pass\n\
             class JSONEncoder(Base):\n    def __init__(self):\n        pass\n    def encode(self, o):\n        return self.iterencode(o)\n\
             def helper(o):\n    pass\ndef frobnicate():\n    pass\n",
        );
        let files = vec![init, encoder];
        let index = SymbolIndex::build(Language::Python, &files, &[]);
        assert_eq!(
            targets_of(&index, &files[0], "json.dumps"),
            vec![Target::Resolved("json.encoder.JSONEncoder.encode".into())]
        );
        assert_eq!(
            targets_of(&index, &files[0], "json.other"),
            vec![
                Target::Resolved("json.encoder.helper".into()),
                Target::Resolved("json.encoder.JSONEncoder.encode".into()),
                Target::Resolved("json.encoder.JSONEncoder.__init__".into()),
                Target::ByName("json.encoder.frobnicate".into()),
            ]
        );
        // `self.iterencode` is inherited from Base.
        assert_eq!(
            targets_of(&index, &files[1], "json.encoder.JSONEncoder.encode"),
            vec![Target::Resolved("json.encoder.Base.iterencode".into())]
        );
    }

    /// A method called on an untyped value matches by name, but library code
    /// never reaches into the package's tests by name; a test helper may.
    #[test]
    fn library_code_never_calls_into_tests_by_name() {
        let library = python(
            "/l/kit/maps.py",
            &["kit", "maps"],
            "def valmap(d):\n    return d.keys()\n\ndef width(shape):\n    return shape.area()\n",
        );
        let tests = python(
            "/l/kit/tests/test_maps.py",
            &["kit", "tests", "test_maps"],
            "class CustomMapping:\n    def keys(self):\n        pass\n\n\
             class Square:\n    def area(self):\n        pass\n\n\
             def check(m):\n    return m.keys()\n",
        );
        let geometry = python(
            "/l/kit/geometry.py",
            &["kit", "geometry"],
            "class Circle:\n    def area(self):\n        pass\n",
        );
        let files = vec![library, tests, geometry];
        let index = SymbolIndex::build(Language::Python, &files, &[]);
        assert_eq!(targets_of(&index, &files[0], "kit.maps.valmap"), vec![]);
        assert_eq!(
            targets_of(&index, &files[0], "kit.maps.width"),
            vec![Target::ByName("kit.geometry.Circle.area".into())]
        );
        assert_eq!(
            targets_of(&index, &files[1], "kit.tests.test_maps.check"),
            vec![Target::ByName(
                "kit.tests.test_maps.CustomMapping.keys".into()
            )]
        );
    }

    /// SciPy's shape: a package re-exports compiled modules (not parsed) and parsed
    /// ones with `from x import *`, and a submodule imports a compiled one by name.
    /// A missing name must fail at once instead of re-reading the compiled
    /// module's path through every glob up to MAX_HOPS deep (20^12 paths here).
    #[test]
    fn globs_of_compiled_modules_are_dead_ends() {
        let mut init = String::new();
        for n in 0..20 {
            init.push_str(&format!("from ._compiled{n} import *\n"));
        }
        init.push_str("from ._basic import *\ndef caller():\n    pkg.missing()\n    pkg.defined()\n    _compiled3.thing()\n");
        let init = python("/l/pkg/__init__.py", &["pkg"], &init);
        let basic = python(
            "/l/pkg/_basic.py",
            &["pkg", "_basic"],
            "from . import _compiled0, _compiled1\ndef defined():\n    pass\n",
        );
        let files = vec![init, basic];
        let index = SymbolIndex::build(Language::Python, &files, &[]);
        assert_eq!(
            targets_of(&index, &files[0], "pkg.caller"),
            vec![Target::Resolved("pkg._basic.defined".into())]
        );
    }

    #[test]
    fn known_symbols_from_the_store_take_part() {
        let test = python(
            "/l/test/test_json/test_dump.py",
            &["test", "test_json", "test_dump"],
            "import json\nclass TestDump:\n    def test_dump(self):\n        json.dumps({})\n        self.json.loads('1')\n        self.assertEqual(1, 1)\n",
        );
        let known = [
            KnownSymbol {
                language: Language::Python,
                qualified: "json.dumps".into(),
                kind: SymbolKind::Function,
                owner: None,
            },
            KnownSymbol {
                language: Language::Python,
                qualified: "json.loads".into(),
                kind: SymbolKind::Function,
                owner: None,
            },
            KnownSymbol {
                language: Language::Python,
                qualified: "json".into(),
                kind: SymbolKind::Module,
                owner: None,
            },
        ];
        let files = vec![test];
        let index = SymbolIndex::build(Language::Python, &files, &known);
        assert_eq!(
            targets_of(
                &index,
                &files[0],
                "test.test_json.test_dump.TestDump.test_dump"
            ),
            vec![
                Target::Resolved("json.dumps".into()),
                Target::ByName("json.loads".into()),
            ]
        );
    }
}
