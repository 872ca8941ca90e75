//! The one-process rule of a SQLite store: an exclusive lock on the database file itself.
//!
//! The lock is a BSD `flock` (std's [`File::try_lock`] on Linux) on a descriptor of the
//! database file, kept open while the store lives. Being on the file (its inode), not on a
//! name derived from the path, it holds however the file is reached: through a symbolic
//! link, a hard link or another spelling of its path. (A lock file named after the path, as
//! before, let two processes open one database through two names: through a symbolic link
//! the second recovered the first's running tasks as orphans; through a hard link each kept
//! its own WAL, named after its path, and the file was damaged beyond use.)
//!
//! SQLite itself locks the same file with POSIX `fcntl` locks, which Linux keeps apart from
//! `flock` ones, so the two do not interfere. But a process's POSIX locks on a file are all
//! released when the process closes *any* descriptor of that file, so this process must not
//! close a descriptor of a database file while a SQLite connection to it is open here
//! (SQLite's documentation, "How To Corrupt An SQLite Database File", §2.2). Hence:
//! - the files this process has locked are registered ([`HELD`]): a second store of the
//!   same file is refused (or waits for the first to finish closing) without opening it;
//! - the lock's descriptor is closed only after every connection of its store has closed
//!   (the writer's on its thread, the readers' by the store's drop, see `SqliteStore`).
//!
//! On Linux the error names the process holding the lock, read from `/proc/locks`.

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::OpenError;

/// How long an open waits for this process's previous store of the same file to finish
/// closing (its connections close in the background after the store is dropped).
const CLOSING_WAIT: Duration = Duration::from_secs(5);
/// How long an open waits for another process to let the file go (a process being
/// restarted may still be shutting down).
const OTHER_WAIT: Duration = Duration::from_secs(1);
/// Between two attempts.
const RETRY: Duration = Duration::from_millis(20);

/// A file's identity: (device, inode).
type FileId = (u64, u64);

/// The database files this process holds, each with whether its store is closing.
static HELD: Mutex<Option<HashMap<FileId, bool>>> = Mutex::new(None);

fn held<T>(f: impl FnOnce(&mut HashMap<FileId, bool>) -> T) -> T {
    let mut guard = HELD.lock().unwrap_or_else(PoisonError::into_inner);
    f(guard.get_or_insert_with(HashMap::new))
}

/// This process's exclusive hold of one database file. Dropping it releases the lock: drop it
/// only once no SQLite connection of its store is open (see the module's documentation).
#[derive(Debug)]
pub(crate) struct FileLock {
    /// Keeps the `flock`; closed last, when the lock is dropped.
    _file: File,
    id: FileId,
}

impl FileLock {
    /// Its store is closing: an open of the same file waits for it to finish rather than
    /// being refused.
    pub(crate) fn closing(&self) {
        held(|h| {
            if let Some(closing) = h.get_mut(&self.id) {
                *closing = true;
            }
        });
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        held(|h| h.remove(&self.id));
    }
}

/// What stands in the way of a lock.
enum Busy {
    /// A store of this process holds the file.
    Here { closing: bool },
    /// Another process does.
    Elsewhere { holder: Option<u32> },
}

