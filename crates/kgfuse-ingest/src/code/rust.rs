//! Rust extraction with tree-sitter-rust.
//!
//! One file becomes a [`ParsedFile`]: its `use` bindings (made absolute), structs,
//! enums, unions and traits, free functions and methods with their raw calls, and
//! the fenced code examples of its doc comments.
//!
//! Naming rules:
//! - items of an inline `mod x { .. }` are qualified under `x`; items nested in a
//!   function body under the function;
//! - an inherent method is `module::Type::m`, with owner `module::Type` (`Type` is
//!   taken from a `use` of the same scope when there is one);
//! - a trait-impl method is `<Type as Trait>::m` beside its type (in the type's module
//!   when the type belongs to this crate, else where the impl is), with owner the
//!   type's path. Generics are stripped, except that a trait's arguments are kept
//!   (`<Value as From<u8>>`) when the same container implements that trait for that
//!   type more than once, so the methods keep distinct names;
//! - `public` means plain `pub` (`pub(crate)` and friends are not public); methods of
//!   a `pub` trait and of trait impls are public;
//! - `code` and `lines` of a definition include its attributes and doc comments.
//!
//! Calls are written as in the source, with `crate`/`self`/`super` made absolute. The
//! prelude constructors `Some`, `Ok` and `Err` are not recorded. A method's receiver
//! type comes from parameter annotations, `let x: T`, `let x = T::f(..)` /
//! `T { .. }` (also through `?`, `.await`, `.unwrap()`); for a call on a call,
//! `T::f(..).m()`, the receiver is the called path `T::f`, whose return type the
//! resolver follows. Macro arguments are re-parsed as an expression list, so
//! `assert_eq!(x.len(), 1)` yields `len`. Doc examples are parsed as a `main` body
//! and their own `use` declarations are applied to their calls.

use super::model::{
    ClassDef, DocExample, FileContext, FunctionDef, Import, Param, ParsedFile, RawCall,
};
use crate::Problem;
use std::collections::{HashMap, HashSet};
use tree_sitter::{Node, Parser};

/// Deepest syntax nesting walked; deeper subtrees (generated code) are skipped.
const MAX_DEPTH: usize = 256;
/// How many macro invocations deep arguments are re-parsed for calls.
const MAX_MACRO_DEPTH: usize = 3;
/// Prelude constructors that look like calls but are never API calls.
const CONSTRUCTORS: [&str; 4] = ["Some", "Ok", "Err", "Self"];
/// Item kinds that become definitions of their own, so a body walk skips them.
const DEFINITIONS: [&str; 4] = ["function_item", "impl_item", "trait_item", "mod_item"];

/// Parses one Rust file.
pub(crate) fn parse(context: FileContext, source: &str, content_hash: String) -> ParsedFile {
    let mut parsed = ParsedFile::empty(context, content_hash);
    let mut parser = Parser::new();
    let tree = parser
        .set_language(&tree_sitter_rust::LANGUAGE.into())
        .ok()
        .and_then(|()| parser.parse(source, None));
    let Some(tree) = tree else {
        parsed.problems.push(Problem {
            path: parsed.context.path.clone(),
            line: None,
            message: "tree-sitter-rust could not parse the file".to_owned(),
        });
        return parsed;
    };
    let root = tree.root_node();
    if root.has_error() {
        parsed.problems.push(Problem {
            path: parsed.context.path.clone(),
            line: Some(first_error_line(root).unwrap_or(1)),
            message: "syntax error".to_owned(),
        });
    }

    let mut extractor = Extractor::new(source, parser, parsed.context.package.clone());
    let scope = Scope::module(parsed.context.module.clone());
    let module_doc = extractor.walk_items(root, &scope, 0);
    parsed.module_doc = doc_text(&module_doc);
    extractor.examples_from(&module_doc, &scope.prefix, &scope.module);
    extractor.add_trait_bases();

    parsed.inline_modules = extractor.inline_modules;
    parsed.imports = extractor.imports;
    parsed.classes = extractor.classes;
    parsed.functions = extractor.functions;
    parsed.examples = extractor.examples;
    parsed
}

/// Where items are being defined.
#[derive(Debug, Clone)]
struct Scope {
    /// Module that `self::` and `super::` are relative to.
    module: Vec<String>,
    /// Qualified parent of the items defined here (module, type, trait, function).
    prefix: Vec<String>,
    /// Type or trait owning the functions defined here.
    owner: Option<Vec<String>>,
    /// Visibility of every function defined here, when it is not their own `pub`.
    fixed_public: Option<bool>,
    /// Generic type parameters in scope (never a receiver type).
    generics: Vec<String>,
}

impl Scope {
    /// The scope of a module's own items.
    fn module(path: Vec<String>) -> Self {
        Self {
            module: path.clone(),
            prefix: path,
            owner: None,
            fixed_public: None,
            generics: Vec::new(),
        }
    }

    /// The scope of items nested inside the function `qualified`.
    fn function_body(&self, qualified: Vec<String>) -> Self {
        Self {
            module: self.module.clone(),
            ..Self::module(qualified)
        }
    }
}

/// One line of a doc comment, markers stripped, with its 1-based line in the file.
#[derive(Debug, Clone)]
struct DocLine {
    line: usize,
    text: String,
}

/// Walks a syntax tree and collects definitions.
struct Extractor<'s> {
    src: &'s str,
    package: String,
    /// Reused to parse doc examples and macro arguments.
    parser: Parser,
    inline_modules: Vec<Vec<String>>,
    imports: Vec<Import>,
    classes: Vec<ClassDef>,
    functions: Vec<FunctionDef>,
    examples: Vec<DocExample>,
    /// `(type, trait)` of every trait impl, to list the traits as the type's bases.
    trait_impls: Vec<(Vec<String>, Vec<String>)>,
}

impl<'s> Extractor<'s> {
    fn new(src: &'s str, parser: Parser, package: String) -> Self {
        Self {
            src,
            package,
            parser,
            inline_modules: Vec::new(),
            imports: Vec::new(),
            classes: Vec::new(),
            functions: Vec::new(),
            examples: Vec::new(),
            trait_impls: Vec::new(),
        }
    }

    /// Extracts the items of a source file, declaration list or block, and returns
    /// the container's inner doc lines (`//!`, `#![doc = ..]`).
    fn walk_items(&mut self, container: Node, scope: &Scope, depth: usize) -> Vec<DocLine> {
        if depth > MAX_DEPTH {
            return Vec::new();
        }
        let children = named_children(container);
        // `use` first, so impls can look up the types they name.
        for child in children.iter().filter(|c| c.kind() == "use_declaration") {
            self.use_declaration(*child, scope);
        }
        let repeated = repeated_trait_impls(&children, self.src);
        let mut inner = Vec::new();
        let mut pending = Vec::new();
        for child in children {
            match child.kind() {
                "line_comment" | "block_comment" => {
                    if child.child_by_field_name("inner").is_some() {
                        inner.push(child);
                    } else if child.child_by_field_name("outer").is_some() {
                        pending.push(child);
                    }
                }
                "attribute_item" => pending.push(child),
                "inner_attribute_item" => inner.push(child),
                _ => {
                    self.item(child, &pending, scope, &repeated, depth);
                    pending.clear();
                }
            }
        }
        doc_lines(&inner, self.src, true)
    }

