//! Python extraction with tree-sitter-python.
//!
//! One pass over the syntax tree collects imports (relative ones made absolute),
//! classes, functions and methods with their parameters and docstrings, doctest
//! examples, and the calls in every function body. Calls are recorded as written;
//! the only inference done here is local: a variable's type is taken from its
//! annotation or from `x = Something(..)`, at function or module level, so that
//! `_default_encoder.encode(..)` can later resolve to `JSONEncoder.encode`.

use super::model::{
    ClassDef, DocExample, FileContext, FileRole, FunctionDef, Import, Param, ParsedFile, RawCall,
};
use crate::Problem;
use std::collections::HashMap;
use tree_sitter::{Node, Parser};

/// Parses one Python file.
pub(crate) fn parse(context: FileContext, source: &str, content_hash: String) -> ParsedFile {
    let mut file = ParsedFile::empty(context, content_hash);
    let Some(tree) = parse_tree(source) else {
        file.problems.push(Problem {
            path: file.context.path.clone(),
            line: None,
            message: "tree-sitter could not parse the file".into(),
        });
        return file;
    };
    let root = tree.root_node();
    if root.has_error() {
        file.problems.push(Problem {
            path: file.context.path.clone(),
            line: first_error_line(root),
            message: "syntax error; definitions around it may be missing".into(),
        });
    }
    let module = file.context.module.clone();
    let is_init = file
        .context
        .path
        .file_name()
        .is_some_and(|n| n == "__init__.py" || n == "__init__.pyi");
    let mut extractor = Extractor {
        source: source.as_bytes(),
        file: &mut file,
        is_init,
        module_types: HashMap::new(),
    };
    extractor.file.module_doc = docstring(root, source.as_bytes());
    if let Some(doc) = extractor.file.module_doc.clone() {
        extractor.doctests(&doc, &module, root.start_position().row + 1);
    }
    // Module-level variable types first, so functions defined above an assignment
    // (`dumps` above `_default_encoder = JSONEncoder(..)`) still see them.
    extractor.collect_module_types(root);
    extractor.visit_block(root, &module, None);
    file
}

fn parse_tree(source: &str) -> Option<tree_sitter::Tree> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .ok()?;
    parser.parse(source, None)
}

/// 1-based line of the first ERROR or MISSING node.
pub(crate) fn first_error_line(root: Node<'_>) -> Option<usize> {
    let mut cursor = root.walk();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.is_error() || node.is_missing() {
            return Some(node.start_position().row + 1);
        }
        if node.has_error() {
            // Visit children in source order: push them reversed.
            let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
            stack.extend(children.into_iter().rev());
        }
    }
    None
}

fn text<'a>(node: Node<'_>, source: &'a [u8]) -> &'a str {
    node.utf8_text(source).unwrap_or_default()
}

/// Collapses runs of whitespace into single spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The docstring of a module, class or function body: its first statement, when
/// that is a string literal.
fn docstring(body: Node<'_>, source: &[u8]) -> Option<String> {
    let mut cursor = body.walk();
    let first = body
        .named_children(&mut cursor)
        .find(|n| n.kind() != "comment")?;
    if first.kind() != "expression_statement" {
        return None;
    }
    let string = first.named_child(0)?;
    let raw = match string.kind() {
        "string" => string_value(string, source),
        "concatenated_string" => {
            let mut c = string.walk();
            string
                .named_children(&mut c)
                .map(|s| string_value(s, source))
                .collect()
        }
        _ => return None,
    };
    let cleaned = clean_docstring(&raw);
    (!cleaned.is_empty()).then_some(cleaned)
}

fn string_value(string: Node<'_>, source: &[u8]) -> String {
    let mut cursor = string.walk();
    string
        .named_children(&mut cursor)
        .filter(|c| c.kind() == "string_content" || c.kind() == "escape_sequence")
        .map(|c| text(c, source))
        .collect()
}

/// Removes the common indentation of a docstring's continuation lines (PEP 257).
fn clean_docstring(raw: &str) -> String {
    let mut lines = raw.lines();
    let first = lines.next().unwrap_or_default().trim().to_owned();
    let rest: Vec<&str> = lines.collect();
    let indent = rest
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = vec![first];
    out.extend(rest.iter().map(|l| {
        l.get(indent..)
            .unwrap_or(l.trim_start())
            .trim_end()
            .to_owned()
    }));
    out.join("\n").trim().to_owned()
}

