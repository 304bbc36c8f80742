//! The scheduler's layers (`coordinator/src/scheduler/`): `tables/` (one module per table),
//! `rules/` (pure decisions) and `flows/` (the only modules touching more than one table).
//! Every module of the folder is parsed with `syn`; each path it names (after resolving its
//! `use` items, `crate::`, `super::` and `self::`) that leads into another scheduler module
//! is a reference: a call when the item is a function (lower case), a use of data when it
//! is a type or constant (upper case). The layering fails on
//!
//! * a table module calling another table module (types, such as a row, may be shared),
//!   or calling into `flows/` or `rules/`;
//! * a rule touching the store (`rusqlite`, a connection or transaction, the store, the
//!   write context `Ctx`) or any table or flow;
//! * a cycle between modules.
//!
//! Method calls are not paths and are not seen (a row type's methods are accessors);
//! `#[cfg(test)]` items and the `mod` and `pub use` lines of a folder's `mod.rs` (structure,
//! not use) are left out.

use std::collections::{BTreeMap, BTreeSet};
use syn::visit::Visit;

/// A path as its segments (`crate`, `scheduler`, `tables`, ...).
type SegmentPath = Vec<String>;

/// The store names each module touches.
pub type StoreNames = BTreeMap<String, BTreeSet<String>>;

/// One reference from a module to an item of another: `to` is the module, `item` its name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reference {
    /// The referring module, as `scheduler::flows::grant`.
    pub from: String,
    /// The module referred to.
    pub to: String,
    /// The item named.
    pub item: String,
}

impl Reference {
    /// A call of a function (the item's name is lower case), not a type or constant.
    pub fn is_call(&self) -> bool {
        self.item.starts_with(|c: char| c.is_lowercase())
    }
}

/// The module path of a file under `src/scheduler` given relative to `src` (for example
/// `scheduler/tables/units.rs` -> `scheduler::tables::units`).
pub fn module_of(file: &str) -> String {
    let path = file.trim_end_matches(".rs").trim_end_matches("/mod");
    path.replace('/', "::")
}

/// The layer of a scheduler module: `tables`, `rules`, `flows`, or `root` for the folder's
/// own `mod.rs` files.
fn layer(module: &str) -> &str {
    let parts: Vec<&str> = module.split("::").collect();
    match parts.as_slice() {
        [_, layer, _, ..] => layer,
        _ => "root",
    }
}

/// Whether an item carries `#[cfg(test)]`.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// Expands a `use` tree into (local name, full path) pairs; a glob gets the name `*`.
fn expand_use(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            expand_use(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            if name == "self" {
                out.push((prefix.last().cloned().unwrap_or_default(), prefix.clone()));
            } else {
                let mut full = prefix.clone();
                full.push(name.clone());
                out.push((name, full));
            }
        }
        syn::UseTree::Rename(r) => {
            let mut full = prefix.clone();
            if r.ident != "self" {
                full.push(r.ident.to_string());
            }
            out.push((r.rename.to_string(), full));
        }
        syn::UseTree::Glob(_) => out.push(("*".into(), prefix.clone())),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                expand_use(tree, prefix, out);
            }
        }
    }
}

/// Every path a file names (outside test-only items), with its `use` items expanded; the
/// `mod` and `pub use` lines of a `mod.rs` are structure and left out when `structure` is
/// false.
struct Paths {
    uses: Vec<Vec<String>>,
    imports: Vec<(String, Vec<String>)>,
    paths: Vec<Vec<String>>,
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if is_test_only(item_attrs(item)) {
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut found = Vec::new();
        expand_use(&item.tree, &mut Vec::new(), &mut found);
        for (_, full) in &found {
            self.uses.push(full.clone());
        }
        self.imports.extend(found);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.paths
            .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }
}

/// The paths of a source file: (its `use` paths, its other paths resolved through its
/// imports), each made absolute (`crate::...`) where it can be.
fn resolved_paths(
    module: &str,
    source: &str,
) -> Result<(Vec<SegmentPath>, Vec<SegmentPath>), String> {
    let file = syn::parse_file(source).map_err(|e| format!("{module}: cannot parse: {e}"))?;
    let is_mod_rs = module.split("::").count() <= 2;
    let mut visitor = Paths {
        uses: Vec::new(),
        imports: Vec::new(),
        paths: Vec::new(),
    };
    for item in &file.items {
        let structure = match item {
            syn::Item::Mod(_) => true,
            syn::Item::Use(u) => is_mod_rs && matches!(u.vis, syn::Visibility::Public(_)),
            _ => false,
        };
        if !structure {
            visitor.visit_item(item);
        }
    }
    let here: Vec<String> = std::iter::once("crate".to_string())
        .chain(module.split("::").map(String::from))
        .collect();
    // A `mod.rs` is its own module; `super` of a file is its folder.
    let absolute = |path: &[String]| -> Option<Vec<String>> {
        let mut base = here.clone();
        let mut rest = path;
        match rest.first().map(String::as_str) {
            Some("crate") => return Some(path.to_vec()),
            Some("self") => rest = &rest[1..],
            Some("super") => {
                while rest.first().map(String::as_str) == Some("super") {
                    base.pop();
                    rest = &rest[1..];
                }
            }
            _ => return None,
        }
        base.extend(rest.iter().cloned());
        Some(base)
    };
    let imports: BTreeMap<String, Vec<String>> = visitor
        .imports
        .iter()
        .filter_map(|(name, full)| absolute(full).map(|a| (name.clone(), a)))
        .collect();
    let uses = visitor
        .uses
        .iter()
        .map(|p| absolute(p).unwrap_or_else(|| p.clone()))
        .collect();
    let paths = visitor
        .paths
        .iter()
        .map(|p| {
            if let Some(a) = absolute(p) {
                return a;
            }
            match p.first().and_then(|first| imports.get(first)) {
                Some(full) => full.iter().chain(&p[1..]).cloned().collect(),
                None => p.clone(),
            }
        })
        .collect();
    Ok((uses, paths))
}