    /// Extracts one item; `pending` are the attributes and doc comments before it.
    fn item(
        &mut self,
        node: Node,
        pending: &[Node],
        scope: &Scope,
        repeated: &HashSet<(String, String)>,
        depth: usize,
    ) {
        let docs = doc_lines(pending, self.src, false);
        let first = pending.first().copied().unwrap_or(node);
        match node.kind() {
            "function_item" | "function_signature_item" => {
                self.function(node, first, pending, &docs, scope, depth);
            }
            "struct_item" | "enum_item" | "union_item" | "trait_item" => {
                self.class(node, first, &docs, scope, depth);
            }
            "impl_item" => self.impl_block(node, scope, repeated, depth),
            "mod_item" => {
                let Some(name) = field_text(node, "name", self.src) else {
                    return;
                };
                let path = extended(&scope.prefix, name);
                let mut docs = docs;
                if let Some(body) = node.child_by_field_name("body") {
                    self.inline_modules.push(path.clone());
                    docs.extend(self.walk_items(body, &Scope::module(path.clone()), depth + 1));
                }
                self.examples_from(&docs, &path, &path);
            }
            "use_declaration" => {}
            _ => {
                self.examples_from(&docs, &scope.prefix, &scope.module);
                self.nested_items(node, scope, depth + 1);
            }
        }
    }

    /// Extracts items declared in blocks somewhere below `node`.
    fn nested_items(&mut self, node: Node, scope: &Scope, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        for child in named_children(node) {
            if child.kind() == "block" {
                self.walk_items(child, scope, depth + 1);
            } else {
                self.nested_items(child, scope, depth + 1);
            }
        }
    }

    /// Records the bindings of a `use` declaration.
    fn use_declaration(&mut self, node: Node, scope: &Scope) {
        let Some(argument) = node.child_by_field_name("argument") else {
            return;
        };
        let mut bindings = Vec::new();
        use_bindings(argument, self.src, &[], &mut bindings, 0);
        for (alias, target) in bindings {
            let target = absolute(&self.package, &scope.module, target);
            if !target.is_empty() {
                self.imports.push(Import {
                    scope: scope.prefix.clone(),
                    alias,
                    target,
                });
            }
        }
    }

    /// Extracts a struct, enum, union or trait (with the trait's methods).
    fn class(&mut self, node: Node, first: Node, docs: &[DocLine], scope: &Scope, depth: usize) {
        let Some(name) = field_text(node, "name", self.src) else {
            return;
        };
        let qualified = extended(&scope.prefix, name);
        let kind = match node.kind() {
            "struct_item" => "struct",
            "enum_item" => "enum",
            "union_item" => "union",
            _ => "trait",
        };
        let bases = node
            .child_by_field_name("bounds")
            .map(named_children)
            .unwrap_or_default()
            .into_iter()
            .map(|bound| match bound.child_by_field_name("type") {
                Some(inner) if bound.kind() == "higher_ranked_trait_bound" => inner,
                _ => bound,
            })
            .filter(|bound| !matches!(bound.kind(), "lifetime" | "removed_trait_bound"))
            .map(|bound| absolute(&self.package, &scope.module, path_segments(bound, self.src)))
            .filter(|path| !path.is_empty())
            .collect();
        let public = is_pub(node, self.src);
        self.classes.push(ClassDef {
            qualified: qualified.clone(),
            kind,
            bases,
            doc: doc_text(docs),
            code: span_text(first, node, self.src),
            lines: span_lines(first, node),
            public,
        });
        self.examples_from(docs, &qualified, &scope.module);
        if let Some(body) = node.child_by_field_name("body").filter(|_| kind == "trait") {
            let methods = Scope {
                module: scope.module.clone(),
                prefix: qualified.clone(),
                owner: Some(qualified),
                fixed_public: Some(public),
                generics: type_parameter_names(node, self.src),
            };
            self.walk_items(body, &methods, depth + 1);
        }
    }

    /// Extracts the methods of an `impl` block.
    fn impl_block(
        &mut self,
        node: Node,
        scope: &Scope,
        repeated: &HashSet<(String, String)>,
        depth: usize,
    ) {
        let (Some(self_type), Some(body)) = (
            node.child_by_field_name("type"),
            node.child_by_field_name("body"),
        ) else {
            return;
        };
        let type_path = path_segments(self_type, self.src);
        let type_name = type_path
            .last()
            .cloned()
            .unwrap_or_else(|| collapse(text(self_type, self.src)));
        let owner = self.owner_path(&type_path, &type_name, scope);
        let (prefix, fixed_public) = match node.child_by_field_name("trait") {
            None => (owner.clone(), None),
            Some(trait_node) => {
                let trait_path = path_segments(trait_node, self.src);
                let mut shown = trait_path.last().cloned().unwrap_or_default();
                if repeated.contains(&(type_name.clone(), shown.clone()))
                    && let Some(arguments) = trait_node.child_by_field_name("type_arguments")
                {
                    shown.push_str(&collapse(text(arguments, self.src)));
                }
                let in_crate = owner.len() > 1 && owner.first() == Some(&self.package);
                let anchor = match owner.split_last() {
                    Some((_, parent)) if in_crate => parent.to_vec(),
                    _ => scope.prefix.clone(),
                };
                let trait_path = absolute(&self.package, &scope.module, trait_path);
                self.trait_impls.push((owner.clone(), trait_path));
                (
                    extended(&anchor, &format!("<{type_name} as {shown}>")),
                    Some(true),
                )
            }
        };
        let methods = Scope {
            module: scope.module.clone(),
            prefix,
            owner: Some(owner),
            fixed_public,
            generics: type_parameter_names(node, self.src),
        };
        self.walk_items(body, &methods, depth + 1);
    }

    /// Qualified path of an impl's self type: through a `use` of the same scope when
    /// there is one, else in the current scope (or absolute, when written as a path).
    fn owner_path(&self, type_path: &[String], type_name: &str, scope: &Scope) -> Vec<String> {
        let Some((first, rest)) = type_path.split_first() else {
            return extended(&scope.prefix, type_name);
        };
        let imported = self
            .imports
            .iter()
            .find(|import| import.scope == scope.prefix && &import.alias == first);
        match imported {
            Some(import) => import.target.iter().chain(rest).cloned().collect(),
            None if rest.is_empty() => extended(&scope.prefix, first),
            None => absolute(&self.package, &scope.module, type_path.to_vec()),
        }
    }