/// A dotted path of plain names (`a.b.c`), or `None` for anything else.
fn dotted(node: Node<'_>, source: &[u8]) -> Option<Vec<String>> {
    match node.kind() {
        "identifier" => Some(vec![text(node, source).to_owned()]),
        "dotted_name" => {
            let mut cursor = node.walk();
            Some(
                node.named_children(&mut cursor)
                    .map(|n| text(n, source).to_owned())
                    .collect(),
            )
        }
        "attribute" => {
            let mut path = dotted(node.child_by_field_name("object")?, source)?;
            path.push(text(node.child_by_field_name("attribute")?, source).to_owned());
            Some(path)
        }
        // `Foo[int]`, `list[Foo]` annotations: the outer name.
        "generic_type" | "subscript" => dotted(node.named_child(0)?, source),
        "type" => dotted(node.named_child(0)?, source),
        "string" => {
            // Forward reference `"Foo"`.
            let value = string_value(node, source);
            let parts: Vec<String> = value.split('.').map(str::to_owned).collect();
            parts
                .iter()
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || c == '_'))
                .then_some(parts)
        }
        _ => None,
    }
}

/// Local variable name -> the path of its type (or of the callable that built it).
type Types = HashMap<String, Vec<String>>;

struct Extractor<'s, 'f> {
    source: &'s [u8],
    file: &'f mut ParsedFile,
    is_init: bool,
    /// Module-level `name = Callable(..)` and annotated names.
    module_types: Types,
}

impl Extractor<'_, '_> {
    fn collect_module_types(&mut self, root: Node<'_>) {
        let mut cursor = root.walk();
        let statements: Vec<Node<'_>> = root.named_children(&mut cursor).collect();
        for statement in statements {
            if statement.kind() == "expression_statement"
                && let Some(assignment) = statement.named_child(0)
                && assignment.kind() == "assignment"
            {
                let mut types = std::mem::take(&mut self.module_types);
                record_assignment(assignment, self.source, &mut types);
                self.module_types = types;
            }
        }
    }

    /// Visits the statements of a module, class body or block that defines things.
    fn visit_block(&mut self, block: Node<'_>, scope: &[String], class: Option<&[String]>) {
        let mut cursor = block.walk();
        let children: Vec<Node<'_>> = block.named_children(&mut cursor).collect();
        for node in children {
            self.visit_statement(node, scope, class, &[]);
        }
    }

