//! No loops between the modules of a crate: for every module with children, the references
//! among its children must form no cycle. A reference is a path (through `crate::…`, `super::…`
//! and the re-exports that `pub use` makes) or a method call: a type's inherent methods are
//! spread over many modules (the engine's `impl Engine` blocks), so `self.decide(…)`,
//! `Self::decide(…)` and `engine.decide(…)` are an edge to the one module whose inherent `impl`
//! defines `decide` for that type (a name defined in several modules cannot be told apart and is
//! not followed). A child using its ancestors, or a parent using its children, is the ordinary
//! shape of a module tree and is not an edge. Test-only code (`#[cfg(test)]`) is left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use syn::visit::Visit;

use crate::workspace_root;

/// A module's path from its crate root (`["protocol", "definition"]`); the root is `[]`.
type ModPath = Vec<String>;

/// One module tree (a library or a binary): its modules, what each re-exports, and the
/// references each makes.
#[derive(Debug, Default)]
struct Tree {
    modules: BTreeSet<ModPath>,
    /// `(module, name) → path written after pub use`, relative to that module.
    exports: BTreeMap<(ModPath, String), Vec<String>>,
    /// `(module, written path, file)` for every `crate::`/`super::` path outside tests.
    uses: Vec<(ModPath, Vec<String>, PathBuf)>,
    /// `(type, method) → the modules whose inherent `impl type` blocks define it`.
    methods: BTreeMap<(String, String), BTreeSet<ModPath>>,
    /// `(module, type, method, file)` for every `self.method(…)` or `Self::method(…)` written in
    /// an inherent `impl type` block outside tests.
    calls: Vec<(ModPath, String, String, PathBuf)>,
}

/// The module files of the tree rooted at `root` (`src/lib.rs`), read with their paths.
fn read_tree(root: &Path) -> Result<Tree> {
    let mut tree = Tree::default();
    let mut pending = vec![(root.to_path_buf(), ModPath::new())];
    while let Some((file, path)) = pending.pop() {
        let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
        let syntax = syn::parse_file(&text).with_context(|| format!("parsing {}", file.display()))?;
        tree.modules.insert(path.clone());
        let folder = match file.file_stem().and_then(|s| s.to_str()) {
            Some("lib" | "main" | "mod") if path.is_empty() || file.ends_with("mod.rs") => {
                file.parent().map(Path::to_path_buf).unwrap_or_default()
            }
            _ => file.with_extension(""),
        };
        let mut collector =
            Collector { module: path.clone(), file: file.clone(), tree: &mut tree, within: None, children: Vec::new() };
        collector.visit_file(&syntax);
        for child in std::mem::take(&mut collector.children) {
            let candidates = [folder.join(format!("{child}.rs")), folder.join(&child).join("mod.rs")];
            if let Some(found) = candidates.into_iter().find(|candidate| candidate.is_file()) {
                let mut child_path = path.clone();
                child_path.push(child);
                pending.push((found, child_path));
            }
        }
    }
    Ok(tree)
}

struct Collector<'a> {
    module: ModPath,
    file: PathBuf,
    tree: &'a mut Tree,
    /// The type of the inherent `impl` block being read, if any.
    within: Option<String>,
    /// `mod name;` declarations of this file (inline modules are part of the file's module).
    children: Vec<String>,
}

fn is_test(attributes: &[syn::Attribute]) -> bool {
    attributes.iter().any(|attribute| {
        attribute.path().is_ident("cfg")
            && attribute.parse_args::<syn::Meta>().is_ok_and(|meta| meta.path().is_ident("test"))
    })
}