    /// Extracts a function or method (and the items nested in its body).
    fn function(
        &mut self,
        node: Node,
        first: Node,
        pending: &[Node],
        docs: &[DocLine],
        scope: &Scope,
        depth: usize,
    ) {
        let Some(name) = field_text(node, "name", self.src) else {
            return;
        };
        let qualified = extended(&scope.prefix, name);
        let mut generics = scope.generics.clone();
        generics.extend(type_parameter_names(node, self.src));
        let parameters = named_children_of(node, "parameters");
        let body = node.child_by_field_name("body");
        let calls = match body {
            Some(body) => {
                let mut calls = Calls::new(&mut self.parser, &self.package, &scope.module, true);
                calls.generics = generics;
                calls.bind_parameters(&parameters, self.src);
                calls.walk(body, self.src, 0);
                calls.found
            }
            None => Vec::new(),
        };
        let header_end = body.map_or(node.end_byte(), |body| body.start_byte());
        let header = self.src.get(node.start_byte()..header_end).unwrap_or("");
        let is_test = pending
            .iter()
            .filter(|node| node.kind() == "attribute_item")
            .any(|attribute| is_test_attribute(*attribute, self.src));
        self.functions.push(FunctionDef {
            qualified: qualified.clone(),
            owner: scope.owner.clone(),
            signature: collapse(header)
                .trim_end_matches([';', ',', ' '])
                .to_owned(),
            params: params(&parameters, self.src),
            returns: field_text(node, "return_type", self.src).map(collapse),
            doc: doc_text(docs),
            code: span_text(first, node, self.src),
            lines: span_lines(first, node),
            calls,
            is_test,
            public: scope.fixed_public.unwrap_or_else(|| is_pub(node, self.src)),
        });
        self.examples_from(docs, &qualified, &scope.module);
        if let Some(body) = body {
            self.walk_items(body, &scope.function_body(qualified), depth + 1);
        }
    }

    /// Records the Rust code blocks of `docs` as examples of `documented`.
    fn examples_from(&mut self, docs: &[DocLine], documented: &[String], module: &[String]) {
        for (line, code) in rust_blocks(docs) {
            let calls = self.example_calls(&code, module);
            self.examples.push(DocExample {
                documented: documented.to_vec(),
                code,
                calls,
                line,
            });
        }
    }

    /// Calls anywhere in an example, with the example's own `use` bindings applied.
    fn example_calls(&mut self, code: &str, module: &[String]) -> Vec<RawCall> {
        let wrapped = if code.contains("fn main") {
            code.to_owned()
        } else {
            format!("fn main() {{\n{code}\n}}")
        };
        let Some(tree) = self.parser.parse(&wrapped, None) else {
            return Vec::new();
        };
        let mut uses = Vec::new();
        collect_uses(tree.root_node(), &wrapped, &mut uses, 0);
        let aliases: HashMap<String, Vec<String>> = uses
            .into_iter()
            .filter(|(alias, _)| alias != "*")
            .map(|(alias, target)| (alias, absolute(&self.package, module, target)))
            .collect();
        let mut calls = Calls::new(&mut self.parser, &self.package, module, false);
        calls.walk(tree.root_node(), &wrapped, 0);
        let mut found: Vec<RawCall> = Vec::new();
        for call in calls.found {
            let call = match call {
                RawCall::Path(path) => RawCall::Path(aliased(path, &aliases)),
                RawCall::TypedMethod { receiver, name } => RawCall::TypedMethod {
                    receiver: aliased(receiver, &aliases),
                    name,
                },
                other => other,
            };
            if !found.contains(&call) {
                found.push(call);
            }
        }
        found
    }

    /// Lists each trait implemented in this file among the bases of its type.
    fn add_trait_bases(&mut self) {
        for (owner, trait_path) in &self.trait_impls {
            if trait_path.is_empty() {
                continue;
            }
            let class = self.classes.iter_mut().find(|c| &c.qualified == owner);
            if let Some(class) = class
                && !class.bases.contains(trait_path)
            {
                class.bases.push(trait_path.clone());
            }
        }
    }
}

/// What a local variable is known to hold.
#[derive(Debug, Clone)]
enum Known {
    /// `Self`: its methods are the enclosing type's.
    SelfType,
    /// A type, as an absolute-where-possible path.
    Path(Vec<String>),
}

/// Collects the raw calls of one body, inferring local variable types on the way.
struct Calls<'a> {
    parser: &'a mut Parser,
    package: &'a str,
    module: &'a [String],
    /// Generic parameters in scope: a variable of such a type has no known receiver.
    generics: Vec<String>,
    vars: HashMap<String, Known>,
    found: Vec<RawCall>,
    macro_depth: usize,
    /// Skip nested functions, impls, traits and modules (they are definitions of
    /// their own); examples walk everything.
    skip_definitions: bool,
}

impl<'a> Calls<'a> {
    fn new(
        parser: &'a mut Parser,
        package: &'a str,
        module: &'a [String],
        skip_definitions: bool,
    ) -> Self {
        Self {
            parser,
            package,
            module,
            generics: Vec::new(),
            vars: HashMap::new(),
            found: Vec::new(),
            macro_depth: 0,
            skip_definitions,
        }
    }

    /// Types parameters by their annotations.
    fn bind_parameters(&mut self, parameters: &[Node], src: &str) {
        for parameter in parameters.iter().filter(|p| p.kind() == "parameter") {
            let pattern = parameter.child_by_field_name("pattern");
            let known = parameter
                .child_by_field_name("type")
                .and_then(|ty| self.known_type(ty, src));
            if let (Some(pattern), Some(known)) =
                (pattern.filter(|p| p.kind() == "identifier"), known)
            {
                self.vars.insert(text(pattern, src).to_owned(), known);
            }
        }
    }

    /// Walks `node`, recording calls in evaluation order (arguments before the call).
    fn walk(&mut self, node: Node, src: &str, depth: usize) {
        if depth > MAX_DEPTH || (self.skip_definitions && DEFINITIONS.contains(&node.kind())) {
            return;
        }
        match node.kind() {
            "let_declaration" => {
                for field in ["value", "alternative"] {
                    if let Some(child) = node.child_by_field_name(field) {
                        self.walk(child, src, depth + 1);
                    }
                }
                self.bind_let(node, src);
            }
            "macro_invocation" => self.walk_macro(node, src),
            _ => {
                for child in named_children(node) {
                    self.walk(child, src, depth + 1);
                }
                let call = match node.kind() {
                    "call_expression" => node
                        .child_by_field_name("function")
                        .and_then(|function| self.call_of(function, src)),
                    _ => None,
                };
                if let Some(call) = call.filter(|call| !self.found.contains(call)) {
                    self.found.push(call);
                }
            }
        }
    }

    /// The call a `call_expression`'s function stands for.
    fn call_of(&self, function: Node, src: &str) -> Option<RawCall> {
        match function.kind() {
            "identifier" => {
                let name = text(function, src);
                (!CONSTRUCTORS.contains(&name)).then(|| RawCall::Path(vec![name.to_owned()]))
            }
            "scoped_identifier" => {
                let path = path_segments(function, src);
                match path.as_slice() {
                    [] => None,
                    [first, name] if first == "Self" => Some(RawCall::SelfMethod(name.clone())),
                    _ => Some(RawCall::Path(absolute(self.package, self.module, path))),
                }
            }
            "generic_function" => self.call_of(function.child_by_field_name("function")?, src),
            "field_expression" => {
                let field = function
                    .child_by_field_name("field")
                    .filter(|field| field.kind() == "field_identifier")?;
                let name = text(field, src).to_owned();
                let value = function.child_by_field_name("value")?;
                Some(match value.kind() {
                    "self" => RawCall::SelfMethod(name),
                    "identifier" => match self.vars.get(text(value, src)) {
                        Some(Known::SelfType) => RawCall::SelfMethod(name),
                        Some(Known::Path(receiver)) => RawCall::TypedMethod {
                            receiver: receiver.clone(),
                            name,
                        },
                        None => RawCall::Method(name),
                    },
                    // `Type::f(..).name(..)`: the resolver follows `f`'s return type.
                    "call_expression" => match self.callee(value, src) {
                        Some(receiver) => RawCall::TypedMethod { receiver, name },
                        None => RawCall::Method(name),
                    },
                    _ => RawCall::Method(name),
                })
            }
            _ => None,
        }
    }