    fn visit_statement(
        &mut self,
        node: Node<'_>,
        scope: &[String],
        class: Option<&[String]>,
        decorators: &[String],
    ) {
        match node.kind() {
            "import_statement" => self.import(node, scope),
            "import_from_statement" => self.import_from(node, scope),
            "class_definition" => self.class(node, node, scope),
            "function_definition" => self.function(node, node, scope, class, decorators),
            "decorated_definition" => {
                let mut cursor = node.walk();
                let names: Vec<String> = node
                    .named_children(&mut cursor)
                    .filter(|c| c.kind() == "decorator")
                    .filter_map(|d| d.named_child(0))
                    .map(|e| {
                        let callee = if e.kind() == "call" {
                            e.child_by_field_name("function").unwrap_or(e)
                        } else {
                            e
                        };
                        text(callee, self.source).to_owned()
                    })
                    .collect();
                if let Some(definition) = node.child_by_field_name("definition") {
                    match definition.kind() {
                        "class_definition" => self.class(definition, node, scope),
                        _ => self.function(definition, node, scope, class, &names),
                    }
                }
            }
            // Conditional definitions (`try: import x except ImportError: ...`,
            // `if sys.platform == ...: def f(): ...`) define names too.
            "if_statement" | "try_statement" | "with_statement" | "block" | "else_clause"
            | "elif_clause" | "except_clause" | "finally_clause" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
                for child in children {
                    self.visit_statement(child, scope, class, decorators);
                }
            }
            _ => {}
        }
    }

    fn import(&mut self, node: Node<'_>, scope: &[String]) {
        let mut cursor = node.walk();
        for name in node.children_by_field_name("name", &mut cursor) {
            match name.kind() {
                "dotted_name" => {
                    // `import a.b.c` binds `a`.
                    if let Some(path) = dotted(name, self.source)
                        && let Some(first) = path.first()
                    {
                        self.bind(scope, first.clone(), vec![first.clone()]);
                    }
                }
                "aliased_import" => {
                    if let (Some(target), Some(alias)) = (
                        name.child_by_field_name("name")
                            .and_then(|n| dotted(n, self.source)),
                        name.child_by_field_name("alias"),
                    ) {
                        self.bind(scope, text(alias, self.source).to_owned(), target);
                    }
                }
                _ => {}
            }
        }
    }

    fn import_from(&mut self, node: Node<'_>, scope: &[String]) {
        let Some(module_node) = node.child_by_field_name("module_name") else {
            return;
        };
        let Some(base) = self.absolute_module(module_node) else {
            return;
        };
        let mut cursor = node.walk();
        let has_wildcard = node
            .named_children(&mut cursor)
            .any(|c| c.kind() == "wildcard_import");
        if has_wildcard {
            self.bind(scope, "*".into(), base.clone());
        }
        let mut cursor = node.walk();
        for name in node.children_by_field_name("name", &mut cursor) {
            let (path, alias) = match name.kind() {
                "dotted_name" => match dotted(name, self.source) {
                    Some(path) => {
                        let alias = path.last().cloned().unwrap_or_default();
                        (path, alias)
                    }
                    None => continue,
                },
                "aliased_import" => {
                    match (
                        name.child_by_field_name("name")
                            .and_then(|n| dotted(n, self.source)),
                        name.child_by_field_name("alias"),
                    ) {
                        (Some(path), Some(alias)) => (path, text(alias, self.source).to_owned()),
                        _ => continue,
                    }
                }
                _ => continue,
            };
            let mut target = base.clone();
            target.extend(path);
            self.bind(scope, alias, target);
        }
    }

    /// Makes `..x.y` absolute against the file's package.
    fn absolute_module(&self, node: Node<'_>) -> Option<Vec<String>> {
        if node.kind() != "relative_import" {
            return dotted(node, self.source);
        }
        let mut cursor = node.walk();
        let mut dots = 0usize;
        let mut rest = Vec::new();
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                "import_prefix" => dots = text(child, self.source).matches('.').count(),
                "dotted_name" => rest = dotted(child, self.source)?,
                _ => {}
            }
        }
        // The package of `a/b/c.py` is `a.b`; of `a/b/__init__.py` it is `a.b` too.
        let module = &self.file.context.module;
        let package_len = if self.is_init {
            module.len()
        } else {
            module.len().saturating_sub(1)
        };
        let keep = package_len.checked_sub(dots.saturating_sub(1))?;
        let mut path: Vec<String> = module[..keep].to_vec();
        path.extend(rest);
        Some(path)
    }

    /// Records the import statements of a function body under the function's scope.
    fn local_imports(&mut self, body: Node<'_>, function: &[String]) {
        let mut cursor = body.walk();
        let mut stack = vec![body];
        while let Some(node) = stack.pop() {
            match node.kind() {
                "function_definition" | "class_definition" if node != body => continue,
                "import_statement" => self.import(node, function),
                "import_from_statement" => self.import_from(node, function),
                _ => stack.extend(node.named_children(&mut cursor)),
            }
        }
    }

    /// Makes calls through function-local imports absolute: after
    /// `from pandas.core.reshape.merge import merge`, `merge(..)` is
    /// `pandas.core.reshape.merge.merge(..)`.
    fn apply_local_imports(&self, function: &[String], calls: &mut [RawCall]) {
        let local: HashMap<&str, &Vec<String>> = self
            .file
            .imports
            .iter()
            .filter(|i| i.scope == function && i.alias != "*")
            .map(|i| (i.alias.as_str(), &i.target))
            .collect();
        if local.is_empty() {
            return;
        }
        let absolute = |path: &mut Vec<String>| {
            if let Some(target) = path.first().and_then(|head| local.get(head.as_str())) {
                let mut full = (*target).clone();
                full.extend(path.drain(1..));
                *path = full;
            }
        };
        for call in calls.iter_mut() {
            match call {
                RawCall::Path(path) | RawCall::TypedMethod { receiver: path, .. } => absolute(path),
                _ => {}
            }
        }
    }

    fn bind(&mut self, scope: &[String], alias: String, target: Vec<String>) {
        let import = Import {
            scope: scope.to_vec(),
            alias,
            target,
        };
        if !self.file.imports.contains(&import) {
            self.file.imports.push(import);
        }
    }

    fn class(&mut self, node: Node<'_>, outer: Node<'_>, scope: &[String]) {
        let Some(name) = node.child_by_field_name("name") else {
            return;
        };
        let name = text(name, self.source).to_owned();
        let mut qualified = scope.to_vec();
        qualified.push(name.clone());
        let mut bases = Vec::new();
        if let Some(arguments) = node.child_by_field_name("superclasses") {
            let mut cursor = arguments.walk();
            for argument in arguments.named_children(&mut cursor) {
                if let Some(path) = dotted(argument, self.source) {
                    bases.push(path);
                }
            }
        }
        let body = node.child_by_field_name("body");
        let doc = body.and_then(|b| docstring(b, self.source));
        if let Some(doc) = &doc {
            self.doctests(doc, &qualified, node.start_position().row + 1);
        }
        self.file.classes.push(ClassDef {
            qualified: qualified.clone(),
            kind: "class",
            bases,
            doc,
            code: text(outer, self.source).to_owned(),
            lines: (outer.start_position().row + 1, outer.end_position().row + 1),
            public: is_public(&name),
        });
        if let Some(body) = body {
            self.visit_block(body, &qualified, Some(&qualified));
        }
    }

    fn function(
        &mut self,
        node: Node<'_>,
        outer: Node<'_>,
        scope: &[String],
        class: Option<&[String]>,
        decorators: &[String],
    ) {
        let Some(name) = node.child_by_field_name("name") else {
            return;
        };
        let name = text(name, self.source).to_owned();
        let mut qualified = scope.to_vec();
        qualified.push(name.clone());
        let is_static = decorators.iter().any(|d| d == "staticmethod");
        let drop_receiver = class.is_some() && !is_static;
        let (params, mut types) = match node.child_by_field_name("parameters") {
            Some(parameters) => self.parameters(parameters, drop_receiver),
            None => (Vec::new(), Types::new()),
        };
        let returns = node
            .child_by_field_name("return_type")
            .map(|r| one_line(text(r, self.source)));
        let body = node.child_by_field_name("body");
        let header_end = body.map_or(node.end_byte(), |b| b.start_byte());
        let header = std::str::from_utf8(&self.source[node.start_byte()..header_end])
            .unwrap_or_default()
            .trim_end()
            .trim_end_matches(':');
        let doc = body.and_then(|b| docstring(b, self.source));
        if let Some(doc) = &doc {
            self.doctests(doc, &qualified, node.start_position().row + 1);
        }
        let mut calls = Vec::new();
        if let Some(body) = body {
            // Imports inside the body (`from x import y` to dodge import cycles)
            // bind names for this function only.
            self.local_imports(body, &qualified);
            collect_assignment_types(body, self.source, &mut types);
            let mut collector = CallCollector {
                source: self.source,
                types: &types,
                module_types: &self.module_types,
                calls: &mut calls,
            };
            collector.visit(body);
            self.apply_local_imports(&qualified, &mut calls);
        }
        let is_test = self.file.context.role == FileRole::Test && name.starts_with("test");
        self.file.functions.push(FunctionDef {
            qualified,
            owner: class.map(<[String]>::to_vec),
            signature: one_line(header),
            params,
            returns,
            doc,
            code: text(outer, self.source).to_owned(),
            lines: (outer.start_position().row + 1, outer.end_position().row + 1),
            calls,
            is_test,
            public: is_public(&name),
        });
    }

    fn parameters(&self, parameters: Node<'_>, drop_receiver: bool) -> (Vec<Param>, Types) {
        let mut params = Vec::new();
        let mut types = Types::new();
        let mut cursor = parameters.walk();
        let mut first = true;
        for node in parameters.named_children(&mut cursor) {
            let (name, annotation, default) = match node.kind() {
                "identifier" => (text(node, self.source).to_owned(), None, None),
                "list_splat_pattern" | "dictionary_splat_pattern" => {
                    (text(node, self.source).to_owned(), None, None)
                }
                "typed_parameter" => {
                    let name = node
                        .named_child(0)
                        .map(|n| text(n, self.source).to_owned())
                        .unwrap_or_default();
                    (name, node.child_by_field_name("type"), None)
                }
                "default_parameter" => (
                    node.child_by_field_name("name")
                        .map(|n| text(n, self.source).to_owned())
                        .unwrap_or_default(),
                    None,
                    node.child_by_field_name("value"),
                ),
                "typed_default_parameter" => (
                    node.child_by_field_name("name")
                        .map(|n| text(n, self.source).to_owned())
                        .unwrap_or_default(),
                    node.child_by_field_name("type"),
                    node.child_by_field_name("value"),
                ),
                // `*` and `/` separators are not parameters.
                _ => continue,
            };
            if std::mem::take(&mut first) && drop_receiver {
                continue;
            }
            if let Some(annotation) = annotation
                && let Some(path) = dotted(annotation, self.source)
            {
                types.insert(name.clone(), path);
            }
            params.push(Param {
                position: params.len(),
                name,
                annotation: annotation.map(|a| one_line(text(a, self.source))),
                default: default.map(|d| one_line(text(d, self.source))),
            });
        }
        (params, types)
    }

    /// Turns the `>>>` lines of a docstring into one example.
    fn doctests(&mut self, doc: &str, documented: &[String], line: usize) {
        let mut code = String::new();
        for l in doc.lines() {
            let t = l.trim_start();
            if let Some(rest) = t.strip_prefix(">>> ").or_else(|| t.strip_prefix("... ")) {
                code.push_str(rest);
                code.push('\n');
            } else if t == ">>>" || t == "..." {
                code.push('\n');
            }
        }
        if code.trim().is_empty() {
            return;
        }
        let mut calls = Vec::new();
        if let Some(tree) = parse_tree(&code) {
            let mut types = Types::new();
            collect_assignment_types(tree.root_node(), code.as_bytes(), &mut types);
            let mut collector = CallCollector {
                source: code.as_bytes(),
                types: &types,
                module_types: &Types::new(),
                calls: &mut calls,
            };
            collector.visit(tree.root_node());
        }
        self.file.examples.push(DocExample {
            documented: documented.to_vec(),
            code,
            calls,
            line,
        });
    }
}

