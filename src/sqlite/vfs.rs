//! A read-only SQLite VFS whose database files are [`PageFile`]s: SQLite asks for byte ranges,
//! the file answers them from wherever it keeps its pages (here, the host's read primitive
//! through a page cache). With one mapping in `src/cache`, the root crate's only `unsafe`: the
//! C callbacks SQLite calls, each with a SAFETY comment. Everything else of the VFS (temporary files, randomness,
//! time) is the platform's default VFS, copied into a VFS of its own for each connection.
//!
//! What SQLite sees: a database in rollback-journal mode (the reader patches the header) that
//! no one else writes, with no journal next to it (`xAccess` says no file exists), locks that
//! always succeed and writes that always fail. SQLite never opens a `-wal`, `-shm` or
//! `-journal` through it.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use rusqlite::{Connection, OpenFlags, ffi};

/// A database file as the VFS reads it.
pub(crate) trait PageFile: Send + Sync {
    /// Fills `buf` with the file's bytes from `offset`. `Ok(false)` when the file ends first
    /// (the rest of `buf` must then be zeros); `Err` when the bytes cannot be had.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<bool, ()>;

    /// The file's size in bytes.
    fn size(&self) -> u64;
}

/// A connection to a [`PageFile`] through a VFS of its own: registered (a copy of the default
/// VFS with our `xOpen`, its `pAppData` the file) for as long as the connection lives, so that
/// nothing is shared between connections or kept in a static.
pub(crate) struct HostConnection {
    /// `None` only while dropping: the connection closes before its VFS goes.
    conn: Option<Connection>,
    vfs: *mut ffi::sqlite3_vfs,
    /// The VFS's name, which SQLite holds a pointer to while it is registered.
    _name: CString,
}

impl std::ops::Deref for HostConnection {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("set until dropped")
    }
}

impl Drop for HostConnection {
    fn drop(&mut self) {
        // Closing the connection closes its file (`x_close`), the last use of the VFS.
        drop(self.conn.take());
        // SAFETY: `vfs` was registered by `open` and is used by no connection now; after
        // unregistering, SQLite holds no pointer to it, its name or its file.
        unsafe {
            ffi::sqlite3_vfs_unregister(self.vfs);
            let vfs = Box::from_raw(self.vfs);
            drop(Box::from_raw(vfs.pAppData.cast::<Arc<dyn PageFile>>()));
        }
    }
}

/// Opens `file` as a read-only database through a VFS registered for it alone.
pub(crate) fn open(file: Arc<dyn PageFile>) -> rusqlite::Result<HostConnection> {
    let fail = |rc: c_int| rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None);
    // SAFETY: sqlite3_vfs_find with a null name returns the default VFS, a struct SQLite
    // never frees; it is read once, to copy it.
    let default = unsafe { ffi::sqlite3_vfs_find(std::ptr::null()) };
    if default.is_null() {
        return Err(fail(ffi::SQLITE_ERROR));
    }
    // SAFETY: `default` is a valid, initialised sqlite3_vfs (see above).
    let mut vfs: ffi::sqlite3_vfs = unsafe { std::ptr::read(default) };
    let app_data = Box::into_raw(Box::new(file));
    // Unique while the file lives: its address.
    let name = CString::new(format!("clankie-host-{app_data:p}")).expect("no NUL");
    vfs.pNext = std::ptr::null_mut();
    vfs.zName = name.as_ptr();
    vfs.pAppData = app_data.cast::<c_void>();
    // Temporary files are the default VFS's, opened in the same memory: room for either.
    vfs.szOsFile = vfs.szOsFile.max(std::mem::size_of::<HostFile>() as c_int);
    vfs.xOpen = Some(x_open);
    vfs.xDelete = Some(x_delete);
    vfs.xAccess = Some(x_access);
    vfs.xFullPathname = Some(x_full_pathname);
    let vfs = Box::into_raw(Box::new(vfs));
    // SAFETY: the struct and its name live until `HostConnection::drop` unregisters it (or
    // below, when registering failed); not the default VFS (0).
    let rc = unsafe { ffi::sqlite3_vfs_register(vfs, 0) };
    if rc != ffi::SQLITE_OK {
        // SAFETY: not registered: nothing else points to them.
        unsafe {
            drop(Box::from_raw(vfs));
            drop(Box::from_raw(app_data));
        }
        return Err(fail(rc));
    }
    let mut opened = HostConnection {
        conn: None,
        vfs,
        _name: name,
    };
    let conn = Connection::open_with_flags_and_vfs(
        "main.db",
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        opened._name.as_c_str(),
    )?;
    opened.conn = Some(conn);
    Ok(opened)
}