    /// The absolute path of the function a call expression calls, when it is a plain
    /// path (not `Self::..`, a method or a closure).
    fn callee(&self, call: Node, src: &str) -> Option<Vec<String>> {
        let mut function = call.child_by_field_name("function")?;
        if function.kind() == "generic_function" {
            function = function.child_by_field_name("function")?;
        }
        if !matches!(function.kind(), "identifier" | "scoped_identifier") {
            return None;
        }
        let path = path_segments(function, src);
        let head = path.first()?;
        if CONSTRUCTORS.contains(&head.as_str()) {
            return None;
        }
        Some(absolute(self.package, self.module, path))
    }

    /// Binds (or forgets) the variable of a `let` by its annotation or value.
    fn bind_let(&mut self, node: Node, src: &str) {
        let Some(pattern) = node.child_by_field_name("pattern") else {
            return;
        };
        let pattern = match pattern.kind() {
            "mut_pattern" => named_children(pattern)
                .into_iter()
                .find(|p| p.kind() == "identifier"),
            "identifier" => Some(pattern),
            _ => None,
        };
        let Some(name) = pattern.map(|p| text(p, src).to_owned()) else {
            return;
        };
        let known = match node.child_by_field_name("type") {
            Some(ty) => self.known_type(ty, src),
            None => node
                .child_by_field_name("value")
                .and_then(|value| self.inferred(value, src, 0)),
        };
        match known {
            Some(known) => self.vars.insert(name, known),
            None => self.vars.remove(&name),
        };
    }

    /// The type a type annotation names, unless primitive or generic.
    fn known_type(&self, ty: Node, src: &str) -> Option<Known> {
        let mut inner = ty;
        while matches!(inner.kind(), "reference_type" | "pointer_type") {
            inner = inner.child_by_field_name("type")?;
        }
        if inner.kind() == "primitive_type" {
            return None;
        }
        self.known_path(path_segments(inner, src))
    }

    /// A type path as a [`Known`].
    fn known_path(&self, path: Vec<String>) -> Option<Known> {
        match path.as_slice() {
            [] => None,
            [single] if single == "Self" => Some(Known::SelfType),
            [single] if self.generics.contains(single) => None,
            _ => Some(Known::Path(absolute(self.package, self.module, path))),
        }
    }

    /// The type of `Type::f(..)`, `Type { .. }`, `Type::f(..)?`, `Type::f(..).unwrap()`.
    fn inferred(&self, value: Node, src: &str, depth: usize) -> Option<Known> {
        if depth > MAX_DEPTH {
            return None;
        }
        match value.kind() {
            "call_expression" => {
                let function = value.child_by_field_name("function")?;
                if function.kind() == "field_expression" {
                    let method = field_text(function, "field", src)?;
                    return matches!(method, "unwrap" | "expect")
                        .then(|| function.child_by_field_name("value"))
                        .flatten()
                        .and_then(|receiver| self.inferred(receiver, src, depth + 1));
                }
                let mut path = path_segments(function, src);
                path.pop();
                let type_name = path.last()?;
                if type_name.starts_with(char::is_uppercase) {
                    self.known_path(path)
                } else {
                    None
                }
            }
            "struct_expression" => {
                self.known_path(path_segments(value.child_by_field_name("name")?, src))
            }
            "try_expression" | "await_expression" | "parenthesized_expression" => {
                self.inferred(value.named_child(0)?, src, depth + 1)
            }
            _ => None,
        }
    }

    /// Walks a macro's arguments when they parse as an expression list.
    fn walk_macro(&mut self, node: Node, src: &str) {
        if self.macro_depth >= MAX_MACRO_DEPTH {
            return;
        }
        let Some(tokens) = named_children(node)
            .into_iter()
            .find(|child| child.kind() == "token_tree")
        else {
            return;
        };
        let tokens = text(tokens, src);
        let inner = tokens.get(1..tokens.len().saturating_sub(1)).unwrap_or("");
        if inner.trim().is_empty() {
            return;
        }
        let wrapped = format!("fn m() {{ ({inner}); }}");
        let Some(tree) = self.parser.parse(&wrapped, None) else {
            return;
        };
        let root = tree.root_node();
        let body = root
            .named_child(0)
            .and_then(|function| function.child_by_field_name("body"));
        if let Some(body) = body.filter(|_| !root.has_error()) {
            self.macro_depth += 1;
            self.walk(body, &wrapped, 0);
            self.macro_depth -= 1;
        }
    }
}

/// Text of a node (empty if the range is not valid UTF-8 boundaries).
fn text<'s>(node: Node, src: &'s str) -> &'s str {
    src.get(node.byte_range()).unwrap_or("")
}

/// Text of a node's field.
fn field_text<'s>(node: Node, field: &str, src: &'s str) -> Option<&'s str> {
    node.child_by_field_name(field)
        .map(|child| text(child, src))
}

/// Text from `first` (an attribute or doc comment, or the item) to the end of `node`.
fn span_text(first: Node, node: Node, src: &str) -> String {
    src.get(first.start_byte()..node.end_byte())
        .unwrap_or("")
        .to_owned()
}

/// 1-based inclusive lines from `first` to the end of `node`.
fn span_lines(first: Node, node: Node) -> (usize, usize) {
    (first.start_position().row + 1, node.end_position().row + 1)
}

/// Named children of a node.
fn named_children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// Named children of a node's field (empty when the field is absent).
fn named_children_of<'t>(node: Node<'t>, field: &str) -> Vec<Node<'t>> {
    node.child_by_field_name(field)
        .map(named_children)
        .unwrap_or_default()
}

/// `segments` with `last` appended.
fn extended(segments: &[String], last: &str) -> Vec<String> {
    let mut path = segments.to_vec();
    path.push(last.to_owned());
    path
}

/// Whitespace runs collapsed to one space, no space inside parentheses, no trailing
/// comma before `)`.
fn collapse(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace("( ", "(")
        .replace(" )", ")")
        .replace(",)", ")")
}

/// Has plain `pub` visibility.
fn is_pub(node: Node, src: &str) -> bool {
    named_children(node)
        .iter()
        .any(|child| child.kind() == "visibility_modifier" && text(*child, src) == "pub")
}

/// `#[test]`, `#[tokio::test]`, `#[rstest]`: an attribute whose path ends in `test`.
fn is_test_attribute(attribute_item: Node, src: &str) -> bool {
    named_children(attribute_item)
        .into_iter()
        .find(|child| child.kind() == "attribute")
        .and_then(|attribute| attribute.named_child(0))
        .map(|path| path_segments(path, src))
        .is_some_and(|path| path.last().is_some_and(|last| last.ends_with("test")))
}

