//! Opening the store through [`crate::open`] and reaching it only through
//! the traits the handle gives out.

use super::{company, keys};
use crate::*;

fn open_handle(dir: &std::path::Path, keyring: impl Fn() -> Keyring) -> StoreHandle {
    for _ in 0..100 {
        match crate::open(dir, StoreOptions::default(), |_| Ok(keyring())) {
            Err(StoreError::Locked(_)) => std::thread::sleep(std::time::Duration::from_millis(20)),
            other => return other.unwrap(),
        }
    }
    panic!("the store in {dir:?} stayed locked");
}

#[test]
fn a_store_opened_through_the_handle_keeps_what_its_traits_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let handle = open_handle(dir.path(), keys);
    let created = handle.store().create_company(company()).unwrap();
    let bytes = [9u8; 32];
    let new_id = MasterKey::from_bytes(&bytes).unwrap().id().to_string();
    let new = MasterKey::from_bytes(&bytes).unwrap();
    handle.keys().rotate_master_key(new).unwrap();
    assert_eq!(handle.keys().keyring().current().id(), new_id);
    assert_eq!(handle.shared().companies().unwrap().len(), 1);
    let copy = handle
        .backup()
        .checkpoint_to(&dir.path().join("copy"), &mut || {})
        .unwrap();
    assert!(copy.entries > 0, "{copy:?}");
    handle.close().unwrap();
    drop(handle);

    let handle = open_handle(dir.path(), || {
        Keyring::new(MasterKey::from_bytes(&bytes).unwrap())
    });
    let read = handle.store().company(created.id).unwrap().unwrap();
    assert_eq!(read.nit, created.nit);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let store = handle.start_async().unwrap();
    let all = rt
        .block_on(store.blocking(|s| s.companies()))
        .unwrap()
        .unwrap();
    assert_eq!(all.len(), 1);
}
