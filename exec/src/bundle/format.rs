//! Packing a tree into the grind bundle format and unpacking it (see the module docs of
//! `bundle` for the format).

use super::Digest;
use crate::error::{Error, Result};
use sha2::{Digest as _, Sha256};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

const MAGIC: &[u8] = b"grind-bundle 1\n";
const END: &[u8] = b"end\n";
/// Longest header line accepted when unpacking.
const MAX_HEADER: usize = 8192;
/// Longest symbolic-link target.
const MAX_LINK: u64 = 4096;

/// One entry found when packing.
enum Entry {
    Dir,
    File { exec: bool, size: u64 },
    Link(Vec<u8>),
}

/// A writer that hashes what passes through.
struct Hashing<W> {
    inner: W,
    hash: Sha256,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Packs the file or directory at `root` into `out`; returns the bundle digest.
pub fn pack(root: &Path, out: impl Write) -> Result<Digest> {
    let meta = std::fs::symlink_metadata(root).map_err(|e| Error::io("reading", root, e))?;
    let mut entries: Vec<(String, Entry)> = Vec::new();
    let base;
    if meta.is_file() {
        let name = root
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| Error::Bundle(format!("{}: file name is not UTF-8", root.display())))?;
        check_path(name)?;
        entries.push((name.to_string(), file_entry(&meta)));
        base = root.parent().unwrap_or(Path::new(".")).to_path_buf();
    } else if meta.is_dir() {
        walk(root, "", &mut entries)?;
        base = root.to_path_buf();
    } else {
        return Err(Error::Bundle(format!(
            "{} is neither a file nor a directory",
            root.display()
        )));
    }
    entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut w = Hashing {
        inner: io::BufWriter::new(out),
        hash: Sha256::new(),
    };
    let werr = |e| Error::io("writing bundle of", root, e);
    w.write_all(MAGIC).map_err(werr)?;
    for (path, entry) in &entries {
        match entry {
            Entry::Dir => writeln!(w, "d {path}").map_err(werr)?,
            Entry::File { exec, size } => {
                let mode = if *exec { 755 } else { 644 };
                writeln!(w, "f {mode} {size} {path}").map_err(werr)?;
                let full = base.join(path);
                let f = std::fs::File::open(&full).map_err(|e| Error::io("opening", &full, e))?;
                let copied = io::copy(&mut f.take(*size), &mut w)
                    .map_err(|e| Error::io("reading", &full, e))?;
                if copied != *size {
                    return Err(Error::Bundle(format!(
                        "{} changed size while being packed",
                        full.display()
                    )));
                }
            }
            Entry::Link(target) => {
                writeln!(w, "l {} {path}", target.len()).map_err(werr)?;
                w.write_all(target).map_err(werr)?;
            }
        }
    }
    w.write_all(END).map_err(werr)?;
    w.flush().map_err(werr)?;
    Ok(Digest(w.hash.finalize().into()))
}

fn file_entry(meta: &std::fs::Metadata) -> Entry {
    Entry::File {
        exec: meta.permissions().mode() & 0o111 != 0,
        size: meta.len(),
    }
}

fn walk(dir: &Path, prefix: &str, out: &mut Vec<(String, Entry)>) -> Result<()> {
    let read = std::fs::read_dir(dir).map_err(|e| Error::io("listing", dir, e))?;
    for item in read {
        let item = item.map_err(|e| Error::io("listing", dir, e))?;
        let path = item.path();
        let name = item.file_name();
        let name = name
            .to_str()
            .ok_or_else(|| Error::Bundle(format!("{}: name is not UTF-8", path.display())))?;
        let rel = if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}/{name}")
        };
        check_path(&rel)?;
        let meta = std::fs::symlink_metadata(&path).map_err(|e| Error::io("reading", &path, e))?;
        let ft = meta.file_type();
        if ft.is_dir() {
            out.push((rel.clone(), Entry::Dir));
            walk(&path, &rel, out)?;
        } else if ft.is_file() {
            out.push((rel, file_entry(&meta)));
        } else if ft.is_symlink() {
            let target =
                std::fs::read_link(&path).map_err(|e| Error::io("reading link", &path, e))?;
            let target = target.to_str().ok_or_else(|| {
                Error::Bundle(format!("{}: link target is not UTF-8", path.display()))
            })?;
            check_link(&rel, target)?;
            out.push((rel, Entry::Link(target.as_bytes().to_vec())));
        } else {
            return Err(Error::Bundle(format!(
                "{}: only files, directories and links can be bundled",
                path.display()
            )));
        }
    }
    Ok(())
}

