//! Units as ranges of paths: how a subtree, named by its root path, stands relative to a
//! resume point or a limit (lexicographic order, a proper prefix first), and the listing of
//! prefixes after a given one (see the parent module's docs, "Ranges, checkpoints, donation").

/// How a subtree (named by its root path) relates to a path `x`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rel {
    /// Every path of the subtree is < x (and x is not in it).
    Before,
    /// The subtree's root is a prefix of x (x itself may be the root).
    Contains,
    /// Every path of the subtree is > x.
    After,
}

/// Where the subtree rooted at `root` stands relative to the path `x`.
pub(super) fn relation(root: &[u8], x: &[u8]) -> Rel {
    for (i, &r) in root.iter().enumerate() {
        match x.get(i) {
            None => return Rel::After, // x is a proper prefix of root: x < root
            Some(&xv) if r < xv => return Rel::Before,
            Some(&xv) if r > xv => return Rel::After,
            Some(_) => {}
        }
    }
    Rel::Contains
}

/// Pushes `path` as a prefix if it sorts after `after`; false when `max` is reached.
pub(super) fn push_prefix(
    path: &[u8],
    after: Option<&[u8]>,
    max: usize,
    out: &mut Vec<Vec<u8>>,
) -> bool {
    if let Some(a) = after {
        if path <= a {
            return true;
        }
    }
    if out.len() >= max {
        return false;
    }
    out.push(path.to_vec());
    true
}