fn is_public(name: &str) -> bool {
    !kgfuse_core::code::is_private_name(name)
}

/// Records `x = Callable(..)` and `x: Type = ..` as a type for `x`.
fn record_assignment(assignment: Node<'_>, source: &[u8], types: &mut Types) {
    let Some(left) = assignment.child_by_field_name("left") else {
        return;
    };
    if left.kind() != "identifier" {
        return;
    }
    let name = text(left, source).to_owned();
    if let Some(annotation) = assignment.child_by_field_name("type")
        && let Some(path) = dotted(annotation, source)
    {
        types.insert(name, path);
        return;
    }
    if let Some(right) = assignment.child_by_field_name("right")
        && right.kind() == "call"
        && let Some(callee) = right.child_by_field_name("function")
        && let Some(path) = dotted(callee, source)
    {
        types.insert(name, path);
    }
}

/// Types of local variables assigned anywhere in a body (nested definitions excluded).
fn collect_assignment_types(body: Node<'_>, source: &[u8], types: &mut Types) {
    let mut cursor = body.walk();
    let mut stack = vec![body];
    while let Some(node) = stack.pop() {
        match node.kind() {
            "function_definition" | "class_definition" | "lambda" if node != body => continue,
            "assignment" => record_assignment(node, source, types),
            _ => {}
        }
        stack.extend(node.named_children(&mut cursor));
    }
}