/// Every path a use tree names, as segments, with the name it is known by in the module
/// (`use crate::{a::B as C, d::*}` → `(Some(C), [crate,a,B])`, `(None, [crate,d])`).
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Option<String>, Vec<String>)>) {
    let leaf = |ident: &syn::Ident| {
        let mut full = prefix.clone();
        full.push(ident.to_string());
        full
    };
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            use_paths(&path.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(name) => out.push((Some(name.ident.to_string()), leaf(&name.ident))),
        syn::UseTree::Rename(rename) => out.push((Some(rename.rename.to_string()), leaf(&rename.ident))),
        syn::UseTree::Glob(_) => out.push((None, prefix.clone())),
        syn::UseTree::Group(group) => group.items.iter().for_each(|item| use_paths(item, prefix, out)),
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if is_test(&item.attrs) {
            return;
        }
        match &item.content {
            None => self.children.push(item.ident.to_string()),
            Some(_) => syn::visit::visit_item_mod(self, item),
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_test(&item.attrs) {
            syn::visit::visit_item_fn(self, item);
        }
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if is_test(&item.attrs) {
            return;
        }
        let inherent = match (&item.trait_, &*item.self_ty) {
            (None, syn::Type::Path(path)) => path.path.segments.last().map(|segment| segment.ident.to_string()),
            _ => None,
        };
        if let Some(name) = &inherent {
            for inner in &item.items {
                if let syn::ImplItem::Fn(method) = inner
                    && !is_test(&method.attrs)
                {
                    let key = (name.clone(), method.sig.ident.to_string());
                    self.tree.methods.entry(key).or_default().insert(self.module.clone());
                }
            }
        }
        let outer = std::mem::replace(&mut self.within, inherent);
        syn::visit::visit_item_impl(self, item);
        self.within = outer;
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if !is_test(&item.attrs) {
            syn::visit::visit_impl_item_fn(self, item);
        }
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        if let Some(receiver) = self.receiver_type(&call.receiver) {
            self.tree.calls.push((self.module.clone(), receiver, call.method.to_string(), self.file.clone()));
        }
        syn::visit::visit_expr_method_call(self, call);
    }

    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        if let (syn::Expr::Path(path), Some(within)) = (&*call.func, &self.within)
            && let [first, second] = path.path.segments.iter().collect::<Vec<_>>()[..]
            && first.ident == "Self"
        {
            self.tree.calls.push((self.module.clone(), within.clone(), second.ident.to_string(), self.file.clone()));
        }
        syn::visit::visit_expr_call(self, call);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if is_test(&item.attrs) {
            return;
        }
        let mut paths = Vec::new();
        use_paths(&item.tree, &mut Vec::new(), &mut paths);
        let exported = !matches!(item.vis, syn::Visibility::Inherited);
        for (name, path) in paths {
            if let Some(name) = name.filter(|_| exported) {
                self.tree.exports.insert((self.module.clone(), name), path.clone());
            }
            self.record(path);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.record(path.segments.iter().map(|segment| segment.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }
}

impl Collector<'_> {
    /// The type a method's receiver is known to have without type inference: `self` in an
    /// inherent `impl`, and an `engine` variable or field (a worker's handle on the crate's
    /// [`Engine`]-named type, whatever the crate).
    fn receiver_type(&self, receiver: &syn::Expr) -> Option<String> {
        match receiver {
            syn::Expr::Path(path) if path.path.is_ident("self") => self.within.clone(),
            syn::Expr::Path(path) if path.path.is_ident("engine") => Some("Engine".to_owned()),
            syn::Expr::Field(field) if matches!(&field.member, syn::Member::Named(name) if name == "engine") => {
                Some("Engine".to_owned())
            }
            syn::Expr::Paren(inner) => self.receiver_type(&inner.expr),
            syn::Expr::Reference(inner) => self.receiver_type(&inner.expr),
            _ => None,
        }
    }

    fn record(&mut self, path: Vec<String>) {
        if matches!(path.first().map(String::as_str), Some("crate" | "super")) {
            self.tree.uses.push((self.module.clone(), path, self.file.clone()));
        }
    }
}

impl Tree {
    /// The module a path written in `from` lands in, following re-exports (at most 8 hops).
    fn resolve(&self, from: &ModPath, written: &[String]) -> ModPath {
        self.resolve_within(from, written, 8)
    }

    fn resolve_within(&self, from: &ModPath, written: &[String], hops: u32) -> ModPath {
        let mut base: ModPath = from.clone();
        let mut rest = written;
        match rest.first().map(String::as_str) {
            Some("crate") => {
                base.clear();
                rest = &rest[1..];
            }
            Some("self") => rest = &rest[1..],
            _ => {}
        }
        while rest.first().map(String::as_str) == Some("super") {
            base.pop();
            rest = &rest[1..];
        }
        self.descend(base, rest, hops)
    }

    fn descend(&self, mut at: ModPath, rest: &[String], hops: u32) -> ModPath {
        for segment in rest {
            let mut child = at.clone();
            child.push(segment.clone());
            if self.modules.contains(&child) {
                at = child;
                continue;
            }
            if hops > 0
                && let Some(target) = self.exports.get(&(at.clone(), segment.clone()))
            {
                return self.resolve_within(&at, target, hops - 1);
            }
            return at;
        }
        at
    }

    /// Edges between siblings: `(parent, from child, to child) → an example file`.
    fn sibling_edges(&self) -> BTreeMap<(ModPath, String, String), PathBuf> {
        let mut edges = BTreeMap::new();
        let imports = self.uses.iter().map(|(from, written, file)| (from, self.resolve(from, written), file));
        for (from, to, file) in imports.chain(self.method_targets()) {
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() {
                continue;
            }
            let parent = from[..common].to_vec();
            edges.entry((parent, from[common].clone(), to[common].clone())).or_insert_with(|| file.clone());
        }
        edges
    }

    /// Where each `self.method(…)` call lands: the one module that defines the method on that
    /// type (a name defined in several modules is not followed: it cannot be told apart).
    fn method_targets(&self) -> impl Iterator<Item = (&ModPath, ModPath, &PathBuf)> {
        self.calls.iter().filter_map(|(from, within, method, file)| {
            let defined = self.methods.get(&(within.clone(), method.clone()))?;
            match defined.iter().collect::<Vec<_>>()[..] {
                [only] => Some((from, only.clone(), file)),
                _ => None,
            }
        })
    }

    /// Every loop among the children of one module, as `parent: a → b → a (files)`.
    fn loops(&self) -> Vec<String> {
        let edges = self.sibling_edges();
        let mut found = Vec::new();
        let parents: BTreeSet<&ModPath> = edges.keys().map(|(parent, _, _)| parent).collect();
        for parent in parents {
            let graph: BTreeMap<&str, Vec<&str>> =
                edges.keys().filter(|(p, _, _)| p == parent).fold(BTreeMap::new(), |mut graph, (_, a, b)| {
                    graph.entry(a.as_str()).or_default().push(b.as_str());
                    graph
                });
            for component in strongly_connected(&graph) {
                let cycle = cycle_in(&graph, &component);
                let steps: Vec<String> = cycle
                    .windows(2)
                    .map(|pair| {
                        let file = &edges[&(parent.clone(), pair[0].to_owned(), pair[1].to_owned())];
                        let shown = file.strip_prefix(workspace_root()).unwrap_or(file);
                        format!("{} → {} ({})", pair[0], pair[1], shown.display())
                    })
                    .collect();
                let place = if parent.is_empty() { "crate root".to_owned() } else { parent.join("::") };
                found.push(format!("in {place}, {} depend on each other: {}", component.join(", "), steps.join(", ")));
            }
        }
        found
    }
}

/// The components of more than one node (Tarjan's algorithm, recursive: module graphs are small).
fn strongly_connected<'a>(graph: &BTreeMap<&'a str, Vec<&'a str>>) -> Vec<Vec<&'a str>> {
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(node: &'a str, graph: &BTreeMap<&'a str, Vec<&'a str>>, state: &mut State<'a>) {
        let next = state.index.len();
        state.index.insert(node, next);
        state.low.insert(node, next);
        state.stack.push(node);
        state.on_stack.insert(node);
        for &target in graph.get(node).into_iter().flatten() {
            if !state.index.contains_key(target) {
                visit(target, graph, state);
                let low = state.low[node].min(state.low[target]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(target) {
                let low = state.low[node].min(state.index[target]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(top) = state.stack.pop() {
                state.on_stack.remove(top);
                component.push(top);
                if top == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort_unstable();
                state.out.push(component);
            }
        }
    }
    let mut state = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for &node in graph.keys() {
        if !state.index.contains_key(node) {
            visit(node, graph, &mut state);
        }
    }
    state.out
}

/// One cycle through the first node of `component`, returning to it.
fn cycle_in<'a>(graph: &BTreeMap<&'a str, Vec<&'a str>>, component: &[&'a str]) -> Vec<&'a str> {
    let start = component[0];
    let mut path = vec![start];
    let mut seen = BTreeSet::from([start]);
    fn walk<'a>(
        graph: &BTreeMap<&'a str, Vec<&'a str>>,
        component: &[&'a str],
        path: &mut Vec<&'a str>,
        seen: &mut BTreeSet<&'a str>,
    ) -> bool {
        let here = *path.last().expect("invariant: the path starts with a node");
        for &next in graph.get(here).into_iter().flatten() {
            if next == path[0] {
                path.push(next);
                return true;
            }
            if component.contains(&next) && seen.insert(next) {
                path.push(next);
                if walk(graph, component, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    walk(graph, component, &mut path, &mut seen);
    path
}

/// The loops of every module tree under `crate_folder/src` (the library and the binary).
pub(crate) fn loops_in(crate_folder: &Path) -> Result<Vec<String>> {
    let mut found = Vec::new();
    for root in ["src/lib.rs", "src/main.rs"] {
        let root = crate_folder.join(root);
        if root.is_file() {
            found.extend(read_tree(&root)?.loops());
        }
    }
    Ok(found)
}

/// Every crate of the workspace.
fn crate_folders() -> Vec<PathBuf> {
    let root = workspace_root();
    let mut folders: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.join("Cargo.toml").is_file())
        .collect();
    folders.extend([root.join("examples/claims/integration"), root.join("xtask")]);
    folders.sort();
    folders
}

/// The check `cargo xtask ci` runs.
pub(crate) fn check() -> Result<()> {
    println!("==> module loops");
    let mut all = Vec::new();
    for folder in crate_folders() {
        let name = folder.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        all.extend(loops_in(&folder)?.into_iter().map(|found| format!("{name}: {found}")));
    }
    if !all.is_empty() {
        bail!(
            "modules depend on each other in a loop, through imports or method calls (move what both need into a module of its own, below both):\n  {}",
            all.join("\n  ")
        );
    }
    println!(
        "    no module depends on itself through another (imports, method calls), in {} crates",
        crate_folders().len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(files: &[(&str, &str)]) -> PathBuf {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let folder = std::env::temp_dir().join(format!("xtask-loops-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        for (path, text) in files {
            let file = folder.join(path);
            std::fs::create_dir_all(file.parent().expect("a folder")).expect("folders");
            std::fs::write(file, text).expect("a file");
        }
        folder
    }

    #[test]
    fn a_loop_through_a_re_export_is_found_with_its_files() {
        let folder = fake(&[
            ("src/lib.rs", "mod codes;\nmod error;\npub use error::Wire;\npub use codes::CODES;\n"),
            ("src/codes.rs", "pub const CODES: &[&str] = &[];\nfn f(_: crate::Wire) {}\n"),
            ("src/error.rs", "use crate::CODES;\npub struct Wire;\n"),
        ]);
        let found = loops_in(&folder).expect("readable");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("in crate root, codes, error depend on each other: codes → error"), "{found:?}");
        assert!(found[0].contains("error → codes") && found[0].contains("error.rs"), "{found:?}");
    }

    #[test]
    fn parents_children_tests_and_one_way_edges_are_not_loops() {
        let folder = fake(&[
            ("src/lib.rs", "mod a;\nmod b;\npub struct Root;\n"),
            ("src/a.rs", "mod inner;\nuse crate::b::B;\npub struct A;\nfn f(_: inner::I) {}\n"),
            ("src/a/inner.rs", "use super::A;\nuse crate::Root;\npub struct I;\n"),
            ("src/b.rs", "pub struct B;\n#[cfg(test)]\nmod tests { use crate::a::A; }\n"),
        ]);
        assert_eq!(loops_in(&folder).expect("readable"), Vec::<String>::new());
    }

    #[test]
    fn loops_between_grandchildren_are_found_too() {
        let folder = fake(&[
            ("src/lib.rs", "mod p;\n"),
            ("src/p.rs", "mod x;\nmod y;\n"),
            ("src/p/x.rs", "use super::y::Y;\npub struct X;\n"),
            ("src/p/y.rs", "pub struct Y(crate::p::x::X);\n"),
        ]);
        let found = loops_in(&folder).expect("readable");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("in p, x, y depend on each other: x → y"), "{found:?}");
    }

    #[test]
    fn a_macro_re_exported_under_its_own_name_ends_the_walk() {
        // `pub(crate) use m;` after `macro_rules! m` names itself: followed forever, it would
        // overflow the stack.
        let folder = fake(&[
            ("src/lib.rs", "mod a;\nmod b;\n"),
            ("src/a.rs", "macro_rules! m { () => {} }\npub(crate) use m;\n"),
            ("src/b.rs", "use crate::a::m;\nfn f() { crate::a::m!(); }\n"),
        ]);
        assert_eq!(loops_in(&folder).expect("readable"), Vec::<String>::new());
    }
    #[test]
    fn a_loop_through_method_calls_on_one_type_is_found() {
        // Two modules that import nothing of each other, calling each other's methods of the
        // type whose `impl` blocks they share: a cycle the imports alone do not show.
        let folder = fake(&[
            ("src/lib.rs", "mod work;\nmod calls;\npub struct Engine;\n"),
            (
                "src/work.rs",
                "use crate::Engine;\nimpl Engine {\n    pub(crate) fn close(&self) { self.invoke(); }\n}\n",
            ),
            (
                "src/calls.rs",
                "use crate::Engine;\nimpl Engine {\n    pub(crate) fn invoke(&self) { Self::close(self); }\n}\n",
            ),
        ]);
        let found = loops_in(&folder).expect("readable");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("in crate root, calls, work depend on each other"), "{found:?}");
        assert!(found[0].contains("calls.rs") && found[0].contains("work.rs"), "{found:?}");
    }

    #[test]
    fn a_worker_calling_through_its_engine_field_is_an_edge_too() {
        let folder = fake(&[
            ("src/lib.rs", "mod rules;\nmod processes;\npub struct Engine;\n"),
            (
                "src/rules.rs",
                "use crate::Engine;\nstruct Pass<'a> { engine: &'a Engine }\nimpl Pass<'_> { fn go(&self) { self.engine.start(); } }\nimpl Engine { pub(crate) fn evaluate(&self) {} }\n",
            ),
            (
                "src/processes.rs",
                "use crate::Engine;\nimpl Engine {\n    pub(crate) fn start(&self) {}\n    fn advance(engine: &Engine) { engine.evaluate(); }\n}\n",
            ),
        ]);
        let found = loops_in(&folder).expect("readable");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("processes → rules") && found[0].contains("rules → processes"), "{found:?}");
    }

    #[test]
    fn one_way_calls_tests_and_names_defined_twice_are_not_loops() {
        let folder = fake(&[
            ("src/lib.rs", "mod a;\nmod b;\npub struct Engine;\n"),
            // `a` calls `b` one way; `b`'s test calls back, and `shared` is defined in both, so a
            // call of it is not followed.
            (
                "src/a.rs",
                "use crate::Engine;\nimpl Engine {\n    fn a(&self) { self.b(); }\n    fn shared(&self) {}\n}\n",
            ),
            (
                "src/b.rs",
                "use crate::Engine;\nimpl Engine {\n    pub(crate) fn b(&self) { self.shared(); }\n    fn shared(&self) {}\n}\n#[cfg(test)]\nmod tests { fn t(engine: &crate::Engine) { engine.a(); } }\n",
            ),
        ]);
        assert_eq!(loops_in(&folder).expect("readable"), Vec::<String>::new());
    }
}