/// Takes the exclusive lock on the database file at `path` (created empty if missing, which
/// SQLite reads as an empty database), waiting a little for a holder that is closing.
pub(crate) async fn lock(path: &Path) -> Result<FileLock, OpenError> {
    let started = std::time::Instant::now();
    loop {
        let busy = match try_lock(path)? {
            Ok(lock) => return Ok(lock),
            Err(busy) => busy,
        };
        let waited = started.elapsed();
        let give_up = match busy {
            Busy::Here { closing } => !closing || waited >= CLOSING_WAIT,
            Busy::Elsewhere { .. } => waited >= OTHER_WAIT,
        };
        if give_up {
            return Err(OpenError::Locked {
                path: describe(path),
                holder: match busy {
                    Busy::Here { .. } => format!("this process (pid {})", std::process::id()),
                    Busy::Elsewhere { holder: Some(pid) } => format!("process {pid}"),
                    Busy::Elsewhere { holder: None } => "another process".to_owned(),
                },
            });
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// `path`, and the file it names when that is another path (a symbolic link).
fn describe(path: &Path) -> String {
    match std::fs::canonicalize(path) {
        Ok(real) if real != path => format!("{} (the file {})", path.display(), real.display()),
        _ => path.display().to_string(),
    }
}

fn io_error(path: &Path, e: &std::io::Error) -> OpenError {
    OpenError::Io(format!("{}: {e}", path.display()))
}

/// One attempt. Runs under the registry's lock, so that no other store of this process
/// registers or opens the same file meanwhile.
#[cfg(unix)]
fn try_lock(path: &Path) -> Result<Result<FileLock, Busy>, OpenError> {
    use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};

    let mut guard = HELD.lock().unwrap_or_else(PoisonError::into_inner);
    let registry = guard.get_or_insert_with(HashMap::new);
    // Looked up by name before opening: opening (and closing) a descriptor of a file this
    // process has SQLite connections to would drop their POSIX locks.
    match std::fs::metadata(path) {
        Ok(meta) => {
            if let Some(&closing) = registry.get(&(meta.dev(), meta.ino())) {
                return Ok(Err(Busy::Here { closing }));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_error(path, &e)),
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        // Never: this is the database.
        .truncate(false)
        .mode(0o644)
        .open(path)
        .map_err(|e| io_error(path, &e))?;
    let meta = file.metadata().map_err(|e| io_error(path, &e))?;
    let id = (meta.dev(), meta.ino());
    if let Some(&closing) = registry.get(&id) {
        // The name was pointed at a file this process holds between the two looks: this
        // descriptor must stay open (see above). One descriptor, on a rare race.
        std::mem::forget(file);
        return Ok(Err(Busy::Here { closing }));
    }
    match file.try_lock() {
        Ok(()) => {
            registry.insert(id, false);
            Ok(Ok(FileLock { _file: file, id }))
        }
        // No store of this process has the file (the registry says so), so closing this
        // descriptor releases nobody's lock.
        Err(std::fs::TryLockError::WouldBlock) => Ok(Err(Busy::Elsewhere {
            holder: holder(&meta),
        })),
        Err(std::fs::TryLockError::Error(e)) => Err(io_error(path, &e)),
    }
}

/// One attempt, where files have no inode numbers: the lock is on `PATH.lock` (Windows'
/// `LockFileEx` on the database file itself would keep SQLite's own handles from reading it),
/// so it does not hold through links.
#[cfg(not(unix))]
fn try_lock(path: &Path) -> Result<Result<FileLock, Busy>, OpenError> {
    use std::hash::{Hash as _, Hasher as _};

    let mut guard = HELD.lock().unwrap_or_else(PoisonError::into_inner);
    let registry = guard.get_or_insert_with(HashMap::new);
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock_path = std::path::PathBuf::from(lock_path);
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| path.to_owned())
        .hash(&mut hasher);
    let id = (0, hasher.finish());
    if let Some(&closing) = registry.get(&id) {
        return Ok(Err(Busy::Here { closing }));
    }
    let file = File::create(&lock_path).map_err(|e| io_error(&lock_path, &e))?;
    match file.try_lock() {
        Ok(()) => {
            registry.insert(id, false);
            Ok(Ok(FileLock { _file: file, id }))
        }
        Err(std::fs::TryLockError::WouldBlock) => Ok(Err(Busy::Elsewhere { holder: None })),
        Err(std::fs::TryLockError::Error(e)) => Err(io_error(&lock_path, &e)),
    }
}

/// The process holding an `flock` on the file `meta` describes, as `/proc/locks` tells (Linux).
#[cfg(target_os = "linux")]
fn holder(meta: &std::fs::Metadata) -> Option<u32> {
    use std::os::unix::fs::MetadataExt as _;
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    holder_in(&locks, meta.dev(), meta.ino())
}

#[cfg(all(unix, not(target_os = "linux")))]
fn holder(_meta: &std::fs::Metadata) -> Option<u32> {
    None
}

/// In `/proc/locks` text, the process holding an `flock` on inode `ino` of device `dev`
/// (lines such as `1: FLOCK  ADVISORY  WRITE 4242 fe:00:10010928 0 EOF`). A file system
/// that reports another device number to `stat` than the one its locks are listed under
/// (overlay, btrfs subvolumes) is matched by inode alone, when only one process holds a
/// lock on such an inode.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn holder_in(locks: &str, dev: u64, ino: u64) -> Option<u32> {
    // glibc's `gnu_dev_major` / `gnu_dev_minor`.
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let mut exact = None;
    let mut by_inode = Vec::new();
    for line in locks.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // "N:" kind mode type pid maj:min:ino start end (a "->" marks a waiter).
        if fields.get(1) != Some(&"FLOCK") || fields.contains(&"->") {
            continue;
        }
        let (Some(pid), Some(file)) = (fields.get(4), fields.get(5)) else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        let mut parts = file.split(':');
        let (Some(ma), Some(mi), Some(i)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if i.parse::<u64>().ok() != Some(ino) {
            continue;
        }
        let ma = u64::from_str_radix(ma, 16).ok();
        let mi = u64::from_str_radix(mi, 16).ok();
        if ma == Some(major) && mi == Some(minor) {
            exact = Some(pid);
        }
        if !by_inode.contains(&pid) {
            by_inode.push(pid);
        }
    }
    exact.or(match by_inode.as_slice() {
        [only] => Some(*only),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::holder_in;

    #[test]
    fn the_holder_is_read_from_proc_locks() {
        let locks = "1: POSIX  ADVISORY  READ 77 fe:00:5 128 128\n\
                     2: FLOCK  ADVISORY  WRITE 4242 fe:00:10010928 0 EOF\n\
                     3: FLOCK  ADVISORY  WRITE 99 08:01:10010928 0 EOF\n";
        // st_dev 0xfe00: major 254, minor 0.
        assert_eq!(holder_in(locks, 0xfe00, 10_010_928), Some(4242));
        // A device `stat` reports differently: the inode is held by two processes, so
        // neither is named.
        assert_eq!(holder_in(locks, 0x2a, 10_010_928), None);
        assert_eq!(
            holder_in(locks, 0xfe00, 5),
            None,
            "a POSIX lock is SQLite's"
        );
        assert_eq!(holder_in("", 0xfe00, 10_010_928), None);
    }
}