/// The references between scheduler modules, given every module's source as (module,
/// text), and the store names each module touches.
pub fn references(
    modules: &[(String, String)],
) -> Result<(BTreeSet<Reference>, StoreNames), String> {
    let known: BTreeSet<&str> = modules.iter().map(|(m, _)| m.as_str()).collect();
    let mut refs = BTreeSet::new();
    let mut store = BTreeMap::new();
    for (module, source) in modules {
        let (uses, paths) = resolved_paths(module, source)?;
        for path in uses.iter().chain(&paths) {
            let touched: BTreeSet<String> = path
                .iter()
                .filter(|s| STORE_NAMES.contains(&s.as_str()))
                .cloned()
                .collect();
            if !touched.is_empty() {
                store
                    .entry(module.clone())
                    .or_insert_with(BTreeSet::new)
                    .extend(touched);
            }
        }
        for path in paths
            .iter()
            .filter(|p| p.first().is_some_and(|s| s == "crate"))
        {
            // The longest prefix naming a scheduler module; the next segment is the item.
            let Some(at) = (2..=path.len())
                .rev()
                .find(|&k| known.contains(path[1..k].join("::").as_str()))
            else {
                continue;
            };
            let to = path[1..at].join("::");
            let Some(item) = path.get(at) else { continue };
            if to != *module {
                refs.insert(Reference {
                    from: module.clone(),
                    to,
                    item: item.clone(),
                });
            }
        }
    }
    Ok((refs, store))
}

/// Names a rule may not use: the store and the write context.
const STORE_NAMES: &[&str] = &[
    "rusqlite",
    "Connection",
    "Transaction",
    "Savepoint",
    "Statement",
    "store",
    "Store",
    "Ctx",
];

/// The complaints about the layering of `modules` (module, source).
pub fn layering_violations(modules: &[(String, String)]) -> Result<Vec<String>, String> {
    let (refs, store) = references(modules)?;
    let mut complaints = Vec::new();
    for r in &refs {
        let (from, to) = (layer(&r.from), layer(&r.to));
        match (from, to) {
            ("tables", "tables") if r.is_call() => complaints.push(format!(
                "{} calls {}::{}: a table module calls no other table module (move the \
                 combination into a flow)",
                r.from, r.to, r.item
            )),
            ("tables", "flows" | "rules") => complaints.push(format!(
                "{} uses {}::{}: a table module uses no flow or rule",
                r.from, r.to, r.item
            )),
            ("rules", "tables" | "flows") => complaints.push(format!(
                "{} uses {}::{}: a rule is pure and touches no table or flow",
                r.from, r.to, r.item
            )),
            _ => {}
        }
    }
    for (module, names) in &store {
        if layer(module) == "rules" {
            complaints.push(format!(
                "{module} touches the store ({}): a rule decides from plain values",
                names.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    complaints.extend(
        cycles(&refs)
            .into_iter()
            .map(|cycle| format!("modules call each other in a cycle: {}", cycle.join(" -> "))),
    );
    Ok(complaints)
}

/// The cycles of the module graph (each as its modules, the first repeated at the end),
/// one per strongly connected group.
fn cycles(refs: &BTreeSet<Reference>) -> Vec<Vec<String>> {
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for r in refs {
        edges.entry(&r.from).or_default().insert(&r.to);
    }
    let mut found = Vec::new();
    let mut reported: BTreeSet<String> = BTreeSet::new();
    for &start in edges.keys() {
        if reported.contains(start) {
            continue;
        }
        // Depth-first search for a path from `start` back to itself.
        let mut stack = vec![(start, vec![start.to_string()])];
        let mut seen = BTreeSet::new();
        while let Some((at, path)) = stack.pop() {
            for &next in edges.get(at).into_iter().flatten() {
                if next == start {
                    let mut cycle = path.clone();
                    cycle.push(start.to_string());
                    reported.extend(cycle.iter().cloned());
                    found.push(cycle);
                    stack.clear();
                    break;
                }
                if seen.insert(next) {
                    let mut longer = path.clone();
                    longer.push(next.to_string());
                    stack.push((next, longer));
                }
            }
        }
    }
    found
}