/// The open file SQLite holds: the base struct first, as SQLite expects, then ours.
#[repr(C)]
struct HostFile {
    base: ffi::sqlite3_file,
    /// From `Box::into_raw`; released by `xClose`.
    file: *mut Arc<dyn PageFile>,
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 1,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_lock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

unsafe extern "C" fn x_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    if name.is_null() {
        // A temporary file (a sort that outgrew memory): the default VFS's, on local disk.
        // SAFETY: the default VFS is a struct SQLite never frees; SQLite gave us `file` with
        // room for its files (`szOsFile` is the larger of the two).
        return unsafe {
            let default = ffi::sqlite3_vfs_find(std::ptr::null());
            match default.as_ref().and_then(|d| d.xOpen) {
                Some(open) => open(default, name, file, flags, out_flags),
                None => ffi::SQLITE_CANTOPEN,
            }
        };
    }
    // SAFETY: `file` has room for a sqlite3_file; a null `pMethods` tells SQLite there is
    // nothing to close when the open fails.
    unsafe { (*file).pMethods = std::ptr::null() };
    if flags & ffi::SQLITE_OPEN_MAIN_DB == 0 {
        return ffi::SQLITE_CANTOPEN;
    }
    // SAFETY: `vfs` is one `open` registered, whose `pAppData` is its file's Box, alive until
    // the VFS is unregistered, after the connection (and so this file) closed.
    let page_file = unsafe { (*(*vfs).pAppData.cast::<Arc<dyn PageFile>>()).clone() };
    let host_file = HostFile {
        base: ffi::sqlite3_file { pMethods: &METHODS },
        file: Box::into_raw(Box::new(page_file)),
    };
    // SAFETY: SQLite allocated `szOsFile` bytes at `file`, at least a HostFile, suitably
    // aligned for any struct; it is uninitialised, so it is written, not assigned.
    unsafe {
        std::ptr::write(file.cast::<HostFile>(), host_file);
        if !out_flags.is_null() {
            *out_flags = ffi::SQLITE_OPEN_READONLY | ffi::SQLITE_OPEN_MAIN_DB;
        }
    }
    ffi::SQLITE_OK
}

