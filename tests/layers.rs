//! The layers of `src/` hold (docs/architecture.md, "Layers"): arrows point
//! down only; the folders of `store/src/` import each other without a circle
//! (docs/storage.md, "Layout of the store crate").
//! Read from the source, so a change that breaks a layer fails here, not in
//! review. Test modules (a file's `#[cfg(test)]` tail, `tests.rs`) are
//! exempt: tests may reach across layers to check what they check.

use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, test files left out.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs")
            && path.file_name().is_some_and(|n| n != "tests.rs")
        {
            out.push(path);
        }
    }
    out
}

/// A file's code without its test module (by convention at the end, after
/// a line that is exactly `#[cfg(test)]`) and without comment lines.
fn code(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn src(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(rel)
}

/// `(file, needle)` for every needle found in the files under `dirs`.
fn offenders(dirs: &[&str], needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for dir in dirs {
        let root = src(dir);
        let files = if root.is_dir() {
            sources(&root)
        } else {
            vec![root]
        };
        for file in files {
            let code = code(&file);
            for needle in needles {
                if contains_word(&code, needle) {
                    found.push(format!("{} uses {needle}", file.display()));
                }
            }
            // `use emisor_store::{…, Store, …}` names the trait too.
            let groups = code.split("emisor_store::{").skip(1);
            for group in groups.filter_map(|g| g.split('}').next()) {
                if needles.contains(&"dyn Store") && contains_word(group, "Store") {
                    found.push(format!("{} imports emisor_store::Store", file.display()));
                }
            }
        }
    }
    found
}

/// `needle` in `code`, not as part of a longer identifier.
fn contains_word(code: &str, needle: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(needle).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + needle.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

#[test]
fn the_engine_is_pure_domain_code() {
    let bad = offenders(
        &["engine"],
        &[
            "emisor_actors",
            "emisor_store",
            "actix",
            "actix_web",
            "awc",
            "sled",
            "crate::api",
            "crate::admin",
            "crate::issuing",
            "crate::authority",
            "crate::state",
        ],
    );
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn issuing_knows_no_api() {
    let bad = offenders(
        &["issuing"],
        &["crate::api", "crate::admin", "crate::state", "HttpResponse"],
    );
    assert!(bad.is_empty(), "{bad:#?}");
}

/// Async code holds the async store handle only: the synchronous traits
/// (whose writes fsync on the calling thread) are for the CLI, start-up
/// and provisioning, which run on threads that may block.
#[test]
fn async_code_never_calls_the_synchronous_store() {
    let bad = offenders(
        &[
            "api",
            "issuing",
            "ops",
            "state.rs",
            "admin/auth.rs",
            "admin/companies.rs",
            "admin/credentials.rs",
            "admin/keys.rs",
            "admin/test_set.rs",
            "admin/test_set_run.rs",
        ],
        &[
            "SledStore",
            "dyn Store",
            "emisor_store::Store",
            "CompanyStore",
            "CredentialStore",
            "ApiKeyStore",
            "CustomerStore",
            "DocumentStore",
            "JobStore",
            "EventStore",
            "SettingsStore",
            "StoreHealth",
            "ReceivedStore",
            "web::block",
        ],
    );
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn modules_live_where_their_names_say() {
    let bad = offenders(&[""], &["#[path"]);
    assert!(bad.is_empty(), "{bad:#?}");
}

// ---- store/src/: the folders of the store crate ----

/// The top-level modules of `store/src/` (a folder or a file; `lib.rs`
/// only declares and re-exports, the tests may reach anywhere).
fn store_modules() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("store/src");
    let mut out: Vec<String> = fs::read_dir(&root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let name = path.file_stem()?.to_str()?.to_string();
            (path.is_dir() || path.extension().is_some_and(|x| x == "rs")).then_some(name)
        })
        .filter(|n| n != "lib" && n != "tests")
        .collect();
    out.sort();
    out
}

/// What a `crate::` path names first in `code`: for `crate::a::b` and
/// `crate::{a::b, c}`, `a` (and `c`).
fn store_crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut entry = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(store_first_segment(&entry));
                        entry.clear();
                        continue;
                    }
                    _ => {}
                }
                entry.push(c);
            }
            if !entry.trim().is_empty() {
                out.push(store_first_segment(&entry));
            }
        } else {
            out.push(store_first_segment(rest));
        }
    }
    out
}