/// Walks a body and records its calls.
struct CallCollector<'a> {
    source: &'a [u8],
    types: &'a Types,
    module_types: &'a Types,
    calls: &'a mut Vec<RawCall>,
}

impl CallCollector<'_> {
    fn visit(&mut self, node: Node<'_>) {
        let mut stack = vec![node];
        let mut cursor = node.walk();
        while let Some(current) = stack.pop() {
            if current.kind() == "call"
                && let Some(call) = current
                    .child_by_field_name("function")
                    .and_then(|f| self.classify(f))
                && !self.calls.contains(&call)
            {
                self.calls.push(call);
            }
            // Children reversed so calls are recorded in source order.
            let children: Vec<Node<'_>> = current.named_children(&mut cursor).collect();
            stack.extend(children.into_iter().rev());
        }
    }

    fn type_of(&self, name: &str) -> Option<&Vec<String>> {
        self.types.get(name).or_else(|| self.module_types.get(name))
    }

    fn classify(&self, function: Node<'_>) -> Option<RawCall> {
        match function.kind() {
            "identifier" => Some(RawCall::Path(vec![text(function, self.source).to_owned()])),
            "attribute" => {
                let object = function.child_by_field_name("object")?;
                let name = text(function.child_by_field_name("attribute")?, self.source).to_owned();
                // `super().name(..)`
                if object.kind() == "call"
                    && let Some(callee) = object.child_by_field_name("function")
                    && text(callee, self.source) == "super"
                {
                    return Some(RawCall::SuperMethod(name));
                }
                // `Type(..).name(..)`
                if object.kind() == "call"
                    && let Some(receiver) = object
                        .child_by_field_name("function")
                        .and_then(|f| dotted(f, self.source))
                {
                    return Some(RawCall::TypedMethod { receiver, name });
                }
                let Some(path) = dotted(object, self.source) else {
                    return Some(RawCall::Method(name));
                };
                let head = path.first().map(String::as_str).unwrap_or_default();
                if path.len() == 1 && (head == "self" || head == "cls") {
                    return Some(RawCall::SelfMethod(name));
                }
                if path.len() == 1
                    && let Some(receiver) = self.type_of(head)
                {
                    return Some(RawCall::TypedMethod {
                        receiver: receiver.clone(),
                        name,
                    });
                }
                if head == "self" || head == "cls" {
                    return Some(RawCall::Method(name));
                }
                let mut full = path;
                full.push(name);
                Some(RawCall::Path(full))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::model::Language;
    use std::path::PathBuf;

    fn parse_at(path: &str, module: &[&str], role: FileRole, source: &str) -> ParsedFile {
        parse(
            FileContext {
                path: PathBuf::from(path),
                language: Language::Python,
                package: module[0].to_owned(),
                module: module.iter().map(|s| (*s).to_owned()).collect(),
                role,
            },
            source,
            String::new(),
        )
    }

    fn path(segments: &[&str]) -> Vec<String> {
        segments.iter().map(|s| (*s).to_owned()).collect()
    }

    const JSONISH: &str = r#""""JSON (JavaScript Object Notation) encoder and decoder.

    >>> import json
    >>> json.dumps([1, 2])
    '[1, 2]'
"""
from .decoder import JSONDecoder, JSONDecodeError
from .encoder import JSONEncoder
import codecs as _codecs

def dumps(obj, *, skipkeys=False, cls=None, indent: int | None = None, **kw):
    """Serialize ``obj`` to a JSON formatted ``str``.

    More text.
    """
    if cls is None:
        return _default_encoder.encode(obj)
    return cls(skipkeys=skipkeys, **kw).encode(obj)

_default_encoder = JSONEncoder(skipkeys=False)

class Wrapper(JSONEncoder):
    """Wraps."""
    def __init__(self, inner: JSONDecoder):
        super().__init__()
        self.inner = inner

    def run(self, text):
        self.helper()
        x = _codecs.lookup(text)
        return self.inner.decode(text)

    @staticmethod
    def build(value) -> "Wrapper":
        return Wrapper(value)
"#;

    #[test]
    fn extracts_definitions_imports_and_docstrings() {
        let file = parse_at("/x/json/__init__.py", &["json"], FileRole::Library, JSONISH);
        assert!(file.problems.is_empty(), "{:?}", file.problems);
        assert!(
            file.module_doc
                .as_deref()
                .is_some_and(|d| d.starts_with("JSON (JavaScript"))
        );
        let targets: Vec<(&str, Vec<String>)> = file
            .imports
            .iter()
            .map(|i| (i.alias.as_str(), i.target.clone()))
            .collect();
        assert!(targets.contains(&("JSONEncoder", path(&["json", "encoder", "JSONEncoder"]))));
        assert!(targets.contains(&("_codecs", path(&["codecs"]))));

        let dumps = &file.functions[0];
        assert_eq!(dumps.qualified, path(&["json", "dumps"]));
        let names: Vec<&str> = dumps.params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["obj", "skipkeys", "cls", "indent", "**kw"]);
        assert_eq!(dumps.params[1].default.as_deref(), Some("False"));
        assert_eq!(dumps.params[3].annotation.as_deref(), Some("int | None"));
        assert_eq!(dumps.params[4].position, 4);
        assert!(
            dumps
                .signature
                .starts_with("def dumps(obj, *, skipkeys=False")
        );
        assert_eq!(
            dumps.doc.as_deref().map(|d| d.lines().next()),
            Some(Some("Serialize ``obj`` to a JSON formatted ``str``."))
        );
        // The module-level variable defined *after* the function still types the call.
        assert_eq!(
            dumps.calls[0],
            RawCall::TypedMethod {
                receiver: path(&["JSONEncoder"]),
                name: "encode".into()
            }
        );
        assert!(
            dumps.calls.contains(&RawCall::Method("encode".into()))
                || dumps.calls.contains(&RawCall::Path(path(&["cls"])))
        );

        assert_eq!(file.classes[0].qualified, path(&["json", "Wrapper"]));
        assert_eq!(file.classes[0].bases, vec![path(&["JSONEncoder"])]);
        let run = file
            .functions
            .iter()
            .find(|f| f.qualified.last().is_some_and(|n| n == "run"))
            .expect("run");
        assert_eq!(run.owner, Some(path(&["json", "Wrapper"])));
        assert_eq!(run.params.len(), 1, "self is not a parameter");
        assert!(run.calls.contains(&RawCall::SelfMethod("helper".into())));
        assert!(
            run.calls
                .contains(&RawCall::Path(path(&["_codecs", "lookup"])))
        );
        let init = file
            .functions
            .iter()
            .find(|f| f.qualified.last().is_some_and(|n| n == "__init__"))
            .expect("__init__");
        assert!(
            init.calls
                .contains(&RawCall::SuperMethod("__init__".into()))
        );
        let build = file
            .functions
            .iter()
            .find(|f| f.qualified.last().is_some_and(|n| n == "build"))
            .expect("build");
        assert_eq!(
            build.params.len(),
            1,
            "a staticmethod keeps its first parameter"
        );
        assert_eq!(build.returns.as_deref(), Some("\"Wrapper\""));

        assert_eq!(file.examples.len(), 1);
        assert!(
            file.examples[0]
                .calls
                .contains(&RawCall::Path(path(&["json", "dumps"])))
        );
    }

    #[test]
    fn function_local_imports_make_calls_absolute() {
        let source = "def merge(self, right):\n    from pandas.core.reshape.merge import merge as m\n    import numpy as np\n    np.asarray(right)\n    return m(self, right)\n";
        let file = parse_at(
            "/x/pandas/core/frame.py",
            &["pandas", "core", "frame"],
            FileRole::Library,
            source,
        );
        let calls = &file.functions[0].calls;
        assert!(
            calls.contains(&RawCall::Path(path(&[
                "pandas", "core", "reshape", "merge", "merge"
            ]))),
            "{calls:?}"
        );
        assert!(
            calls.contains(&RawCall::Path(path(&["numpy", "asarray"]))),
            "{calls:?}"
        );
    }

    #[test]
    fn relative_imports_resolve_against_the_package() {
        let source = "from . import scanner\nfrom .. import util as u\nfrom .x.y import z\nfrom os.path import *\n";
        let file = parse_at(
            "/x/pkg/sub/mod.py",
            &["pkg", "sub", "mod"],
            FileRole::Library,
            source,
        );
        let find = |alias: &str| {
            file.imports
                .iter()
                .find(|i| i.alias == alias)
                .map(|i| i.target.clone())
        };
        assert_eq!(find("scanner"), Some(path(&["pkg", "sub", "scanner"])));
        assert_eq!(find("u"), Some(path(&["pkg", "util"])));
        assert_eq!(find("z"), Some(path(&["pkg", "sub", "x", "y", "z"])));
        assert_eq!(find("*"), Some(path(&["os", "path"])));
    }

    #[test]
    fn test_functions_in_test_files_are_tests_and_errors_are_reported() {
        let source = "import unittest\nclass T(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(f(), 1)\n    def helper(self):\n        pass\n\ndef broken(:\n    pass\n";
        let file = parse_at(
            "/x/test/test_t.py",
            &["test", "test_t"],
            FileRole::Test,
            source,
        );
        let tests: Vec<&str> = file
            .functions
            .iter()
            .filter(|f| f.is_test)
            .filter_map(|f| f.qualified.last().map(String::as_str))
            .collect();
        assert_eq!(tests, ["test_a"]);
        assert_eq!(file.problems.len(), 1);
        assert_eq!(file.problems[0].line, Some(8), "{:?}", file.problems);
    }
}