/// Names of the generic type parameters of an item.
fn type_parameter_names(node: Node, src: &str) -> Vec<String> {
    named_children_of(node, "type_parameters")
        .into_iter()
        .filter(|parameter| parameter.kind() == "type_parameter")
        .filter_map(|parameter| field_text(parameter, "name", src))
        .map(str::to_owned)
        .collect()
}

/// Parameters, receivers excluded.
fn params(parameters: &[Node], src: &str) -> Vec<Param> {
    parameters
        .iter()
        .filter(|parameter| parameter.kind() == "parameter")
        .filter(|parameter| {
            parameter
                .child_by_field_name("pattern")
                .is_some_and(|pattern| pattern.kind() != "self")
        })
        .enumerate()
        .map(|(position, parameter)| Param {
            name: field_text(*parameter, "pattern", src)
                .map(collapse)
                .unwrap_or_default(),
            annotation: field_text(*parameter, "type", src).map(collapse),
            default: None,
            position,
        })
        .collect()
}

/// Segments of a path or type, generics and references stripped
/// (`&'a mut a::Foo<T>` -> `a::Foo`, `<T as Trait>` -> `Trait`); empty when the node
/// is not a path. Iterative, so absurdly long paths cannot exhaust the stack.
fn path_segments(node: Node, src: &str) -> Vec<String> {
    let mut reversed = Vec::new();
    let mut current = Some(node);
    while let Some(node) = current {
        let inner = |field: &str| node.child_by_field_name(field);
        current = match node.kind() {
            "scoped_identifier" | "scoped_type_identifier" => {
                if let Some(name) = inner("name") {
                    reversed.push(text(name, src).to_owned());
                }
                inner("path")
            }
            "generic_type" | "generic_type_with_turbofish" | "reference_type" | "pointer_type" => {
                inner("type")
            }
            "generic_function" => inner("function"),
            "dynamic_type" | "abstract_type" => inner("trait"),
            "bracketed_type" => match node.named_child(0) {
                Some(qualified) if qualified.kind() == "qualified_type" => {
                    qualified.child_by_field_name("alias")
                }
                other => other,
            },
            "identifier" | "type_identifier" | "field_identifier" | "primitive_type" | "crate"
            | "self" | "super" | "metavariable" => {
                reversed.push(text(node, src).to_owned());
                None
            }
            _ => None,
        };
    }
    reversed.reverse();
    reversed
}

/// Makes a path absolute: `crate` -> the package, `self` -> `module`, each `super` ->
/// one module up. Other paths are returned as written.
fn absolute(package: &str, module: &[String], path: Vec<String>) -> Vec<String> {
    let mut base: Option<Vec<String>> = None;
    let mut rest = path.into_iter().peekable();
    while let Some(segment) = rest.peek() {
        match segment.as_str() {
            "crate" | "$crate" if base.is_none() => base = Some(vec![package.to_owned()]),
            "self" if base.is_none() => base = Some(module.to_vec()),
            "super" => {
                let parent = base.get_or_insert_with(|| module.to_vec());
                if parent.len() > 1 {
                    parent.pop();
                }
            }
            _ => break,
        }
        rest.next();
    }
    base.unwrap_or_default().into_iter().chain(rest).collect()
}

/// `(alias, target as written)` for each name a `use` argument binds; globs bind `*`.
fn use_bindings(
    node: Node,
    src: &str,
    prefix: &[String],
    out: &mut Vec<(String, Vec<String>)>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let joined = |path: Option<Node>| {
        let mut target = prefix.to_vec();
        target.extend(
            path.map(|path| path_segments(path, src))
                .unwrap_or_default(),
        );
        if target.last().is_some_and(|last| last == "self") {
            target.pop();
        }
        target
    };
    match node.kind() {
        "use_list" => {
            for child in named_children(node) {
                use_bindings(child, src, prefix, out, depth + 1);
            }
        }
        "scoped_use_list" => {
            if let Some(list) = node.child_by_field_name("list") {
                let prefix = joined(node.child_by_field_name("path"));
                use_bindings(list, src, &prefix, out, depth + 1);
            }
        }
        "use_as_clause" => {
            if let Some(alias) = field_text(node, "alias", src) {
                out.push((alias.to_owned(), joined(node.child_by_field_name("path"))));
            }
        }
        "use_wildcard" => out.push(("*".to_owned(), joined(node.named_child(0)))),
        _ => {
            if path_segments(node, src).is_empty() {
                return; // a comment inside a list
            }
            let target = joined(Some(node));
            if let Some(alias) = target
                .last()
                .filter(|a| !matches!(a.as_str(), "crate" | "super"))
            {
                out.push((alias.clone(), target));
            }
        }
    }
}

/// The bindings of every `use` declaration below `node`.
fn collect_uses(node: Node, src: &str, out: &mut Vec<(String, Vec<String>)>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    if node.kind() == "use_declaration" {
        if let Some(argument) = node.child_by_field_name("argument") {
            use_bindings(argument, src, &[], out, depth);
        }
        return;
    }
    for child in named_children(node) {
        collect_uses(child, src, out, depth + 1);
    }
}

/// `path` with its first segment replaced by what a local `use` binds it to.
fn aliased(path: Vec<String>, aliases: &HashMap<String, Vec<String>>) -> Vec<String> {
    match path
        .split_first()
        .and_then(|(first, rest)| Some((aliases.get(first)?, rest)))
    {
        Some((target, rest)) => target.iter().chain(rest).cloned().collect(),
        None => path,
    }
}

/// `(type, trait)` names implemented more than once among `items`.
fn repeated_trait_impls(items: &[Node], src: &str) -> HashSet<(String, String)> {
    let mut counts: HashMap<(String, String), usize> = HashMap::new();
    for item in items.iter().filter(|item| item.kind() == "impl_item") {
        let names = item
            .child_by_field_name("trait")
            .zip(item.child_by_field_name("type"));
        if let Some((trait_node, type_node)) = names {
            let type_name = path_segments(type_node, src)
                .pop()
                .unwrap_or_else(|| collapse(text(type_node, src)));
            let trait_name = path_segments(trait_node, src).pop().unwrap_or_default();
            *counts.entry((type_name, trait_name)).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(key, _)| key)
        .collect()
}

/// 1-based line of the first `ERROR` or `MISSING` node.
fn first_error_line(root: Node) -> Option<usize> {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.is_error() || node.is_missing() {
            return Some(node.start_position().row + 1);
        }
        if node.has_error() && cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return None;
            }
        }
    }
}