/// The `HostFile` SQLite passes back, opened by `x_open`.
///
/// # Safety
/// `file` must be a file opened by `x_open` and not yet closed.
unsafe fn page_file<'f>(file: *mut ffi::sqlite3_file) -> &'f dyn PageFile {
    // SAFETY: per the contract, `file` points to a HostFile whose `file` is a live Box.
    unsafe { &**(*file.cast::<HostFile>()).file }
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite closes a file once, after its last use; `file` came from `x_open`, so
    // its `file` is the Box made there, freed here and nowhere else.
    unsafe {
        let host_file = file.cast::<HostFile>();
        drop(Box::from_raw((*host_file).file));
        (*host_file).file = std::ptr::null_mut();
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_read(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    let (Ok(len), Ok(offset)) = (usize::try_from(amount), u64::try_from(offset)) else {
        return ffi::SQLITE_IOERR_READ;
    };
    // SAFETY: SQLite passes an open file of ours and a buffer of `amount` writable bytes.
    let (page_file, buf) = unsafe {
        (
            page_file(file),
            std::slice::from_raw_parts_mut(buf.cast::<u8>(), len),
        )
    };
    // A panic must not unwind into C.
    match catch_unwind(AssertUnwindSafe(|| page_file.read_at(buf, offset))) {
        Ok(Ok(true)) => ffi::SQLITE_OK,
        Ok(Ok(false)) => ffi::SQLITE_IOERR_SHORT_READ,
        _ => ffi::SQLITE_IOERR_READ,
    }
}

unsafe extern "C" fn x_write(
    _file: *mut ffi::sqlite3_file,
    _buf: *const c_void,
    _amount: c_int,
    _offset: ffi::sqlite3_int64,
) -> c_int {
    ffi::SQLITE_READONLY
}

unsafe extern "C" fn x_truncate(_file: *mut ffi::sqlite3_file, _size: ffi::sqlite3_int64) -> c_int {
    ffi::SQLITE_READONLY
}

unsafe extern "C" fn x_sync(_file: *mut ffi::sqlite3_file, _flags: c_int) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_file_size(
    file: *mut ffi::sqlite3_file,
    size: *mut ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: SQLite passes an open file of ours and a place for the size.
    unsafe { *size = page_file(file).size() as ffi::sqlite3_int64 };
    ffi::SQLITE_OK
}

/// Locks and unlocks: nothing to lock, since nothing is written and the file SQLite reads is a
/// snapshot the reader keeps consistent.
unsafe extern "C" fn x_lock(_file: *mut ffi::sqlite3_file, _level: c_int) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_check_reserved_lock(
    _file: *mut ffi::sqlite3_file,
    reserved: *mut c_int,
) -> c_int {
    // SAFETY: SQLite passes a place for the answer.
    unsafe { *reserved = 0 };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_file_control(
    _file: *mut ffi::sqlite3_file,
    _op: c_int,
    _arg: *mut c_void,
) -> c_int {
    ffi::SQLITE_NOTFOUND
}

unsafe extern "C" fn x_sector_size(_file: *mut ffi::sqlite3_file) -> c_int {
    512
}

unsafe extern "C" fn x_device_characteristics(_file: *mut ffi::sqlite3_file) -> c_int {
    // Nothing changes the file while SQLite reads it (the reader's snapshot).
    ffi::SQLITE_IOCAP_IMMUTABLE
}

unsafe extern "C" fn x_delete(
    _vfs: *mut ffi::sqlite3_vfs,
    _name: *const c_char,
    _sync_dir: c_int,
) -> c_int {
    ffi::SQLITE_IOERR_DELETE
}

/// No file exists beside a database: no hot journal to roll back, no WAL to open.
unsafe extern "C" fn x_access(
    _vfs: *mut ffi::sqlite3_vfs,
    _name: *const c_char,
    _flags: c_int,
    exists: *mut c_int,
) -> c_int {
    // SAFETY: SQLite passes a place for the answer.
    unsafe { *exists = 0 };
    ffi::SQLITE_OK
}

/// Each VFS opens one file, whatever its name: names are returned as given.
unsafe extern "C" fn x_full_pathname(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    out_len: c_int,
    out: *mut c_char,
) -> c_int {
    // SAFETY: `name` is a NUL-terminated string and `out` has room for `out_len` bytes.
    unsafe {
        let name = CStr::from_ptr(name).to_bytes_with_nul();
        if name.len() > usize::try_from(out_len).unwrap_or(0) {
            return ffi::SQLITE_CANTOPEN;
        }
        std::ptr::copy_nonoverlapping(name.as_ptr().cast::<c_char>(), out, name.len());
    }
    ffi::SQLITE_OK
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database held in memory, as the VFS reads it.
    struct Bytes(Vec<u8>);

    impl PageFile for Bytes {
        fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<bool, ()> {
            let start = (offset as usize).min(self.0.len());
            let end = (start + buf.len()).min(self.0.len());
            buf[..end - start].copy_from_slice(&self.0[start..end]);
            buf[end - start..].fill(0);
            Ok(end - start == buf.len())
        }
        fn size(&self) -> u64 {
            self.0.len() as u64
        }
    }

    #[test]
    fn a_database_in_memory_reads_and_refuses_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1), (2), (3);")
            .unwrap();
        drop(conn);
        let bytes = std::fs::read(&path).unwrap();
        let conn = open(Arc::new(Bytes(bytes))).unwrap();
        let sum: i64 = conn
            .query_row("SELECT sum(x) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(sum, 6);
        assert!(conn.execute("INSERT INTO t VALUES (4)", []).is_err());
        // Each connection has a VFS of its own, unregistered when it closes.
        let name = conn._name.clone();
        drop(conn);
        assert!(
            Connection::open_with_flags_and_vfs(
                "main.db",
                OpenFlags::SQLITE_OPEN_READ_ONLY,
                name.as_c_str()
            )
            .is_err()
        );
    }
}