/// A bundle path: relative, `/`-separated, no empty/`.`/`..` components, no newline.
fn check_path(path: &str) -> Result<()> {
    let ok = !path.is_empty()
        && !path.contains(['\n', '\0', '\r'])
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..");
    if ok {
        Ok(())
    } else {
        Err(Error::Bundle(format!("bad entry path {path:?}")))
    }
}

/// A link at `path` to `target` must be relative and stay inside the bundle.
fn check_link(path: &str, target: &str) -> Result<()> {
    let escape = || {
        Err(Error::Bundle(format!(
            "link {path} -> {target} leaves the bundle"
        )))
    };
    if target.is_empty() || target.starts_with('/') || target.contains(['\n', '\0']) {
        return escape();
    }
    let mut depth = path.split('/').count() as i64 - 1;
    for c in target.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                depth -= 1;
                if depth < 0 {
                    return escape();
                }
            }
            _ => depth += 1,
        }
    }
    Ok(())
}

/// A reader that hashes everything read through it.
struct HashingReader<R> {
    inner: R,
    hash: Sha256,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
}

/// Unpacks a bundle from `input` into the new directory `dest` (which must not exist) and
/// checks that the bytes had digest `expected`. On any error, `dest` is removed: nothing
/// unverified is left to be used.
pub fn unpack(input: impl Read, dest: &Path, expected: &Digest) -> Result<()> {
    std::fs::create_dir(dest).map_err(|e| Error::io("creating directory", dest, e))?;
    let result = unpack_into(input, dest, expected);
    if result.is_err() {
        let _ = std::fs::remove_dir_all(dest);
    }
    result
}