/// Doc lines of the outer (or `inner`) doc comments and `doc` attributes among
/// `nodes`, markers stripped and the comments' common indentation removed
/// (`#[doc = ".."]` strings are kept as written).
fn doc_lines(nodes: &[Node], src: &str, inner: bool) -> Vec<DocLine> {
    let (marker, attribute_kind) = if inner {
        ("inner", "inner_attribute_item")
    } else {
        ("outer", "attribute_item")
    };
    // Each line, and whether it comes from a comment (rather than an attribute).
    let mut lines: Vec<(DocLine, bool)> = Vec::new();
    for node in nodes {
        let row = node.start_position().row + 1;
        let comment = matches!(node.kind(), "line_comment" | "block_comment");
        let body = if comment && node.child_by_field_name(marker).is_some() {
            field_text(*node, "doc", src).unwrap_or("").to_owned()
        } else if node.kind() == attribute_kind
            && let Some(body) = doc_attribute(*node, src)
        {
            body
        } else {
            continue;
        };
        let starred = node.kind() == "block_comment"
            && body
                .lines()
                .skip(1)
                .filter(|line| !line.trim().is_empty())
                .all(|line| line.trim_start().starts_with('*'));
        for (index, line) in body.trim_end_matches(['\n', '\r']).split('\n').enumerate() {
            let line = line.trim_end();
            let line = match line.trim_start().strip_prefix('*') {
                Some(rest) if starred && index > 0 => rest,
                _ => line,
            };
            let text = line.to_owned();
            lines.push((
                DocLine {
                    line: row + index,
                    text,
                },
                comment,
            ));
        }
    }
    let indent = lines
        .iter()
        .filter(|(line, comment)| *comment && !line.text.trim().is_empty())
        .map(|(line, _)| line.text.len() - line.text.trim_start().len())
        .min()
        .unwrap_or(0);
    lines
        .into_iter()
        .map(|(line, comment)| {
            if comment {
                let text = dedented(&line.text, indent).to_owned();
                DocLine { text, ..line }
            } else {
                line
            }
        })
        .collect()
}

/// `text` without up to `width` bytes of leading whitespace.
fn dedented(text: &str, width: usize) -> &str {
    let leading = text.len() - text.trim_start().len();
    text.get(width.min(leading)..)
        .unwrap_or_else(|| text.trim_start())
}

/// The string of a `#[doc = "..."]` attribute.
fn doc_attribute(attribute_item: Node, src: &str) -> Option<String> {
    let attribute = named_children(attribute_item)
        .into_iter()
        .find(|child| child.kind() == "attribute")?;
    let name = attribute.named_child(0)?;
    let value = attribute.child_by_field_name("value")?;
    if text(name, src) != "doc" || !value.kind().ends_with("string_literal") {
        return None;
    }
    let parts = named_children(value);
    let (first, last) = (parts.first()?, parts.last()?);
    src.get(first.start_byte()..last.end_byte())
        .map(str::to_owned)
}

/// Doc lines joined, blank lines at either end dropped; `None` when empty.
fn doc_text(lines: &[DocLine]) -> Option<String> {
    let blank = |line: &&DocLine| line.text.trim().is_empty();
    let start = lines.iter().position(|line| !blank(&line))?;
    let end = lines.iter().rposition(|line| !blank(&line))?;
    let texts: Vec<&str> = lines[start..=end].iter().map(|l| l.text.as_str()).collect();
    Some(texts.join("\n"))
}

/// A fenced code block being read.
struct Fence {
    marker: String,
    indent: usize,
    rust: bool,
    line: usize,
    code: Vec<String>,
}

/// `(fence line, code)` of each Rust code block in doc lines, hidden-line markers
/// (`# `) removed.
fn rust_blocks(lines: &[DocLine]) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<Fence> = None;
    for line in lines {
        let trimmed = line.text.trim_start();
        let indent = line.text.len() - trimmed.len();
        match open.as_mut() {
            None => {
                let fence_char = trimmed.chars().next().filter(|c| matches!(c, '`' | '~'));
                let run =
                    fence_char.map_or(0, |c| trimmed.len() - trimmed.trim_start_matches(c).len());
                if run >= 3 {
                    open = Some(Fence {
                        marker: trimmed[..run].to_owned(),
                        indent,
                        rust: is_rust_info(&trimmed[run..]),
                        line: line.line,
                        code: Vec::new(),
                    });
                }
            }
            Some(fence) => {
                let closes = trimmed
                    .strip_prefix(fence.marker.as_str())
                    .is_some_and(|rest| rest.trim().trim_start_matches(['`', '~']).is_empty());
                if closes {
                    blocks.extend(open.take().and_then(finished_block));
                } else {
                    fence
                        .code
                        .push(unhidden(dedented(&line.text, fence.indent)));
                }
            }
        }
    }
    blocks.extend(open.and_then(finished_block));
    blocks
}

/// The `(line, code)` of a closed fence, if it is Rust and not empty.
fn finished_block(fence: Fence) -> Option<(usize, String)> {
    let code = fence.code.join("\n");
    (fence.rust && !code.trim().is_empty()).then_some((fence.line, code))
}

/// A doc-test line with its hidden-line marker removed (`# x` -> `x`, `##x` -> `#x`).
fn unhidden(line: &str) -> String {
    let trimmed = line.trim_start();
    let indent = &line[..line.len() - trimmed.len()];
    if trimmed == "#" {
        String::new()
    } else if let Some(rest) = trimmed.strip_prefix("# ") {
        format!("{indent}{rest}")
    } else if let Some(rest) = trimmed.strip_prefix("##") {
        format!("{indent}#{rest}")
    } else {
        line.to_owned()
    }
}