fn store_first_segment(path: &str) -> String {
    path.trim()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// One arrow between two modules of `store/src/` and the files drawing it.
struct StoreArrow {
    from: String,
    to: String,
    files: Vec<String>,
}

/// No import circle between the folders (and top-level files) of
/// `store/src/`: each imports only those below it, by their own paths, not
/// through what `lib.rs` re-exports. A failure names the files drawing each
/// arrow of the circle.
#[test]
fn store_folders_have_no_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("store/src");
    let modules = store_modules();
    let mut arrows: Vec<StoreArrow> = Vec::new();
    let mut through_root = Vec::new();
    for module in &modules {
        let path = root.join(module);
        let files = if path.is_dir() {
            sources(&path)
        } else {
            vec![root.join(format!("{module}.rs"))]
        };
        for file in files {
            let code = code(&file);
            let shown = file
                .strip_prefix(&root)
                .unwrap_or(&file)
                .display()
                .to_string();
            if code.contains("super::super") {
                through_root.push(format!("store/src/{shown} reaches out with super::super"));
            }
            for name in store_crate_paths(&code) {
                if !modules.contains(&name) {
                    through_root.push(format!("store/src/{shown} uses crate::{name}"));
                    continue;
                }
                if &name == module {
                    continue;
                }
                match arrows
                    .iter_mut()
                    .find(|a| a.from == *module && a.to == name)
                {
                    Some(arrow) if !arrow.files.contains(&shown) => arrow.files.push(shown.clone()),
                    Some(_) => {}
                    None => arrows.push(StoreArrow {
                        from: module.clone(),
                        to: name,
                        files: vec![shown.clone()],
                    }),
                }
            }
        }
    }
    assert!(through_root.is_empty(), "{through_root:#?}");
    let edges: Vec<(String, String)> = arrows
        .iter()
        .map(|a| (a.from.clone(), a.to.clone()))
        .collect();
    let circles = store_circles(&modules, &edges);
    let report: Vec<String> = circles
        .iter()
        .map(|group| {
            let inside: Vec<String> = arrows
                .iter()
                .filter(|a| group.contains(&a.from) && group.contains(&a.to))
                .map(|a| format!("{} -> {} in {}", a.from, a.to, a.files.join(", ")))
                .collect();
            format!("circle {group:?}:\n  {}", inside.join("\n  "))
        })
        .collect();
    assert!(report.is_empty(), "{}", report.join("\n"));
}

/// The strongly connected groups of more than one module (Tarjan).
fn store_circles(nodes: &[String], edges: &[(String, String)]) -> Vec<Vec<String>> {
    struct Walk<'a> {
        nodes: &'a [String],
        edges: &'a [(String, String)],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    impl Walk<'_> {
        fn visit(&mut self, v: usize) {
            self.index[v] = Some(self.next);
            self.low[v] = self.next;
            self.next += 1;
            self.stack.push(v);
            self.on_stack[v] = true;
            let targets: Vec<usize> = self
                .edges
                .iter()
                .filter(|(a, _)| *a == self.nodes[v])
                .filter_map(|(_, b)| self.nodes.iter().position(|n| n == b))
                .collect();
            for w in targets {
                match self.index[w] {
                    None => {
                        self.visit(w);
                        self.low[v] = self.low[v].min(self.low[w]);
                    }
                    Some(i) if self.on_stack[w] => self.low[v] = self.low[v].min(i),
                    Some(_) => {}
                }
            }
            if Some(self.low[v]) == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack[w] = false;
                    group.push(self.nodes[w].clone());
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    self.found.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        nodes,
        edges,
        index: vec![None; nodes.len()],
        low: vec![0; nodes.len()],
        stack: Vec::new(),
        on_stack: vec![false; nodes.len()],
        next: 0,
        found: Vec::new(),
    };
    for v in 0..nodes.len() {
        if walk.index[v].is_none() {
            walk.visit(v);
        }
    }
    walk.found
}

/// Where `src/` names the store's engine: `SledStore` or `Stores`, a path
/// through `sled::` or `engine::sled`, or the engine's own `OpenOptions`
/// (not `std::fs`'s).
fn store_engine_names(code: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    for word in ["SledStore", "Stores"] {
        if contains_word(code, word) {
            found.push(word);
        }
    }
    for path in ["sled::", "engine::sled"] {
        let named = code.match_indices(path).any(|(i, _)| {
            !code[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
        });
        if named {
            found.push(path);
        }
    }
    let store_groups = code
        .split("emisor_store::{")
        .skip(1)
        .filter_map(|g| g.split('}').next());
    if code.contains("emisor_store::OpenOptions")
        || store_groups
            .into_iter()
            .any(|g| contains_word(g, "OpenOptions"))
    {
        found.push("emisor_store::OpenOptions");
    }
    found
}

/// The store is opened through `emisor_store::open` and seen through its
/// traits (and `StoreHandle`, `AsyncStore`): no code of `src/` names the
/// engine behind them.
#[test]
fn store_engine_is_named_by_no_service_code() {
    let mut bad = Vec::new();
    for file in sources(&src("")) {
        for name in store_engine_names(&code(&file)) {
            bad.push(format!("{} names {name}", file.display()));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}