fn unpack_into(input: impl Read, dest: &Path, expected: &Digest) -> Result<()> {
    let mut r = BufReader::new(HashingReader {
        inner: input,
        hash: Sha256::new(),
    });
    let bad = |what: String| Error::Bundle(format!("malformed bundle: {what}"));
    let first = header(&mut r)?;
    if first.as_bytes() != &MAGIC[..MAGIC.len() - 1] {
        return Err(bad(format!("does not start with {:?}", "grind-bundle 1")));
    }
    let mut last: Option<String> = None;
    let mut dirs: std::collections::HashSet<String> = Default::default();
    loop {
        let line = header(&mut r)?;
        if line == "end" {
            break;
        }
        let (kind, rest) = line
            .split_once(' ')
            .ok_or_else(|| bad(format!("header {line:?}")))?;
        let (mode, size, path) = match kind {
            "d" => (None, 0, rest),
            "f" => {
                let mut it = rest.splitn(3, ' ');
                let mode = it.next().unwrap_or("");
                let size = it.next().unwrap_or("");
                let path = it.next().ok_or_else(|| bad(format!("header {line:?}")))?;
                let mode = match mode {
                    "644" => 0o644,
                    "755" => 0o755,
                    _ => return Err(bad(format!("mode {mode:?} of {path}"))),
                };
                (
                    Some(mode),
                    parse_size(size).ok_or_else(|| bad(format!("size in {line:?}")))?,
                    path,
                )
            }
            "l" => {
                let (size, path) = rest
                    .split_once(' ')
                    .ok_or_else(|| bad(format!("header {line:?}")))?;
                let size = parse_size(size).ok_or_else(|| bad(format!("size in {line:?}")))?;
                if size > MAX_LINK {
                    return Err(bad(format!("link target of {path} too long")));
                }
                (None, size, path)
            }
            _ => return Err(bad(format!("unknown entry kind in {line:?}"))),
        };
        check_path(path)?;
        if let Some(prev) = &last {
            if prev.as_bytes() >= path.as_bytes() {
                return Err(bad(format!("entry {path} out of order or repeated")));
            }
        }
        if let Some((parent, _)) = path.rsplit_once('/') {
            if !dirs.contains(parent) {
                return Err(bad(format!(
                    "{path}: parent {parent} is not a directory of the bundle"
                )));
            }
        }
        let full = dest.join(path);
        match kind {
            "d" => {
                std::fs::create_dir(&full)
                    .map_err(|e| Error::io("creating directory", &full, e))?;
                dirs.insert(path.to_string());
            }
            "f" => {
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(mode.unwrap_or(0o644))
                    .open(&full)
                    .map_err(|e| Error::io("creating", &full, e))?;
                let copied = io::copy(&mut (&mut r).take(size), &mut f)
                    .map_err(|e| Error::io("writing", &full, e))?;
                if copied != size {
                    return Err(bad(format!("{path}: ends after {copied} of {size} bytes")));
                }
                std::fs::set_permissions(
                    &full,
                    std::fs::Permissions::from_mode(mode.unwrap_or(0o644)),
                )
                .map_err(|e| Error::io("chmod", &full, e))?;
            }
            _ => {
                let mut target = Vec::new();
                (&mut r)
                    .take(size)
                    .read_to_end(&mut target)
                    .map_err(|e| Error::io("reading bundle for", &full, e))?;
                let target = String::from_utf8(target)
                    .map_err(|_| bad(format!("{path}: link target is not UTF-8")))?;
                if target.len() as u64 != size {
                    return Err(bad(format!("{path}: link target cut short")));
                }
                check_link(path, &target)?;
                std::os::unix::fs::symlink(&target, &full)
                    .map_err(|e| Error::io("creating link", &full, e))?;
            }
        }
        last = Some(path.to_string());
    }
    let mut rest = Vec::new();
    r.read_to_end(&mut rest)
        .map_err(|e| Error::io("reading bundle into", dest, e))?;
    let actual = Digest(r.into_inner().hash.finalize().into());
    if &actual != expected {
        return Err(Error::DigestMismatch {
            expected: expected.hex(),
            actual: actual.hex(),
        });
    }
    if !rest.is_empty() {
        return Err(bad(format!("{} bytes after the end", rest.len())));
    }
    Ok(())
}

fn parse_size(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

/// Reads one header line (without its `\n`), refusing overlong or non-UTF-8 ones.
fn header(r: &mut impl BufRead) -> Result<String> {
    let mut line = Vec::new();
    let n = r
        .take(MAX_HEADER as u64 + 1)
        .read_until(b'\n', &mut line)
        .map_err(|e| Error::Bundle(format!("reading bundle: {e}")))?;
    if n == 0 {
        return Err(Error::Bundle("malformed bundle: ends before `end`".into()));
    }
    if line.pop() != Some(b'\n') {
        return Err(Error::Bundle(
            "malformed bundle: header line too long or cut off".into(),
        ));
    }
    String::from_utf8(line).map_err(|_| Error::Bundle("malformed bundle: header not UTF-8".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_checks() {
        assert!(check_link("a", "b").is_ok());
        assert!(check_link("d/a", "../b").is_ok());
        assert!(check_link("a", "../b").is_err());
        assert!(check_link("d/a", "../../b").is_err());
        assert!(check_link("d/a", "x/../../..").is_err());
        assert!(check_link("a", "/etc/passwd").is_err());
    }

    #[test]
    fn path_checks() {
        for bad in ["", "/a", "a/", "a//b", "./a", "a/../b", "a\nb"] {
            assert!(check_path(bad).is_err(), "{bad:?}");
        }
        assert!(check_path("a/b.c/d").is_ok());
    }
}
