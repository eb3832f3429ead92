//! The layers of `src/` hold (docs/architecture.md, "Layers"): arrows point down only.
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
            "crate::http",
        ],
    );
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn issuing_knows_no_api() {
    let bad = offenders(
        &["issuing"],
        &["crate::api", "crate::admin", "crate::http", "HttpResponse"],
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
            "http",
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