/// Whether a fence info string marks Rust code, following rustdoc: untagged and
/// `rust` blocks are Rust, doc-test flags keep them Rust, any other tag (`text`,
/// `sh`, `toml`, ...) does not, and `compile_fail` blocks are skipped.
fn is_rust_info(info: &str) -> bool {
    let mut rust = false;
    let mut other = false;
    let tokens = info
        .split(|c: char| c == ',' || c.is_whitespace())
        .map(|token| token.trim_matches(['{', '}', '.']))
        .filter(|token| !token.is_empty());
    for token in tokens {
        match token {
            "rust" => rust = true,
            "compile_fail" => return false,
            "ignore" | "should_panic" | "no_run" | "test_harness" | "allow_fail"
            | "standalone_crate" => {}
            flag if flag.starts_with("edition") || flag.starts_with("ignore-") => {}
            _ => other = true,
        }
    }
    rust || !other
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::model::{FileRole, Language};
    use std::path::PathBuf;

    /// A file of module `kg::m` in crate `kg`.
    fn context() -> FileContext {
        FileContext {
            path: PathBuf::from("/repo/src/m.rs"),
            language: Language::Rust,
            package: "kg".to_owned(),
            module: vec!["kg".to_owned(), "m".to_owned()],
            role: FileRole::Library,
        }
    }

    fn parsed(source: &str) -> ParsedFile {
        parse(context(), source, "hash".to_owned())
    }

    fn path(qualified: &str) -> Vec<String> {
        qualified.split("::").map(str::to_owned).collect()
    }

    fn function<'p>(file: &'p ParsedFile, qualified: &str) -> &'p FunctionDef {
        let wanted = path(qualified);
        let found = file.functions.iter().find(|f| f.qualified == wanted);
        let names: Vec<String> = file
            .functions
            .iter()
            .map(|f| f.qualified.join("::"))
            .collect();
        found.unwrap_or_else(|| panic!("no function {qualified} among {names:?}"))
    }

    fn import(file: &ParsedFile, alias: &str) -> Vec<String> {
        let found = file.imports.iter().find(|i| i.alias == alias);
        found.map(|i| i.target.clone()).unwrap_or_default()
    }

    #[test]
    fn use_paths_are_made_absolute() {
        let file = parsed(
            "use crate::de::from_str;\nuse self::inner::{A, b::C as D, self};\n\
             use super::sibling::*;\nuse std::collections::{HashMap, hash_map::{Entry}};\n\
             mod tests { use super::*; use super::super::Top; }\n",
        );
        assert_eq!(import(&file, "from_str"), path("kg::de::from_str"));
        assert_eq!(import(&file, "A"), path("kg::m::inner::A"));
        assert_eq!(import(&file, "D"), path("kg::m::inner::b::C"));
        assert_eq!(import(&file, "inner"), path("kg::m::inner"));
        assert_eq!(import(&file, "HashMap"), path("std::collections::HashMap"));
        assert_eq!(
            import(&file, "Entry"),
            path("std::collections::hash_map::Entry")
        );
        assert_eq!(import(&file, "Top"), path("kg::Top"));
        let globs: Vec<_> = file.imports.iter().filter(|i| i.alias == "*").collect();
        assert_eq!(globs.len(), 2);
        assert_eq!(
            (globs[0].scope.clone(), globs[0].target.clone()),
            (path("kg::m"), path("kg::sibling"))
        );
        assert_eq!(
            (globs[1].scope.clone(), globs[1].target.clone()),
            (path("kg::m::tests"), path("kg::m"))
        );
        assert_eq!(file.inline_modules, vec![path("kg::m::tests")]);
        assert!(file.problems.is_empty());
    }

    #[test]
    fn methods_are_qualified_by_type_and_trait() {
        let file = parsed(
            "use crate::value::Value;\n\
             pub struct Local<T>(T);\n\
             impl<T> Local<T> { pub fn new(t: T) -> Self { Self(t) } fn private(&self) {} }\n\
             impl<'a, T> fmt::Display for &'a Local<T> { fn fmt(&self, f: &mut Formatter) -> Result { Ok(()) } }\n\
             impl Serialize for Value { fn serialize(&self) {} }\n\
             impl From<u8> for Local<u8> { fn from(v: u8) -> Self { Local(v) } }\n\
             impl From<u16> for Local<u8> { fn from(v: u16) -> Self { Local(v as u8) } }\n\
             pub trait Shape: Clone + for<'a> Visit<'a> { fn area(&self) -> f64; fn twice(&self) -> f64 { self.area() * 2.0 } }\n",
        );
        let new = function(&file, "kg::m::Local::new");
        assert_eq!(new.owner, Some(path("kg::m::Local")));
        assert!(new.public);
        assert!(!function(&file, "kg::m::Local::private").public);
        let fmt = function(&file, "kg::m::<Local as Display>::fmt");
        assert_eq!(fmt.owner, Some(path("kg::m::Local")));
        assert!(fmt.public);
        let serialize = function(&file, "kg::value::<Value as Serialize>::serialize");
        assert_eq!(serialize.owner, Some(path("kg::value::Value")));
        function(&file, "kg::m::<Local as From<u8>>::from");
        function(&file, "kg::m::<Local as From<u16>>::from");
        let area = function(&file, "kg::m::Shape::area");
        assert_eq!(area.owner, Some(path("kg::m::Shape")));
        assert!(area.public && area.calls.is_empty());
        let twice = function(&file, "kg::m::Shape::twice");
        assert_eq!(twice.calls, vec![RawCall::SelfMethod("area".to_owned())]);

        let shape = file
            .classes
            .iter()
            .find(|c| c.qualified == path("kg::m::Shape"));
        let shape = shape.unwrap_or_else(|| panic!("no Shape"));
        assert_eq!((shape.kind, shape.public), ("trait", true));
        assert_eq!(shape.bases, vec![path("Clone"), path("Visit")]);
        let local = file
            .classes
            .iter()
            .find(|c| c.qualified == path("kg::m::Local"));
        let local = local.unwrap_or_else(|| panic!("no Local"));
        assert_eq!(local.kind, "struct");
        assert_eq!(local.bases, vec![path("fmt::Display"), path("From")]);
    }

    #[test]
    fn signature_params_returns_and_docs() {
        let file = parsed(
            "/// Parses `s`.\n///\n///   Indented.\n#[inline]\npub fn from_str<'a, T>(\n    s: &'a str,\n    mut n: usize,\n) -> Result<T>\nwhere\n    T: de::Deserialize<'a>,\n{\n    todo!()\n}\n\
             struct S;\nimpl S {\n    /** Block\n     * doc. */\n    pub(crate) fn m(&mut self, (a, b): (u8, u8)) {}\n}\n",
        );
        let f = function(&file, "kg::m::from_str");
        assert_eq!(
            f.signature,
            "pub fn from_str<'a, T>(s: &'a str, mut n: usize) -> Result<T> where T: de::Deserialize<'a>"
        );
        let names: Vec<_> = f
            .params
            .iter()
            .map(|p| (p.name.as_str(), p.annotation.as_deref(), p.position))
            .collect();
        assert_eq!(
            names,
            vec![("s", Some("&'a str"), 0), ("n", Some("usize"), 1)]
        );
        assert_eq!(f.returns.as_deref(), Some("Result<T>"));
        assert_eq!(f.doc.as_deref(), Some("Parses `s`.\n\n  Indented."));
        assert_eq!(f.lines, (1, 13));
        assert!(f.code.starts_with("/// Parses") && f.code.ends_with('}'));
        assert!(f.public && !f.is_test && f.owner.is_none());
        let m = function(&file, "kg::m::S::m");
        assert_eq!(m.params.len(), 1);
        assert_eq!(m.params[0].name, "(a, b)");
        assert_eq!(m.doc.as_deref(), Some("Block\ndoc."));
        assert!(!m.public && m.returns.is_none());
    }

    #[test]
    fn test_attributes_mark_tests() {
        let file = parsed(
            "#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn plain() {}\n    \
             #[tokio::test]\n    async fn asynchronous() {}\n    #[rstest]\n    fn case() {}\n    fn helper() {}\n}\n",
        );
        assert!(function(&file, "kg::m::tests::plain").is_test);
        assert!(function(&file, "kg::m::tests::asynchronous").is_test);
        assert!(function(&file, "kg::m::tests::case").is_test);
        assert!(!function(&file, "kg::m::tests::helper").is_test);
    }

    #[test]
    fn calls_of_every_kind() {
        let file = parsed(
            "struct Engine;\nimpl Engine {\n    fn run(&self, cfg: &mut crate::Config, items: Vec<u8>, n: u32) {\n        \
             helper(1);\n        crate::util::go::<u8>();\n        super::up();\n        Self::assoc();\n        \
             self.step();\n        cfg.load();\n        items.push(n.max(1));\n        let map = HashMap::<u8, u8>::new();\n        \
             map.insert(1, 2);\n        let reader = File::open(\"x\").unwrap();\n        reader.read();\n        \
             let same = Self::new();\n        same.stop();\n        let p = Point { x: 1 };\n        p.norm();\n        \
             let map = other();\n        map.get();\n        let v = Some(3);\n        \
             let f = |x| x.finish();\n        assert_eq!(inside(cfg.size()), 1);\n        helper(2);\n        \
             fn nested() { hidden(); }\n    }\n}\n",
        );
        let run = function(&file, "kg::m::Engine::run");
        let typed = |receiver: &str, name: &str| RawCall::TypedMethod {
            receiver: path(receiver),
            name: name.to_owned(),
        };
        let expected = vec![
            RawCall::Path(path("helper")),
            RawCall::Path(path("kg::util::go")),
            RawCall::Path(path("kg::up")),
            RawCall::SelfMethod("assoc".to_owned()),
            RawCall::SelfMethod("step".to_owned()),
            typed("kg::Config", "load"),
            RawCall::Method("max".to_owned()),
            typed("Vec", "push"),
            RawCall::Path(path("HashMap::new")),
            typed("HashMap", "insert"),
            RawCall::Path(path("File::open")),
            typed("File::open", "unwrap"),
            typed("File", "read"),
            RawCall::SelfMethod("new".to_owned()),
            RawCall::SelfMethod("stop".to_owned()),
            typed("Point", "norm"),
            RawCall::Path(path("other")),
            RawCall::Method("get".to_owned()),
            RawCall::Method("finish".to_owned()),
            typed("kg::Config", "size"),
            RawCall::Path(path("inside")),
        ];
        assert_eq!(run.calls, expected);
        let nested = function(&file, "kg::m::Engine::run::nested");
        assert_eq!(nested.calls, vec![RawCall::Path(path("hidden"))]);
    }

    #[test]
    fn doc_examples_are_extracted_with_calls() {
        let file = parsed(
            "//! Module.\n//!\n//! ```\n//! # use kg::m::Parser;\n//! let p = Parser::new();\n//! p.run();\n//! ```\n\
             //!\n//! ```text\n//! not code\n//! ```\n\n\
             /// Adds.\n///\n/// ```no_run\n/// assert_eq!(kg::m::add(1, 2), 3);\n/// ```\npub fn add(a: u8, b: u8) -> u8 { a + b }\n",
        );
        assert_eq!(
            file.module_doc.as_deref().map(|d| d.lines().next()),
            Some(Some("Module."))
        );
        assert_eq!(file.examples.len(), 2);
        let module = &file.examples[1];
        assert_eq!(module.documented, path("kg::m"));
        assert_eq!(module.line, 3);
        assert_eq!(
            module.code,
            "use kg::m::Parser;\nlet p = Parser::new();\np.run();"
        );
        assert_eq!(
            module.calls,
            vec![
                RawCall::Path(path("kg::m::Parser::new")),
                RawCall::TypedMethod {
                    receiver: path("kg::m::Parser"),
                    name: "run".to_owned()
                },
            ]
        );
        let add = &file.examples[0];
        assert_eq!(add.documented, path("kg::m::add"));
        assert_eq!(add.line, 15);
        assert_eq!(add.calls, vec![RawCall::Path(path("kg::m::add"))]);
    }

    #[test]
    fn inner_docs_doc_attributes_and_inline_modules() {
        let file = parsed(
            "/*! Block\n * module doc. */\n#![doc = \"Attr line.\"]\n\
             #[doc = \"Attribute doc.\"]\npub enum E { A }\n\
             mod inline {\n    //! ```\n    //! go();\n    //! ```\n    pub(crate) union U { a: u8 }\n    \
             pub fn f() { fn g() {} }\n}\nmod file;\n",
        );
        assert_eq!(
            file.module_doc.as_deref(),
            Some("Block\nmodule doc.\nAttr line.")
        );
        let e = &file.classes[0];
        assert_eq!(
            (e.kind, e.public, e.doc.as_deref()),
            ("enum", true, Some("Attribute doc."))
        );
        assert_eq!(e.lines, (4, 5));
        let u = &file.classes[1];
        assert_eq!(
            (u.qualified.clone(), u.kind, u.public),
            (path("kg::m::inline::U"), "union", false)
        );
        function(&file, "kg::m::inline::f::g");
        assert_eq!(file.inline_modules, vec![path("kg::m::inline")]);
        assert_eq!(file.examples.len(), 1);
        assert_eq!(file.examples[0].documented, path("kg::m::inline"));
        assert_eq!(file.examples[0].calls, vec![RawCall::Path(path("go"))]);
    }

    #[test]
    fn syntax_errors_are_reported_not_fatal() {
        let file = parsed("pub fn good() { ok(); }\n\nfn broken( { let = ; }\n");
        assert_eq!(file.problems.len(), 1);
        assert_eq!(file.problems[0].message, "syntax error");
        assert_eq!(file.problems[0].line, Some(3));
        assert_eq!(
            function(&file, "kg::m::good").calls,
            vec![RawCall::Path(path("ok"))]
        );
        let garbage = parsed("}}}} impl for <<< fn ::: \u{1F600} \"unterminated");
        assert!(!garbage.problems.is_empty());
    }

    #[test]
    fn deep_nesting_does_not_exhaust_the_stack() {
        let n = 5000;
        let sources = [
            format!("fn f() {{ {}1{} }}", "(".repeat(n), ")".repeat(n)),
            format!("fn f() {{ let x = a{}; }}", ".b()".repeat(n)),
            format!("{}{}", "mod a { ".repeat(n), "}".repeat(n)),
            format!("use a::{}b{};", "{c::".repeat(n), "}".repeat(n)),
            format!("fn f() {{ {}b(); }}", "a::".repeat(n)),
            format!("fn f() {{ x!({}{}); }}", "y!(".repeat(n), ")".repeat(n)),
        ];
        for source in sources {
            let file = parsed(&source);
            assert!(file.problems.is_empty());
        }
    }

    #[test]
    fn real_file_walkdir() {
        let Some(home) = std::env::var_os("HOME") else {
            return;
        };
        let registry = PathBuf::from(home).join(".cargo/registry/src");
        let Ok(indexes) = std::fs::read_dir(registry) else {
            return;
        };
        let file = indexes
            .flatten()
            .map(|index| index.path().join("walkdir-2.5.0/src/lib.rs"))
            .find(|file| file.is_file());
        let Some(source) = file.and_then(|file| std::fs::read_to_string(file).ok()) else {
            return;
        };
        let mut context = context();
        context.package = "walkdir".to_owned();
        context.module = vec!["walkdir".to_owned()];
        let file = parse(context, &source, String::new());
        assert!(file.problems.is_empty(), "{:?}", file.problems);
        assert!(file.module_doc.is_some());
        let new = function(&file, "walkdir::WalkDir::new");
        assert!(new.public && new.doc.is_some());
        assert_eq!(new.owner, Some(path("walkdir::WalkDir")));
        let next = function(&file, "walkdir::<IntoIter as Iterator>::next");
        assert!(!next.calls.is_empty());
        assert!(
            file.classes
                .iter()
                .any(|c| c.qualified == path("walkdir::WalkDir") && c.public)
        );
        assert!(!file.examples.is_empty());
        assert!(
            file.imports
                .iter()
                .any(|i| i.target == path("walkdir::dent::DirEntry"))
        );
    }
}
