//! Test support shared by the unit tests.

/// Is the external checker `name` (xmlsec1, xmllint, …) installed? Tests skip
/// their external half when it is not — except under `REQUIRE_CHECKERS`
/// (set by `.ci/run`), where a missing tool is a failure, so CI can never pass
/// by skipping the independent checks.
pub fn tool(name: &str) -> bool {
    let found = std::process::Command::new(name)
        .arg("--version")
        .output()
        .is_ok();
    if !found && std::env::var_os("REQUIRE_CHECKERS").is_some() {
        panic!("{name} is required (REQUIRE_CHECKERS is set) but not installed");
    }
    found
}

/// A fresh master key for a store opened by a unit test.
pub fn test_keys() -> emisor_store::Keyring {
    emisor_store::Keyring::new(emisor_store::MasterKey::generate().expect("random key"))
}
