//! File modes: the data dir (sled, the document file log, the outbox,
//! `demo-keys.json`) and the master key are the owner's alone. The process
//! umask makes every file and directory it creates 0600 / 0700, whoever
//! creates it (sled, the file log, the mail outbox); a data dir made by an
//! earlier version, or by hand, with wider modes is tightened at start.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Group and others get nothing on what this process creates.
pub const UMASK: u32 = 0o077;

/// Sets the process umask to [`UMASK`]; call first thing, before any
/// thread that could create a file starts.
pub fn restrict_umask() {
    // SAFETY: umask(2) only swaps the process's file mode mask; it cannot
    // fail and touches no memory.
    unsafe {
        libc::umask(UMASK as libc::mode_t);
    }
}

/// What [`prepare_data_dir`] had to tighten: paths with their old modes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tightened {
    pub paths: Vec<(PathBuf, u32)>,
}

impl Tightened {
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }
}

/// Creates the data dir with mode 0700, or, when it exists, takes from it
/// and from everything in it any access of group and others (directories
/// 0700, files 0600). Symbolic links are left alone.
pub fn prepare_data_dir(dir: &Path) -> io::Result<Tightened> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mut tightened = Tightened::default();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta = fs::symlink_metadata(&path)?;
        if meta.file_type().is_symlink() {
            continue;
        }
        tighten(&path, &meta, &mut tightened)?;
        if meta.is_dir() {
            for entry in fs::read_dir(&path)? {
                stack.push(entry?.path());
            }
        }
    }
    Ok(tightened)
}

/// Takes group and others' access from one file (the master key's).
pub fn tighten_file(path: &Path) -> io::Result<Tightened> {
    let mut tightened = Tightened::default();
    tighten(path, &fs::symlink_metadata(path)?, &mut tightened)?;
    Ok(tightened)
}

fn tighten(path: &Path, meta: &fs::Metadata, tightened: &mut Tightened) -> io::Result<()> {
    let mode = meta.permissions().mode() & 0o7777;
    if mode & UMASK == 0 {
        return Ok(());
    }
    fs::set_permissions(path, fs::Permissions::from_mode(mode & !UMASK & 0o700))?;
    tightened.paths.push((path.to_path_buf(), mode));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_new_data_dir_is_0700_and_an_open_one_is_tightened() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        assert!(prepare_data_dir(&dir).unwrap().is_empty());
        assert_eq!(mode(&dir), 0o700);

        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        fs::create_dir(dir.join("sled")).unwrap();
        fs::set_permissions(dir.join("sled"), fs::Permissions::from_mode(0o775)).unwrap();
        fs::write(dir.join("sled/db"), b"x").unwrap();
        fs::set_permissions(dir.join("sled/db"), fs::Permissions::from_mode(0o644)).unwrap();
        fs::write(dir.join("kept"), b"x").unwrap();
        fs::set_permissions(dir.join("kept"), fs::Permissions::from_mode(0o600)).unwrap();

        let t = prepare_data_dir(&dir).unwrap();
        let mut changed: Vec<_> = t.paths.clone();
        changed.sort();
        assert_eq!(
            changed,
            vec![
                (dir.clone(), 0o755),
                (dir.join("sled"), 0o775),
                (dir.join("sled/db"), 0o644)
            ]
        );
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("sled")), 0o700);
        assert_eq!(mode(&dir.join("sled/db")), 0o600);
        assert_eq!(mode(&dir.join("kept")), 0o600);
        assert!(prepare_data_dir(&dir).unwrap().is_empty());
    }
}
